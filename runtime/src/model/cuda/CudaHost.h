//===- CudaHost.h - Cuda.h's spellings on the host emulation ----------------===//
//
// The half of Cuda.h that a host C++ compiler sees (no __CUDACC__): the
// kernel spellings of Cuda.h's table over runtime/src/cudaemu (blocks run
// as fibers, warps exchange through it), half and bfloat16 as their bits,
// the tensor-core fragments and cp.async as the emulation defines them, and
// the host API (launch, allocations, copies, streams, graphs) on its
// streams. Included by Cuda.h only; see its top for what each spelling
// means on both sides.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_CUDAHOST_H
#define LLMC_RUNTIME_MODEL_CUDA_CUDAHOST_H

#include "runtime/src/cpu/Numeric.h"
#include "runtime/src/cudaemu/HostApi.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <tuple>
#include <type_traits>

#define LLMC_CUDA_EMULATED 1
#define LLMC_GLOBAL
#define LLMC_DEVICE inline
#define LLMC_HOST_DEVICE inline
#define LLMC_SHARED(Type, name)                                                                    \
  static const char llmc_shared_site_##name = 0;                                                  \
  ::llmc::cuda::Id<Type> &name =                                                                   \
      ::llmc::cudaemu::sharedVariable<::llmc::cuda::Id<Type>>(&llmc_shared_site_##name)
#define LLMC_DYNAMIC_SHARED(Type, name)                                                           \
  Type *name = reinterpret_cast<Type *>(::llmc::cudaemu::dynamicShared())
#define LLMC_UNROLL
#define LLMC_NO_UNROLL
#define LLMC_LAUNCH_BOUNDS(n)
#define LLMC_LAUNCH_BOUNDS_MIN(n, blocks)
#define LLMC_KERNEL_BEGIN() ::llmc::cudaemu::kernelBegin()

#define threadIdx (::llmc::cudaemu::self()->threadIdx)
#define blockIdx (::llmc::cudaemu::selfBlock()->blockIdx)
#define blockDim (::llmc::cudaemu::selfBlock()->blockDim)
#define gridDim (::llmc::cudaemu::selfBlock()->gridDim)
inline constexpr int warpSize = 32;

struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};

inline void __syncthreads() { ::llmc::cudaemu::syncthreads(); }
inline void __trap() { ::llmc::cudaemu::fail("__trap()"); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::llmc::cudaemu::warpExchange(mask, 0, ::llmc::cudaemu::Exchange::Syncwarp);
}
template <class T> T __shfl_sync(unsigned mask, T v, int srcLane, int width = 32) {
  return ::llmc::cudaemu::shfl(mask, v, srcLane, width);
}
template <class T> T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
  return ::llmc::cudaemu::shflXor(mask, v, laneMask, width);
}
template <class T> T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::llmc::cudaemu::shflDown(mask, v, delta, width);
}
template <class T> T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::llmc::cudaemu::shflUp(mask, v, delta, width);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return ::llmc::cudaemu::ballot(mask, predicate);
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) == mask;
}

