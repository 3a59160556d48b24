//===- CudaWgmmaTest.cpp - sm_90a's wgmma against float64 -----------------===//
//
// Wgmma.h's layouts (the register fragments and the no-swizzle shared
// operands PTX documents) and its ordering, on the emulation and, built for
// sm_90a (scripts/test-gpu.sh on a compute capability 9.0 GPU), on the
// tensor cores: the GPU run holds the emulation to the instruction.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/Wgmma.h"
#include "test/unit/CudaTestUtil.h"

#include <cmath>
#include <cstdlib>
#include <string>

using namespace llmc::cuda;
using namespace llmc::cuda::test;

namespace {

constexpr int kK = 32; // two k-steps: the descriptors advance

/// Where the test puts the operands' core matrices: strides with padding,
/// A's row groups outer and B's k groups outer, so a wrong stride or a
/// swapped pair reads other values.
struct Strides {
  uint32_t lboA, sboA, lboB, sboB;
  size_t aBytes, bBytes;
};
Strides stridesFor(int n) {
  Strides s{};
  s.lboA = 128, s.sboA = (kK / 8) * 128 + 32;
  s.lboB = uint32_t(n / 8) * 128 + 48, s.sboB = 128;
  s.aBytes = size_t(7) * s.sboA + size_t(kK / 8 - 1) * s.lboA + 128;
  s.bBytes = size_t(kK / 8 - 1) * s.lboB + size_t(n / 8 - 1) * s.sboB + 128;
  s.aBytes = (s.aBytes + 127) / 128 * 128;
  return s;
}

/// One warpgroup: d [64][N] = c + a [64][K] b, with b given as [N][K]
/// (K-major in shared memory) or, with TransB, as [K][N] (MN-major: V's
/// rows in the attention); A from shared memory, or with RegA from each
/// warp's registers (mma16816's A fragment, as P is in the attention). The
/// first k-step accumulates into c when `withC`, else starts from zero
/// over registers filled with garbage.
template <int N, class T, bool TransB, bool RegA>
LLMC_GLOBAL void wgmmaKernel(const T *a, const T *b, const float *c, float *d, Strides st,
                             bool withC) {
  LLMC_KERNEL_BEGIN();
  if constexpr (!wg::kWgmma) {
    __trap(); // not built for sm_90a: the test does not launch it (wg::wgmmaBuilt())
  } else {
    LLMC_DYNAMIC_SHARED(unsigned char, smem);
    unsigned char *sa = smem, *sb = smem + st.aBytes;
    int tid = int(threadIdx.x), lane = tid % 32, w = tid / 32, g = lane / 4, t = lane % 4;
    for (int e = tid; e < 64 * kK; e += 128) {
      int r = e / kK, k = e % kK;
      *reinterpret_cast<T *>(sa + (r % 8) * 16 + (r / 8) * st.sboA + (k % 8) * 2 +
                             (k / 8) * st.lboA) = a[e];
    }
    for (int e = tid; e < N * kK; e += 128) {
      int k = TransB ? e / N : e % kK, n = TransB ? e % N : e / kK;
      size_t at = TransB ? (k % 8) * 16 + (k / 8) * st.lboB + (n % 8) * 2 + (n / 8) * st.sboB
                         : (n % 8) * 16 + (n / 8) * st.sboB + (k % 8) * 2 + (k / 8) * st.lboB;
      *reinterpret_cast<T *>(sb + at) = b[e];
    }
    wg::fenceProxyAsync();
    __syncthreads();
    float acc[N / 2];
    for (int i = 0; i < N / 2; ++i) {
      int row = 16 * w + g + 8 * (i / 2 % 2), col = 8 * (i / 4) + 2 * t + i % 2;
      acc[i] = withC ? c[row * N + col] : 1e30f;
    }
    // Every k-step's A fragments first (wgmma reads them until the wait).
    unsigned fa[kK / 16][4];
    for (int s = 0; s < kK / 16; ++s)
      for (int r = 0; r < 4; ++r) {
        int row = 16 * w + g + 8 * (r % 2), k = 16 * s + 2 * t + 8 * (r / 2);
        fa[s][r] = tc::pack(a[row * kK + k], a[row * kK + k + 1]);
      }
    wg::fenceOperand(acc);
    wg::fenceOperand(fa);
    wg::fence();
    for (int s = 0; s < kK / 16; ++s) {
      uint64_t db = wg::advance(wg::smemDesc(sb, st.lboB, st.sboB), uint32_t(s) * 2 * st.lboB);
      if constexpr (RegA) {
        wg::mmaRS<N, T, TransB>(acc, fa[s], db, s > 0 || withC);
      } else {
        uint64_t da = wg::advance(wg::smemDesc(sa, st.lboA, st.sboA), uint32_t(s) * 2 * st.lboA);
        wg::mmaSS<N, T, TransB>(acc, da, db, s > 0 || withC);
      }
    }
    wg::commit();
    wg::wait<0>();
    wg::fenceOperand(acc);
    wg::fenceOperand(fa);
    for (int i = 0; i < N / 2; ++i) {
      int row = 16 * w + g + 8 * (i / 2 % 2), col = 8 * (i / 4) + 2 * t + i % 2;
      d[row * N + col] = acc[i];
    }
  }
}

template <int N, class T, bool TransB, bool RegA> void checkWgmma(bool withC, unsigned seed) {
  SCOPED_TRACE("N=" + std::to_string(N) + " transB=" + std::to_string(TransB) +
               " regA=" + std::to_string(RegA) + " withC=" + std::to_string(withC));
  auto a = randomValues<T>(64 * kK, 1.0f, seed);
  auto b = randomValues<T>(size_t(N) * kK, 1.0f, seed + 1);
  auto c = randomValues<float>(size_t(64) * N, 1.0f, seed + 2);
  DeviceBuffer<T> da(a), db(b);
  DeviceBuffer<float> dc(c), dd(size_t(64) * N);
  Strides st = stridesFor(N);
  ASSERT_EQ(launchWithShared(wgmmaKernel<N, T, TransB, RegA>, dim3(1), dim3(128),
                             st.aBytes + st.bBytes, nullptr, da.get(), db.get(), dc.get(),
                             dd.get(), st, withC),
            "");
  auto ad = widen(a), bd = widen(b);
  std::vector<double> want(size_t(64) * N);
  for (int i = 0; i < 64; ++i)
    for (int n = 0; n < N; ++n) {
      double sum = withC ? c[size_t(i * N + n)] : 0.0;
      for (int k = 0; k < kK; ++k)
        sum += ad[size_t(i * kK + k)] * (TransB ? bd[size_t(k * N + n)] : bd[size_t(n * kK + k)]);
      want[size_t(i * N + n)] = sum;
    }
  std::vector<float> got = dd.download();
  EXPECT_LE(relativeError(got, want), kF32Tolerance);
  // Where it is wrong (on a GPU: which rows and columns, and so which
  // stride or fragment slot, the instruction reads otherwise).
  int shown = 0;
  for (int i = 0; i < 64 && shown < 6; ++i)
    for (int n = 0; n < N && shown < 6; ++n) {
      double g = got[size_t(i * N + n)], w = want[size_t(i * N + n)];
      if (!(std::fabs(g - w) <= 1e-3 * (1.0 + std::fabs(w))))
        ADD_FAILURE() << "D(" << i << ", " << n << ") = " << g << ", want " << w
                      << (++shown == 6 ? " (and maybe more)" : "");
    }
}

template <class T> void checkAllForms(unsigned seed) {
  checkWgmma<64, T, false, false>(true, seed);
  checkWgmma<64, T, true, false>(false, seed + 10);
  checkWgmma<128, T, false, false>(false, seed + 20);
  checkWgmma<128, T, true, false>(true, seed + 30);
  checkWgmma<64, T, false, true>(false, seed + 40);
  checkWgmma<64, T, true, true>(true, seed + 50);
  checkWgmma<128, T, false, true>(true, seed + 60);
  checkWgmma<128, T, true, true>(false, seed + 70);
}

// The fragments and shared layouts PTX documents, for both operand types,
// both majors of B, A from shared memory and from registers, N 64 and 128,
// accumulating into given values and from zero.
TEST(CudaWgmma, ProductsAsPtxLaysThemOut) {
  if (!wg::wgmmaBuilt())
    GTEST_SKIP() << "this device code has no wgmma (it is built for sm_90a only)";
  checkAllForms<half>(81);
  checkAllForms<bfloat16>(82);
}

// The kernels' wgmma forms are taken only with LLMC_CUDA_WGMMA=1 (slower
// than the mma.sync ones on an H200; there to compare and to work on).
TEST(CudaWgmma, TurnedOnByTheEnvironment) {
  const char *before = std::getenv("LLMC_CUDA_WGMMA");
  std::string saved = before ? before : "";
  setenv("LLMC_CUDA_WGMMA", "0", 1);
  EXPECT_FALSE(wg::wgmmaEnabled());
  setenv("LLMC_CUDA_WGMMA", "1", 1);
  EXPECT_EQ(wg::wgmmaEnabled(), wg::wgmmaBuilt());
  unsetenv("LLMC_CUDA_WGMMA");
  EXPECT_FALSE(wg::wgmmaEnabled());
  if (before)
    setenv("LLMC_CUDA_WGMMA", saved.c_str(), 1);
}

#if LLMC_CUDA_EMULATED
/// Reads the accumulators after the commit but before the wait: undefined
/// on the GPU, NaN on the emulation (so a kernel that forgets the wait
/// fails its tests there).
LLMC_GLOBAL void earlyReadKernel(const half *a, float *d) {
  LLMC_KERNEL_BEGIN();
  LLMC_DYNAMIC_SHARED(unsigned char, smem);
  int tid = int(threadIdx.x);
  for (int e = tid; e < 64 * 16 * 2; e += 128) // A [64][16] and B [64][16], K-major
    reinterpret_cast<half *>(smem)[e] = a[e % (64 * 16)];
  __syncthreads();
  float acc[32] = {};
  uint64_t da = wg::smemDesc(smem, 128, 256), db = wg::smemDesc(smem + 2048, 128, 256);
  wg::fence();
  wg::mmaSS<64, half, false>(acc, da, db, true);
  wg::commit();
  d[tid] = acc[0];
  wg::wait<0>();
  d[128 + tid] = acc[0];
}

TEST(CudaEmu, WgmmaAccumulatorsAreUndefinedUntilTheWait) {
  DeviceBuffer<half> da(std::vector<half>(64 * 16, fromFloat<half>(0.5f)));
  DeviceBuffer<float> dd(256);
  ASSERT_EQ(launchWithShared(earlyReadKernel, dim3(1), dim3(128), 4096, nullptr, da.get(),
                             dd.get()),
            "");
  auto d = dd.download();
  for (int i = 0; i < 128; ++i) {
    EXPECT_TRUE(std::isnan(d[size_t(i)])) << i;
    EXPECT_EQ(d[size_t(128 + i)], 4.0f) << i; // 16 products of 0.5 * 0.5
  }
}

/// The misuses the emulation refuses (on the GPU they give garbage, or
/// hang): A and B (64 x 16, K-major) by cp.async, then one wgmma.
enum Misuse {
  kNone,
  kNoFence,          // no wgmma.fence before the wgmma
  kNoProxyFence,     // cp.async's writes read by wgmma with no fence.proxy.async
  kOtherDescriptor,  // half the warpgroup names another B
  kSkipped,          // half the warpgroup issues no wgmma
  kOperandChanged,   // a shared operand written between the issue and the wait
  kAccumulatorWritten, // an accumulator written between the issue and the wait
  kRegisterAWritten    // register A (a wgmma from registers) written before the wait
};
LLMC_GLOBAL void misuseKernel(const half *src, float *d, int mode) {
  LLMC_KERNEL_BEGIN();
  LLMC_DYNAMIC_SHARED(unsigned char, smem);
  int tid = int(threadIdx.x);
  for (int c = tid; c < 256; c += 128)
    asyncCopy16(smem + 16 * c, src + 8 * c, true);
  asyncCommit();
  asyncWait<0>();
  if (mode != kNoProxyFence)
    wg::fenceProxyAsync();
  __syncthreads();
  float acc[32] = {};
  uint64_t da = wg::smemDesc(smem, 128, 256), db = wg::smemDesc(smem + 2048, 128, 256);
  if (mode == kOtherDescriptor && tid >= 64)
    db = da;
  if (mode != kNoFence)
    wg::fence();
  unsigned ra[4] = {0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u}; // ones
  if (mode == kRegisterAWritten)
    wg::mmaRS<64, half, false>(acc, ra, db, true);
  else if (mode != kSkipped || tid < 64)
    wg::mmaSS<64, half, false>(acc, da, db, true);
  wg::commit();
  if (mode == kRegisterAWritten)
    ra[1] = 0;
  if (mode == kOperandChanged && tid == 0)
    reinterpret_cast<half *>(smem)[0] = fromFloat<half>(3.0f);
  if (mode == kAccumulatorWritten)
    acc[0] = 1.0f;
  wg::wait<0>();
  d[tid] = acc[0];
}

TEST(CudaEmu, WgmmaMisusesAreReported) {
  DeviceBuffer<half> src(randomValues<half>(64 * 16 * 2, 1.0f, 83));
  DeviceBuffer<float> d(128);
  auto run = [&](Misuse m) {
    return launchWithShared(misuseKernel, dim3(1), dim3(128), 4096, nullptr, src.get(), d.get(),
                            int(m));
  };
  EXPECT_EQ(run(kNone), "");
  auto expect = [&](Misuse m, const std::string &what) {
    std::string e = run(m);
    EXPECT_NE(e.find(what), std::string::npos) << "misuse " << int(m) << ": " << e;
  };
  expect(kNoFence, "no wgmma.fence");
  expect(kNoProxyFence, "no fence.proxy.async");
  expect(kOtherDescriptor, "issue different wgmmas");
  expect(kSkipped, "wgmmas, the first of its warpgroup");
  expect(kOperandChanged, "shared operands changed between its issue and its wait");
  expect(kAccumulatorWritten, "accumulators were written between its issue and its wait");
  expect(kRegisterAWritten, "A registers were written between its issue and its wait");
}
#endif

} // namespace
