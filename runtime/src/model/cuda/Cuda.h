//===- Cuda.h - the one header llmc's CUDA kernels build against ----------===//
//
// The same kernel source builds two ways:
//   - with nvcc (__CUDACC__): the real CUDA runtime, half and bfloat16 from
//     cuda_fp16.h / cuda_bf16.h, launches with <<<...>>>;
//   - with a host C++ compiler: runtime/src/cudaemu/CudaEmu.h, which runs
//     each block's threads as fibers with CUDA's barriers, warp exchanges,
//     shared memory and atomics, so CI tests the kernels without a GPU.
//
// Kernel code writes CUDA as usual (threadIdx, __syncthreads, __shfl_*_sync,
// atomicAdd, __threadfence, __ldcg, ...) plus these spellings, which differ
// between the two:
//   LLMC_GLOBAL / LLMC_DEVICE / LLMC_HOST_DEVICE   __global__ / __device__ ...
//   LLMC_SHARED(Type, name)        a __shared__ variable (Type may be an
//                                  array typedef), declared unconditionally
//   LLMC_DYNAMIC_SHARED(Type, name) Type *name over the dynamic shared memory
//   LLMC_KERNEL_BEGIN()            every kernel's first statement: on
//                                  sm_90 and later it waits for the kernel
//                                  before it in the stream (launches are
//                                  programmatic: the next kernel's blocks
//                                  are scheduled while this one runs, see
//                                  launch), then lets the next one launch;
//                                  the emulation refuses a kernel whose
//                                  threads skip it. Before it a kernel may
//                                  only read what no kernel writes (the
//                                  weights)
//   LLMC_UNROLL, LLMC_NO_UNROLL    #pragma unroll, #pragma unroll 1
//   llmc::cuda::half, bfloat16     storage types; toFloat(x), fromFloat<T>(f)
//                                  (round to nearest even on both)
//   loadFloats(p, out)             16 aligned bytes of T at p as floats;
//   load16(p), unpackFloats(raw,   the same in two steps (the load, then
//   out, (const T *)tag)           the conversion where it is used)
//   prefetchL2(p)                  the line at p toward L2 (the emulation:
//                                  nothing)
//   fastExp2(x)                    2^x by ex2.approx.ftz (the emulation:
//                                  std::exp2)
//   fastDivide(a, b)               a / b by __fdividef (within 2 ulps; 0
//                                  for |b| above 2^126; the emulation: a / b)
//   loadWords<N>(p, out)           N (4, 8, 16) aligned bytes at p as N / 4
//                                  little-endian 32-bit words
//   floatFromBits(u)               the f32 whose bits are u (__uint_as_float)
//   bitsOfFloat(x)                 x's bits (__float_as_uint)
//   bytePerm(lo, hi, s)            PTX's prmt (__byte_perm): result byte i is
//                                  byte (s >> 4 i) & 7 of {hi:lo} (lo's
//                                  bytes 0-3, hi's 4-7); selector nibbles
//                                  of 8 and more (sign replication) are
//                                  not used (the emulation fails on them)
//   tc::FragA<T>, FragB<T>,        a warp's 16 x 16 x 16 tensor-core tiles (T
//   FragBRow<T>, Acc; tc::zero,    half or bfloat16, f32 accumulators): WMMA
//   loadA, loadB, loadBRow, mma,   on the GPU; on the host every lane holds
//   load, store                    the whole A and B tiles and 8 of the 256
//                                  accumulators. Warp-collective, as WMMA:
//                                  every lane calls them with the same
//                                  pointers; pointers 32-byte aligned, ldm a
//                                  multiple of 8 (16-bit) or 4 (f32)
//                                  elements; kernels never index fragments
//   tc::mma16816<T>(c, a, b)       PTX's mma.sync m16n8k16 (sm_80+; T half
//                                  or bfloat16, f32 c), fragments in PTX's
//                                  documented layout, which kernels may
//                                  index: with g = lane / 4, t = lane % 4,
//                                  a[0] holds A(g, 2t), A(g, 2t + 1) (low
//                                  half first), a[1] rows g + 8, a[2]
//                                  columns 2t + 8, a[3] both; b[0] holds
//                                  B(2t, g), B(2t + 1, g), b[1] k + 8;
//                                  c[0], c[1] are D(g, 2t), D(g, 2t + 1),
//                                  c[2], c[3] row g + 8. Warp-collective;
//                                  the emulation exchanges the registers
//   tc::pack(lo, hi)               two 16-bit values as one register;
//   tc::packFloats<T>(lo, hi)      two floats rounded to T, as one register
//   tc::fma2<T>(a, b, c)           a b + c on the two T's of each register
//                                  (fma.rn.f16x2 / .bf16x2, sm_80+), low
//                                  halves with low halves; the emulation
//                                  rounds the double result to T through
//                                  f32 (exact where the result is, which
//                                  is how the kernels use it)
//   tc::ldmatrix(r, row),          PTX's ldmatrix .x4 (.trans): four 8 x 8
//   tc::ldmatrixTrans(r, row)      matrices of 16-bit values from shared
//                                  memory, lane l giving the address of row
//                                  l % 8 of matrix l / 8 (16 bytes, 16-byte
//                                  aligned); r[i] of lane l holds matrix
//                                  i's (l / 4, 2 (l % 4) .. + 1), or with
//                                  Trans (2 (l % 4) .. + 1, l / 4): A and B
//                                  fragments of mma16816 (sm_75+).
//                                  Warp-collective; the emulation reads the
//                                  rows as the lanes arrive
//   asyncCopy16(dst, src, valid)   cp.async (sm_80+): 16 bytes from global
//   asyncCommit(), asyncWait<N>()  src to shared dst (zeros when !valid,
//                                  src not read), done by the time a later
//                                  asyncWait<N>() returns with at most N
//                                  newer committed groups pending; then a
//                                  barrier shows them to the block. The
//                                  emulation copies at that wait, the
//                                  latest the GPU may, so reading early
//                                  reads stale bytes there too; dst in the
//                                  dynamic shared memory
// and the host side calls llmc::cuda::launch, deviceAlloc, copies, streams,
// graph capture (captureBegin / captureEnd / graphLaunch) and deviceInfo,
// which return an empty string or the error.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_CUDA_H
#define LLMC_RUNTIME_MODEL_CUDA_CUDA_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

