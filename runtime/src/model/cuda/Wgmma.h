//===- Wgmma.h - sm_90a's warpgroup MMA (wgmma) for the GPU and the host ---===//
//
// Hopper's asynchronous tensor-core product, for kernels that build with
// Cuda.h: a warpgroup (4 consecutive warps, 128 threads, warp w % 4 = i
// holding rows 16 i .. 16 i + 15) computes D (64 x N, f32, in registers)
// += A (64 x 16) B (16 x N) with A and B in shared memory, or A in
// registers. Only code built for sm_90a has it (kWgmma; on the device
// wgmmaBuilt() says whether the code running has it); elsewhere the
// functions below do nothing, and kernels must not be launched there.
//
// Layouts (PTX ISA, "Register Fragments and Shared Memory Matrix Layouts"),
// with g = lane / 4, t = lane % 4 and n8 = 8-column chunk i of N:
//   D    d[4 i + 0, 1] = D(16 w + g, 8 i + 2 t + 0, 1)
//        d[4 i + 2, 3] = D(16 w + g + 8, 8 i + 2 t + 0, 1)   (N / 2 floats)
//   A in registers: mma16816's A fragment of the warp's 16 rows: a[0]
//        (g, 2t .. 2t + 1), a[1] rows g + 8, a[2] columns 2t + 8, a[3] both
//        (two 16-bit values a register, the lower column in the low half)
//   Shared operands, no swizzle ("interleaved"): 8 x 8 core matrices of
//   16-bit values, each 128 contiguous bytes of eight 16-byte rows; the
//   descriptor (smemDesc) holds the start and two strides in bytes:
//     K-major (A [M][K], or B as [N][K]: K contiguous in a core row):
//       element (r, k) at start + (r % 8) 16 + (r / 8) sbo
//                                + (k % 8) 2 + (k / 8) lbo
//     MN-major (B as [K][N], transB: N contiguous in a core row):
//       element (k, n) at start + (k % 8) 16 + (k / 8) lbo
//                                + (n % 8) 2 + (n / 8) sbo
//   advance(desc, bytes) moves the start (the next k-step).
//
// Ordering (as PTX requires): fence() before a warpgroup's first wgmma
// and after its registers were touched by other code; wgmmas then
// commit() as a group; wait<N>() leaves at most N groups in flight, and
// only then may the accumulators (and A's registers) be read or written.
// fenceOperand(d) keeps the compiler from moving other accesses of d
// across the asynchronous window. Shared memory written by threads
// (stores, cp.async) is made visible to wgmma by fenceProxyAsync() and a
// barrier.
//
// The emulation (runtime/src/cudaemu, wgmmaIssue) computes each thread's
// accumulators at the issue and again at the wait that releases them,
// decoding the same descriptors (only the no-swizzle layout; operands must
// lie in the dynamic shared memory), and fails where the two differ (shared
// operands changed in flight); until the wait they hold NaNs, so reading
// them early gives NaNs, and writing them fails. It also fails a wgmma
// with no fence() since the thread's last wait, threads of a warpgroup
// issuing different wgmmas (or different numbers of them), a shared
// operand that cp.async wrote with no fenceProxyAsync() by its writer
// since, and register A changed between the issue and the wait (it is read
// at the issue).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_WGMMA_H
#define LLMC_RUNTIME_MODEL_CUDA_WGMMA_H

#include "runtime/src/model/cuda/Cuda.h"

#include <array>
#include <atomic>

