//===- Quantized.cpp - block-quantized weights (com.microsoft) -------------===//
//
// MatMulNBits and GatherBlockQuantized: weights stored as 2/4/8-bit integers
// with a scale (and optional zero point) per block of `block_size` values
// along one axis. The reference dequantizes to f32 (only the rows a gather
// needs) and computes in f32, whatever accuracy_level asks as a minimum.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"

#include <algorithm>

namespace llmc::cpu {

namespace {

//===----------------------------------------------------------------------===//
// com.microsoft MatMulNBits
//===----------------------------------------------------------------------===//

/// Weights of `bits` (2, 4 or 8) packed along K, low bits first, in blocks
/// of `bs` values per row ([N, blocks, bs * bits / 8] bytes), dequantized to
/// w [N, K] f32: (q - zero(n, block)) * scales[n * blocks + block].
template <typename Zero>
void dequantizeBlocks(const uint8_t *q, int64_t N, int64_t K, int64_t bs, int64_t bits,
                      const float *scales, Zero zero, float *w) {
  int64_t blocks = (K + bs - 1) / bs, blob = bs * bits / 8, perByte = 8 / bits;
  int64_t mask = (1 << bits) - 1;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      float scale = scales[n * blocks + blk], z = zero(n, blk);
      const uint8_t *row = q + (n * blocks + blk) * blob;
      for (int64_t i = 0; i < bs && blk * bs + i < K; ++i) {
        int64_t v = (row[i / perByte] >> ((i % perByte) * bits)) & mask;
        w[n * K + blk * bs + i] = (float(v) - z) * scale;
      }
    }
}

/// Rounds each row of a [rows, K] to int8 per block of 32 values along K
/// and back (scale max |x| / 127, round to nearest even, as the compiled
/// kernels' int8 activations: runtime/src/model/kernels/Quant.h,
/// prepareActivations): the values whose products those kernels sum.
void roundActivationsToInt8(std::vector<float> &a, int64_t rows, int64_t K) {
  constexpr int64_t kBlock = 32;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
      float *x = a.data() + r * K;
      int64_t k1 = std::min(K, k0 + kBlock);
      float amax = 0;
      for (int64_t k = k0; k < k1; ++k)
        amax = std::max(amax, std::fabs(x[k]));
      float d = amax / 127.f, inv = d > 0 ? 1.f / d : 0.f;
      for (int64_t k = k0; k < k1; ++k)
        x[k] = std::max(-127.f, std::min(127.f, std::nearbyint(x[k] * inv))) * d;
    }
}

/// Y = A W^T (+ bias) for the dequantized w [N, K]; Y is A.shape[:-1] + [N]
/// of A's type; with `roundActivations`, A rounded as above first.
Status linearOverDequantized(KernelCall &call, const Tensor &A, const std::vector<float> &w,
                             int64_t N, int64_t K, const Tensor *bias,
                             bool roundActivations = false) {
  int64_t rows = A.numel() / K;
  std::vector<float> a, y(size_t(rows * N));
  LLMC_RETURN_IF_ERROR(toF32(call, A, a));
  if (roundActivations)
    roundActivationsToInt8(a, rows, K);
  gemmF32(*call.pool, rows, N, K, a.data(), K, 1, w.data(), 1, K, y.data(), N);
  if (bias) {
    if (bias->numel() != N)
      return call.fail("bias must have N entries");
    std::vector<float> bv;
    LLMC_RETURN_IF_ERROR(toF32(call, *bias, bv));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t n = 0; n < N; ++n)
        y[size_t(r * N + n)] += bv[size_t(n)];
  }
  Shape out = A.shape();
  out.back() = N;
  return fromF32(A.dtype(), out, y, call.outputs[0]);
}