// Atomics through GCC's generic builtins (any trivially copyable type).
// Blocks run one after another, so __threadfence orders nothing the
// emulation could reorder; it is a full fence all the same, and __ldcg (a
// load past L1 on the GPU) an ordinary load.
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <class T> T __ldcg(const T *p) { return *p; }
template <class T> T atomicCAS(T *address, T compare, T value) {
  __atomic_compare_exchange(address, &compare, &value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return compare;
}
template <class T, class F> T atomicUpdate(T *address, F update) {
  T old;
  __atomic_load(address, &old, __ATOMIC_SEQ_CST);
  T next = update(old);
  while (!__atomic_compare_exchange(address, &old, &next, true, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
    next = update(old);
  return old;
}
template <class T> T atomicAdd(T *address, T value) {
  return atomicUpdate(address, [&](T old) { return T(old + value); });
}
template <class T> T atomicMax(T *address, T value) {
  return atomicUpdate(address, [&](T old) { return old < value ? value : old; });
}
template <class T> T atomicMin(T *address, T value) {
  return atomicUpdate(address, [&](T old) { return value < old ? value : old; });
}
template <class T> T atomicExch(T *address, T value) {
  return atomicUpdate(address, [&](T) { return value; });
}

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __fdividef(float x, float y) { return x / y; }

namespace llmc::cuda {

/// IEEE half and bfloat16 as their bits; arithmetic goes through float.
struct half {
  uint16_t bits;
};
struct bfloat16 {
  uint16_t bits;
};
using Stream = ::llmc::cudaemu::Stream *;

inline float toFloat(float x) { return x; }
inline float toFloat(half x) { return ::llmc::cpu::halfToFloat(x.bits); }
inline float toFloat(bfloat16 x) { return ::llmc::cpu::bf16ToFloat(x.bits); }
inline float toFloat(int8_t x) { return float(x); } // an int8 KV cache's values

template <class T> T fromFloat(float x);
template <> inline float fromFloat<float>(float x) { return x; }
template <> inline half fromFloat<half>(float x) { return {::llmc::cpu::floatToHalf(x)}; }
template <> inline bfloat16 fromFloat<bfloat16>(float x) { return {::llmc::cpu::floatToBf16(x)}; }

inline float fastExp2(float x) { return std::exp2(x); }
inline float fastDivide(float a, float b) { return a / b; }
inline void prefetchL2(const void *) {}
inline bool programmaticLaunches() { return false; }

inline uint4 load16(const void *p) {
  // The GPU faults on a misaligned vector load; so does the emulation.
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
    ::llmc::cudaemu::fail("misaligned 16-byte load");
  uint4 v;
  std::memcpy(&v, p, 16);
  return v;
}

inline float floatFromBits(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline unsigned bitsOfFloat(float x) {
  unsigned u;
  std::memcpy(&u, &x, 4);
  return u;
}

inline unsigned bytePerm(unsigned lo, unsigned hi, unsigned s) {
  uint64_t bytes = uint64_t(hi) << 32 | lo;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) {
    unsigned at = (s >> (4 * i)) & 15u;
    if (at > 7)
      ::llmc::cudaemu::fail("bytePerm: a sign-replicating selector nibble");
    r |= unsigned(bytes >> (8 * at) & 0xffu) << (8 * i);
  }
  return r;
}

template <class T, int N> void unpackFloats(const uint4 &raw, float (&out)[N], const T *) {
  static_assert(sizeof(T) * N == 16, "16 bytes");
  T values[N];
  std::memcpy(values, &raw, 16);
  for (int i = 0; i < N; ++i)
    out[i] = toFloat(values[i]);
}

template <class T, int N> inline void loadFloats(const T *p, float (&out)[N]) {
  unpackFloats(load16(p), out, p);
}

template <int N> inline void loadWords(const uint8_t *p, unsigned (&out)[N / 4]) {
  static_assert(N == 4 || N == 8 || N == 16, "4, 8 or 16 bytes");
  if (reinterpret_cast<uintptr_t>(p) % N != 0)
    ::llmc::cudaemu::fail("misaligned " + std::to_string(N) + "-byte load");
  std::memcpy(out, p, N); // the hosts llmc builds for are little-endian, as GPUs are
}

/// Tensor-core tiles (see the top of this file), on the host: every lane
/// holds the whole A and B tiles as floats (their values exact: half and
/// bfloat16 products are exact in f32, as on the tensor cores) and
/// accumulator elements e = lane + 32 i, i < 8, of the 256 (row e / 16,
/// column e % 16), so a warp's mma does the tile's 4096 FMAs once. The
/// emulation has bfloat16 tiles, as sm_80 and later do.
namespace tc {
constexpr bool kBf16 = true;
inline bool bf16() { return true; }
template <class T> struct FragA {
  float v[16][16]; // [row][k]
};
template <class T> struct FragB {
  float v[16][16]; // [column][k]
};
struct Acc {
  float v[8];
};
inline void checkTile(const void *p, int ldm, int multiple) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
    ::llmc::cudaemu::fail("tensor-core tile pointer not 32-byte aligned");
  if (ldm % multiple != 0)
    ::llmc::cudaemu::fail("tensor-core tile stride " + std::to_string(ldm) +
                          " not a multiple of " + std::to_string(multiple));
}
inline void zero(Acc &c) { std::fill(c.v, c.v + 8, 0.0f); }
template <class T> void loadA(FragA<T> &a, const T *p, int ldm) {
  checkTile(p, ldm, 8);
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k)
      a.v[r][k] = toFloat(p[r * ldm + k]);
}
template <class T> void loadB(FragB<T> &b, const T *p, int ldm) {
  checkTile(p, ldm, 8);
  for (int n = 0; n < 16; ++n)
    for (int k = 0; k < 16; ++k)
      b.v[n][k] = toFloat(p[n * ldm + k]);
}
template <class T> struct FragBRow {
  float v[16][16]; // [column][k]
};
template <class T> void loadBRow(FragBRow<T> &b, const T *p, int ldm) {
  checkTile(p, ldm, 8);
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 16; ++n)
      b.v[n][k] = toFloat(p[k * ldm + n]);
}
template <class T, class B> void mma(Acc &c, const FragA<T> &a, const B &b) {
  unsigned lane = ::llmc::cudaemu::self()->lane;
  for (int i = 0; i < 8; ++i) {
    int e = int(lane) + 32 * i, r = e / 16, n = e % 16;
    float s = c.v[i];
    for (int k = 0; k < 16; ++k)
      s = std::fma(a.v[r][k], b.v[n][k], s);
    c.v[i] = s;
  }
}
inline void load(Acc &c, const float *p, int ldm) {
  checkTile(p, ldm, 4);
  unsigned lane = ::llmc::cudaemu::self()->lane;
  for (int i = 0; i < 8; ++i) {
    int e = int(lane) + 32 * i;
    c.v[i] = p[(e / 16) * ldm + e % 16];
  }
}
inline void store(float *p, const Acc &c, int ldm) {
  checkTile(p, ldm, 4);
  unsigned lane = ::llmc::cudaemu::self()->lane;
  for (int i = 0; i < 8; ++i) {
    int e = int(lane) + 32 * i;
    p[(e / 16) * ldm + e % 16] = c.v[i];
  }
}
/// mma16816 (see the top of this file): every lane offers its A and B
/// registers, then computes its four results from the warp's tiles.
template <class T>
void mma16816(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  uint64_t words[3][32];
  const uint64_t mine[3] = {uint64_t(a[0]) | uint64_t(a[1]) << 32,
                            uint64_t(a[2]) | uint64_t(a[3]) << 32,
                            uint64_t(b[0]) | uint64_t(b[1]) << 32};
  for (int w = 0; w < 3; ++w) {
    ::llmc::cudaemu::warpExchange(0xffffffffu, mine[w], ::llmc::cudaemu::Exchange::Mma);
    std::copy(::llmc::cudaemu::self()->seen, ::llmc::cudaemu::self()->seen + 32, words[w]);
  }
  // Register r of lane l (A: 0..3 in words 0-1, B: 0..1 in word 2), half h.
  auto value = [&](int word, int lane, int r, int h) {
    unsigned reg = unsigned(words[word][lane] >> (32 * r));
    return toFloat(::llmc::cudaemu::fromBits<T>(uint16_t(reg >> (16 * h))));
  };
  auto aAt = [&](int row, int k) { // register (row / 8) + 2 (k / 8) of lane (row % 8) * 4 + (k % 8) / 2
    int reg = row / 8 + 2 * (k / 8);
    return value(reg / 2, (row % 8) * 4 + (k % 8) / 2, reg % 2, k % 2);
  };
  auto bAt = [&](int k, int n) { return value(2, n * 4 + (k % 8) / 2, k / 8, k % 2); };
  unsigned lane = ::llmc::cudaemu::self()->lane;
  int g = int(lane / 4), t = int(lane % 4);
  for (int i = 0; i < 4; ++i) {
    int row = g + 8 * (i / 2), col = 2 * t + i % 2;
    float sum = c[i];
    for (int k = 0; k < 16; ++k)
      sum = std::fma(aAt(row, k), bAt(k, col), sum);
    c[i] = sum;
  }
}
/// fma2 (see Cuda.h's top): each half's a b + c in double, rounded to T
/// through f32.
template <class T> unsigned fma2(unsigned a, unsigned b, unsigned c) {
  unsigned d = 0;
  for (int h = 0; h < 2; ++h) {
    auto at = [&](unsigned r) {
      return double(toFloat(::llmc::cudaemu::fromBits<T>(uint16_t(r >> (16 * h)))));
    };
    T v = fromFloat<T>(float(at(a) * at(b) + at(c)));
    uint16_t bits;
    std::memcpy(&bits, &v, 2);
    d |= unsigned(bits) << (16 * h);
  }
  return d;
}
/// ldmatrix .x4 (.trans): each lane reads its row as it arrives (so no
/// lane's later write is seen) and offers it; then takes its values.
inline void ldmatrixRows(unsigned (&r)[4], const void *row, bool trans) {
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0)
    ::llmc::cudaemu::fail("ldmatrix row address not 16-byte aligned");
  if (!::llmc::cudaemu::inDynamicShared(row, 16))
    ::llmc::cudaemu::fail("ldmatrix row outside the block's dynamic shared memory");
  uint64_t mine[2], words[2][32];
  std::memcpy(mine, row, 16);
  for (int w = 0; w < 2; ++w) {
    ::llmc::cudaemu::warpExchange(0xffffffffu, mine[w], ::llmc::cudaemu::Exchange::Ldmatrix);
    std::copy(::llmc::cudaemu::self()->seen, ::llmc::cudaemu::self()->seen + 32, words[w]);
  }
  // Element c (0..7) of the row that lane `at` gave.
  auto element = [&](int at, int c) {
    return unsigned(words[c / 4][at] >> (16 * (c % 4))) & 0xffffu;
  };
  int lane = int(::llmc::cudaemu::self()->lane), g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i)
    r[i] = trans ? element(8 * i + 2 * t, g) | element(8 * i + 2 * t + 1, g) << 16
                 : element(8 * i + g, 2 * t) | element(8 * i + g, 2 * t + 1) << 16;
}
inline void ldmatrix(unsigned (&r)[4], const void *row) { ldmatrixRows(r, row, false); }
inline void ldmatrixTrans(unsigned (&r)[4], const void *row) { ldmatrixRows(r, row, true); }
} // namespace tc