namespace llmc::cuda::wg {

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LLMC_WGMMA 1
#else
#define LLMC_WGMMA 0
#endif
/// Whether the code being compiled has wgmma: sm_90a device code, and the
/// host (the emulation, and nvcc's host pass, which compiles no kernel
/// body).
constexpr bool kWgmma = LLMC_WGMMA;

/// matrix-descriptor-encode(x) of PTX.
LLMC_HOST_DEVICE uint64_t encode(uint32_t x) { return uint64_t((x & 0x3FFFFu) >> 4); }

/// The descriptor start + bytes (16-byte multiples; the start stays in
/// its 14-bit field: shared addresses are below 256 KiB).
LLMC_HOST_DEVICE uint64_t advance(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

#if defined(__CUDACC__)

/// A no-swizzle shared-memory operand at p (16-byte aligned) with strides
/// lbo and sbo in bytes (see the top of this file).
LLMC_DEVICE uint64_t smemDesc(const void *p, uint32_t lbo, uint32_t sbo) {
  uint32_t at = uint32_t(__cvta_generic_to_shared(p));
  return encode(at) | encode(lbo) << 16 | encode(sbo) << 32;
}

LLMC_DEVICE void fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
LLMC_DEVICE void commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
template <int N> LLMC_DEVICE void wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}
LLMC_DEVICE void fenceProxyAsync() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
template <int N> LLMC_DEVICE void fenceOperand(float (&d)[N]) {
  LLMC_UNROLL
  for (int i = 0; i < N; ++i)
    asm volatile("" : "+f"(d[i])::"memory");
}
/// The same for register A fragments (steps of four registers).
template <int M> LLMC_DEVICE void fenceOperand(unsigned (&a)[M][4]) {
  LLMC_UNROLL
  for (int i = 0; i < M; ++i)
    LLMC_UNROLL
    for (int j = 0; j < 4; ++j)
      asm volatile("" : "+r"(a[i][j])::"memory");
}

// The instructions for N = 64 and 128 and the operand type TY ("f16" or
// "bf16"): d's N / 2 registers (LLMC_WGMMA_REGS_ and _D_ their operand
// names and constraints), then A's descriptor (or four registers), B's
// descriptor, whether to accumulate (scale-d), and trans-b.
#define LLMC_WGMMA_REGS_32                                                                         \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16,"                     \
  "%17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define LLMC_WGMMA_REGS_64                                                                         \
  LLMC_WGMMA_REGS_32 ","                                                                           \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46,"                     \
  "%47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61,"                     \
  "%62, %63"
#define LLMC_WGMMA_D_32                                                                            \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),                          \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),                        \
  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),                                 \
  "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),                                 \
  "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]),                                 \
  "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define LLMC_WGMMA_D_64                                                                            \
  LLMC_WGMMA_D_32,                                                                                 \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),                                 \
  "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),                                 \
  "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]),                                 \
  "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),                                 \
  "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),                                 \
  "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),                                 \
  "+f"(d[62]), "+f"(d[63])
#define LLMC_WGMMA_SS_64(TY)                                                                       \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                        \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" LLMC_WGMMA_REGS_32     \
               "}, %32, %33, p, 1, 1, 0, %35;\n}\n"                                                \
               : LLMC_WGMMA_D_32                                                                   \
               : "l"(descA), "l"(descB), "r"(int(accumulate)), "n"(int(TransB)))
#define LLMC_WGMMA_RS_64(TY)                                                                       \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                        \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" LLMC_WGMMA_REGS_32     \
               "}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"                                  \
               : LLMC_WGMMA_D_32                                                                   \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(descB),                           \
                 "r"(int(accumulate)), "n"(int(TransB)))
#define LLMC_WGMMA_SS_128(TY)                                                                      \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                        \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" LLMC_WGMMA_REGS_64    \
               "}, %64, %65, p, 1, 1, 0, %67;\n}\n"                                                \
               : LLMC_WGMMA_D_64                                                                   \
               : "l"(descA), "l"(descB), "r"(int(accumulate)), "n"(int(TransB)))
#define LLMC_WGMMA_RS_128(TY)                                                                      \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                        \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" LLMC_WGMMA_REGS_64    \
               "}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"                                  \
               : LLMC_WGMMA_D_64                                                                   \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(descB),                           \
                 "r"(int(accumulate)), "n"(int(TransB)))

/// d (64 x N) += A B, or = A B when !accumulate; A K-major at descA, B
/// K-major at descB, or MN-major with TransB. N 64 or 128; T half or
/// bfloat16.
template <int N, class T, bool TransB>
LLMC_DEVICE void mmaSS(float (&d)[N / 2], uint64_t descA, uint64_t descB, bool accumulate) {
  static_assert((N == 64 || N == 128) && sizeof(T) == 2, "N 64 or 128, 16-bit operands");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool kHalf = std::is_same_v<T, half>;
  if constexpr (N == 64 && kHalf)
    LLMC_WGMMA_SS_64("f16");
  else if constexpr (N == 64)
    LLMC_WGMMA_SS_64("bf16");
  else if constexpr (kHalf)
    LLMC_WGMMA_SS_128("f16");
  else
    LLMC_WGMMA_SS_128("bf16");
#else
  (void)d, (void)descA, (void)descB, (void)accumulate;
#endif
}