Status matMulNBitsKernel(KernelCall &call) {
  const Tensor &A = *call.input(0), &B = *call.input(1), &scales = *call.input(2);
  const Tensor *zp = call.input(3), *bias = call.input(5);
  const Attributes &at = *call.attrs;
  if (call.has(4) || at.getInt("weight_prepacked", 0))
    return call.fail("g_idx and prepacked weights are not supported");
  int64_t K = at.getInt("K", 0), N = at.getInt("N", 0), bits = at.getInt("bits", 4),
          bs = at.getInt("block_size", 0);
  if (bits != 2 && bits != 4 && bits != 8)
    return call.fail("bits must be 2, 4 or 8");
  if (K <= 0 || N <= 0 || bs < 16 || A.rank() < 1 || A.dim(A.rank() - 1) != K)
    return call.fail("A's last dimension must be K and block_size >= 16");
  int64_t blocks = (K + bs - 1) / bs, blob = bs * bits / 8;
  if (B.numel() != N * blocks * blob || storageSize(B.dtype()) != 1)
    return call.fail("B must hold N * k_blocks * blob_size bytes");
  if (scales.numel() != N * blocks)
    return call.fail("scales must hold N * k_blocks values");
  std::vector<float> sc;
  LLMC_RETURN_IF_ERROR(toF32(call, scales, sc));
  int64_t zpRow = (blocks * bits + 7) / 8, perByte = 8 / bits, mask = (1 << bits) - 1;
  std::vector<float> zpF;
  bool zpPacked = zp && storageSize(zp->dtype()) == 1 && !isFloat(zp->dtype());
  if (zp) {
    if (zpPacked ? zp->numel() != N * zpRow : zp->numel() != N * blocks)
      return call.fail("zero_points have the wrong size");
    if (!zpPacked)
      LLMC_RETURN_IF_ERROR(toF32(call, *zp, zpF));
  }
  const uint8_t *zpBytes = zpPacked ? static_cast<const uint8_t *>(zp->raw()) : nullptr;
  auto zero = [&](int64_t n, int64_t blk) {
    if (!zp)
      return float(int64_t(1) << (bits - 1));
    if (!zpPacked)
      return zpF[size_t(n * blocks + blk)];
    const uint8_t *row = zpBytes + n * zpRow;
    return float((row[blk / perByte] >> ((blk % perByte) * bits)) & mask);
  };
  std::vector<float> w(size_t(N * K));
  dequantizeBlocks(static_cast<const uint8_t *>(B.raw()), N, K, bs, bits, sc.data(), zero,
                   w.data());
  return linearOverDequantized(call, A, w, N, K, bias);
}

//===----------------------------------------------------------------------===//
// llm.quantized_linear
//===----------------------------------------------------------------------===//

/// The reference of every quantized linear layer: exact dequantization of
/// the weights, then the f32 product (int8_activations is a permission for
/// the fast kernels, not a requirement). With emulate_int8_activations (set
/// by the accuracy gate, never by the compiler) where int8_activations is
/// allowed, x is first rounded as the compiled CPU kernels round it, so the
/// gate measures what they compute.
Status quantizedLinearKernel(KernelCall &call) {
  const Tensor &x = *call.input(0), &q = *call.input(1), &scales = *call.input(2);
  const Tensor *zp = call.input(3), *bias = call.input(4);
  int64_t bits = call.attrs->getInt("bits", 0), gs = call.attrs->getInt("group_size", 0);
  if ((bits != 4 && bits != 8) || gs < 1 || (gs * bits) % 8 != 0)
    return call.fail("bits must be 4 or 8 and group_size fill whole bytes");
  if (q.rank() != 3 || q.dtype() != DType::UInt8 || q.dim(2) != gs * bits / 8 || x.rank() < 1)
    return call.fail("weight must be uint8 [N, G, group_size * bits / 8], got " + q.describe());
  int64_t N = q.dim(0), G = q.dim(1), K = x.dim(x.rank() - 1);
  if (G != (K + gs - 1) / gs)
    return call.fail("weight " + q.describe() + " does not cover K = " + std::to_string(K));
  if (scales.rank() != 2 || scales.dim(0) != N || scales.dim(1) != G)
    return call.fail("scales must be [N, G], got " + scales.describe());
  if (zp && (zp->dtype() != DType::UInt8 || zp->rank() != 2 || zp->dim(0) != N || zp->dim(1) != G))
    return call.fail("zero_points must be uint8 [N, G], got " + zp->describe());
  std::vector<float> sc;
  LLMC_RETURN_IF_ERROR(toF32(call, scales, sc));
  const uint8_t *z = zp ? static_cast<const uint8_t *>(zp->raw()) : nullptr;
  float symmetric = float(int64_t(1) << (bits - 1));
  std::vector<float> w(size_t(N * K));
  dequantizeBlocks(static_cast<const uint8_t *>(q.raw()), N, K, gs, bits, sc.data(),
                   [&](int64_t n, int64_t g) { return z ? float(z[n * G + g]) : symmetric; },
                   w.data());
  bool roundX = call.attrs->getInt("int8_activations", 0) != 0 &&
                call.attrs->getInt("emulate_int8_activations", 0) != 0;
  return linearOverDequantized(call, x, w, N, K, bias, roundX);
}