inline void asyncCopy16(void *dst, const void *src, bool valid) {
  ::llmc::cudaemu::asyncCopy(dst, src, 16, valid);
}
inline void asyncCommit() { ::llmc::cudaemu::asyncCommit(); }
template <int N> void asyncWait() { ::llmc::cudaemu::asyncWait(N); }

template <class... P, class... A>
std::string launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t sharedBytes, Stream stream,
                   A &&...args) {
  auto params = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(args)...);
  return ::llmc::cudaemu::issue(stream, [=] {
    std::function<void()> body = [&] { std::apply(kernel, *params); };
    return ::llmc::cudaemu::runKernel(reinterpret_cast<const void *>(kernel), grid, block,
                                      sharedBytes, body);
  });
}

template <class... P> std::string setMaxDynamicShared(void (*kernel)(P...), size_t bytes) {
  ::llmc::cudaemu::setMaxDynamicShared(reinterpret_cast<const void *>(kernel), bytes);
  return {};
}

inline std::string deviceAlloc(void **out, size_t bytes) {
  if (::llmc::cudaemu::capturingStreams())
    return "cudaErrorStreamCaptureUnsupported: allocation while a stream is capturing";
  *out = ::llmc::cudaemu::deviceAlloc(bytes);
  return *out ? std::string() : "out of memory allocating " + std::to_string(bytes) + " bytes";
}
inline std::string deviceFree(void *p) {
  if (!::llmc::cudaemu::deviceFree(p))
    return "cudaErrorInvalidValue: freeing a pointer that is not device memory";
  return {};
}
inline std::string copyToDevice(void *dst, const void *src, size_t bytes) {
  auto lock = ::llmc::cudaemu::pdl::lockIfChecking();
  ::llmc::cudaemu::pdl::synchronized();
  std::memcpy(dst, src, bytes);
  return {};
}
inline std::string copyToHost(void *dst, const void *src, size_t bytes) {
  auto lock = ::llmc::cudaemu::pdl::lockIfChecking();
  ::llmc::cudaemu::pdl::synchronized();
  std::memcpy(dst, src, bytes);
  return {};
}
inline std::string synchronize() {
  if (::llmc::cudaemu::capturingStreams())
    return "cudaErrorStreamCaptureUnsupported: synchronisation while a stream is capturing";
  ::llmc::cudaemu::pdl::synchronized();
  return {};
}

