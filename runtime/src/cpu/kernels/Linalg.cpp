//===- Linalg.cpp - MatMul, Gemm, Einsum and the f32 GEMM core ------------===//
//
// The f32 GEMM (also used for f16/bf16, converted while packing) is blocked:
// B is packed into panels of 16 columns laid out [panel][k][16], A is read in
// rows, and a 6x16 (AVX2+FMA) or 4x16 (baseline SSE) tile of C is
// accumulated in registers with GCC vector extensions; the AVX2 copy is
// chosen at run time. Up to 4 rows of A against a row-major f32 B (a decode
// step) skip the packing and stream B once. Tiles and column blocks are
// shared among the pool's threads. f64 and integer matrices use a plain loop
// accumulating in double / 64-bit integers.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"
#include "runtime/src/cpu/StridedMatmul.h"

#include <algorithm>
#include <map>

namespace llmc::cpu {

namespace {

constexpr int64_t kTileN = 16;
typedef float Vec8 __attribute__((vector_size(32), aligned(4)));

#if defined(__x86_64__) || defined(__i386__)
#define LLMC_X86 1
#define LLMC_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define LLMC_X86 0
#define LLMC_TARGET_AVX2
#endif

/// Whether this CPU runs the AVX2+FMA copies of the inner loops.
bool haveAvx2() {
#if LLMC_X86
  static const bool have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have;
#else
  return false;
#endif
}

/// A read-only matrix view: element (r, c) at data[r * rowStride + c * colStride].
template <typename T> struct MatrixView {
  const T *data;
  int64_t rowStride, colStride;
  float at(int64_t r, int64_t c) const { return float(Num<T>::load(data[r * rowStride + c * colStride])); }
};

/// The packed operands of one product: B in panels [panel][k][16] (zero
/// past N), A as f32 rows with contiguous K.
struct Packed {
  const float *b, *a;
  int64_t m, n, k, panels;
  float *c;
  int64_t ldc;
};

/// Tiles [t0, t1) of MR x 16 of C (tile t: rows (t / panels) * MR, panel
/// t % panels), accumulated over all of K in registers. Inlined into a copy
/// per instruction set.
template <int64_t MR>
inline __attribute__((always_inline)) void gemmTiles(const Packed &p, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    int64_t tm = t / p.panels, panel = t % p.panels;
    int64_t r0 = tm * MR, rows = std::min(MR, p.m - r0);
    Vec8 acc[MR][2] = {};
    const float *bp = p.b + panel * p.k * kTileN;
    const float *ar[MR];
    for (int64_t r = 0; r < MR; ++r)
      ar[r] = p.a + (r0 + std::min(r, rows - 1)) * p.k;
    for (int64_t kk = 0; kk < p.k; ++kk) {
      Vec8 b0, b1;
      std::memcpy(&b0, bp + kk * kTileN, sizeof(Vec8));
      std::memcpy(&b1, bp + kk * kTileN + 8, sizeof(Vec8));
      for (int64_t r = 0; r < MR; ++r) {
        float av = ar[r][kk];
        acc[r][0] += av * b0;
        acc[r][1] += av * b1;
      }
    }
    int64_t cols = std::min(kTileN, p.n - panel * kTileN);
    for (int64_t r = 0; r < rows; ++r) {
      float tmp[kTileN];
      std::memcpy(tmp, &acc[r][0], sizeof(Vec8));
      std::memcpy(tmp + 8, &acc[r][1], sizeof(Vec8));
      std::memcpy(p.c + (r0 + r) * p.ldc + panel * kTileN, tmp, size_t(cols) * sizeof(float));
    }
  }
}

// 6 x 16 tiles keep 12 of the 16 AVX registers as accumulators; baseline
// x86-64 (SSE) has half the register width, so 4 x 16 already fills them.
constexpr int64_t kTileMAvx2 = 6, kTileMBase = 4;
LLMC_TARGET_AVX2 void gemmTilesAvx2(const Packed &p, int64_t t0, int64_t t1) {
  gemmTiles<kTileMAvx2>(p, t0, t1);
}
void gemmTilesBase(const Packed &p, int64_t t0, int64_t t1) { gemmTiles<kTileMBase>(p, t0, t1); }

/// C[r, :] = sum_k A[r, k] B[k, :] for a few rows of A and a row-major B,
/// without packing: B is read once, row segment by row segment, straight
/// from the caller's memory (the decode-step shape, where packing would cost
/// as much as the product). Accumulators for 512 columns stay in L1.
template <int64_t Rows>
inline __attribute__((always_inline)) void gemvColumns(const float *a, int64_t lda,
                                                       const float *b, int64_t ldb, int64_t k,
                                                       float *c, int64_t ldc, int64_t j0,
                                                       int64_t j1) {
  constexpr int64_t kW = 512, kV = kW / 8;
  Vec8 acc[Rows][kV];
  for (int64_t jb = j0; jb < j1; jb += kW) {
    int64_t w = std::min(kW, j1 - jb), vecs = w / 8;
    std::memset(acc, 0, sizeof acc);
    for (int64_t kk = 0; kk < k; ++kk) {
      const float *brow = b + kk * ldb + jb;
      float av[Rows];
      for (int64_t r = 0; r < Rows; ++r)
        av[r] = a[r * lda + kk];
      for (int64_t v = 0; v < vecs; ++v) {
        Vec8 bv;
        std::memcpy(&bv, brow + v * 8, sizeof bv);
        for (int64_t r = 0; r < Rows; ++r)
          acc[r][v] += av[r] * bv;
      }
    }
    for (int64_t r = 0; r < Rows; ++r) {
      std::memcpy(c + r * ldc + jb, acc[r], size_t(vecs) * sizeof(Vec8));
      for (int64_t j = jb + vecs * 8; j < jb + w; ++j) { // the ragged end
        float sum = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          sum += a[r * lda + kk] * b[kk * ldb + j];
        c[r * ldc + j] = sum;
      }
    }
  }
}

template <int64_t Rows>
LLMC_TARGET_AVX2 void gemvColumnsAvx2(const float *a, int64_t lda, const float *b, int64_t ldb,
                                      int64_t k, float *c, int64_t ldc, int64_t j0, int64_t j1) {
  gemvColumns<Rows>(a, lda, b, ldb, k, c, ldc, j0, j1);
}

template <int64_t Rows>
void gemvColumnsBase(const float *a, int64_t lda, const float *b, int64_t ldb, int64_t k,
                     float *c, int64_t ldc, int64_t j0, int64_t j1) {
  gemvColumns<Rows>(a, lda, b, ldb, k, c, ldc, j0, j1);
}

/// Up to this many rows of A, reading B once per 4 rows costs less than
/// packing it.
constexpr int64_t kGemvRows = 12;

/// Whether an f32 product of M rows takes one of the unpacked GEMV paths
/// (which use no scratch): a few rows of A with contiguous K, and B
/// row-major or given as B^T.
bool takesGemv(int64_t m, int64_t k, int64_t aColStride, int64_t bRowStride, int64_t bColStride) {
  return m <= kGemvRows && k > 0 && aColStride == 1 && (bColStride == 1 || bRowStride == 1);
}

/// The unpacked path for a few rows of A (contiguous K) and a row-major B.
void gemvF32(ThreadPool &pool, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
             const float *b, int64_t ldb, float *c, int64_t ldc) {
  using Fn = void (*)(const float *, int64_t, const float *, int64_t, int64_t, float *, int64_t,
                      int64_t, int64_t);
  static const Fn avx2[] = {gemvColumnsAvx2<1>, gemvColumnsAvx2<2>, gemvColumnsAvx2<3>,
                            gemvColumnsAvx2<4>};
  static const Fn base[] = {gemvColumnsBase<1>, gemvColumnsBase<2>, gemvColumnsBase<3>,
                            gemvColumnsBase<4>};
  const Fn *fns = haveAvx2() ? avx2 : base;
  // Blocks of 64 columns, several per chunk, so each thread streams its own
  // share of B's rows; rows of A in groups of up to 4.
  int64_t blocks = (n + 63) / 64;
  pool.parallelFor(blocks, 4, [&](int64_t b0, int64_t b1) {
    for (int64_t r = 0; r < m; r += 4)
      fns[std::min<int64_t>(4, m - r) - 1](a + r * lda, lda, b, ldb, k, c + r * ldc, ldc, b0 * 64,
                                           std::min(n, b1 * 64));
  });
}

/// The calling thread's buffer for packing B, at least `size` floats. It is
/// kept between calls (fresh pages for every product would cost more than
/// the packing: a page fault per 4 KiB) up to 64 Mi floats.
std::vector<float> &packScratch(size_t size) {
  thread_local std::vector<float> scratch;
  constexpr size_t kKeep = size_t(64) << 20;
  if (scratch.size() > kKeep && size <= kKeep)
    std::vector<float>().swap(scratch); // release a one-off giant
  if (scratch.size() < size)
    scratch.resize(size);
  return scratch;
}

/// Dot products of a few rows of A with the rows of B^T (a [N, K] weight, as
/// linear layers store it): columns [j0, j1) of C, K read contiguously.
inline __attribute__((always_inline)) void gemvTransposedColumns(
    int64_t m, int64_t k, const float *a, int64_t lda, const float *bt, int64_t ldbt, float *c,
    int64_t ldc, int64_t j0, int64_t j1) {
  int64_t vecs = k / 8;
  for (int64_t j = j0; j < j1; ++j) {
    const float *w = bt + j * ldbt;
    for (int64_t r = 0; r < m; ++r) {
      const float *x = a + r * lda;
      Vec8 acc[4] = {};
      int64_t v = 0;
      for (; v + 4 <= vecs; v += 4)
        for (int64_t u = 0; u < 4; ++u) {
          Vec8 xv, wv;
          std::memcpy(&xv, x + (v + u) * 8, sizeof xv);
          std::memcpy(&wv, w + (v + u) * 8, sizeof wv);
          acc[u] += xv * wv;
        }
      for (; v < vecs; ++v) {
        Vec8 xv, wv;
        std::memcpy(&xv, x + v * 8, sizeof xv);
        std::memcpy(&wv, w + v * 8, sizeof wv);
        acc[0] += xv * wv;
      }
      Vec8 total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
      float sum = 0;
      for (int lane = 0; lane < 8; ++lane)
        sum += total[lane];
      for (int64_t kk = vecs * 8; kk < k; ++kk)
        sum += x[kk] * w[kk];
      c[r * ldc + j] = sum;
    }
  }
}

LLMC_TARGET_AVX2 void gemvTransposedAvx2(int64_t m, int64_t k, const float *a, int64_t lda,
                                         const float *bt, int64_t ldbt, float *c, int64_t ldc,
                                         int64_t j0, int64_t j1) {
  gemvTransposedColumns(m, k, a, lda, bt, ldbt, c, ldc, j0, j1);
}
void gemvTransposedBase(int64_t m, int64_t k, const float *a, int64_t lda, const float *bt,
                        int64_t ldbt, float *c, int64_t ldc, int64_t j0, int64_t j1) {
  gemvTransposedColumns(m, k, a, lda, bt, ldbt, c, ldc, j0, j1);
}

/// C[M,N] = A[M,K] * B[K,N] in f32, C row-major with row stride ldc.
template <typename TA, typename TB>
void gemmF32(ThreadPool &pool, int64_t m, int64_t n, int64_t k, MatrixView<TA> a, MatrixView<TB> b,
             float *c, int64_t ldc) {
  if constexpr (std::is_same_v<TA, float> && std::is_same_v<TB, float>) {
    if (takesGemv(m, k, a.colStride, b.rowStride, b.colStride) && b.colStride == 1) {
      gemvF32(pool, m, n, k, a.data, a.rowStride, b.data, b.rowStride, c, ldc);
      return;
    }
    if (takesGemv(m, k, a.colStride, b.rowStride, b.colStride)) { // B given as B^T
      auto fn = haveAvx2() ? gemvTransposedAvx2 : gemvTransposedBase;
      pool.parallelFor(n, 16, [&](int64_t j0, int64_t j1) {
        fn(m, k, a.data, a.rowStride, b.data, b.colStride, c, ldc, j0, j1);
      });
      return;
    }
  }
  int64_t panels = (n + kTileN - 1) / kTileN;
  // Pack B: [panel][k][16], zero-padded past N.
  // Blocks of 32 rows of B, each copied into every panel: rows are read
  // whole and each panel gets 2 KiB at a time.
  std::vector<float> &packedB = packScratch(size_t(panels * k * kTileN));
  constexpr int64_t kRowBlock = 32;
  pool.parallelFor((k + kRowBlock - 1) / kRowBlock, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t p = 0; p < panels; ++p) {
      int64_t width = std::min(kTileN, n - p * kTileN);
      float *dst = packedB.data() + p * k * kTileN;
      for (int64_t kk = q0 * kRowBlock; kk < std::min(k, q1 * kRowBlock); ++kk) {
        if constexpr (std::is_same_v<TB, float>)
          if (b.colStride == 1) {
            std::memcpy(dst + kk * kTileN, b.data + kk * b.rowStride + p * kTileN,
                        size_t(width) * sizeof(float));
            continue;
          }
        for (int64_t j = 0; j < width; ++j)
          dst[kk * kTileN + j] = b.at(kk, p * kTileN + j);
        for (int64_t j = width; j < kTileN; ++j)
          dst[kk * kTileN + j] = 0.0f;
      }
    }
  });
  // A as f32 rows (contiguous K).
  float *rowsA = threadScratch<float>(kScratchX, m * k);
  pool.parallelFor(m, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t kk = 0; kk < k; ++kk)
        rowsA[r * k + kk] = a.at(r, kk);
  });
  Packed packed{packedB.data(), rowsA, m, n, k, panels, c, ldc};
  bool avx2 = haveAvx2();
  int64_t tileM = avx2 ? kTileMAvx2 : kTileMBase;
  int64_t tiles = (m + tileM - 1) / tileM * panels;
  pool.parallelFor(tiles, 1, [&](int64_t t0, int64_t t1) {
    if (avx2)
      gemmTilesAvx2(packed, t0, t1);
    else
      gemmTilesBase(packed, t0, t1);
  });
}