//===----------------------------------------------------------------------===//
// com.microsoft GatherBlockQuantized
//===----------------------------------------------------------------------===//

/// Reads element `i` of quantized storage: uint8 packs 8 / bits values per
/// byte, low bits first; int4/uint4 hold one value per (byte) element.
struct QuantizedView {
  const uint8_t *bytes;
  DType type;
  int64_t bits, perByte;
  int64_t operator()(int64_t i) const {
    if (type == DType::Int4)
      return int64_t(int8_t(bytes[i]));
    if (type == DType::UInt4 || perByte == 1)
      return int64_t(bytes[i]);
    return int64_t((bytes[i / perByte] >> ((i % perByte) * bits)) & ((1 << bits) - 1));
  }
};

Status gatherBlockQuantizedKernel(KernelCall &call) {
  const Tensor &data = *call.input(0), &indices = *call.input(1), &scales = *call.input(2);
  const Tensor *zp = call.input(3);
  const Attributes &at = *call.attrs;
  int64_t bits = at.getInt("bits", 4), bs = at.getInt("block_size", 128);
  DType type = data.dtype();
  bool packedBytes = type == DType::UInt8;
  if (!packedBytes && type != DType::Int4 && type != DType::UInt4)
    return call.fail("data must be uint8, int4 or uint4");
  if (packedBytes ? (bits != 2 && bits != 4 && bits != 8) : bits != 4)
    return call.fail("bits must be 2, 4 or 8 for uint8 data and 4 for int4/uint4");
  if (bs < 16 || (bs & (bs - 1)) != 0)
    return call.fail("block_size must be a power of two >= 16");
  int64_t perByte = packedBytes ? 8 / bits : 1;
  int64_t rank = data.rank();
  if (rank < 1)
    return call.fail("data must have rank >= 1");
  Shape logical = data.shape();
  logical.back() *= perByte;
  int64_t g = at.getInt("gather_axis", 0), qa = at.getInt("quantize_axis", 1);
  if (g < -rank || g >= rank || qa < -rank || qa >= rank)
    return call.fail("gather_axis/quantize_axis out of range for rank " + std::to_string(rank));
  g = g < 0 ? g + rank : g;
  qa = qa < 0 ? qa + rank : qa;
  Shape scaleShape = logical;
  scaleShape[size_t(qa)] = (logical[size_t(qa)] + bs - 1) / bs;
  if (scales.shape() != scaleShape)
    return call.fail("scales must be " + shapeString(scaleShape) + ", got " + scales.describe());
  if (zp) {
    Shape zpStored = scaleShape;
    zpStored.back() = (zpStored.back() + perByte - 1) / perByte;
    if (zp->dtype() != type || zp->shape() != zpStored)
      return call.fail("zero_points must be " + std::string(dtypeName(type)) +
                       shapeString(zpStored) + ", got " + zp->describe());
  }
  // Index arithmetic in the logical layout.
  int64_t outer = 1, inner = 1, axisSize = logical[size_t(g)];
  for (int64_t d = 0; d < g; ++d)
    outer *= logical[size_t(d)];
  for (int64_t d = g + 1; d < rank; ++d)
    inner *= logical[size_t(d)];
  int64_t qStride = 1;
  for (int64_t d = qa + 1; d < rank; ++d)
    qStride *= logical[size_t(d)];
  int64_t qSize = logical[size_t(qa)], qBlocks = scaleShape[size_t(qa)];
  Shape idx(size_t(indices.numel()));
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t v = indices.dtype() == DType::Int64 ? indices.data<int64_t>()[i]
                                                : int64_t(indices.data<int32_t>()[i]);
    if (v < -axisSize || v >= axisSize)
      return call.fail("index " + std::to_string(v) + " is out of range for axis size " +
                       std::to_string(axisSize));
    idx[size_t(i)] = v < 0 ? v + axisSize : v;
  }
  std::vector<float> sc;
  LLMC_RETURN_IF_ERROR(toF32(call, scales, sc));
  QuantizedView q{static_cast<const uint8_t *>(data.raw()), type, bits, perByte};
  std::optional<QuantizedView> z;
  if (zp)
    z = QuantizedView{static_cast<const uint8_t *>(zp->raw()), type, bits, perByte};
  float defaultZero = packedBytes ? float(int64_t(1) << (bits - 1)) : 0.0f;
  int64_t n = int64_t(idx.size());
  std::vector<float> out(size_t(outer * n * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) {
        int64_t flat = (o * axisSize + idx[size_t(i)]) * inner + j;
        // The scale of `flat`: its block along the quantize axis.
        int64_t coord = (flat / qStride) % qSize;
        int64_t s = ((flat / (qStride * qSize)) * qBlocks + coord / bs) * qStride + flat % qStride;
        float zero = z ? float((*z)(s)) : defaultZero;
        out[size_t((o * n + i) * inner + j)] = (float(q(flat)) - zero) * sc[size_t(s)];
      }
  Shape outShape(logical.begin(), logical.begin() + g);
  outShape.insert(outShape.end(), indices.shape().begin(), indices.shape().end());
  outShape.insert(outShape.end(), logical.begin() + g + 1, logical.end());
  return fromF32(scales.dtype(), outShape, out, call.outputs[0]);
}