/// Returns from the enclosing function the error string `expr` gives, if
/// any. (Variadic: template arguments carry commas.)
#define LLMC_CUDA_TRY(...)                                                                         \
  do {                                                                                             \
    std::string llmc_error_ = (__VA_ARGS__);                                                       \
    if (!llmc_error_.empty())                                                                      \
      return llmc_error_;                                                                          \
  } while (0)

namespace llmc::cuda {
/// Lets a macro take an array type: Id<float[32]> name declares an array.
template <class T> using Id = T;

/// What the runtime checks before it uploads a model.
struct DeviceInfo {
  std::string name;
  size_t totalBytes = 0, freeBytes = 0;
  int multiprocessors = 0, major = 0, minor = 0;
};
} // namespace llmc::cuda

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#define LLMC_CUDA_EMULATED 0
#define LLMC_GLOBAL __global__
#define LLMC_DEVICE __device__ __forceinline__
#define LLMC_HOST_DEVICE __host__ __device__ __forceinline__
#define LLMC_SHARED(Type, name) __shared__ ::llmc::cuda::Id<Type> name
#define LLMC_DYNAMIC_SHARED(Type, name)                                                           \
  extern __shared__ __align__(128) unsigned char llmc_dynamic_shared_[];                           \
  Type *name = reinterpret_cast<Type *>(llmc_dynamic_shared_)