/// C[M,N] = A * B for f64 and integers, accumulating in double / int64.
template <typename T>
void gemmGeneric(int64_t m, int64_t n, int64_t k, const T *a, int64_t lda, int64_t acs,
                 const T *b, int64_t ldb, int64_t bcs, T *c, int64_t ldc) {
  using Acc = std::conditional_t<std::is_integral_v<T>, std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, double>;
  Acc *row = threadScratch<Acc>(kScratchSum, n);
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row, row + n, Acc(0));
    for (int64_t kk = 0; kk < k; ++kk) {
      Acc av = Acc(a[i * lda + kk * acs]);
      for (int64_t j = 0; j < n; ++j)
        row[j] += av * Acc(b[kk * ldb + j * bcs]);
    }
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = T(row[j]);
  }
}

/// Y = A' B' for one matrix pair, each operand given with its strides.
template <typename T>
void matmulOne(ThreadPool &pool, int64_t m, int64_t n, int64_t k, const T *a, int64_t ars,
               int64_t acs, const T *b, int64_t brs, int64_t bcs, T *y) {
  if constexpr (std::is_same_v<T, float>) {
    gemmF32<float, float>(pool, m, n, k, {a, ars, acs}, {b, brs, bcs}, y, n);
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    float *tmp = threadScratch<float>(kScratchOut, m * n);
    gemmF32<T, T>(pool, m, n, k, {a, ars, acs}, {b, brs, bcs}, tmp, n);
    for (int64_t i = 0; i < m * n; ++i)
      y[i] = Num<T>::store(tmp[i]);
  } else {
    gemmGeneric<T>(m, n, k, a, ars, acs, b, brs, bcs, y, n);
  }
}

