//===- Scheduler.h - the emulation's launch side: fibers, blocks, a grid --===//
//
// What runs a launch on the host (CudaEmu.h describes the model): each
// thread of a block is a fiber on its own stack (from a pool of stack sets,
// one taken per launch), the scheduler runs a block's fibers until each
// parks (a barrier, a warp exchange, an async or wgmma wait) or ends,
// releases the warps and barriers that can go on and reports a deadlock or
// a divergent barrier; runGrid runs the blocks one after another (in
// reverse with setReverseOrder) and returns what went wrong. HostApi.h's
// launches call runGrid; kernels include only CudaEmu.h.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDAEMU_SCHEDULER_H
#define LLMC_RUNTIME_CUDAEMU_SCHEDULER_H

#include "runtime/src/cudaemu/CudaEmu.h"

namespace llmc::cudaemu {

/// A fiber's body: the kernel, then back to the scheduler for good.
inline void fiberMain() {
  (*self()->block->body)();
  self()->state = Fiber::State::Done;
#ifdef LLMC_CUDAEMU_SWITCH_STACK
  Fiber *f = self();
  switchStack(&f->context, f->block->scheduler);
  __builtin_trap(); // never resumed
#endif
  // (With ucontext, uc_link returns to the scheduler.)
}

/// Makes `f` start at fiberMain on the stack [low, high) when first
/// switched to.
inline void startFiber(Fiber &f, char *low, char *high) {
#ifdef LLMC_CUDAEMU_SWITCH_STACK
  (void)low;
  // From the top (16-byte aligned): a null return address for fiberMain
  // (so it starts with the stack aligned as after a call), fiberMain for
  // switchStack's ret, six callee-saved registers, then MXCSR and the x87
  // control word, as switchStack saves them.
  auto *top = reinterpret_cast<uint64_t *>(reinterpret_cast<uintptr_t>(high) & ~uintptr_t(15));
  top[-1] = 0;
  top[-2] = reinterpret_cast<uint64_t>(&fiberMain);
  for (int r = 3; r <= 8; ++r)
    top[-r] = 0;
  uint32_t mxcsr = __builtin_ia32_stmxcsr();
  uint16_t cw;
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  top[-9] = uint64_t(mxcsr) | uint64_t(cw) << 32;
  f.context = top - 9;
#else
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = low;
  f.context.uc_stack.ss_size = size_t(high - low);
  f.context.uc_link = &f.block->scheduler;
  makecontext(&f.context, fiberMain, 0);
#endif
}

/// The stacks of one block's fibers: `count` stacks of kFiberStackBytes,
/// each aligned to its size (see kFiberStackBytes).
struct StackSet {
  char *base = nullptr;
  size_t count = 0;
  char *stack(size_t i) const { return base + i * kFiberStackBytes; }
};

/// Stack sets not in use; a launch takes one (several host threads may
/// launch at once) and gives it back.
struct StackPool {
  std::mutex mutex;
  std::vector<StackSet> free;
  ~StackPool() {
    for (StackSet &s : free)
      munmap(s.base, s.count * kFiberStackBytes);
  }
  static StackPool &get() {
    static StackPool pool;
    return pool;
  }
  /// A set of at least n stacks; count 0 when memory ran out.
  StackSet take(size_t n) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (size_t i = 0; i < free.size(); ++i)
        if (free[i].count >= n) {
          StackSet s = free[i];
          free.erase(free.begin() + long(i));
          return s;
        }
    }
    // One stack more than asked, to align the set; the slop is returned.
    size_t bytes = n * kFiberStackBytes;
    void *p = mmap(nullptr, bytes + kFiberStackBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return {};
    uintptr_t start = reinterpret_cast<uintptr_t>(p), end = start + bytes + kFiberStackBytes;
    uintptr_t aligned = (start + kFiberStackBytes - 1) & ~uintptr_t(kFiberStackBytes - 1);
    if (aligned > start)
      munmap(p, aligned - start);
    if (end > aligned + bytes)
      munmap(reinterpret_cast<void *>(aligned + bytes), end - (aligned + bytes));
    StackSet s{reinterpret_cast<char *>(aligned), n};
    size_t page = size_t(sysconf(_SC_PAGESIZE));
    for (size_t i = 0; i < n; ++i)
      if (mprotect(s.stack(i) + page, page, PROT_NONE) != 0) {
        munmap(s.base, bytes);
        return {};
      }
    return s;
  }
  void give(StackSet s) {
    std::lock_guard<std::mutex> lock(mutex);
    free.push_back(s);
  }
};

