//===- QuantGemv.h - linear layers over 4- and 8-bit weights --------------===//
//
// y = x dequant(W)^T (+ bias) (+ residual): llm.quantized_linear.
//
// Shapes and layouts (the op's, which is com.microsoft MatMulNBits'):
//   x         [M, K] of X (f32, f16, bf16), row-major
//   q         u8 [N, G, groupSize * BITS / 8], G = ceil(K / groupSize): row
//             n's values in order along K, low bits first (two per byte at
//             4 bits), so value k of row n is at bit k * BITS of the row;
//             values past K are padding
//   scales    [N, G] of S; zeros u8 [N, G] (one per byte) or null, meaning
//             2^(BITS-1): W[n, k] = (q[n, k] - zero[n, g]) * scale[n, g],
//             g = k / groupSize
//   bias      [N] of B or null; residual [M, N] of Y or null (added last)
//   partial   [splits, M, N] f32 workspace when splits > 1; counters:
//             Common.h's split counters (at least ceil(N / kGemvWarps))
//
// Decode (M <= kGemvMaxRows, qgemv): for half or bfloat16 x (K and the
// groups a multiple of 32 values, sm_80 and later: qgemvOnTensorCores),
// from kQuantTcMinRows rows (one), GemvTensorCore.h's tensor-core form over
// QuantTcRows (below): each weight's q - zero made a value of x's type,
// exactly, by a few integer instructions and one packed FMA a pair
// (quantPairs), the mma's f32 sums of a chunk of 32 values scaled by
// their group's scale in f32; so both forms compute each product
// (q - zero) x exactly and differ in how their f32 sums are grouped (each
// lane's chunk of 8 to 32 values scaled in the SIMT form, each chunk of 32
// here) and ordered (the tensor cores' sums). (Until 2026-12-01 this
// form ran from 3 rows and rounded each weight, q - zero times the scale,
// to x's type, about 9 instructions a pair of 4-bit weights.) Otherwise
// Gemv.h's SIMT form (gemvSimtBody, one warp per row
// of W) over QuantGemvRows (below): each lane reads CHUNK bytes (16, else
// 8 or 4: the largest that divides a group's bytes, so a chunk lies in one
// group) and the group's scale and zero point per step, lanes side by
// side, kQuantUnroll chunks a batch, the next batch issued before the
// current one is used, the first before the wait for the kernel before
// (programmatic launches) and before the prologue, as the float form's
// (until 2026-11-30 qgemv waited for the kernel before and the prologue
// before its first load, and used each batch before issuing the next: on
// an H200 that order had held the float form's folded layers at 38-64% of
// a streaming read). The chunk's values become floats as
// the exact integers q - zero (quantMinusZero: the bits of 2^23 + q, an OR,
// minus 2^23 + zero; the integer-to-float conversion it replaced runs at a
// quarter of the FMA rate, and by arithmetic, not yet timed, at one row
// an H200 would take longer to convert int4 weights than to read them),
// multiplied with x (read through L1 as in Gemv.h) into a per-chunk sum
// that one FMA scales into the row's f32 accumulator. K past the last whole
// chunk (or all of K when x's rows are not 16-byte aligned) is read value
// by value. Split-K and its in-launch
// combination are Gemv.h's. qnormGemv and qswigluGemv fold an RMS norm or a
// SwiGLU into it as Gemv.h's normGemv and swigluGemv do: each block writes
// its rows of x through the prologue into shared memory first (the norm's
// weights of x's type), and its warps read them as x.
//
// Prefill (qgemm): with a scratch buffer of N * K X's (the code generator
// gives one from the arena for half or bfloat16 x where it is at most
// kQuantScratchMaxBytes),
// dequantRows first writes the whole weight into it as X, each weight
// rounded to X's type once (onnxruntime's MatMulNBits likewise multiplies
// fp16 dequantized weights in a prefill), then Gemm.h's gemm multiplies it:
// on a GPU cuBLASLt's tensor-core GEMM for 16-bit X, Y and bias (the
// bias's type X or none). dequantRows: a thread a 32-bit word of a row (8
// values at 4 bits, 4 at 8; a group's bytes are a multiple of 4, so a word
// lies in one group), its values written to consecutive X's, coalesced
// across the warp. The N * K copy costs about 4 (int4) or 2 (int8) times
// the quantized weight's bytes in writes, small beside the GEMM of a long
// prompt; it replaced, for those, the path below, which on an H200 ran a
// 1B model's prefill at about 30 TFLOP/s
// (bench/results/2026-11-30-cuda-decode-h200-5.md). Without the buffer:
// Gemm.h's tiles with the weight tile dequantized as it is staged in
// shared memory (QuantRows), element by element: for half or bfloat16 x on
// the tensor cores, each weight rounded to x's type, else the SIMT tiles
// in f32.
//
// quantEmbedding: llm.quantized_embedding, rows of a table in the same
// layout ([vocab, G, groupSize * BITS / 8], scales and zeros [vocab, G])
// gathered by i64 or i32 ids and dequantized, one block per id; an id outside
// the vocabulary records kTokenOutOfRange and writes zeros. With `scale`
// (one Y on the device), each value rounded to Y times it, rounded to Y
// again (the element-wise Mul after the gather: Gemma's sqrt(H)).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_QUANTGEMV_H
#define LLMC_RUNTIME_MODEL_CUDA_QUANTGEMV_H