/// llm.linear: y = x W^T (+ b), W [N, K] as PyTorch stores it.
Status linearKernel(KernelCall &call) {
  const Tensor &x = *call.input(0), &w = *call.input(1);
  const Tensor *bias = call.input(2);
  if (x.rank() < 1 || w.rank() != 2 || x.dim(x.rank() - 1) != w.dim(1))
    return call.fail("x " + x.describe() + " and weight " + w.describe() +
                     " do not make x W^T (weight is [N, K])");
  if (w.dtype() != x.dtype() || (bias && bias->dtype() != x.dtype()))
    return call.fail("x, weight and bias must have one element type");
  int64_t n = w.dim(0), k = w.dim(1), m = k ? x.numel() / k : 0;
  if (bias && (bias->rank() != 1 || bias->dim(0) != n))
    return call.fail("bias must be [" + std::to_string(n) + "], got " + bias->describe());
  Shape out = x.shape();
  out.back() = n;
  return visitFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>) {
      Tensor &y = call.outputs[0];
      LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), out, y));
      double *py = y.mutableData<double>();
      gemmGeneric<double>(m, n, k, x.data<double>(), k, 1, w.data<double>(), 1, k, py, n);
      if (bias)
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < n; ++j)
            py[r * n + j] += bias->data<double>()[j];
      return Status::ok();
    }
    float *acc = threadScratch<float>(kScratchOut, m * n);
    if (m > 0 && n > 0)
      gemmF32<T, T>(*call.pool, m, n, k, {x.data<T>(), k, 1}, {w.data<T>(), 1, k}, acc, n);
    if (bias)
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = 0; j < n; ++j)
          acc[r * n + j] += float(Num<T>::load(bias->data<T>()[j]));
    return fromF32(x.dtype(), out, acc, call.outputs[0]);
  });
}