inline std::string coords(uint3 v) {
  return "(" + std::to_string(v.x) + ", " + std::to_string(v.y) + ", " + std::to_string(v.z) + ")";
}

/// Releases warp w's exchanges whose lanes have all arrived (setting
/// `released`). Returns false when the block can go no further (error set).
inline bool releaseWarp(Block &b, size_t w, bool &released) {
  std::vector<Fiber> &fs = *b.fibers;
  size_t base = w * 32, lanes = std::min<size_t>(32, fs.size() - base);
  for (size_t l = 0; l < lanes; ++l) {
    Fiber &f = fs[base + l];
    if (f.state != Fiber::State::AtWarpExchange)
      continue;
    unsigned mask = f.exchangeMask;
    bool complete = true;
    for (unsigned m = 0; m < 32 && complete; ++m) {
      if (!(mask >> m & 1u))
        continue;
      if (m >= lanes) {
        b.error = "warp exchange mask names lane " + std::to_string(m) + " of warp " +
                  std::to_string(w) + ", which has " + std::to_string(lanes) + " threads";
        return false;
      }
      Fiber &o = fs[base + m];
      if (o.state == Fiber::State::Done) {
        b.error = "warp exchange waits for lane " + std::to_string(m) + " of warp " +
                  std::to_string(w) + ", which has exited";
        return false;
      }
      complete = o.state == Fiber::State::AtWarpExchange && o.exchangeMask == mask;
    }
    if (!complete)
      continue;
    for (unsigned m = 0; m < 32; ++m)
      if ((mask >> m & 1u) && fs[base + m].exchangeKind != f.exchangeKind) {
        b.error = "lanes " + std::to_string(l) + " and " + std::to_string(m) + " of warp " +
                  std::to_string(w) + " meet at different warp-collective operations (" +
                  exchangeName(f.exchangeKind) + ", " +
                  exchangeName(fs[base + m].exchangeKind) + ")";
        return false;
      }
    uint64_t values[32] = {};
    for (unsigned m = 0; m < 32; ++m)
      if (mask >> m & 1u)
        values[m] = fs[base + m].offered;
    for (unsigned m = 0; m < 32; ++m)
      if (mask >> m & 1u) {
        std::memcpy(fs[base + m].seen, values, sizeof values);
        fs[base + m].state = Fiber::State::Ready;
      }
    released = true;
  }
  return true;
}

/// Releases what can be released after every ready fiber ran until it
/// parked. Returns false when the block can go no further (error set).
inline bool releaseBarriers(Block &b) {
  std::vector<Fiber> &fs = *b.fibers;
  size_t done = 0, atBarrier = 0, atExchange = 0, atBegin = 0;
  for (Fiber &f : fs) {
    done += f.state == Fiber::State::Done;
    atBarrier += f.state == Fiber::State::AtBlockBarrier;
    atExchange += f.state == Fiber::State::AtWarpExchange;
    atBegin += f.state == Fiber::State::AtKernelBegin;
  }
  bool released = false;
  // Warp exchanges: a lane is released with the others of its mask when
  // all of them wait with the same mask.
  if (atExchange)
    for (size_t w = 0; w * 32 < fs.size(); ++w)
      if (!releaseWarp(b, w, released))
        return false;
  if (released)
    return true;
  if (atBarrier && atBarrier + done == fs.size()) {
    if (done) {
      b.error = "__syncthreads() reached by " +
                std::to_string(atBarrier) + " of " + std::to_string(fs.size()) +
                " threads; the others have exited";
      return false;
    }
    for (Fiber &f : fs)
      f.state = Fiber::State::Ready;
    return true;
  }
  // The programmatic-launch check: nothing else can move, so the block's
  // early part is over (its other threads wait at barriers for these).
  if (atBegin) {
    if (std::string e = b.pdl->leave(); !e.empty()) {
      b.error = std::move(e);
      return false;
    }
    for (Fiber &f : fs)
      if (f.state == Fiber::State::AtKernelBegin)
        f.state = Fiber::State::Ready;
    return true;
  }
  if (done == fs.size())
    return true;
  b.error = "deadlock: " + std::to_string(atBarrier) +
            " threads at __syncthreads(), " + std::to_string(atExchange) +
            " at warp exchanges that cannot complete, " + std::to_string(done) + " exited";
  return false;
}