inline std::string streamCreate(Stream *out) {
  *out = new ::llmc::cudaemu::Stream;
  return {};
}
inline std::string streamDestroy(Stream s) {
  delete s;
  return {};
}
inline std::string streamSynchronize(Stream s) {
  if (s && s->capturing)
    return "cudaErrorStreamCaptureUnsupported: synchronising a capturing stream";
  ::llmc::cudaemu::pdl::synchronized();
  return {};
}
inline std::string copyAsync(void *dst, const void *src, size_t bytes, Stream s) {
  return ::llmc::cudaemu::issue(s, [=] {
    auto lock = ::llmc::cudaemu::pdl::lockIfChecking();
    std::memcpy(dst, src, bytes);
    return std::string();
  });
}
inline std::string memsetAsync(void *dst, int value, size_t bytes, Stream s) {
  return ::llmc::cudaemu::issue(s, [=] {
    auto lock = ::llmc::cudaemu::pdl::lockIfChecking();
    std::memset(dst, value, bytes);
    return std::string();
  });
}
inline std::string copy2DAsync(void *dst, size_t dstPitch, const void *src, size_t srcPitch,
                               size_t width, size_t height, Stream s) {
  return ::llmc::cudaemu::issue(s, [=] {
    auto lock = ::llmc::cudaemu::pdl::lockIfChecking();
    for (size_t r = 0; r < height; ++r)
      std::memcpy(static_cast<char *>(dst) + r * dstPitch,
                  static_cast<const char *>(src) + r * srcPitch, width);
    return std::string();
  });
}
inline std::string hostAllocPinned(void **out, size_t bytes) { return deviceAlloc(out, bytes); }
inline std::string hostFreePinned(void *p) { return deviceFree(p); }