#define LLMC_UNROLL _Pragma("unroll")
#define LLMC_NO_UNROLL _Pragma("unroll 1")
#define LLMC_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define LLMC_LAUNCH_BOUNDS_MIN(n, blocks) __launch_bounds__(n, blocks)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define LLMC_KERNEL_BEGIN()                                                                        \
  do {                                                                                             \
    asm volatile("griddepcontrol.wait;" ::: "memory");                                             \
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");                                \
  } while (0)
#else
#define LLMC_KERNEL_BEGIN()                                                                        \
  do {                                                                                             \
  } while (0)
#endif

namespace llmc::cuda {

using half = __half;
using bfloat16 = __nv_bfloat16;
using Stream = cudaStream_t;

LLMC_HOST_DEVICE float toFloat(float x) { return x; }
LLMC_HOST_DEVICE float toFloat(half x) { return __half2float(x); }
LLMC_HOST_DEVICE float toFloat(bfloat16 x) { return __bfloat162float(x); }
LLMC_HOST_DEVICE float toFloat(int8_t x) { return float(x); } // an int8 KV cache's values

template <class T> LLMC_HOST_DEVICE T fromFloat(float x);
template <> LLMC_HOST_DEVICE float fromFloat<float>(float x) { return x; }
template <> LLMC_HOST_DEVICE half fromFloat<half>(float x) { return __float2half_rn(x); }
template <> LLMC_HOST_DEVICE bfloat16 fromFloat<bfloat16>(float x) { return __float2bfloat16_rn(x); }

/// 2^x by the hardware's approximation (ex2.approx.ftz: 2 ulp, subnormal
/// results flushed to zero; exp2f adds a range fix-up around it).
LLMC_DEVICE float fastExp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

LLMC_DEVICE float fastDivide(float a, float b) { return __fdividef(a, b); }

/// Asks for the line at p in L2 (no register written, nothing waited for).
LLMC_DEVICE void prefetchL2(const void *p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

/// 16 aligned bytes at p, as they are.
LLMC_DEVICE uint4 load16(const void *p) { return *reinterpret_cast<const uint4 *>(p); }

LLMC_DEVICE float floatFromBits(unsigned u) { return __uint_as_float(u); }
LLMC_DEVICE unsigned bitsOfFloat(float x) { return __float_as_uint(x); }

LLMC_DEVICE unsigned bytePerm(unsigned lo, unsigned hi, unsigned s) {
  return __byte_perm(lo, hi, s);
}

/// 16 bytes of T (as load16 read them) as floats; the pointer only names T.
LLMC_DEVICE void unpackFloats(const uint4 &raw, float (&out)[4], const float *) {
  out[0] = __uint_as_float(raw.x), out[1] = __uint_as_float(raw.y);
  out[2] = __uint_as_float(raw.z), out[3] = __uint_as_float(raw.w);
}
LLMC_DEVICE void unpackFloats(const uint4 &raw, float (&out)[8], const half *) {
  const __half2 *h = reinterpret_cast<const __half2 *>(&raw);
  LLMC_UNROLL
  for (int i = 0; i < 4; ++i) {
    float2 f = __half22float2(h[i]);
    out[2 * i] = f.x, out[2 * i + 1] = f.y;
  }
}
LLMC_DEVICE void unpackFloats(const uint4 &raw, float (&out)[16], const int8_t *) {
  const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
  LLMC_UNROLL
  for (int i = 0; i < 16; ++i)
    out[i] = float(int8_t(words[i / 4] >> (8 * (i % 4))));
}
LLMC_DEVICE void unpackFloats(const uint4 &raw, float (&out)[8], const bfloat16 *) {
  const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
  LLMC_UNROLL
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __uint_as_float(words[i] << 16);
    out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}
template <class T, int N> LLMC_DEVICE void loadFloats(const T *p, float (&out)[N]) {
  unpackFloats(load16(p), out, p);
}

template <int N> LLMC_DEVICE void loadWords(const uint8_t *p, unsigned (&out)[N / 4]) {
  static_assert(N == 4 || N == 8 || N == 16, "4, 8 or 16 bytes");
  if constexpr (N == 16) {
    uint4 v = *reinterpret_cast<const uint4 *>(p);
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  } else if constexpr (N == 8) {
    uint2 v = *reinterpret_cast<const uint2 *>(p);
    out[0] = v.x, out[1] = v.y;
  } else {
    out[0] = *reinterpret_cast<const unsigned *>(p);
  }
}

/// cp.async and its groups (see the top of this file). Before sm_80 (not
/// in llmc's fatbins; kernel tests may build for it) a plain copy.
LLMC_DEVICE void asyncCopy16(void *dst, const void *src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned at = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(at), "l"(src),
               "r"(valid ? 16 : 0));
#else
  *reinterpret_cast<uint4 *>(dst) = valid ? *reinterpret_cast<const uint4 *>(src) : uint4{0, 0, 0, 0};
#endif
}
LLMC_DEVICE void asyncCommit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N> LLMC_DEVICE void asyncWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/// Tensor-core tiles (see the top of this file): WMMA 16 x 16 x 16. Half
/// tiles need sm_70, bfloat16 ones sm_80: kBf16 says whether the
/// architecture this device code is compiled for has them (the host pass:
/// true), bf16() whether the current device does.
namespace tc {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
constexpr bool kBf16 = false;
#else
constexpr bool kBf16 = true;
#endif
inline bool bf16() {
  static const bool yes = [] {
    int device = 0, major = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) ==
               cudaSuccess &&
           major >= 8;
  }();
  return yes;
}
namespace wmma = nvcuda::wmma;
template <class T> using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <class T> using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major>;
using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
LLMC_DEVICE void zero(Acc &c) { wmma::fill_fragment(c, 0.0f); }
/// A [16 rows][16 k] at p, row stride ldm.
template <class T> LLMC_DEVICE void loadA(FragA<T> &a, const T *p, int ldm) {
  wmma::load_matrix_sync(a, p, unsigned(ldm));
}
/// B [16 k][16 columns] stored by column at p (column n's 16 k contiguous,
/// column stride ldm): rows of a row-major W [N, K].
template <class T> LLMC_DEVICE void loadB(FragB<T> &b, const T *p, int ldm) {
  wmma::load_matrix_sync(b, p, unsigned(ldm));
}
template <class T> using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major>;
/// B [16 k][16 columns] stored by row at p (row k's 16 columns contiguous,
/// row stride ldm): rows of a row-major V [keys, channels].
template <class T> LLMC_DEVICE void loadBRow(FragBRow<T> &b, const T *p, int ldm) {
  wmma::load_matrix_sync(b, p, unsigned(ldm));
}
/// c += a b.
template <class T> LLMC_DEVICE void mma(Acc &c, const FragA<T> &a, const FragB<T> &b) {
  wmma::mma_sync(c, a, b, c);
}
template <class T> LLMC_DEVICE void mma(Acc &c, const FragA<T> &a, const FragBRow<T> &b) {
  wmma::mma_sync(c, a, b, c);
}
/// c from row-major f32 at p, row stride ldm.
LLMC_DEVICE void load(Acc &c, const float *p, int ldm) {
  wmma::load_matrix_sync(c, p, unsigned(ldm), wmma::mem_row_major);
}
/// c row-major at p, row stride ldm.
LLMC_DEVICE void store(float *p, const Acc &c, int ldm) {
  wmma::store_matrix_sync(p, c, unsigned(ldm), wmma::mem_row_major);
}
/// mma.sync m16n8k16 (sm_80 and later): d (16 x 8, f32) += a (16 x 16, T,
/// row-major) b (16 x 8, T, column-major), the warp's fragments as PTX lays
/// them out (see the top of this file).
template <class T>
LLMC_DEVICE void mma16816(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, half>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)c, (void)a, (void)b; // (sm_75: not built for it; callers check tc::bf16()-like gates)
#endif
}
/// ldmatrix .x4 / .x4.trans (see the top of this file).
LLMC_DEVICE void ldmatrix(unsigned (&r)[4], const void *row) {
  unsigned at = unsigned(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(at));
}
LLMC_DEVICE void ldmatrixTrans(unsigned (&r)[4], const void *row) {
  unsigned at = unsigned(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(at));
}
/// Two floats rounded to T (round to nearest even) as one register, lo in
/// the low half: one conversion instruction.
template <class T> LLMC_DEVICE unsigned packFloats(float lo, float hi) {
  if constexpr (std::is_same_v<T, half>) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&v);
  } else {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&v);
  }
}
/// a b + c on each register's two T's (see the top of this file).
template <class T> LLMC_DEVICE unsigned fma2(unsigned a, unsigned b, unsigned c) {
  unsigned d = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, half>)
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  else
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
#else
  (void)a, (void)b, (void)c; // (before sm_80: not built for it, as mma16816)
