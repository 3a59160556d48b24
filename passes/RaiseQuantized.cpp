//===- RaiseQuantized.cpp - pre-quantized linear layers -> llm.quantized_linear
//
// Part of llmc-raise-transformer: com.microsoft MatMulNBits over constant
// 4- or 8-bit weights becomes llm.quantized_linear. The packed weights are
// kept byte for byte (the two layouts are the same); only the scales and
// zero points are reshaped, the zero points unpacked to one per byte.
//
//===----------------------------------------------------------------------===//
#include "passes/RaiseQuantized.h"

#include "passes/BuildHelpers.h"
#include "passes/KernelBridge.h"

#include "dialects/LLM/IR/LLMOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

/// g_idx that says what the blocks say already (g_idx[k] = k / bs).
bool isTrivialGroupIndex(Value gIdx, int64_t K, int64_t bs) {
  std::optional<cpu::Tensor> t = constantOf(gIdx);
  if (!t || t->numel() != K || (t->dtype() != cpu::DType::Int32 && t->dtype() != cpu::DType::Int64))
    return false;
  for (int64_t k = 0; k < K; ++k) {
    int64_t g = t->dtype() == cpu::DType::Int64 ? t->data<int64_t>()[k]
                                                : int64_t(t->data<int32_t>()[k]);
    if (g != k / bs)
      return false;
  }
  return true;
}

/// The zero points as one ui8 per (row, block), or nothing when they are
/// not integers in [0, 2^bits) (then the op stays as it is).
std::optional<std::vector<uint8_t>> unpackZeroPoints(const cpu::Tensor &zp, int64_t N,
                                                     int64_t blocks, int64_t bits) {
  std::vector<uint8_t> out(size_t(N * blocks));
  int64_t limit = int64_t(1) << bits;
  if (zp.dtype() == cpu::DType::UInt8 || zp.dtype() == cpu::DType::Int8) {
    int64_t perByte = 8 / bits, row = (blocks * bits + 7) / 8;
    if (zp.numel() != N * row)
      return std::nullopt;
    const uint8_t *p = static_cast<const uint8_t *>(zp.raw());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t b = 0; b < blocks; ++b)
        out[size_t(n * blocks + b)] =
            uint8_t((p[n * row + b / perByte] >> ((b % perByte) * bits)) & (limit - 1));
    return out;
  }
  if (zp.numel() != N * blocks)
    return std::nullopt;
  if (!cpu::isFloat(zp.dtype()))
    return std::nullopt;
  for (int64_t i = 0; i < N * blocks; ++i) {
    double v = cpu::floatElement(zp, i);
    if (!(v >= 0 && v < double(limit)) || v != double(int64_t(v)))
      return std::nullopt;
    out[size_t(i)] = uint8_t(v);
  }
  return out;
}

} // namespace

/// The constant under views (Reshape, Squeeze, ...: the same bytes).
std::optional<cpu::Tensor> constantUnderViews(Value v) {
  while (Operation *d = v.getDefiningOp()) {
    if (!isView(d))
      break;
    v = d->getOperand(0);
  }
  return constantOf(v);
}