//===----------------------------------------------------------------------===//
// llm.quantized_embedding
//===----------------------------------------------------------------------===//

/// The rows the ids name of a table in quantized_linear's layout,
/// dequantized exactly, in the scales' type.
Status quantizedEmbeddingKernel(KernelCall &call) {
  const Tensor &q = *call.input(0), &scales = *call.input(1), &ids = *call.input(3);
  const Tensor *zp = call.input(2);
  int64_t bits = call.attrs->getInt("bits", 0), gs = call.attrs->getInt("group_size", 0);
  if ((bits != 4 && bits != 8) || gs < 1 || (gs * bits) % 8 != 0)
    return call.fail("bits must be 4 or 8 and group_size fill whole bytes");
  if (q.rank() != 3 || q.dtype() != DType::UInt8 || q.dim(2) != gs * bits / 8)
    return call.fail("table must be uint8 [vocab, G, group_size * bits / 8], got " + q.describe());
  int64_t V = q.dim(0), G = q.dim(1), H = G * gs;
  if (scales.rank() != 2 || scales.dim(0) != V || scales.dim(1) != G)
    return call.fail("scales must be [vocab, G], got " + scales.describe());
  if (zp && (zp->dtype() != DType::UInt8 || zp->rank() != 2 || zp->dim(0) != V || zp->dim(1) != G))
    return call.fail("zero_points must be uint8 [vocab, G], got " + zp->describe());
  if (ids.dtype() != DType::Int64 && ids.dtype() != DType::Int32)
    return call.fail("ids must be int32 or int64");
  if (scales.dtype() != DType::Float && scales.dtype() != DType::Float16 &&
      scales.dtype() != DType::BFloat16)
    return call.fail("scales must be f32, f16 or bf16, got " + scales.describe());
  const uint8_t *z = zp ? static_cast<const uint8_t *>(zp->raw()) : nullptr;
  float symmetric = float(int64_t(1) << (bits - 1));
  int64_t n = ids.numel();
  // (Per-thread scratch kept between calls: a step allocates nothing.)
  float *out = threadScratch<float>(kScratchOut, n * H);
  float *rowScales = threadScratch<float>(kScratchSum, G);
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = ids.dtype() == DType::Int64 ? ids.data<int64_t>()[i]
                                            : int64_t(ids.data<int32_t>()[i]);
    if (v < 0 || v >= V)
      return call.fail("id " + std::to_string(v) + " is outside the vocabulary [0, " +
                       std::to_string(V) + ")");
    // The row's scales in f32 (only this row's are converted).
    for (int64_t g = 0; g < G; ++g)
      rowScales[g] = float(floatElement(scales, v * G + g));
    dequantizeBlocks(static_cast<const uint8_t *>(q.raw()) + v * G * gs * bits / 8, 1, H, gs,
                     bits, rowScales,
                     [&](int64_t, int64_t g) { return z ? float(z[v * G + g]) : symmetric; },
                     out + i * H);
  }
  Shape shape = ids.shape();
  shape.push_back(H);
  return fromF32(scales.dtype(), shape, out, call.outputs[0]);
}

} // namespace

void addQuantizedKernels(KernelTable &table) {
  table.add("quantized_embedding", quantizedEmbeddingKernel);
  table.add("ms.gather_block_quantized", gatherBlockQuantizedKernel);
  table.add("ms.matmul_nbits", matMulNBitsKernel);
  table.add("quantized_linear", quantizedLinearKernel);
}

} // namespace llmc::cpu
