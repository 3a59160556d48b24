//===- CpuSupportTest.cpp - the runtime's inline vector and thread pool ---===//
//
// InlineVector against std::vector on the same operations (inline and grown
// to the heap); the pool's worker indices and its pinning of workers to
// CPUs (read back with pthread_getaffinity_np from inside a job).
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/InlineVector.h"
#include "runtime/src/cpu/ThreadPool.h"

#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using llmc::cpu::InlineVector;
using llmc::cpu::ThreadPool;

namespace {

template <size_t N> void expectSame(const InlineVector<std::string, N> &a,
                                    const std::vector<std::string> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i)
    EXPECT_EQ(a[i], b[i]) << "at " << i;
}

TEST(InlineVector, MatchesStdVectorInlineAndOnTheHeap) {
  // Strings (not trivially copyable): construction and destruction count.
  InlineVector<std::string, 3> v;
  std::vector<std::string> want;
  for (int i = 0; i < 10; ++i) { // past the 3 inline slots
    v.push_back("s" + std::to_string(i));
    want.push_back("s" + std::to_string(i));
    expectSame(v, want);
  }
  v.insert(v.begin() + 2, "x");
  want.insert(want.begin() + 2, "x");
  expectSame(v, want);
  std::vector<std::string> more = {"a", "b", "c"};
  v.insert(v.end() - 1, more.begin(), more.end());
  want.insert(want.end() - 1, more.begin(), more.end());
  expectSame(v, want);
  v.insert(v.begin(), size_t(2), "y");
  want.insert(want.begin(), size_t(2), "y");
  expectSame(v, want);
  v.erase(v.begin() + 1, v.begin() + 4);
  want.erase(want.begin() + 1, want.begin() + 4);
  expectSame(v, want);
  v.erase(v.end() - 1);
  want.pop_back();
  expectSame(v, want);
  // Inserting an element of the vector into itself.
  v.insert(v.begin(), v[3]);
  want.insert(want.begin(), std::string(want[3]));
  expectSame(v, want);
  // Copies and moves, from the heap and from inline storage.
  InlineVector<std::string, 3> copy = v, moved = std::move(copy);
  expectSame(moved, want);
  InlineVector<std::string, 3> small = {"p", "q"}, smallMoved = std::move(small);
  expectSame(smallMoved, {"p", "q"});
  EXPECT_TRUE(small.empty());
  moved = smallMoved;
  expectSame(moved, {"p", "q"});
  moved.resize(5, "z");
  expectSame(moved, {"p", "q", "z", "z", "z"});
  moved.resize(1);
  expectSame(moved, {"p"});
}

TEST(InlineVector, ComparesAndConvertsLikeAVector) {
  InlineVector<int64_t, 8> a = {1, 2, 3}, b(std::vector<int64_t>{1, 2, 3});
  EXPECT_EQ(a, b);
  b.back() = 4;
  EXPECT_NE(a, b);
  EXPECT_TRUE(a < b);
  std::vector<int64_t> v = a;
  EXPECT_EQ(v, (std::vector<int64_t>{1, 2, 3}));
  InlineVector<int64_t, 8> filled(size_t(4), int64_t(7));
  EXPECT_EQ(filled, (InlineVector<int64_t, 8>{7, 7, 7, 7}));
}

TEST(ThreadPool, WorkersHaveDistinctIndices) {
  ThreadPool pool(3);
  std::mutex m;
  std::map<std::thread::id, std::set<unsigned>> indexOf;
  std::atomic<int> spins{0};
  // A worker's chunk waits until the caller has run one: on a loaded
  // machine the workers could otherwise take every chunk before the caller
  // gets to its first (each holds one at most while it waits, so chunks
  // are left for the caller).
  const std::thread::id me = std::this_thread::get_id();
  std::atomic<bool> callerRan{false};
  // Chunks slow enough that several threads take some.
  pool.parallelFor(300, 1, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() == me)
      callerRan.store(true);
    while (!callerRan.load())
      std::this_thread::yield();
    for (int i = 0; i < 20000; ++i)
      spins.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(m);
    indexOf[std::this_thread::get_id()].insert(pool.workerIndex());
  });
  std::set<unsigned> all;
  for (auto &[thread, indices] : indexOf) {
    ASSERT_EQ(indices.size(), 1u); // one index per thread
    EXPECT_LT(*indices.begin(), pool.size());
    EXPECT_TRUE(all.insert(*indices.begin()).second); // and none shared
  }
  EXPECT_EQ(indexOf[std::this_thread::get_id()], std::set<unsigned>{0u}); // the caller
}

TEST(ThreadPool, PinsWorkersToTheCpusGiven) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  int cpu = -1;
  for (int c = 0; c < CPU_SETSIZE && cpu < 0; ++c)
    if (CPU_ISSET(c, &mine))
      cpu = c;
  ASSERT_GE(cpu, 0);
  ThreadPool pool(2);
  ASSERT_EQ(pool.pin(&cpu, 1), "");
  // The worker's own mask, read inside a job it runs: of the job's two
  // chunks the caller takes one and waits (at most 10 s) until the worker
  // has run the other, so the worker runs one however loaded the machine.
  std::atomic<bool> checked{false}, pinned{true};
  pool.parallelFor(2, 1, [&](int64_t, int64_t) {
    if (pool.workerIndex() != 1) {
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!checked && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    pthread_getaffinity_np(pthread_self(), sizeof set, &set);
    pinned = CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set);
    checked = true;
  });
  ASSERT_TRUE(checked) << "the worker took no chunk";
  EXPECT_TRUE(pinned);
  // Numbers that are not CPUs are refused, naming them.
  int32_t bad = -3;
  EXPECT_NE(pool.pin(&bad, 1).find("CPU -3 is not a CPU number"), std::string::npos);
  EXPECT_EQ(pool.pin(nullptr, 0), "no CPUs given");
  // A CPU this process may not run on (when there is one below CPU_SETSIZE).
  int off = -1;
  for (int c = CPU_SETSIZE - 1; c >= 0 && off < 0; --c)
    if (!CPU_ISSET(c, &mine))
      off = c;
  if (off >= 0)
    EXPECT_NE(pool.pin(&off, 1).find("not one this process may run on"), std::string::npos)
        << "CPU " << off;
}

} // namespace