Status matmulKernel(KernelCall &call) {
  const Tensor &a = *call.input(0), &b = *call.input(1);
  if (a.dtype() != b.dtype())
    return call.fail("A and B have different element types");
  if (a.rank() == 0 || b.rank() == 0)
    return call.fail("operands must have rank >= 1");
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k)
    return call.fail("contraction dimensions differ: " + a.describe() + " x " + b.describe());
  Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  Broadcast bc;
  LLMC_RETURN_IF_ERROR(Broadcast::make(call, {&abatch, &bbatch}, bc));
  Shape out = bc.out;
  if (a.rank() > 1)
    out.push_back(m);
  if (b.rank() > 1)
    out.push_back(n);
  Tensor &y = call.outputs[0];
  return visitNumeric(a.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(a.dtype(), out, y));
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T *py = y.mutableData<T>();
    // Element strides of one batch entry (the broadcast strides are in
    // units of whole matrices).
    bc.forRange<2>(0, bc.count, [&](int64_t o, const std::array<int64_t, 2> &in) {
      matmulOne<T>(*call.pool, m, n, k, pa + in[0] * m * k, k, 1, pb + in[1] * k * n, n, 1,
                   py + o * m * n);
    });
    return Status::ok();
  });
}

Status gemmKernel(KernelCall &call) {
  const Tensor &a = *call.input(0), &b = *call.input(1);
  const Tensor *c = call.input(2);
  if (a.rank() != 2 || b.rank() != 2 || a.dtype() != b.dtype())
    return call.fail("A and B must be matrices of one type, got " + a.describe() + " and " +
                     b.describe());
  bool ta = call.attrs->getInt("transA", 0), tb = call.attrs->getInt("transB", 0);
  double alpha = call.attrs->getFloat("alpha", 1.0), beta = call.attrs->getFloat("beta", 1.0);
  int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  int64_t kb = tb ? b.dim(1) : b.dim(0), n = tb ? b.dim(0) : b.dim(1);
  if (k != kb)
    return call.fail("contraction dimensions differ");
  Broadcast cb;
  Shape mn{m, n};
  if (c) {
    if (c->dtype() != a.dtype())
      return call.fail("C must have A's type");
    LLMC_RETURN_IF_ERROR(Broadcast::make(call, {&mn, &c->shape()}, cb));
    if (cb.out != mn)
      return call.fail("C " + c->describe() + " does not broadcast to [M, N]");
  }
  Tensor &y = call.outputs[0];
  return visitNumeric(a.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(a.dtype(), mn, y));
    T *py = y.mutableData<T>();
    matmulOne<T>(*call.pool, m, n, k, a.data<T>(), ta ? 1 : k, ta ? m : 1, b.data<T>(),
                 tb ? 1 : n, tb ? k : 1, py);
    using C = typename Num<T>::C;
    const T *pc = c ? c->data<T>() : nullptr;
    for (int64_t i = 0; i < m * n; ++i) {
      C v = C(double(Num<T>::load(py[i])) * alpha);
      if (pc) {
        int64_t ci = (i / n) * cb.strides[1][0] + (i % n) * cb.strides[1][1];
        v = C(double(v) + beta * double(Num<T>::load(pc[ci])));
      }
      py[i] = Num<T>::store(v);
    }
    return Status::ok();
  });
}