void mlir::llmc::raiseGatherBlockQuantized(func::FuncOp func, llvm::function_ref<Value()> none) {
  SmallVector<MsGatherBlockQuantizedOp> ops;
  func.walk([&](MsGatherBlockQuantizedOp op) { ops.push_back(op); });
  for (MsGatherBlockQuantizedOp op : ops) {
    int64_t bits = op.getBits(), bs = op.getBlockSize();
    std::optional<cpu::Tensor> data = constantUnderViews(op.getData());
    std::optional<cpu::Tensor> scales = constantUnderViews(op.getScales());
    // uint8 data packed along a [vocab, hidden] table, gathered by row,
    // quantized along the row (int4/uint4 element types stay as they are).
    // (The table's shape is the one its views give it; the bytes are the constant's.)
    auto dataType = dyn_cast<RankedTensorType>(op.getData().getType());
    if (!data || !scales || !dataType || !dataType.hasStaticShape() || dataType.getRank() != 2 ||
        data->dtype() != cpu::DType::UInt8 || data->numel() != dataType.getNumElements() ||
        (bits != 4 && bits != 8) || op.getGatherAxis() != 0 ||
        (op.getQuantizeAxis() != 1 && op.getQuantizeAxis() != -1))
      continue;
    int64_t V = dataType.getDimSize(0), H = dataType.getDimSize(1) * (8 / bits);
    if (bs <= 0 || H % bs != 0 || scales->numel() != V * (H / bs))
      continue;
    int64_t G = H / bs;
    std::optional<std::vector<uint8_t>> zp;
    if (!isNone(op.getZeroPoints())) {
      std::optional<cpu::Tensor> z = constantUnderViews(op.getZeroPoints());
      if (!z || z->dtype() != cpu::DType::UInt8 || !(zp = unpackZeroPoints(*z, V, G, bits)))
        continue;
    }
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto u8 = IntegerType::get(b.getContext(), 8, IntegerType::Unsigned);
    Value table = blobConstant(
        b, loc, RankedTensorType::get({V, G, bs * bits / 8}, u8),
        ArrayRef<char>(static_cast<const char *>(data->raw()), data->bytes()), "quantized_table");
    Value scaleValue = blobConstant(
        b, loc, RankedTensorType::get({V, G}, getElementTypeOrSelf(op.getScales().getType())),
        ArrayRef<char>(static_cast<const char *>(scales->raw()), scales->bytes()),
        "quantized_scales");
    Value zeroValue = none();
    if (zp)
      zeroValue = blobConstant(b, loc, RankedTensorType::get({V, G}, u8),
                               ArrayRef<char>(reinterpret_cast<const char *>(zp->data()), zp->size()),
                               "quantized_zero_points");
    Value y = createOp<QuantizedEmbeddingOp>(
        b, loc, {table, scaleValue, zeroValue, op.getIndices()},
        {b.getNamedAttr("bits", b.getI64IntegerAttr(bits)),
         b.getNamedAttr("group_size", b.getI64IntegerAttr(bs))});
    op.getResult().replaceAllUsesWith(y);
  }
}

void mlir::llmc::raiseMatMulNBits(func::FuncOp func, llvm::function_ref<Value()> none) {
  SmallVector<MsMatMulNBitsOp> ops;
  func.walk([&](MsMatMulNBitsOp op) { ops.push_back(op); });
  for (MsMatMulNBitsOp op : ops) {
    int64_t K = op.getK(), N = op.getN(), bits = op.getBits(), bs = op.getBlockSize();
    if ((bits != 4 && bits != 8) || op.getWeightPrepacked() != 0)
      continue;
    auto xType = dyn_cast<RankedTensorType>(op.getA().getType());
    if (!xType || xType.getRank() < 1 ||
        (!xType.isDynamicDim(xType.getRank() - 1) && xType.getShape().back() != K))
      continue;
    if (!isNone(op.getGIdx()) && !isTrivialGroupIndex(op.getGIdx(), K, bs))
      continue;
    int64_t blocks = (K + bs - 1) / bs, blob = bs * bits / 8;
    std::optional<cpu::Tensor> q = constantOf(op.getB()), scales = constantOf(op.getScales());
    if (!q || !scales || q->numel() != N * blocks * blob || scales->numel() != N * blocks)
      continue;
    std::optional<std::vector<uint8_t>> zp;
    if (!isNone(op.getZeroPoints())) {
      std::optional<cpu::Tensor> z = constantOf(op.getZeroPoints());
      if (!z || !(zp = unpackZeroPoints(*z, N, blocks, bits)))
        continue;
    }
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto u8 = IntegerType::get(b.getContext(), 8, IntegerType::Unsigned);
    Value weight = blobConstant(
        b, loc, RankedTensorType::get({N, blocks, blob}, u8),
        ArrayRef<char>(static_cast<const char *>(q->raw()), q->bytes()), "quantized_weight");
    Value scaleValue =
        blobConstant(b, loc, RankedTensorType::get({N, blocks}, getElementTypeOrSelf(op.getScales().getType())),
                     ArrayRef<char>(static_cast<const char *>(scales->raw()), scales->bytes()),
                     "quantized_scales");
    Value zeroValue = none();
    if (zp)
      zeroValue = blobConstant(b, loc, RankedTensorType::get({N, blocks}, u8),
                               ArrayRef<char>(reinterpret_cast<const char *>(zp->data()), zp->size()),
                               "quantized_zero_points");
    Value bias = isNone(op.getBias()) ? none() : op.getBias();
    // accuracy_level 4 lets onnxruntime compute with int8 activations; the
    // lower levels ask for float ones.
    bool int8Acts = op.getAccuracyLevel() >= 4;
    Value y = createOp<QuantizedLinearOp>(
        b, loc, {op.getA(), weight, scaleValue, zeroValue, bias},
        {b.getNamedAttr("bits", b.getI64IntegerAttr(bits)),
         b.getNamedAttr("group_size", b.getI64IntegerAttr(bs)),
         b.getNamedAttr("int8_activations", b.getBoolAttr(int8Acts))});
    op.getResult().replaceAllUsesWith(y);
  }
}