#include "runtime/src/model/cuda/Gemm.h"
#include "runtime/src/model/cuda/Gemv.h"

namespace llmc::cuda {

constexpr int kQuantUnroll = 2;

/// 2^23 + zero, exact for 0 <= zero < 2^23: quantMinusZero's second
/// operand, formed once per group.
LLMC_DEVICE float quantBiasedZero(int zero) { return 8388608.0f + float(zero); }

/// q - zero as an f32, exactly, for 0 <= q < 2^23 and `biasedZero` =
/// quantBiasedZero(zero): 2^23 + q by its bits (0x4B000000 is 2^23's),
/// minus it. The same value as float(int(q) - zero), without an
/// integer-to-float conversion.
LLMC_DEVICE float quantMinusZero(unsigned q, float biasedZero) {
  return floatFromBits(0x4B000000u | q) - biasedZero;
}

/// Group g's zero point: zeros[g], or 2^(BITS-1) without zero points.
template <int BITS> LLMC_DEVICE int quantZero(const uint8_t *zeros, size_t g) {
  return zeros ? int(zeros[g]) : 1 << (BITS - 1);
}

/// Value `k` of a quantized row as the exact float q - zero.
template <int BITS>
LLMC_DEVICE float quantValue(const uint8_t *row, int k, int zero) {
  int v = BITS == 8 ? int(row[k]) : int((row[k / 2] >> ((k % 2) * 4)) & 15);
  return float(v - zero);
}

/// A row-major quantized weight as Gemm.h reads it: W[n, k] in f32.
template <class S, int BITS> struct QuantRows {
  const uint8_t *q;
  const S *scales;
  const uint8_t *zeros;
  int groupSize, groups;
  LLMC_DEVICE float operator()(int n, int k) const {
    size_t g = size_t(n) * size_t(groups) + size_t(k / groupSize);
    int zero = quantZero<BITS>(zeros, g);
    const uint8_t *row = q + size_t(n) * size_t(groups) * size_t(groupSize) * BITS / 8;
    return quantValue<BITS>(row, k, zero) * toFloat(scales[g]);
  }
};

/// A lane's load of a quantized row: WORDS 32-bit words of values (all in
/// one group) and that group's scale and zero point.
template <class S, int WORDS> struct QuantChunk {
  unsigned v[WORDS];
  S scale;
  uint8_t zero;
};

/// Row r of a quantized weight from value `offset` on (quantRow): chunk
/// loads the WORDS words at value `at` past the offset, `bytes` (at * BITS
/// / 8, 4 WORDS aligned) into the row's from there, with their group's
/// scale and zero point.
template <class S, int BITS> struct QuantRow {
  const uint8_t *q; // the row's bytes from value `offset`
  const S *scales;
  const uint8_t *zeros;
  int offset, groupSize;
  template <int WORDS> LLMC_DEVICE QuantChunk<S, WORDS> chunk(size_t bytes, int at) const {
    QuantChunk<S, WORDS> c;
    loadWords<4 * WORDS>(q + bytes, c.v);
    int g = (offset + at) / groupSize;
    c.scale = scales[g];
    c.zero = uint8_t(quantZero<BITS>(zeros, size_t(g)));
    return c;
  }
};
template <class S, int BITS>
LLMC_DEVICE QuantRow<S, BITS> quantRow(const uint8_t *q, const S *scales, const uint8_t *zeros,
                                       int groupSize, int groups, int r, int offset) {
  size_t rowBytes = size_t(groups) * size_t(groupSize) * BITS / 8;
  return {q + size_t(r) * rowBytes + size_t(offset) * BITS / 8,
          scales + size_t(r) * size_t(groups),
          zeros ? zeros + size_t(r) * size_t(groups) : nullptr, offset, groupSize};
}

/// A chunk's first N values as the exact floats q - zero (quantMinusZero).
template <int BITS, int N, class S, int WORDS>
LLMC_DEVICE void quantValues(const QuantChunk<S, WORDS> &c, float (&out)[N]) {
  constexpr int kPerWord = 32 / BITS;
  constexpr unsigned kMask = (1u << BITS) - 1u;
  float biasedZero = quantBiasedZero(c.zero);
  LLMC_UNROLL
  for (int i = 0; i < N; ++i)
    out[i] = quantMinusZero((c.v[i / kPerWord] >> ((i % kPerWord) * BITS)) & kMask, biasedZero);
}

/// The 16-bit value of T whose mantissa's last bit is worth 1: 1024 in
/// half (0x6400), 128 in bfloat16 (0x4300); q ORed into its low bits (q
/// below 1024 or 128) makes magic + q exactly. And 1.0 twice.
template <class T> constexpr unsigned kQuantMagic = std::is_same_v<T, half> ? 0x6400u : 0x4300u;
template <class T> constexpr unsigned kOnes2 = std::is_same_v<T, half> ? 0x3C003C00u : 0x3F803F80u;

/// A QuantTcRows load's 8 values as mma16816's four registers of T,
/// register i holding values 2i and 2i + 1 (the lower in the low half),
/// each the exact q - zero (|q - zero| < 256: an integer half and bfloat16
/// hold; zero points below 2^BITS, as the importer and the quantizer make
/// them). 4 bits: a prmt puts byte i's low nibble and (from the word
/// shifted by 4) its high one in the two halves, an AND and an OR (one
/// LOP3) make them magic + q, and one packed FMA subtracts magic + zero,
/// both exact; 8 bits over half: a prmt puts bytes 2i and 2i + 1 under
/// 0x64 (1024 + q), then the same FMA: 3 or 2 instructions a pair, where
/// the f32 route (quantValues, a scale, a conversion) took about 9. 8 bits
/// over bfloat16, whose 7 mantissa bits do not hold a byte: quantValues'
/// f32 integers, packed (exact: integers below 256).
template <class T, int BITS, class S, int WORDS>
LLMC_DEVICE uint4 quantPairs(const QuantChunk<S, WORDS> &c) {
  static_assert(BITS * 8 == 32 * WORDS, "a load of 8 values");
  unsigned r[4];
  if constexpr (BITS == 8 && std::is_same_v<T, bfloat16>) {
    float v[8];
    quantValues<8>(c, v);
    LLMC_UNROLL
    for (int i = 0; i < 4; ++i)
      r[i] = tc::packFloats<T>(v[2 * i], v[2 * i + 1]);
  } else {
    constexpr unsigned m = kQuantMagic<T>;
    unsigned minus = (0x8000u | m | unsigned(c.zero)) * 0x10001u; // -(magic + zero), twice
    LLMC_UNROLL
    for (int i = 0; i < 4; ++i) {
      unsigned t;
      if constexpr (BITS == 4)
        t = (bytePerm(c.v[0], c.v[0] >> 4, unsigned(i) | unsigned(4 + i) << 8) & 0x000F000Fu) |
            m * 0x10001u;
      else
        t = bytePerm(c.v[i / 2], 0x64646464u,
                     unsigned(2 * (i % 2)) | 4u << 4 | unsigned(2 * (i % 2) + 1) << 8 | 4u << 12);
      r[i] = tc::fma2<T>(t, kOnes2<T>, minus);
    }
  }
  return {r[0], r[1], r[2], r[3]};
}

/// 4- or 8-bit rows as GemvTensorCore.h's gemvTcBody reads them (its
/// DenseTcRows' interface): a load is the 8 values' 4 or 8 bytes (a row's
/// bytes are a multiple of 8 where groups are) with their group's scale
/// and zero point; expand makes them 8 T's, each the exact q - zero
/// (quantPairs), and the body multiplies each chunk's sums by scale()
/// (kChunkScale): groups are a multiple of 32 values, so a chunk of 32
/// (all four lanes' loads that meet in one mma) lies in one group.
template <class T, class S, int BITS> struct QuantTcRows {
  const uint8_t *q;
  const S *scales;
  const uint8_t *zeros;
  int groupSize, groups;
  struct Cursor : QuantRow<S, BITS> {
    using Raw = QuantChunk<S, BITS / 4>;
    static constexpr bool kChunkScale = true;
    LLMC_DEVICE Raw load(int j) const {
      return this->template chunk<BITS / 4>(size_t(j) * 32 * BITS / 8, 32 * j);
    }
    LLMC_DEVICE void prefetch(int j) const { prefetchL2(this->q + size_t(j) * 32 * BITS / 8); }
    LLMC_DEVICE uint4 expand(const Raw &r) const { return quantPairs<T, BITS>(r); }
    LLMC_DEVICE float scale(const Raw &r) const { return toFloat(r.scale); }
  };
  LLMC_DEVICE Cursor row(int r, int offset) const {
    return {quantRow<S, BITS>(q, scales, zeros, groupSize, groups, r, offset)};
  }
};

/// From this many rows qgemv takes the tensor-core form: from one. By
/// instruction counts (not yet timed): the SIMT form spends about 5.6
/// instructions a 4-bit weight at one row (each value made an f32, each x
/// converted, an FMA), 11 a byte of W, more than an H200 issues per byte
/// it reads at its copy bandwidth (about 8.6: 132 multiprocessors, 128
/// lanes a clock, 1.98 GHz, over 3.9 TB/s); the tensor-core form about 3
/// (48 PTX instructions a lane's 16 weights: quantPairs, the scales' FMAs,
/// a share of the mmas; ptxas merges 8 of them). The float GEMV, whose
/// SIMT form converts nothing but x and W, keeps kTcGemvMinRows.
constexpr int kQuantTcMinRows = 1;

/// LLMC_CUDA_QGEMV_TC_ROWS=N (1 to 9) has qgemv take the tensor-core form
/// from N rows instead (9: never), to compare the two forms on a GPU
/// (bench/cuda/gemv.cu; bench/cuda/decode.sh's COMPARE). Read at each
/// launch (a decode step's launches are captured once).
inline int quantTcMinRows() {
  const char *e = std::getenv("LLMC_CUDA_QGEMV_TC_ROWS");
  return e && e[0] >= '1' && e[0] <= '9' && e[1] == '\0' ? e[0] - '0' : kQuantTcMinRows;
}

/// Whether qgemv of m rows takes the tensor-core form (GemvTensorCore.h
/// over QuantTcRows): half or bfloat16 x, from quantTcMinRows() rows, K
/// and the groups a multiple of 32 values, sm_80 and later.
template <class X> bool qgemvOnTensorCores(int m, int k, int groupSize) {
  return kTensorCoreType<X> && m >= quantTcMinRows() && k % 32 == 0 && groupSize % 32 == 0 &&
         tc::bf16();
}

/// 4- or 8-bit rows as Gemv.h's gemvSimtBody reads them (its
/// DenseGemvRows' interface): a vector is a lane's CHUNK bytes (kVals
/// values, in one group: CHUNK divides a group's bytes) with their group's
/// scale and zero point, all loaded together; multiply makes the values
/// the exact floats q - zero (quantValues), sums each row of x's products
/// with them and adds that sum times the scale (one FMA) into the row's
/// accumulator. x of X: a row's whole vectors only where its rows are
/// 16-byte aligned.
template <class X, class S, int BITS, int CHUNK> struct QuantGemvRows {
  static constexpr int kVals = CHUNK * 8 / BITS, kUnroll = kQuantUnroll;
  const uint8_t *q;
  const S *scales;
  const uint8_t *zeros;
  int k, groupSize, groups;
  LLMC_DEVICE int vectors() const { return (size_t(k) * sizeof(X)) % 16 == 0 ? k / kVals : 0; }
  struct Cursor : QuantRow<S, BITS> {
    using Raw = QuantChunk<S, CHUNK / 4>;
    LLMC_DEVICE Raw load(int v) const {
      return this->template chunk<CHUNK / 4>(size_t(v) * CHUNK, v * kVals);
    }
    LLMC_DEVICE void prefetch(int v) const { prefetchL2(this->q + size_t(v) * CHUNK); }
    template <int M>
    LLMC_DEVICE void multiply(const Raw &r, const X *x, int k, int v, float (&acc)[M]) const {
      float scale = toFloat(r.scale), wv[kVals];
      quantValues<BITS>(r, wv);
      LLMC_UNROLL
      for (int m = 0; m < M; ++m) {
        float xv[kVals];
        loadRun<kVals>(x + size_t(m) * size_t(k) + size_t(v) * kVals, xv);
        float dot = 0.0f;
        LLMC_UNROLL
        for (int i = 0; i < kVals; ++i)
          dot = fmaf(wv[i], xv[i], dot);
        acc[m] = fmaf(scale, dot, acc[m]);
      }
    }
    LLMC_DEVICE float value(int e) const {
      int g = e / this->groupSize;
      return quantValue<BITS>(this->q, e, quantZero<BITS>(this->zeros, size_t(g))) *
             toFloat(this->scales[g]);
    }
  };
  LLMC_DEVICE Cursor row(int r) const {
    return {quantRow<S, BITS>(q, scales, zeros, groupSize, groups, r, 0)};
  }
};

template <class X, class Y, class S, class B, int BITS, int CHUNK, int M, GemvIn IN>
LLMC_GLOBAL void qgemvKernel(const X *x, const uint8_t *q, const S *scales, const uint8_t *zeros,
                             const B *bias, const Y *residual, Y *y, float *partial,
                             unsigned *counters, int n, int k, int groupSize, int groups,
                             GemvPrologue<X, X> pro, GemvSegments seg) {
  using Rows = QuantGemvRows<X, S, BITS, CHUNK>;
  gemvSimtBody<Y, M, IN>(x, Rows{q, scales, zeros, k, groupSize, groups}, bias, residual, y,
                         partial, counters, n, k, pro, seg);
}

/// The bytes qgemv reads per step of a lane: the largest of 16, 8 and 4
/// that divides a group's bytes; 0 when none does (a group of fewer than 4
/// bytes), which qgemv refuses.
inline int quantChunkBytes(int bits, int groupSize) {
  int groupBytes = groupSize * bits / 8;
  for (int c : {16, 8, 4})
    if (groupBytes % c == 0)
      return c;
  return 0;
}

/// The split count for qgemv (as gemvSplits, over chunks of the row).
inline int qgemvSplits(int n, int k, int bits, int groupSize, int sms) {
  int chunk = quantChunkBytes(bits, groupSize);
  return chunk ? splitCount(n, k / (chunk * 8 / bits), sms) : 1;
}

/// Launches the decode kernel for M rows (1 .. kGemvMaxRows) with x through
/// the prologue IN; when splits > 1, `partial` must hold splits * M * N
/// floats and `counters` be the context's split counters; y in seg's
/// layout (Gemv.h). ROWS: Gemv.h's gemvRowsWanted (0, any M).
template <GemvIn IN, class X, class Y, class S, class B, int BITS, int ROWS = 0>
std::string launchQgemv(const X *x, const GemvPrologue<X, X> &pro, const uint8_t *q, const S *scales,
                        const uint8_t *zeros, const B *bias, const Y *residual, Y *y,
                        float *partial, unsigned *counters, int m, int n, int k, int groupSize,
                        int splits, Stream stream, GemvSegments seg) {
  const char *name = IN == GemvIn::RmsNorm ? "qnormGemv" : IN == GemvIn::Swiglu ? "qswigluGemv"
                                                                               : "qgemv";
  if (m < 1 || m > kGemvMaxRows || n < 1 || k < 1 || groupSize < 1 || splits < 1 ||
      (splits > 1 && !splitWorkspace(partial, counters, n)) ||
      (IN == GemvIn::RmsNorm && !pro.norm) || (IN == GemvIn::Swiglu && !pro.up))
    return std::string(name) + ": invalid arguments";
  if (std::string e = segmentsError(seg, n, residual != nullptr); !e.empty())
    return e;
  if (std::string e = gemvRowsError<ROWS>(name, m); !e.empty())
    return e;
  if (std::string e = gemvSharedError<IN, X>(name, m, k); !e.empty())
    return e;
  size_t shared = gemvSharedBytes<IN, X>(m, k);
  int chunk = quantChunkBytes(BITS, groupSize);
  if (chunk == 0)
    return std::string(name) + ": a group of fewer than 4 bytes";
  int groups = (k + groupSize - 1) / groupSize;
  if constexpr (kTensorCoreType<X> && (ROWS == 0 || ROWS >= kQuantTcMinRows))
    if (qgemvOnTensorCores<X>(m, k, groupSize))
      return launchGemvTcRows<IN, ROWS, kQuantTcMinRows>(
          name, x, pro, QuantTcRows<X, S, BITS>{q, scales, zeros, groupSize, groups}, bias,
          residual, y, partial, counters, m, n, k, splits, stream, seg);
  dim3 grid(ceilDiv(n, kGemvWarps), unsigned(splits));
  dim3 block(kGemvWarps * 32);
  std::string e;
#define LLMC_QGEMV_CASE(R, C)                                                                      \
  case R:                                                                                          \
    if constexpr (gemvRowsWanted<ROWS>(R))                                                         \
      e = launch(qgemvKernel<X, Y, S, B, BITS, C, R, IN>, grid, block, shared, stream, x, q,       \
                 scales, zeros, bias, residual, y, partial, counters, n, k, groupSize, groups,     \
                 pro, seg);                                                                        \
    break;
#define LLMC_QGEMV_ROWS(C)                                                                         \
  switch (m) {                                                                                     \
    LLMC_QGEMV_CASE(1, C)                                                                          \
    LLMC_QGEMV_CASE(2, C)                                                                          \
    LLMC_QGEMV_CASE(3, C)                                                                          \
    LLMC_QGEMV_CASE(4, C)                                                                          \
    LLMC_QGEMV_CASE(5, C)                                                                          \
    LLMC_QGEMV_CASE(6, C)                                                                          \
    LLMC_QGEMV_CASE(7, C)                                                                          \
    LLMC_QGEMV_CASE(8, C)                                                                          \
  }
  if (chunk == 16) {
    LLMC_QGEMV_ROWS(16)
  } else if (chunk == 8) {
    LLMC_QGEMV_ROWS(8)
  } else {
    LLMC_QGEMV_ROWS(4)
  }
#undef LLMC_QGEMV_ROWS
#undef LLMC_QGEMV_CASE
  return e;
}

/// y = x dequant(W)^T (+ bias) (+ residual) for M rows (launchQgemv).
template <class X, class Y, class S, class B, int BITS, int ROWS = 0>
std::string qgemv(const X *x, const uint8_t *q, const S *scales, const uint8_t *zeros, const B *bias,
                  const Y *residual, Y *y, float *partial, unsigned *counters, int m, int n, int k,
                  int groupSize, int splits, Stream stream, GemvSegments seg = {}) {
  return launchQgemv<GemvIn::Plain, X, Y, S, B, BITS, ROWS>(
      x, GemvPrologue<X, X>{}, q, scales, zeros, bias, residual, y, partial, counters, m, n, k,
      groupSize, splits, stream, seg);
}

/// y = rms_norm(x; norm, eps, offset) dequant(W)^T (+ bias) (+ residual),
/// the norm's output rounded to X as llm.rms_norm's would be (Gemv.h's
/// normGemv; norm of X's type).
template <class X, class Y, class S, class B, int BITS, int ROWS = 0>
std::string qnormGemv(const X *x, const X *norm, float eps, float offset, const uint8_t *q,
                      const S *scales, const uint8_t *zeros, const B *bias, const Y *residual,
                      Y *y, float *partial, unsigned *counters, int m, int n, int k, int groupSize,
                      int splits, Stream stream, GemvSegments seg = {}) {
  return launchQgemv<GemvIn::RmsNorm, X, Y, S, B, BITS, ROWS>(
      x, GemvPrologue<X, X>{norm, eps, offset, nullptr}, q, scales, zeros, bias, residual, y,
      partial, counters, m, n, k, groupSize, splits, stream, seg);
}

/// y = swiglu(gate, up) dequant(W)^T (+ bias) (+ residual), silu(gate) * up
/// rounded to X as llm.swiglu's would be (Gemv.h's swigluGemv).
template <class X, class Y, class S, class B, int BITS, int ROWS = 0>
std::string qswigluGemv(const X *gate, const X *up, const uint8_t *q, const S *scales,
                        const uint8_t *zeros, const B *bias, const Y *residual, Y *y,
                        float *partial, unsigned *counters, int m, int n, int k, int groupSize,
                        int splits, Stream stream, GemvSegments seg = {}) {
  return launchQgemv<GemvIn::Swiglu, X, Y, S, B, BITS, ROWS>(
      gate, GemvPrologue<X, X>{nullptr, 0.0f, 0.0f, up}, q, scales, zeros, bias, residual, y,
      partial, counters, m, n, k, groupSize, splits, stream, seg);
}

/// y = (act(gate) * up) dequant(W)^T (+ bias) (+ residual) (Gemv.h's
/// gatedGemv).
template <class X, class Y, class S, class B, int BITS, int ROWS = 0>
std::string qgatedGemv(GateAct act, const X *gate, const X *up, const uint8_t *q, const S *scales,
                       const uint8_t *zeros, const B *bias, const Y *residual, Y *y,
                       float *partial, unsigned *counters, int m, int n, int k, int groupSize,
                       int splits, Stream stream, GemvSegments seg = {}) {
  return launchQgemv<GemvIn::Swiglu, X, Y, S, B, BITS, ROWS>(
      gate, GemvPrologue<X, X>{nullptr, 0.0f, 0.0f, up, act}, q, scales, zeros, bias, residual, y,
      partial, counters, m, n, k, groupSize, splits, stream, seg);
}

/// The largest scratch copy a prefill's quantized linear layer is given
/// (qgemm): 256 MiB, a 7B model's merged gate and up projections in half
/// (172 MiB) but not a 262144-word lm_head (Gemma 3's, 1.3 GB), which
/// runs in the logits' chunks of at most 64 rows a sequence anyway.
constexpr size_t kQuantScratchMaxBytes = size_t(256) << 20;

/// The bytes of qgemm's scratch copy for an [n, k] weight dequantized to
/// `elementBytes`-byte values; 0 past kQuantScratchMaxBytes (no copy).
inline size_t qgemmScratchBytes(int64_t n, int64_t k, int64_t elementBytes) {
  size_t bytes = size_t(n) * size_t(k) * size_t(elementBytes);
  return bytes <= kQuantScratchMaxBytes ? bytes : 0;
}

template <class S, class T, int BITS>
LLMC_GLOBAL void dequantRowsKernel(const uint8_t *q, const S *scales, const uint8_t *zeros, T *out,
                                   int n, int k, int groupSize, int groups) {
  LLMC_KERNEL_BEGIN();
  constexpr int kPerWord = 32 / BITS;
  constexpr unsigned kMask = (1u << BITS) - 1u;
  int words = (k + kPerWord - 1) / kPerWord; // a row's words holding values below K
  size_t i = size_t(blockIdx.x) * size_t(blockDim.x) + size_t(threadIdx.x);
  if (i >= size_t(n) * size_t(words))
    return;
  int row = int(i / size_t(words)), word = int(i % size_t(words));
  size_t rowBytes = size_t(groups) * size_t(groupSize) * BITS / 8;
  const uint8_t *at = q + size_t(row) * rowBytes + size_t(word) * 4;
  unsigned bits = *reinterpret_cast<const unsigned *>(at);
  int k0 = word * kPerWord;
  size_t g = size_t(row) * size_t(groups) + size_t(k0 / groupSize);
  float biasedZero = quantBiasedZero(quantZero<BITS>(zeros, g));
  float scale = toFloat(scales[g]);
  T *dst = out + size_t(row) * size_t(k) + size_t(k0);
  LLMC_UNROLL
  for (int j = 0; j < kPerWord; ++j)
    if (k0 + j < k)
      dst[j] = fromFloat<T>(quantMinusZero((bits >> (j * BITS)) & kMask, biasedZero) * scale);
}

/// Writes W dequantized into `out` ([n, k] of T, row-major), each weight
/// (q - zero) * scale in f32 rounded to T once; the rows of q must be
/// 4-byte aligned (a group's bytes a multiple of 4: quantChunkBytes).
template <class S, class T, int BITS>
std::string dequantRows(const uint8_t *q, const S *scales, const uint8_t *zeros, T *out, int n,
                        int k, int groupSize, Stream stream) {
  if (n < 1 || k < 1 || groupSize < 1 || quantChunkBytes(BITS, groupSize) == 0)
    return "dequantRows: invalid arguments";
  size_t threads = size_t(n) * size_t(ceilDiv(unsigned(k), unsigned(32 / BITS)));
  return launch(dequantRowsKernel<S, T, BITS>, dim3(ceilDiv(threads, 256)), dim3(256), 0, stream,
                q, scales, zeros, out, n, k, groupSize, ceilDiv(unsigned(k), unsigned(groupSize)));
}

/// Launches the prefill (any M): with `scratch` (n * k X's,
/// qgemmScratchBytes), W dequantized into it, then gemm (through `blas`
/// where it takes the shape); without, the tiles that dequantize as they
/// stage W.
template <class X, class Y, class S, class B, int BITS>
std::string qgemm(const X *a, const uint8_t *q, const S *scales, const uint8_t *zeros, const B *bias,
                  const Y *residual, Y *c, int m, int n, int k, int groupSize, X *scratch,
                  Stream stream, Blas *blas = nullptr) {
  if (groupSize < 1 || m < 1 || n < 1 || k < 1)
    return "qgemm: invalid arguments";
  if (scratch) {
    if (std::string e = dequantRows<S, X, BITS>(q, scales, zeros, scratch, n, k, groupSize, stream);
        !e.empty())
      return e;
    if constexpr (std::is_same_v<B, X>)
      return gemm<X, X, Y>(a, scratch, bias, residual, c, m, n, k, stream, blas);
    else if (!bias)
      return gemm<X, X, Y>(a, scratch, static_cast<const X *>(nullptr), residual, c, m, n, k,
                           stream, blas);
    else // (a bias of another type: llmc's tiles)
      return gemmRows<kTensorCoreGemm<X, X>>(a, DenseRows<X>{scratch, k}, bias, residual, c, m, n,
                                             k, stream);
  }
  QuantRows<S, BITS> w{q, scales, zeros, groupSize, (k + groupSize - 1) / groupSize};
  return gemmRows<kTensorCoreType<X>>(a, w, bias, residual, c, m, n, k, stream);
}

template <class S, class Y, int BITS, class I>
LLMC_GLOBAL void quantEmbeddingKernel(const uint8_t *q, const S *scales, const uint8_t *zeros,
                                      const I *ids, Y *out, int64_t vocab, int groupSize,
                                      int groups, unsigned long long *error, const Y *scale) {
  LLMC_KERNEL_BEGIN();
  int64_t id = ids[blockIdx.x];
  int h = groupSize * groups;
  Y *dst = out + size_t(blockIdx.x) * size_t(h);
  bool valid = id >= 0 && id < vocab;
  if (!valid && threadIdx.x == 0)
    recordError(error, kTokenOutOfRange, (long long)blockIdx.x);
  QuantRows<S, BITS> rows{q, scales, zeros, groupSize, groups};
  float sc = scale ? toFloat(*scale) : 1.0f;
  for (int i = int(threadIdx.x); i < h; i += int(blockDim.x)) {
    Y v = fromFloat<Y>(valid ? rows(int(id), i) : 0.0f);
    dst[i] = scale && valid ? fromFloat<Y>(toFloat(v) * sc) : v;
  }
}

/// Launches the gather of n rows; out is [n, groups * groupSize]
/// (`scale`: each value times *scale, or null).
template <class S, class Y, int BITS, class I>
std::string quantEmbedding(const uint8_t *q, const S *scales, const uint8_t *zeros, const I *ids,
                           Y *out, int n, int64_t vocab, int groupSize, int groups,
                           unsigned long long *error, Stream stream, const Y *scale = nullptr) {
  if (n < 1 || vocab < 1 || groupSize < 1 || groups < 1)
    return "quantEmbedding: invalid arguments";
  return launch(quantEmbeddingKernel<S, Y, BITS, I>, dim3(unsigned(n)), dim3(128), 0, stream, q,
                scales, zeros, ids, out, vocab, groupSize, groups, error, scale);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_QUANTGEMV_H