//===----------------------------------------------------------------------===//
// Einsum: a direct loop over every label (test-sized problems)
//===----------------------------------------------------------------------===//

Status einsumKernel(KernelCall &call) {
  std::string eq;
  for (char ch : call.attrs->getString("equation", ""))
    if (ch != ' ')
      eq.push_back(ch);
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t s = 0;;) {
    size_t comma = lhs.find(',', s);
    terms.push_back(lhs.substr(s, comma == std::string::npos ? std::string::npos : comma - s));
    if (comma == std::string::npos)
      break;
    s = comma + 1;
  }
  if (terms.size() != call.inputs.size())
    return call.fail("the equation has " + std::to_string(terms.size()) + " terms for " +
                     std::to_string(call.inputs.size()) + " inputs");
  // Labels: letters, and "0".."9" for ellipsis dims (aligned from the right).
  std::map<char, int64_t> sizes;
  std::map<char, int> uses;
  int64_t ellipsisRank = 0;
  std::vector<std::vector<char>> labels;
  for (size_t t = 0; t < terms.size(); ++t) {
    const Tensor &x = *call.input(t);
    const std::string &term = terms[t];
    size_t dots = term.find("...");
    int64_t letters = int64_t(term.size()) - (dots == std::string::npos ? 0 : 3);
    int64_t er = dots == std::string::npos ? 0 : x.rank() - letters;
    if (er < 0 || (dots == std::string::npos && letters != x.rank()))
      return call.fail("term '" + term + "' does not match " + x.describe());
    ellipsisRank = std::max(ellipsisRank, er);
    std::vector<char> l;
    for (size_t i = 0; i < term.size();) {
      if (term.compare(i, 3, "...") == 0) {
        for (int64_t e = 0; e < er; ++e)
          l.push_back(char('0' + (9 - (er - 1 - e)))); // right-aligned ellipsis labels
        i += 3;
      } else {
        l.push_back(term[i++]);
      }
    }
    for (size_t d = 0; d < l.size(); ++d) {
      int64_t s = x.dim(int64_t(d));
      auto [it, fresh] = sizes.try_emplace(l[d], s);
      if (!fresh && it->second != s) {
        if (it->second == 1)
          it->second = s;
        else if (s != 1)
          return call.fail(std::string("label '") + l[d] + "' has sizes " +
                           std::to_string(it->second) + " and " + std::to_string(s));
      }
      if (std::find(l.begin(), l.begin() + d, l[d]) == l.begin() + d)
        ++uses[l[d]];
    }
    labels.push_back(l);
  }
  std::vector<char> outLabels;
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    for (size_t i = 0; i < rhs.size();) {
      if (rhs.compare(i, 3, "...") == 0) {
        for (int64_t e = 0; e < ellipsisRank; ++e)
          outLabels.push_back(char('0' + (9 - (ellipsisRank - 1 - e))));
        i += 3;
      } else {
        if (!sizes.count(rhs[i]))
          return call.fail(std::string("output label '") + rhs[i] + "' is not an input label");
        outLabels.push_back(rhs[i++]);
      }
    }
  } else {
    for (int64_t e = 0; e < ellipsisRank; ++e)
      outLabels.push_back(char('0' + (9 - (ellipsisRank - 1 - e))));
    for (auto &[ch, n] : uses)
      if (n == 1 && !(ch >= '0' && ch <= '9'))
        outLabels.push_back(ch);
  }
  std::vector<char> all(outLabels);
  for (auto &[ch, s] : sizes)
    if (std::find(all.begin(), all.end(), ch) == all.end())
      all.push_back(ch);
  Shape outShape;
  for (char ch : outLabels)
    outShape.push_back(sizes[ch]);
  const Tensor &first = *call.input(0);
  for (const Tensor *t : call.inputs)
    if (t->dtype() != first.dtype())
      return call.fail("inputs have different element types");
  Tensor &y = call.outputs[0];
  return visitNumeric(first.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_integral_v<typename Num<T>::C>, int64_t, double>;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(first.dtype(), outShape, y));
    Shape value(all.size(), 0);
    std::map<char, size_t> slot;
    for (size_t i = 0; i < all.size(); ++i)
      slot[all[i]] = i;
    std::vector<Shape> strides;
    for (const Tensor *t : call.inputs)
      strides.push_back(stridesOf(t->shape()));
    int64_t total = 1, outCount = std::max<int64_t>(1, y.numel());
    for (char ch : all)
      total *= sizes[ch];
    std::vector<Acc> acc(size_t(outCount), Acc(0));
    for (int64_t flat = 0; flat < total; ++flat) {
      int64_t rest = flat;
      for (int64_t i = int64_t(all.size()) - 1; i >= 0; --i) {
        int64_t s = sizes[all[size_t(i)]];
        value[size_t(i)] = rest % s;
        rest /= s;
      }
      Acc prod = 1;
      for (size_t t = 0; t < call.inputs.size(); ++t) {
        const Tensor &x = *call.input(t);
        int64_t off = 0;
        for (size_t d = 0; d < labels[t].size(); ++d)
          off += (x.dim(int64_t(d)) == 1 ? 0 : value[slot[labels[t][d]]]) * strides[t][d];
        prod *= Acc(Num<T>::load(x.data<T>()[off]));
      }
      int64_t o = 0;
      for (size_t i = 0; i < outLabels.size(); ++i)
        o = o * sizes[outLabels[i]] + value[i];
      acc[size_t(o)] += prod;
    }
    for (int64_t i = 0; i < y.numel(); ++i)
      y.mutableData<T>()[i] = Num<T>::store(typename Num<T>::C(acc[size_t(i)]));
    return Status::ok();
  });
}

} // namespace