/// Whether blocks, warps and lanes run in reverse order (the header's
/// "Order"): -1 before LLMC_CUDAEMU_ORDER (forward, the default, or
/// reverse) was read; 2 where it named neither, which fails every launch.
inline std::atomic<int> &orderFlag() {
  static std::atomic<int> flag{-1};
  return flag;
}
inline int order() {
  int v = orderFlag().load();
  if (v < 0) {
    const char *e = std::getenv("LLMC_CUDAEMU_ORDER");
    v = !e || !*e || std::strcmp(e, "forward") == 0 ? 0 : std::strcmp(e, "reverse") == 0 ? 1 : 2;
    orderFlag().store(v);
  }
  return v;
}
/// Turns the reverse order on or off; returns whether it was on.
inline bool setReverseOrder(bool on) {
  bool was = order() == 1;
  orderFlag() = on ? 1 : 0;
  return was;
}

/// Runs one block's threads to completion on `stacks`; returns false with
/// b.error set on failure.
inline bool runFibers(Block &b, const StackSet &stacks) {
  std::vector<Fiber> &fs = *b.fibers;
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  b.sharedVars.clear();
  b.staticSharedBytes = 0;
  if (!b.dynamicShared->empty())
    std::memset(b.dynamicShared->data(), 0xff, b.dynamicShared->size());
  b.wgmmaSignatures.clear();
  b.unfenced.assign((b.dynamicShared->size() + 15) / 16, 0);
  for (size_t i = 0; i < fs.size(); ++i) {
    Fiber &f = fs[i];
    f.state = Fiber::State::Ready;
    f.begun = false;
    f.asyncOpen.clear(); // (a thread's copies never waited for are dropped)
    f.asyncGroups.clear();
    f.wgmmaOpen.clear(); // (and its wgmmas)
    f.wgmmaGroups.clear();
    f.wgmmaFenced = false;
    f.wgmmaIssued = 0;
    f.unfencedChunks.clear();
    f.threadIdx = {unsigned(i % b.blockDim.x), unsigned(i / b.blockDim.x % b.blockDim.y),
                   unsigned(i / (size_t(b.blockDim.x) * b.blockDim.y))};
    f.lane = unsigned(i % 32);
    f.warp = unsigned(i / 32);
    f.block = &b;
    char *stack = stacks.stack(i);
    *reinterpret_cast<Fiber **>(stack) = &f;
    // Past the Fiber pointer and the guard page.
    startFiber(f, stack + 2 * page, stack + kFiberStackBytes);
  }
  // Warp after warp: each runs, its exchanges released as they complete,
  // until all its threads wait at a block barrier or have ended, before the
  // next one starts. (A legal order on the GPU, and the one that shows a
  // warp that writes shared memory another warp has yet to read without a
  // barrier between them.)
  bool reverse = order() == 1;
  size_t warps = (fs.size() + 31) / 32;
  while (true) {
    for (size_t wi = 0; wi < warps; ++wi) {
      size_t w = reverse ? warps - 1 - wi : wi;
      size_t base = w * 32, lanes = std::min<size_t>(32, fs.size() - base);
      for (bool ran = true; ran;) {
        ran = false;
        for (size_t li = 0; li < lanes; ++li) {
          Fiber &f = fs[base + (reverse ? lanes - 1 - li : li)];
          if (f.state != Fiber::State::Ready)
            continue;
          ran = true;
          switchTo(b.scheduler, f.context);
          if (!b.error.empty())
            return false;
        }
        bool released = false;
        if (ran && !releaseWarp(b, w, released))
          return false;
      }
    }
    if (!releaseBarriers(b))
      return false;
    bool allDone = true;
    for (Fiber &f : fs)
      allDone &= f.state == Fiber::State::Done;
    if (allDone) {
      for (Fiber &f : fs)
        if (!f.begun) {
          b.error = "thread " + coords(f.threadIdx) +
                    " ended without LLMC_KERNEL_BEGIN(), every kernel's first statement (on "
                    "the GPU it waits for the kernel before)";
          return false;
        }
      for (Fiber &f : fs) // (a warpgroup's threads issue the same wgmmas)
        if (f.wgmmaIssued != fs[f.warp / 4 * 128].wgmmaIssued) {
          b.error = "thread " + coords(f.threadIdx) + " issued " +
                    std::to_string(f.wgmmaIssued) + " wgmmas, the first of its warpgroup " +
                    std::to_string(fs[f.warp / 4 * 128].wgmmaIssued);
          return false;
        }
      return true;
    }
  }
}