/// The same with A from registers (the warp's mma16816 A fragment).
template <int N, class T, bool TransB>
LLMC_DEVICE void mmaRS(float (&d)[N / 2], const unsigned (&a)[4], uint64_t descB,
                       bool accumulate) {
  static_assert((N == 64 || N == 128) && sizeof(T) == 2, "N 64 or 128, 16-bit operands");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool kHalf = std::is_same_v<T, half>;
  if constexpr (N == 64 && kHalf)
    LLMC_WGMMA_RS_64("f16");
  else if constexpr (N == 64)
    LLMC_WGMMA_RS_64("bf16");
  else if constexpr (kHalf)
    LLMC_WGMMA_RS_128("f16");
  else
    LLMC_WGMMA_RS_128("bf16");
#else
  (void)d, (void)a, (void)descB, (void)accumulate;
#endif
}

/// Whether the device code running has wgmma (kWgmma in the code the
/// driver picked: sm_90a SASS on a compute capability 9.0 device; not the
/// compute_90 PTX on a later one), for the current device. Asked once per
/// device, by a kernel launch: call it before any graph is captured
/// (DeviceModel does).
template <int> __global__ void probeKernel(int *out) { *out = kWgmma ? 1 : 0; }
inline bool wgmmaBuilt() {
  constexpr int kDevices = 64;
  static std::atomic<int> known[kDevices]; // 0 unknown, 1 no, 2 yes
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0)
    return false;
  if (device < kDevices && known[device].load() != 0)
    return known[device].load() == 2;
  int *flag = nullptr, got = 0;
  if (cudaMalloc(&flag, sizeof(int)) != cudaSuccess)
    return false;
  probeKernel<0><<<1, 1>>>(flag);
  bool ok = cudaGetLastError() == cudaSuccess &&
            cudaMemcpy(&got, flag, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(flag);
  bool yes = ok && got == 1;
  if (device < kDevices)
    known[device].store(yes ? 2 : 1);
  return yes;
}

#else // the host emulation

/// The descriptor of a no-swizzle operand at p, which must lie in the
/// block's dynamic shared memory (its address there: its offset).
inline uint64_t smemDesc(const void *p, uint32_t lbo, uint32_t sbo) {
  if (!::llmc::cudaemu::inDynamicShared(p, 16))
    ::llmc::cudaemu::fail("wgmma operand outside the block's dynamic shared memory");
  auto at = uint32_t(reinterpret_cast<const unsigned char *>(p) - ::llmc::cudaemu::dynamicShared());
  if (at % 16 || lbo % 16 || sbo % 16)
    ::llmc::cudaemu::fail("wgmma operand or stride not 16-byte aligned");
  return encode(at) | encode(lbo) << 16 | encode(sbo) << 32;
}

inline void fence() { ::llmc::cudaemu::wgmmaFence(); }
inline void commit() { ::llmc::cudaemu::wgmmaCommit(); }
template <int N> void wait() { ::llmc::cudaemu::wgmmaWait(N); }
inline void fenceProxyAsync() { ::llmc::cudaemu::proxyFence(); }
template <int N> void fenceOperand(float (&)[N]) {}
template <int M> void fenceOperand(unsigned (&)[M][4]) {}
inline bool wgmmaBuilt() { return true; }

/// A shared operand as its descriptor gives it (the no-swizzle layout).
struct Operand {
  const unsigned char *start;
  uint32_t lbo, sbo;
};
inline Operand decode(uint64_t desc) {
  if (desc >> 62)
    ::llmc::cudaemu::fail("wgmma descriptor with a swizzle mode (the emulation has the "
                          "no-swizzle layout only)");
  if (desc >> 49 & 7u)
    ::llmc::cudaemu::fail("wgmma descriptor with a base offset");
  return {::llmc::cudaemu::dynamicShared() + ((desc & 0x3FFFu) << 4),
          uint32_t(desc >> 16 & 0x3FFFu) << 4, uint32_t(desc >> 32 & 0x3FFFu) << 4};
}
/// Element (r, k) of a K-major operand, (k, n) of an MN-major one.
inline const unsigned char *kMajor(const Operand &o, int r, int k) {
  return o.start + (r % 8) * 16 + size_t(r / 8) * o.sbo + (k % 8) * 2 + size_t(k / 8) * o.lbo;
}
inline const unsigned char *mnMajor(const Operand &o, int k, int n) {
  return o.start + (k % 8) * 16 + size_t(k / 8) * o.lbo + (n % 8) * 2 + size_t(n / 8) * o.sbo;
}
template <class T> float element(const unsigned char *p) {
  if (!::llmc::cudaemu::inDynamicShared(p, 2))
    ::llmc::cudaemu::fail("wgmma operand reaches past the block's dynamic shared memory");
  if (::llmc::cudaemu::unfencedShared(p))
    ::llmc::cudaemu::fail("wgmma reads shared memory that cp.async wrote, with no "
                          "fence.proxy.async (wg::fenceProxyAsync()) by its writer since");
  T v;
  std::memcpy(&v, p, 2);
  return toFloat(v);
}