void addLinalgKernels(KernelTable &table) {
  table.add("onnx.matmul", matmulKernel);
  table.add("linear", linearKernel);
  table.add("onnx.gemm", gemmKernel);
  table.add("onnx.einsum", einsumKernel);
}

void gemmF32(ThreadPool &pool, int64_t m, int64_t n, int64_t k, const float *a,
             int64_t aRowStride, int64_t aColStride, const float *b, int64_t bRowStride,
             int64_t bColStride, float *c, int64_t ldc) {
  gemmF32<float, float>(pool, m, n, k, {a, aRowStride, aColStride}, {b, bRowStride, bColStride},
                        c, ldc);
}

std::string matmulStrided(ThreadPool &pool, const MatmulStrides &s, const Tensor &a,
                          const Tensor &b, const Tensor &y) {
  DType type = y.dtype();
  if (a.dtype() != type || b.dtype() != type ||
      (type != DType::Float && type != DType::Float16 && type != DType::BFloat16))
    return "operands " + a.describe() + " and " + b.describe() + " and result " + y.describe() +
           " must share one type, f32, f16 or bf16";
  if (s.m < 1 || s.n < 1 || s.k < 0 || s.rank < 0 || s.rank > MatmulStrides::kBatchDims)
    return "bad product layout (M " + std::to_string(s.m) + ", N " + std::to_string(s.n) +
           ", K " + std::to_string(s.k) + ", " + std::to_string(s.rank) + " batch dimensions)";
  // The last element each operand's layout reads, against its size (no
  // stride is negative: every read lies in [0, last]).
  int64_t batches = 1, lastA = (s.m - 1) * s.aRow, lastB = (s.n - 1) * s.bCol;
  bool negative = s.aRow < 0 || s.aCol < 0 || s.bRow < 0 || s.bCol < 0;
  for (int64_t d = 0; d < s.rank; ++d) {
    if (s.dims[d] < 1 || s.aBatch[d] < 0 || s.bBatch[d] < 0)
      negative = true;
    batches *= s.dims[d];
    lastA += (s.dims[d] - 1) * s.aBatch[d];
    lastB += (s.dims[d] - 1) * s.bBatch[d];
  }
  if (s.k > 0) {
    lastA += (s.k - 1) * s.aCol;
    lastB += (s.k - 1) * s.bRow;
  }
  if (negative || (s.k > 0 && (lastA >= a.numel() || lastB >= b.numel())))
    return "the product's layout reads outside its operands " + a.describe() + " and " +
           b.describe();
  if (y.numel() != batches * s.m * s.n)
    return "result " + y.describe() + " does not hold " + std::to_string(batches) +
           " products of " + std::to_string(s.m) + " x " + std::to_string(s.n);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T *py = y.mutableData<T>();
    auto one = [&](int64_t i) {
      int64_t offA = 0, offB = 0, rest = i;
      for (int64_t d = s.rank - 1; d >= 0; --d) {
        int64_t at = rest % s.dims[d];
        rest /= s.dims[d];
        offA += at * s.aBatch[d];
        offB += at * s.bBatch[d];
      }
      matmulOne<T>(pool, s.m, s.n, s.k, pa + offA, s.aRow, s.aCol, pb + offB, s.bRow, s.bCol,
                   py + i * s.m * s.n);
    };
    // Products of a few rows (a decode step's scores of each head, and its
    // sum of the values, whose N of a head's width is one block of the
    // GEMV) share the pool among batch entries when there are enough of
    // them: those take the GEMV paths, which use no scratch (a worker's
    // would grow whenever it first took a larger product). Others each use
    // the whole pool.
    bool gemv = std::is_same_v<T, float> && takesGemv(s.m, s.k, s.aCol, s.bRow, s.bCol);
    if (batches > 1 && gemv && (batches >= int64_t(pool.size()) || s.n <= 64))
      pool.parallelFor(batches, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          one(i);
      });
    else
      for (int64_t i = 0; i < batches; ++i)
        one(i);
  };
  if (type == DType::Float)
    run(float());
  else if (type == DType::Float16)
    run(Half());
  else
    run(BFloat16());
  return "";
}

} // namespace llmc::cpu