#endif
  return d;
}
} // namespace tc

inline std::string errorOf(cudaError_t e) {
  return e == cudaSuccess ? std::string() : std::string(cudaGetErrorName(e)) + ": " +
                                                cudaGetErrorString(e);
}

/// Whether kernels launch with programmatic stream serialization (PDL): on
/// devices of compute capability 9.0 and later running code built for them
/// (probeKernel), unless LLMC_CUDA_PDL=0. Decided once per library, by
/// DeviceModel before any graph is captured.
/// The next kernel's blocks are then scheduled as soon as every block of
/// the one before has passed its LLMC_KERNEL_BEGIN() (which waits for the
/// kernel before it to finish and its writes to be visible), so the launch
/// and the ramp of one kernel overlap the tail of the other; inside a
/// captured graph the edges become programmatic ones.
/// The code of this library as the device runs it: a build whose PTX is for
/// compute capability 9.0 or later (sm_90 SASS, or compute_90 PTX) has
/// LLMC_KERNEL_BEGIN's wait; an sm_80 build that the driver compiles for a
/// Hopper has it compiled out, and must launch plainly. (Every kernel of a
/// library comes from one nvcc build, so this probe speaks for all.)
template <int> __global__ void probeKernel() {}

inline bool programmaticLaunches() {
  static const bool enabled = [] {
    const char *env = std::getenv("LLMC_CUDA_PDL");
    if (env && std::string(env) == "0")
      return false;
    int device = 0, major = 0;
    cudaFuncAttributes probe{};
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) ==
               cudaSuccess &&
           major >= 9 && cudaFuncGetAttributes(&probe, probeKernel<0>) == cudaSuccess &&
           probe.ptxVersion >= 90;
  }();
  return enabled;
}