/// What must be the same across a warpgroup for one wgmma: the form (1:
/// A from shared memory, 2: from registers), shape, types, descriptors and
/// scale-d, folded into one word.
template <int N, class T, bool TransB>
uint64_t signature(int form, uint64_t descA, uint64_t descB, bool accumulate) {
  uint64_t h = uint64_t(form) | uint64_t(N) << 2 | uint64_t(std::is_same_v<T, half>) << 11 |
               uint64_t(TransB) << 12 | uint64_t(accumulate) << 13;
  for (uint64_t x : {descA, descB})
    h = (h ^ x) * 0x9E3779B97F4A7C15ull;
  return h;
}

/// Queues the thread's accumulators of d += A B, A(row, k) from aAt.
template <int N, class T, bool TransB, class AAt>
void issue(float (&d)[N / 2], AAt aAt, uint64_t descB, bool accumulate, uint64_t sig) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256 && sizeof(T) == 2, "m64nNk16 shapes");
  Operand b = decode(descB);
  const ::llmc::cudaemu::Fiber &f = *::llmc::cudaemu::self();
  int w = int(f.warp % 4), g = int(f.lane / 4), t = int(f.lane % 4);
  auto compute = [=](const float *in, float *out) {
    for (int i = 0; i < N / 2; ++i) {
      int row = 16 * w + g + 8 * (i / 2 % 2), col = 8 * (i / 4) + 2 * t + i % 2;
      float s = in[i];
      for (int k = 0; k < 16; ++k)
        s = std::fma(aAt(row, k),
                     element<T>(TransB ? mnMajor(b, k, col) : kMajor(b, col, k)), s);
      out[i] = s;
    }
  };
  ::llmc::cudaemu::wgmmaIssue(d, N / 2, accumulate, sig, compute);
}

template <int N, class T, bool TransB>
void mmaSS(float (&d)[N / 2], uint64_t descA, uint64_t descB, bool accumulate) {
  Operand a = decode(descA);
  issue<N, T, TransB>(d, [=](int row, int k) { return element<T>(kMajor(a, row, k)); }, descB,
                      accumulate, signature<N, T, TransB>(1, descA, descB, accumulate));
}

/// Register A: every lane offers its four registers; each takes the
/// warp's 16 rows (as mma16816 does).
template <int N, class T, bool TransB>
void mmaRS(float (&d)[N / 2], const unsigned (&a)[4], uint64_t descB, bool accumulate) {
  uint64_t words[2][32];
  const uint64_t mine[2] = {uint64_t(a[0]) | uint64_t(a[1]) << 32,
                            uint64_t(a[2]) | uint64_t(a[3]) << 32};
  for (int w = 0; w < 2; ++w) {
    ::llmc::cudaemu::warpExchange(0xffffffffu, mine[w], ::llmc::cudaemu::Exchange::Wgmma);
    std::copy(::llmc::cudaemu::self()->seen, ::llmc::cudaemu::self()->seen + 32, words[w]);
  }
  std::array<float, 256> rows; // [row % 16][k]
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) {
      int reg = r / 8 + 2 * (k / 8), lane = (r % 8) * 4 + (k % 8) / 2;
      auto bits = unsigned(words[reg / 2][lane] >> (32 * (reg % 2)));
      rows[size_t(r * 16 + k)] =
          toFloat(::llmc::cudaemu::fromBits<T>(uint16_t(bits >> (16 * (k % 2)))));
    }
  issue<N, T, TransB>(d, [rows](int row, int k) { return rows[size_t(row % 16 * 16 + k)]; },
                      descB, accumulate, signature<N, T, TransB>(2, 0, descB, accumulate));
  ::llmc::cudaemu::wgmmaReadsRegisters(a);
}

#endif

/// Whether kernels take their wgmma forms: the code has wgmma
/// (wgmmaBuilt()) and LLMC_CUDA_WGMMA is 1. Off by default: on an H200 the
/// mma.sync prefill attention was 1-18% faster than the wgmma one at every
/// shape timed (bench/results/2026-11-30-cuda-decode-h200-5.md), so the
/// wgmma forms are there to compare and to work on.
inline bool wgmmaEnabled() {
  const char *env = std::getenv("LLMC_CUDA_WGMMA");
  return env && env[0] == '1' && env[1] == 0 && wgmmaBuilt();
}

} // namespace llmc::cuda::wg

#endif // LLMC_RUNTIME_MODEL_CUDA_WGMMA_H
