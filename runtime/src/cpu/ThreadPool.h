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
#include <thread>
#include <vector>

namespace llmc::cpu {

class ThreadPool {
public:
  /// `threads` includes the caller; 0 means one per hardware thread.
  explicit ThreadPool(unsigned threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned size() const { return unsigned(workers.size()) + 1; }

  /// Calls body(begin, end) over chunks of [0, n) of at least `grain`
  /// iterations, in parallel; returns when all are done.
  void parallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &body);

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
  const std::function<void(int64_t, int64_t)> *job = nullptr;
  int64_t jobSize = 0, chunk = 0;
  std::atomic<int64_t> next{0};
  // Written under `mutex`; read without it while spinning.
  std::atomic<unsigned> busy{0};
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> stopping{false};
};

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_THREADPOOL_H
