//===- CudaEmu.h - the CUDA execution model on the host, for kernel tests ----===//
//
// llmc's CUDA kernels (runtime/src/model/cuda) build for a GPU with nvcc and
// for the host with a plain C++ compiler against this header, so CI, which
// has no GPU, runs the same kernel source (in the spirit of Triton's
// interpreter mode and Numba's CUDA simulator). Kernels reach it only
// through runtime/src/model/cuda/Cuda.h, never directly.
//
// What is emulated
//   - A launch runs its blocks one after another (in index order, or the
//     reverse: see the last point). Each thread of a block is a
//     fiber with its own stack (on x86-64 switched by a few instructions that
//     save the callee-saved registers, elsewhere and under AddressSanitizer
//     by ucontext, whose swapcontext makes a system call per switch for the
//     signal mask, most of the emulation's time); threadIdx/blockIdx/blockDim/
//     gridDim read the running fiber's values. The running fiber is found
//     from the stack pointer (stacks are aligned to their size, its Fiber
//     pointer at the bottom), not from thread-local storage, which in a
//     dlopen'ed model library costs a __tls_get_addr call per threadIdx.
//   - Between block barriers the warps run one after another: each runs
//     until all its threads wait at a barrier or have ended, then the next
//     (a legal GPU order, and the one in which a warp that writes shared
//     memory another warp has yet to read, with no barrier between, is
//     seen: the reader gets the new bytes, or cp.async's NaNs).
//   - Order: blocks, the warps of a block and the lanes of a warp run in
//     index order, or all in reverse under LLMC_CUDAEMU_ORDER=reverse (or
//     setReverseOrder). A race between two warps (or lanes, or blocks
//     that communicate) goes one way in one order and the other way in
//     the other: a read before the write it needs shows in one, a write
//     over what another has yet to read in the other. ctest runs the
//     kernel tests both ways.
//   - __syncthreads() parks the fiber until every thread of the block is
//     parked there; __syncwarp, the shuffles and the votes park it until
//     every lane of their mask is parked at a warp exchange with the same
//     mask, then each lane reads the values the others offered. Lanes are
//     the linear thread index (x + y Dx + z Dx Dy) modulo 32, as on the GPU.
//   - Shared memory (LLMC_SHARED, by declaration site) and dynamic shared
//     memory are per block, filled with 0xff bytes at the start of each
//     block (NaN in f32, half and bfloat16, as leftover shared memory may
//     be on a GPU) so that a kernel reading what it never wrote is seen,
//     even where it multiplies it by zero.
//   - Atomics are real atomics (blocks may later run on several host
//     threads).
//   - Tensor-core tiles (WMMA), mma.sync and ldmatrix are emulated in
//     Cuda.h's tc:: on top of this.
//   - wgmma (runtime/src/model/cuda/Wgmma.h, wgmmaIssue): each thread's
//     share of the product is computed at the issue and queued by group,
//     like cp.async below, then computed again at the wgmmaWait that
//     releases its group (the operands must not have changed between: the
//     GPU may read them at any moment in between); meanwhile the
//     accumulators hold NaNs and must not be written. A wgmma needs a
//     wgmma.fence since the thread's last wait; a warpgroup's threads must
//     issue the same wgmmas; shared memory that cp.async wrote is readable
//     by wgmma only after its writer's fence.proxy.async; register A must
//     not change before the wait either.
//   - cp.async (asyncCopy): each thread's copies are queued by group and
//     done at the asyncWait that releases their group, the latest moment
//     the GPU may complete them (those issued before the thread's
//     LLMC_KERNEL_BEGIN() read their source at the issue, the earliest:
//     Programmatic.h); meanwhile the destination holds NaNs. A
//     kernel that reads a tile before its wait, or copies over a tile that
//     other warps still read, reads NaNs (and fails its tests) here too.
//
// Device memory (deviceAlloc, HostApi.h) ends at an inaccessible page: a
// kernel that runs past the end of a buffer faults at the access.
//
// What is checked (the launch returns an error naming it, where the GPU
// would give undefined behaviour or a launch failure): a kernel whose
// threads do not run LLMC_KERNEL_BEGIN() (on the GPU such a kernel would
// race with the one before it), a barrier that some
// threads of the block left by returning, threads waiting at different
// barriers (deadlock), a warp exchange whose mask names a lane that does not
// exist or has exited, block and grid sizes past the GPU's limits, shared
// memory past 48 KiB per block without the dynamic-size opt-in (and past
// 227 KiB with it, the H100's limit), cp.async and ldmatrix addresses
// outside the block's dynamic shared memory or misaligned.
//
// With LLMC_CUDAEMU_PDL_CHECK=1, each block's part before LLMC_KERNEL_BEGIN()
// runs with what the kernel before it on the stream changed hidden (0xff
// bytes), and may not change device memory: what programmatic launches
// allow on sm_90 (Programmatic.h).
//
// Streams (HostApi.h) run their work when it is issued; a capturing stream records it
// into a graph that replays it (CUDA graphs), and refuses allocation and
// synchronisation meanwhile, as CUDA does.
//
// Not emulated: concurrency between blocks and inside a warp (no data race
// is found; compute-sanitizer's racecheck on a GPU does that), memory
// spaces (device pointers are host pointers), timing.
//
// This file is the kernels' side (the structures a launch runs on, barriers,
// shared memory, async copies, wgmma, warp intrinsics); Scheduler.h is the
// launch side (fibers' stacks, the scheduler, runGrid), which HostApi.h
// includes.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDAEMU_CUDAEMU_H
#define LLMC_RUNTIME_CUDAEMU_CUDAEMU_H