using Graph = ::llmc::cudaemu::Graph *;
inline std::string captureBegin(Stream s) {
  if (!s)
    return "cudaErrorStreamCaptureUnsupported: the default stream cannot capture";
  if (s->capturing)
    return "cudaErrorIllegalState: the stream is already capturing";
  s->capturing = true;
  s->recorded.clear();
  ++::llmc::cudaemu::capturingStreams();
  return {};
}
inline std::string captureEnd(Stream s, Graph *out) {
  if (!s || !s->capturing)
    return "cudaErrorIllegalState: the stream is not capturing";
  s->capturing = false;
  --::llmc::cudaemu::capturingStreams();
  *out = new ::llmc::cudaemu::Graph{std::move(s->recorded)};
  s->recorded.clear();
  return {};
}
inline std::string graphLaunch(Graph g, Stream s) {
  // A graph's first kernel waits for all the stream's work before it, and
  // the work after the graph for all of it (programmatic edges are inside
  // the graph only).
  ::llmc::cudaemu::pdl::StreamState &edge =
      (s ? *s : ::llmc::cudaemu::defaultStream()).pdl;
  edge.clear();
  for (auto &work : g->work)
    if (std::string e = ::llmc::cudaemu::issue(s, work); !e.empty())
      return e;
  edge.clear();
  return {};
}
inline std::string graphDestroy(Graph g) {
  delete g;
  return {};
}

// Events: the host's clock when the stream reaches the record (work runs
// as it is issued, so the time between two is the host's for the work
// between them).
using Event = ::llmc::cudaemu::Event *;
inline std::string eventCreate(Event *out) {
  *out = new ::llmc::cudaemu::Event;
  return {};
}
inline std::string eventRecord(Event e, Stream s) {
  if (!e)
    return "cudaErrorInvalidResourceHandle: no event";
  return ::llmc::cudaemu::issue(s, [e] {
    e->at = std::chrono::steady_clock::now();
    e->recorded = true;
    return std::string();
  });
}
inline std::string eventElapsed(float *ms, Event start, Event end) {
  if (!start || !end || !start->recorded || !end->recorded)
    return "cudaErrorInvalidResourceHandle: an event that was not recorded";
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return {};
}
inline std::string eventDestroy(Event e) {
  delete e;
  return {};
}

inline std::string deviceInfo(DeviceInfo *out) {
  out->name = "llmc host emulation";
  out->multiprocessors = 4;
  out->major = 9;
  out->minor = 0;
  out->totalBytes = out->freeBytes = size_t(1) << 40;
  return {};
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_CUDAHOST_H