/// Runs one block to completion on `stacks`, under the programmatic-launch
/// check's two phases when the launch has them; returns false with b.error
/// set on failure.
inline bool runBlock(Block &b, const StackSet &stacks) {
  if (!b.pdl)
    return runFibers(b, stacks);
  b.pdl->enter();
  bool ok = runFibers(b, stacks);
  if (b.pdl->early()) { // (a block that failed in its early part)
    std::string e = b.pdl->leave();
    if (ok && !e.empty()) {
      b.error = std::move(e);
      ok = false;
    }
  }
  return ok;
}

/// The largest dynamic shared memory a kernel was allowed (per kernel).
inline std::vector<std::pair<const void *, size_t>> &dynamicSharedOptIns() {
  static std::vector<std::pair<const void *, size_t>> optIns;
  return optIns;
}

inline void setMaxDynamicShared(const void *kernel, size_t bytes) {
  for (auto &[k, b] : dynamicSharedOptIns())
    if (k == kernel) {
      b = bytes;
      return;
    }
  dynamicSharedOptIns().emplace_back(kernel, bytes);
}

/// Runs `body` as a grid. Returns an empty string or what went wrong.
inline std::string runGrid(const void *kernel, dim3 grid, dim3 block, size_t dynamicBytes,
                           const std::function<void()> &body, pdl::View *pdl = nullptr) {
  size_t threads = size_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > kMaxThreadsPerBlock || block.z > kMaxBlockDimZ)
    return "invalid block (" + std::to_string(block.x) + ", " + std::to_string(block.y) + ", " +
           std::to_string(block.z) + "): 1 to 1024 threads, z at most 64";
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > kMaxGridDimYZ ||
      grid.z > kMaxGridDimYZ || grid.x > 0x7fffffffu)
    return "invalid grid (" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
           std::to_string(grid.z) + ")";
  // As CUDA: the dynamic bytes within the kernel's opt-in (48 KiB without
  // one), static and dynamic together within 48 KiB, or with an opt-in the
  // device's opt-in maximum.
  size_t limit = kDefaultSharedBytes, total = kDefaultSharedBytes;
  for (auto &[k, b] : dynamicSharedOptIns())
    if (k == kernel) {
      limit = std::max(limit, std::min(b, kOptInSharedBytes));
      total = kOptInSharedBytes;
    }
  if (dynamicBytes > limit)
    return "dynamic shared memory of " + std::to_string(dynamicBytes) +
           " bytes exceeds the kernel's limit of " + std::to_string(limit);
  if (order() == 2)
    return "LLMC_CUDAEMU_ORDER is neither forward nor reverse";
  StackSet stacks = StackPool::get().take(threads);
  if (!stacks.count)
    return "cannot allocate " + std::to_string(threads) + " fiber stacks";
  std::vector<Fiber> fibers(threads);
  DynamicSharedBytes dynamic(dynamicBytes);
  Block b;
  b.fibers = &fibers;
  b.blockDim = block;
  b.gridDim = grid;
  b.threads = unsigned(threads);
  b.body = &body;
  b.dynamicShared = &dynamic;
  b.sharedLimit = total;
  b.pdl = pdl;
  std::string error;
  uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
  bool reverse = order() == 1;
  for (uint64_t i = 0; i < blocks && error.empty(); ++i) {
    uint64_t at = reverse ? blocks - 1 - i : i; // (x fastest, as the GPU numbers them)
    b.blockIdx = {unsigned(at % grid.x), unsigned(at / grid.x % grid.y),
                  unsigned(at / (uint64_t(grid.x) * grid.y))};
    b.error.clear();
    if (!runBlock(b, stacks))
      error = "block " + coords(b.blockIdx) + ": " + b.error;
  }
  // A failed block leaves fibers parked on these stacks; nothing resumes
  // them, and the next block or launch makes fresh contexts.
  StackPool::get().give(stacks);
  return error;
}

} // namespace llmc::cudaemu

#endif // LLMC_RUNTIME_CUDAEMU_SCHEDULER_H
