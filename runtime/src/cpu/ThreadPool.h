//===- ThreadPool.h - a persistent pool for data-parallel loops ------------===//
//
// Threads are created once; parallelFor splits [0, n) into chunks that the
// calling thread and the workers take in turn. One parallelFor runs at a
// time per pool. Between jobs a worker spins briefly before it sleeps, so a
// decode step's back-to-back kernels start without a wake-up (tens of
// microseconds each on a VM). Plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_THREADPOOL_H
#define LLMC_RUNTIME_CPU_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace llmc::cpu {

/// A reference to a callable `void(int64_t begin, int64_t end)` that lives
/// for the call it is passed to (std::function could allocate to copy a
/// lambda's captures).
class ChunkFn {
public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, ChunkFn>>>
  ChunkFn(F &&f) // NOLINT: implicit, as std::function's
      : object(const_cast<void *>(static_cast<const void *>(&f))),
        invoke([](void *o, int64_t b, int64_t e) {
          (*static_cast<std::remove_reference_t<F> *>(o))(b, e);
        }) {}
  void operator()(int64_t begin, int64_t end) const { invoke(object, begin, end); }

private:
  void *object;
  void (*invoke)(void *, int64_t, int64_t);
};

class ThreadPool {
public:
  /// `threads` includes the caller; 0 means one per hardware thread.
  explicit ThreadPool(unsigned threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned size() const { return unsigned(workers.size()) + 1; }
  /// Pins worker i (1 .. size() - 1) to cpus[i % count] (Linux CPU
  /// numbers); "" or what was refused.
  std::string pin(const int32_t *cpus, int32_t count);
  /// 1 .. size() - 1 on this pool's workers, 0 on any other thread (the
  /// caller of parallelFor).
  unsigned workerIndex() const;

  /// Calls body(begin, end) over chunks of [0, n) of at least `grain`
  /// iterations (but the one that ends at n), in parallel; returns when all
  /// are done.
  void parallelFor(int64_t n, int64_t grain, ChunkFn body);

  /// The pool shared by the reference kernels.
  static ThreadPool &global();

private:
  void workerLoop();
  void runChunks();
  /// Whether the calling thread is running one of this pool's jobs.
  bool insideJob() const;

  std::vector<std::thread> workers;
  std::mutex callMutex; // one parallelFor at a time
  std::atomic<std::thread::id> caller{}; // the thread inside parallelFor
  std::mutex mutex;
  std::condition_variable wake, done;
  const ChunkFn *job = nullptr;
  int64_t jobSize = 0, chunk = 0;
  std::atomic<int64_t> next{0};
  // Written under `mutex`; read without it while spinning.
  std::atomic<unsigned> busy{0};
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> stopping{false};
  size_t started = 0; // workers running (under `mutex`)
};

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_THREADPOOL_H
