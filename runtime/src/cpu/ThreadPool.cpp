//===- ThreadPool.cpp - a persistent pool for data-parallel loops ----------===//
#include "runtime/src/cpu/ThreadPool.h"

#include <algorithm>

#include <cerrno>
#include <pthread.h>
#include <sched.h>



namespace llmc::cpu {

namespace {

// The pool whose worker the current thread is, and its index there.
thread_local const ThreadPool *workerOf = nullptr;
thread_local unsigned workerNumber = 0;

// About 50-100 microseconds of spinning between jobs.
constexpr int kSpins = 4000;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
} // namespace

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 1; i < threads; ++i)
    workers.emplace_back([this, i] {
      workerOf = this; // (a first touch of TLS may allocate: done here)
      workerNumber = i;
      {
        std::lock_guard<std::mutex> lock(mutex);
        ++started;
      }
      done.notify_all();
      workerLoop();
    });
  // Every worker is running before the pool is used, so nothing of a
  // thread's start happens during a job.
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return started == workers.size(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (std::thread &t : workers)
    t.join();
}

bool ThreadPool::insideJob() const {
  std::thread::id self = std::this_thread::get_id();
  if (caller.load() == self)
    return true;
  for (const std::thread &w : workers)
    if (w.get_id() == self)
      return true;
  return false;
}

std::string ThreadPool::pin(const int32_t *cpus, int32_t count) {
  if (!cpus || count < 1)
    return "no CPUs given";
  for (int32_t i = 0; i < count; ++i)
    if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE)
      return "CPU " + std::to_string(cpus[i]) + " is not a CPU number (0 .. " +
             std::to_string(CPU_SETSIZE - 1) + ")";
  for (size_t w = 0; w < workers.size(); ++w) {
    int32_t cpu = cpus[(w + 1) % size_t(count)];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (int rc = pthread_setaffinity_np(workers[w].native_handle(), sizeof set, &set); rc != 0)
      return "cannot pin a thread to CPU " + std::to_string(cpu) +
             (rc == EINVAL ? " (not one this process may run on)" : "");
  }
  return "";
}

unsigned ThreadPool::workerIndex() const { return workerOf == this ? workerNumber : 0; }

ThreadPool &ThreadPool::global() {
  static ThreadPool pool;
  return pool;
}

void ThreadPool::runChunks() {
  for (;;) {
    int64_t begin = next.fetch_add(chunk);
    if (begin >= jobSize)
      return;
    (*job)(begin, std::min(jobSize, begin + chunk));
  }
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    for (int i = 0; i < kSpins && generation.load(std::memory_order_acquire) == seen &&
                    !stopping.load(std::memory_order_relaxed);
         ++i)
      relax();
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping.load() || generation.load() != seen; });
      if (stopping)
        return;
      seen = generation;
      ++busy;
    }
    runChunks();
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (--busy == 0)
        done.notify_all();
    }
  }
}

void ThreadPool::parallelFor(int64_t n, int64_t grain, ChunkFn body) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(1, grain);
  // A parallelFor from inside a job (a worker, or the caller running its
  // chunks) runs serially. (Not a thread_local flag: this code is linked
  // into dlopen'ed model libraries, where TLS is best avoided.)
  if (workers.empty() || n <= grain || insideJob()) {
    body(0, n);
    return;
  }
  // Callers on different threads take turns.
  std::lock_guard<std::mutex> serial(callMutex);
  caller.store(std::this_thread::get_id());
  struct Reset {
    std::atomic<std::thread::id> &id;
    ~Reset() { id.store(std::thread::id()); }
  } reset{caller};
  // A few chunks per thread balance uneven work without much overhead.
  int64_t parts = int64_t(size()) * 4;
  {
    std::unique_lock<std::mutex> lock(mutex);
    // Workers still leaving the previous job must not see this one half set.
    done.wait(lock, [&] { return busy == 0; });
    job = &body;
    jobSize = n;
    chunk = std::max(grain, (n + parts - 1) / parts);
    next = 0;
    ++generation;
  }
  wake.notify_all();
  runChunks();
  for (int i = 0; i < kSpins && !(busy.load(std::memory_order_acquire) == 0 &&
                                  next.load(std::memory_order_acquire) >= jobSize);
       ++i)
    relax();
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return busy == 0 && next.load() >= jobSize; });
  job = nullptr;
}

} // namespace llmc::cpu