// The fibers' context switch: switchStack below on x86-64, ucontext
// elsewhere and under AddressSanitizer (which follows swapcontext's stack
// changes, not ours).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define LLMC_CUDAEMU_SWITCH_STACK 1
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#undef LLMC_CUDAEMU_SWITCH_STACK
#endif
#endif
#endif
#ifndef LLMC_CUDAEMU_SWITCH_STACK
#include <ucontext.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/src/cudaemu/Programmatic.h"

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace llmc::cudaemu {

/// The limits a launch is checked against (those of sm_80 .. sm_90).
inline constexpr unsigned kMaxThreadsPerBlock = 1024;
inline constexpr unsigned kMaxBlockDimZ = 64;
inline constexpr unsigned kMaxGridDimYZ = 65535;
inline constexpr size_t kDefaultSharedBytes = 48 * 1024;
inline constexpr size_t kOptInSharedBytes = 227 * 1024;
/// A fiber's stack: a power of two, aligned to its size; its lowest page
/// holds the Fiber pointer, the next is inaccessible (an overflow faults
/// there rather than running into the next stack).
inline constexpr size_t kFiberStackBytes = 256 * 1024;

struct Block;

#ifdef LLMC_CUDAEMU_SWITCH_STACK
/// Saves the callee-saved registers, MXCSR and the x87 control word on the
/// running stack, stores the stack pointer in *from and resumes the stack
/// `to`, saved the same way (or laid out so by startFiber). The caller
/// treats it as an ordinary call, so every other register is assumed
/// clobbered. (static: one copy per translation unit; a naked function
/// cannot be inline.)
[[maybe_unused]] __attribute__((naked, noinline)) static void
switchStack(void ** /*from: rdi*/, void * /*to: rsi*/) {
  __asm__("pushq %rbp\n\t"
          "pushq %rbx\n\t"
          "pushq %r12\n\t"
          "pushq %r13\n\t"
          "pushq %r14\n\t"
          "pushq %r15\n\t"
          "subq $8, %rsp\n\t"
          "stmxcsr (%rsp)\n\t"
          "fnstcw 4(%rsp)\n\t"
          "movq %rsp, (%rdi)\n\t"
          "movq %rsi, %rsp\n\t"
          "ldmxcsr (%rsp)\n\t"
          "fldcw 4(%rsp)\n\t"
          "addq $8, %rsp\n\t"
          "popq %r15\n\t"
          "popq %r14\n\t"
          "popq %r13\n\t"
          "popq %r12\n\t"
          "popq %rbx\n\t"
          "popq %rbp\n\t"
          "ret\n\t");
}
using Context = void *; // a parked stack's pointer
#else
using Context = ucontext_t;
#endif

/// One cp.async of a thread (asyncCopy): `bytes` from src to the shared
/// dst, or zeros when !valid.
struct AsyncCopy {
  void *dst;
  const void *src;
  size_t bytes;
  bool valid;
  // Issued before the thread's LLMC_KERNEL_BEGIN(): its source as it was
  // then, which is what it writes (Programmatic.h).
  bool early = false;
  unsigned char atIssue[16] = {};
};

/// One wgmma of a thread (runtime/src/model/cuda/Wgmma.h): its `count`
/// accumulators at d, done at the wgmmaWait that releases its group.
/// `compute` reads the shared-memory operands and writes in + A B to out:
/// at the issue (outAtIssue) and again at the wait (out), the earliest and
/// the latest moments the GPU may read them, which must agree. Its input is
/// the registers as they were at the issue, or, where an earlier wgmma of
/// the thread still pending writes the same registers (a chain of k-steps,
/// which the GPU orders), that one's result.
struct WgmmaOp {
  float *d = nullptr;
  int count = 0;
  std::vector<float> in, out, outAtIssue;
  std::shared_ptr<WgmmaOp> from;
  bool superseded = false; // a later pending wgmma takes its result
  std::function<void(const float *, float *)> compute;
  // Register A (four words) and what it held at the issue: the GPU may
  // read it until the wait, so it must not change meanwhile.
  const unsigned *regsA = nullptr;
  unsigned regsAtIssue[4] = {};
};

/// What a warp exchange is for: the lanes of one exchange must all be at
/// the same kind of warp-collective operation (PTX's .sync.aligned: the
/// same instruction), else the emulation would pair unrelated values.
enum class Exchange { Syncwarp, Shuffle, Vote, Mma, Ldmatrix, Wgmma };
inline const char *exchangeName(Exchange e) {
  switch (e) {
  case Exchange::Syncwarp:
    return "__syncwarp";
  case Exchange::Shuffle:
    return "a shuffle";
  case Exchange::Vote:
    return "a vote";
  case Exchange::Mma:
    return "mma.sync";
  case Exchange::Ldmatrix:
    return "ldmatrix";
  case Exchange::Wgmma:
    return "wgmma";
  }
  return "?";
}

struct Fiber {
  enum class State { Ready, AtBlockBarrier, AtWarpExchange, AtKernelBegin, Done };
  Context context;
  Block *block = nullptr;
  uint3 threadIdx;
  unsigned lane = 0, warp = 0;
  State state = State::Ready;
  bool begun = false;         // LLMC_KERNEL_BEGIN() ran
  unsigned exchangeMask = 0;  // the lanes of the exchange it waits at
  Exchange exchangeKind = Exchange::Syncwarp;
  uint64_t offered = 0;       // the value it offers there
  uint64_t seen[32] = {};     // what each lane offered, once released
  // Its cp.async copies not yet done: those since the last commit, and the
  // committed groups, oldest first (done at the wait that needs them).
  std::vector<AsyncCopy> asyncOpen;
  std::vector<std::vector<AsyncCopy>> asyncGroups;
  // Its wgmmas not yet done, the same way; whether a wgmma.fence came
  // since its last wgmma wait (or the start); how many wgmmas it issued.
  std::vector<std::shared_ptr<WgmmaOp>> wgmmaOpen;
  std::vector<std::vector<std::shared_ptr<WgmmaOp>>> wgmmaGroups;
  bool wgmmaFenced = false;
  unsigned wgmmaIssued = 0;
  // The 16-byte chunks of dynamic shared memory its cp.async copies wrote
  // (at their wait) since its last fence.proxy.async.
  std::vector<size_t> unfencedChunks;
};

/// A block's dynamic shared memory: 128-byte aligned, as the GPU's (its
/// base is at least 16-byte aligned; llmc's kernels declare 128, and
/// tensor-core tiles need 32).
struct DynamicSharedBytes {
  explicit DynamicSharedBytes(size_t n) : storage(n + 127), bytes(n) {}
  unsigned char *data() {
    auto p = reinterpret_cast<uintptr_t>(storage.data());
    return storage.data() + ((128 - p % 128) % 128);
  }
  size_t size() const { return bytes; }
  bool empty() const { return bytes == 0; }
  std::vector<unsigned char> storage;
  size_t bytes;
};

struct Block {
  std::vector<Fiber> *fibers = nullptr;
  Context scheduler;
  uint3 blockIdx;
  dim3 blockDim, gridDim;
  unsigned threads = 0;
  const std::function<void()> *body = nullptr;
  // Shared memory: one slot per declaration site, and the dynamic part.
  std::vector<std::pair<const void *, std::unique_ptr<std::max_align_t[]>>> sharedVars;
  size_t staticSharedBytes = 0;
  DynamicSharedBytes *dynamicShared = nullptr;
  size_t sharedLimit = kDefaultSharedBytes;
  // The programmatic-launch check's phases (Programmatic.h), when it is on.
  pdl::View *pdl = nullptr;
  // Per warpgroup, what its threads' n-th wgmma was (wgmmaIssue); per
  // 16-byte chunk of the dynamic shared memory, whether cp.async wrote it
  // with no fence.proxy.async by the writer since (the async proxy, which
  // wgmma reads through, may not see it).
  std::vector<std::vector<uint64_t>> wgmmaSignatures;
  std::vector<unsigned char> unfenced;
  std::string error;
};

/// The fiber running this code (kernel code only: it runs on a fiber's
/// stack).
inline Fiber *self() {
  uintptr_t sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  return *reinterpret_cast<Fiber *const *>(sp & ~uintptr_t(kFiberStackBytes - 1));
}
inline Block *selfBlock() { return self()->block; }

inline void park();

/// LLMC_KERNEL_BEGIN(): on the GPU the wait for the kernel before (launches
/// are programmatic there); here blocks run in order, so it records that
/// the thread ran it (runBlock refuses a kernel whose threads did not),
/// and under the programmatic-launch check waits for the block's other
/// threads to get there too (Programmatic.h).
inline void kernelBegin() {
  Fiber *f = self();
  if (f->block->pdl && f->block->pdl->early()) {
    f->state = Fiber::State::AtKernelBegin;
    park();
  }
  f->begun = true;
}

/// Switches from the context saved into `from` to `to`.
inline void switchTo(Context &from, Context &to) {
#ifdef LLMC_CUDAEMU_SWITCH_STACK
  switchStack(&from, to);
#else
  swapcontext(&from, &to);
#endif
}

/// Returns to the scheduler; the caller set its state first.
inline void park() {
  Fiber *f = self();
  switchTo(f->context, f->block->scheduler);
}

/// Marks the block failed (the first error is kept) and parks the fiber
/// for good: the scheduler stops the block.
inline void fail(std::string message) {
  Block *b = selfBlock();
  if (b->error.empty())
    b->error = std::move(message);
  park();
}

inline void syncthreads() {
  self()->state = Fiber::State::AtBlockBarrier;
  park();
}

/// One warp exchange: offers `value`, waits for the lanes of `mask`, and
/// returns with the fiber's `seen` holding every lane's offer.
inline void warpExchange(unsigned mask, uint64_t value, Exchange kind) {
  Fiber &f = *self();
  if (!(mask >> f.lane & 1u)) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%x", mask);
    fail("warp exchange by lane " + std::to_string(f.lane) + " of warp " + std::to_string(f.warp) +
         " with a mask (0x" + hex + ") that does not name it");
  }
  f.exchangeMask = mask;
  f.exchangeKind = kind;
  f.offered = value;
  f.state = Fiber::State::AtWarpExchange;
  park();
}