template <class... P, class... A>
std::string launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t sharedBytes, Stream stream,
                   A &&...args) {
  if (!programmaticLaunches()) {
    kernel<<<grid, block, sharedBytes, stream>>>(std::forward<A>(args)...);
    return errorOf(cudaGetLastError());
  }
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = sharedBytes;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  return errorOf(cudaLaunchKernelEx(&config, kernel, std::forward<A>(args)...));
}

template <class... P> std::string setMaxDynamicShared(void (*kernel)(P...), size_t bytes) {
  return errorOf(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

inline std::string deviceAlloc(void **out, size_t bytes) { return errorOf(cudaMalloc(out, bytes)); }
inline std::string deviceFree(void *p) { return errorOf(cudaFree(p)); }
inline std::string copyToDevice(void *dst, const void *src, size_t bytes) {
  return errorOf(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
inline std::string copyToHost(void *dst, const void *src, size_t bytes) {
  return errorOf(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
inline std::string synchronize() { return errorOf(cudaDeviceSynchronize()); }

inline std::string streamCreate(Stream *out) {
  return errorOf(cudaStreamCreateWithFlags(out, cudaStreamNonBlocking));
}
inline std::string streamDestroy(Stream s) { return errorOf(cudaStreamDestroy(s)); }
inline std::string streamSynchronize(Stream s) { return errorOf(cudaStreamSynchronize(s)); }
inline std::string copyAsync(void *dst, const void *src, size_t bytes, Stream s) {
  return errorOf(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
}
inline std::string memsetAsync(void *dst, int value, size_t bytes, Stream s) {
  return errorOf(cudaMemsetAsync(dst, value, bytes, s));
}
/// `height` rows of `width` bytes, `srcPitch` apart at src and `dstPitch`
/// at dst, in either direction (the host side pageable: the host steps).
inline std::string copy2DAsync(void *dst, size_t dstPitch, const void *src, size_t srcPitch,
                               size_t width, size_t height, Stream s) {
  return errorOf(
      cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, height, cudaMemcpyDefault, s));
}
inline std::string hostAllocPinned(void **out, size_t bytes) {
  return errorOf(cudaMallocHost(out, bytes));
}
inline std::string hostFreePinned(void *p) { return errorOf(cudaFreeHost(p)); }

using Graph = cudaGraphExec_t;
inline std::string captureBegin(Stream s) {
  return errorOf(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
}
inline std::string captureEnd(Stream s, Graph *out) {
  cudaGraph_t graph = nullptr;
  std::string e = errorOf(cudaStreamEndCapture(s, &graph));
  if (!e.empty())
    return e;
  e = errorOf(cudaGraphInstantiate(out, graph, 0));
  cudaGraphDestroy(graph);
  return e;
}
inline std::string graphLaunch(Graph g, Stream s) { return errorOf(cudaGraphLaunch(g, s)); }
inline std::string graphDestroy(Graph g) { return errorOf(cudaGraphExecDestroy(g)); }

/// Events: eventElapsed is the milliseconds between two recorded events
/// once both are done (the GPU's time for the work between them).
using Event = cudaEvent_t;
inline std::string eventCreate(Event *out) { return errorOf(cudaEventCreate(out)); }
inline std::string eventRecord(Event e, Stream s) { return errorOf(cudaEventRecord(e, s)); }
inline std::string eventElapsed(float *ms, Event start, Event end) {
  return errorOf(cudaEventElapsedTime(ms, start, end));
}
inline std::string eventDestroy(Event e) { return errorOf(cudaEventDestroy(e)); }

inline std::string deviceInfo(DeviceInfo *out) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return "no usable CUDA device (" + errorOf(e) + ")";
  if (count == 0)
    return "no CUDA device";
  int device = 0;
  cudaDeviceProp p;
  if (std::string err = errorOf(cudaGetDevice(&device)); !err.empty())
    return err;
  if (std::string err = errorOf(cudaGetDeviceProperties(&p, device)); !err.empty())
    return err;
  out->name = p.name;
  out->multiprocessors = p.multiProcessorCount;
  out->major = p.major;
  out->minor = p.minor;
  return errorOf(cudaMemGetInfo(&out->freeBytes, &out->totalBytes));
}

} // namespace llmc::cuda

#else // the host emulation
#include "runtime/src/model/cuda/CudaHost.h"

#endif

namespace llmc::cuda::tc {
/// Two 16-bit values as one mma16816 register, lo in the low half.
template <class T> LLMC_HOST_DEVICE unsigned pack(T lo, T hi) {
  static_assert(sizeof(T) == 2, "16-bit values");
  uint16_t l, h;
  memcpy(&l, &lo, 2);
  memcpy(&h, &hi, 2);
  return unsigned(l) | unsigned(h) << 16;
}
#if !defined(__CUDACC__)
template <class T> unsigned packFloats(float lo, float hi) {
  return pack(fromFloat<T>(lo), fromFloat<T>(hi));
}
#endif
} // namespace llmc::cuda::tc

#endif // LLMC_RUNTIME_MODEL_CUDA_CUDA_H