template <class T> uint64_t toBits(T v) {
  static_assert(sizeof(T) <= 8, "a warp exchange moves at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

template <class T> T fromBits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

/// Storage for a __shared__ variable declared at `site`, the same for every
/// thread of the running block.
template <class T> T &sharedVariable(const void *site) {
  Block &b = *selfBlock();
  // At T's alignment (up to 128 bytes: the tensor-core tiles want 32) in
  // storage of max_align_t units.
  static_assert(alignof(T) <= 128, "shared variables are at most 128-byte aligned");
  auto aligned = [](std::max_align_t *p) {
    uintptr_t at = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<T *>((at + alignof(T) - 1) / alignof(T) * alignof(T));
  };
  for (auto &[key, storage] : b.sharedVars)
    if (key == site)
      return *aligned(storage.get());
  size_t units = (sizeof(T) + alignof(T) + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
  std::unique_ptr<std::max_align_t[]> storage(new std::max_align_t[units]);
  std::memset(aligned(storage.get()), 0xff, sizeof(T));
  b.staticSharedBytes += sizeof(T);
  if (b.staticSharedBytes + b.dynamicShared->size() > b.sharedLimit)
    fail("shared memory of " + std::to_string(b.staticSharedBytes + b.dynamicShared->size()) +
         " bytes exceeds the block's " + std::to_string(b.sharedLimit));
  b.sharedVars.emplace_back(site, std::move(storage));
  return *aligned(b.sharedVars.back().second.get());
}

inline unsigned char *dynamicShared() { return selfBlock()->dynamicShared->data(); }

/// Whether [p, p + n) lies in the running block's dynamic shared memory
/// (where llmc's kernels keep what cp.async and ldmatrix address).
inline bool inDynamicShared(const void *p, size_t n) {
  DynamicSharedBytes &d = *selfBlock()->dynamicShared;
  auto at = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(d.data());
  return at >= base && at + n <= base + d.size();
}

/// cp.async: the destination becomes 0xff bytes (NaN in f32, half and
/// bfloat16) at once and takes the copied bytes only at the asyncWait that
/// releases its group. On a GPU the copy may land at any moment between the
/// two, so a kernel that reads the destination before its wait (and
/// barrier), or that issues a copy over a tile other threads may still be
/// reading, reads NaNs here.
inline void asyncCopy(void *dst, const void *src, size_t bytes, bool valid) {
  auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if (d % bytes != 0 || (valid && s % bytes != 0))
    fail("misaligned " + std::to_string(bytes) + "-byte cp.async");
  if (!inDynamicShared(dst, bytes))
    fail("cp.async to an address outside the block's dynamic shared memory");
  AsyncCopy copy{dst, src, bytes, valid};
  if (valid && !self()->begun && bytes <= sizeof copy.atIssue) {
    copy.early = true;
    std::memcpy(copy.atIssue, src, bytes);
  }
  std::memset(dst, 0xff, bytes);
  self()->asyncOpen.push_back(copy);
}

/// cp.async.commit_group: the copies since the last commit become a group
/// (possibly empty, as on the GPU).
inline void asyncCommit() {
  Fiber &f = *self();
  f.asyncGroups.push_back(std::move(f.asyncOpen));
  f.asyncOpen.clear();
}

/// cp.async.wait_group n: every committed group but the newest n is done.
inline void asyncWait(int n) {
  Fiber &f = *self();
  size_t keep = size_t(std::max(n, 0)), done = 0;
  unsigned char *base = f.block->dynamicShared->data();
  for (; f.asyncGroups.size() - done > keep; ++done)
    for (const AsyncCopy &c : f.asyncGroups[done]) {
      if (c.valid)
        std::memcpy(c.dst, c.early ? c.atIssue : c.src, c.bytes);
      else
        std::memset(c.dst, 0, c.bytes);
      size_t chunk = size_t(static_cast<unsigned char *>(c.dst) - base) / 16;
      f.block->unfenced[chunk] = 1;
      f.unfencedChunks.push_back(chunk);
    }
  f.asyncGroups.erase(f.asyncGroups.begin(), f.asyncGroups.begin() + long(done));
}

/// wgmma.mma_async (Wgmma.h): queues the thread's part of the product and
/// fills its accumulators with NaNs until the wgmmaWait that does it (the
/// registers are undefined on the GPU meanwhile: a kernel that reads them,
/// or changes them, before that wait gets NaNs or loses the change here).
inline void wgmmaIssue(float *d, int count, bool accumulate, uint64_t signature,
                       std::function<void(const float *, float *)> compute) {
  Fiber &f = *self();
  if (!f.wgmmaFenced)
    fail("wgmma with no wgmma.fence (wg::fence()) since the thread's last wgmma wait or its "
         "start (PTX: one before a warpgroup's first wgmma and after other code touched its "
         "registers)");
  // PTX's .sync.aligned: every thread of the warpgroup issues the same
  // wgmma (shape, types, descriptors, scale-d) as its n-th.
  std::vector<std::vector<uint64_t>> &groups = f.block->wgmmaSignatures;
  if (groups.size() <= f.warp / 4)
    groups.resize(f.warp / 4 + 1);
  std::vector<uint64_t> &seen = groups[f.warp / 4];
  if (f.wgmmaIssued == seen.size())
    seen.push_back(signature);
  else if (seen[f.wgmmaIssued] != signature)
    fail("threads of warpgroup " + std::to_string(f.warp / 4) + " issue different wgmmas as their " +
         "wgmma " + std::to_string(f.wgmmaIssued) + " (shape, descriptors or scale-d differ)");
  ++f.wgmmaIssued;
  auto op = std::make_shared<WgmmaOp>();
  op->d = d, op->count = count, op->compute = std::move(compute);
  std::shared_ptr<WgmmaOp> before;
  for (auto it = f.wgmmaOpen.rbegin(); !before && it != f.wgmmaOpen.rend(); ++it)
    if ((*it)->d == d)
      before = *it;
  for (auto g = f.wgmmaGroups.rbegin(); !before && g != f.wgmmaGroups.rend(); ++g)
    for (auto it = g->rbegin(); !before && it != g->rend(); ++it)
      if ((*it)->d == d)
        before = *it;
  if (before && before->count != count)
    fail("wgmma on accumulators a pending wgmma of another shape writes");
  if (before)
    before->superseded = true;
  if (!accumulate)
    op->in.assign(size_t(count), 0.0f);
  else if (before)
    op->from = before;
  else
    op->in.assign(d, d + count);
  op->outAtIssue.assign(size_t(count), 0.0f);
  op->compute(op->from ? op->from->outAtIssue.data() : op->in.data(), op->outAtIssue.data());
  std::fill(d, d + count, std::numeric_limits<float>::quiet_NaN());
  f.wgmmaOpen.push_back(std::move(op));
}

/// The wgmma just issued reads register A at `a` (four words): its wait
/// fails where they changed in between.
inline void wgmmaReadsRegisters(const unsigned *a) {
  WgmmaOp &op = *self()->wgmmaOpen.back();
  op.regsA = a;
  std::copy(a, a + 4, op.regsAtIssue);
}

/// wgmma.fence.
inline void wgmmaFence() { self()->wgmmaFenced = true; }

/// fence.proxy.async.shared::cta: the thread's cp.async writes become
/// visible to wgmma (after a barrier, to the other threads' too).
inline void proxyFence() {
  Fiber &f = *self();
  for (size_t chunk : f.unfencedChunks)
    f.block->unfenced[chunk] = 0;
  f.unfencedChunks.clear();
}

/// Whether the shared byte at p was written by cp.async with no
/// fence.proxy.async by its writer since.
inline bool unfencedShared(const void *p) {
  Block &b = *selfBlock();
  auto at = size_t(static_cast<const unsigned char *>(p) - b.dynamicShared->data());
  return at / 16 < b.unfenced.size() && b.unfenced[at / 16];
}

/// wgmma.commit_group: the thread's wgmmas since the last commit become a
/// group (possibly empty).
inline void wgmmaCommit() {
  Fiber &f = *self();
  f.wgmmaGroups.push_back(std::move(f.wgmmaOpen));
  f.wgmmaOpen.clear();
}

/// wgmma.wait_group n: every committed group but the newest n is done, in
/// issue order; each result lands in its registers unless a later pending
/// wgmma writes them. Fails where the shared operands changed since the
/// issue (the GPU may read them at any moment in between), or the
/// registers were written meanwhile. A wgmma after it needs a new fence.
inline void wgmmaWait(int n) {
  Fiber &f = *self();
  f.wgmmaFenced = false;
  size_t keep = size_t(std::max(n, 0)), done = 0;
  for (; f.wgmmaGroups.size() - done > keep; ++done)
    for (const std::shared_ptr<WgmmaOp> &op : f.wgmmaGroups[done]) {
      op->out.assign(size_t(op->count), 0.0f);
      op->compute(op->from ? op->from->out.data() : op->in.data(), op->out.data());
      op->from.reset();
      if (std::memcmp(op->out.data(), op->outAtIssue.data(), sizeof(float) * op->out.size()))
        fail("a wgmma's shared operands changed between its issue and its wait");
      for (int i = 0; i < op->count; ++i)
        if (!std::isnan(op->d[i]))
          fail("a wgmma's accumulators were written between its issue and its wait");
      if (op->regsA && !std::equal(op->regsAtIssue, op->regsAtIssue + 4, op->regsA))
        fail("a wgmma's A registers were written between its issue and its wait");
      if (!op->superseded)
        std::copy(op->out.begin(), op->out.end(), op->d);
    }
  f.wgmmaGroups.erase(f.wgmmaGroups.begin(), f.wgmmaGroups.begin() + long(done));
}

//===----------------------------------------------------------------------===//
// Warp intrinsics
//===----------------------------------------------------------------------===//

template <class T> T shfl(unsigned mask, T v, int srcLane, int width) {
  warpExchange(mask, toBits(v), Exchange::Shuffle);
  Fiber &f = *self();
  unsigned base = f.lane & ~unsigned(width - 1);
  unsigned src = base + (unsigned(srcLane) & unsigned(width - 1));
  return fromBits<T>(f.seen[src]);
}

template <class T> T shflXor(unsigned mask, T v, int laneMask, int width) {
  warpExchange(mask, toBits(v), Exchange::Shuffle);
  Fiber &f = *self();
  unsigned base = f.lane & ~unsigned(width - 1);
  unsigned src = f.lane ^ unsigned(laneMask);
  // A source past the end of the lane's segment of `width` gives the lane
  // its own value (an earlier segment's lane is read: PTX shfl.bfly).
  if (src >= base + unsigned(width))
    return v;
  return fromBits<T>(f.seen[src]);
}

template <class T> T shflDown(unsigned mask, T v, unsigned delta, int width) {
  warpExchange(mask, toBits(v), Exchange::Shuffle);
  Fiber &f = *self();
  unsigned inSegment = f.lane & unsigned(width - 1);
  if (inSegment + delta >= unsigned(width))
    return v;
  return fromBits<T>(f.seen[f.lane + delta]);
}

template <class T> T shflUp(unsigned mask, T v, unsigned delta, int width) {
  warpExchange(mask, toBits(v), Exchange::Shuffle);
  Fiber &f = *self();
  unsigned inSegment = f.lane & unsigned(width - 1);
  if (inSegment < delta)
    return v;
  return fromBits<T>(f.seen[f.lane - delta]);
}

inline unsigned ballot(unsigned mask, int predicate) {
  warpExchange(mask, predicate ? 1 : 0, Exchange::Vote);
  unsigned bits = 0;
  for (unsigned m = 0; m < 32; ++m)
    if ((mask >> m & 1u) && self()->seen[m])
      bits |= 1u << m;
  return bits;
}

} // namespace llmc::cudaemu

#endif // LLMC_RUNTIME_CUDAEMU_CUDAEMU_H
