//===- CudaEmuTest.cpp - the CUDA execution model the kernels rely on -----===//
//
// Each test is a small kernel whose result follows from CUDA's rules alone
// (thread and block indexing, barriers, shared memory per block, warp
// shuffles and votes, atomics, cp.async groups); the expected values are computed here from
// those rules. Built against the host emulation in CI and with nvcc on a
// GPU (scripts/test-gpu.sh), so the emulation is checked against the
// hardware whenever one is lent. The last tests check that the emulation
// reports what the GPU leaves undefined (emulation only).
//
//===----------------------------------------------------------------------===//
#include "test/unit/CudaTestUtil.h"

#include <cstdlib>
#include <numeric>
#include <thread>

using namespace llmc::cuda;
using llmc::cuda::test::DeviceBuffer;

namespace {

LLMC_GLOBAL void writeIndices(unsigned *out) {
  LLMC_KERNEL_BEGIN();
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  atomicAdd(&out[bid * threads + tid], 1u + bid * 1000u + tid);
}

TEST(CudaEmu, EveryThreadOfEveryBlockRunsOnceWithItsIndices) {
  dim3 grid(3, 2, 2), block(8, 4, 2);
  size_t n = 12 * 64;
  DeviceBuffer<unsigned> out(std::vector<unsigned>(n, 0));
  ASSERT_EQ(launch(writeIndices, grid, block, 0, nullptr, out.get()), "");
  std::vector<unsigned> got = out.download();
  for (unsigned b = 0; b < 12; ++b)
    for (unsigned t = 0; t < 64; ++t)
      ASSERT_EQ(got[b * 64 + t], 1u + b * 1000u + t) << b << " " << t;
}

/// Each thread reads its neighbour's value after the barrier: correct only
/// when every write happened before any read.
LLMC_GLOBAL void rotateThroughShared(const int *in, int *out) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(int[256], buf);
  unsigned t = threadIdx.x, n = blockDim.x;
  buf[t] = in[blockIdx.x * n + t];
  __syncthreads();
  int v = buf[(t + 1) % n];
  __syncthreads();
  buf[t] = v * 2; // overwritten only after everyone read
  __syncthreads();
  out[blockIdx.x * n + t] = buf[(t + n - 1) % n];
}

TEST(CudaEmu, SyncthreadsOrdersSharedMemory) {
  std::vector<int> in(4 * 256);
  std::iota(in.begin(), in.end(), 7);
  DeviceBuffer<int> din(in), dout(in.size());
  ASSERT_EQ(launch(rotateThroughShared, dim3(4), dim3(256), 0, nullptr, din.get(), dout.get()), "");
  std::vector<int> got = dout.download();
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(got[i], 2 * in[i]) << i;
}

/// Shared memory is per block: each block sums its own values.
LLMC_GLOBAL void blockSums(const float *in, float *out) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(float[32], scratch);
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  float s = blockSum(v, scratch);
  if (threadIdx.x == 0)
    out[blockIdx.x] = s;
  // Every thread got the same total.
  if (s != blockSum(v, scratch))
    out[blockIdx.x] = -1;
}

TEST(CudaEmu, SharedMemoryIsPerBlock) {
  std::vector<float> in(5 * 96);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = float(i % 96) + float(i / 96) * 1000;
  DeviceBuffer<float> din(in), dout(5);
  ASSERT_EQ(launch(blockSums, dim3(5), dim3(96), 0, nullptr, din.get(), dout.get()), "");
  std::vector<float> got = dout.download();
  for (int b = 0; b < 5; ++b)
    EXPECT_EQ(got[size_t(b)], 96 * 95 / 2 + 96000.0f * float(b)) << b;
}

LLMC_GLOBAL void dynamicSharedReverse(const int *in, int *out) {
  LLMC_KERNEL_BEGIN();
  LLMC_DYNAMIC_SHARED(int, buf);
  unsigned t = threadIdx.x, n = blockDim.x;
  buf[t] = in[t];
  __syncthreads();
  out[t] = buf[n - 1 - t];
}

TEST(CudaEmu, DynamicSharedMemory) {
  std::vector<int> in(128);
  std::iota(in.begin(), in.end(), 0);
  DeviceBuffer<int> din(in), dout(128);
  ASSERT_EQ(launch(dynamicSharedReverse, dim3(1), dim3(128), 128 * sizeof(int), nullptr, din.get(),
                   dout.get()),
            "");
  std::vector<int> got = dout.download();
  for (int i = 0; i < 128; ++i)
    EXPECT_EQ(got[size_t(i)], 127 - i);
}

/// out[t * 5 + k]: the five shuffles of lane value v = 100 + t.
LLMC_GLOBAL void shuffles(int *out, int width) {
  LLMC_KERNEL_BEGIN();
  unsigned t = threadIdx.x;
  int v = 100 + int(t);
  out[t * 5 + 0] = __shfl_xor_sync(kFullMask, v, 9, width);
  out[t * 5 + 1] = __shfl_down_sync(kFullMask, v, 3, width);
  out[t * 5 + 2] = __shfl_up_sync(kFullMask, v, 2, width);
  out[t * 5 + 3] = __shfl_sync(kFullMask, v, 9, width);
  out[t * 5 + 4] = __shfl_sync(kFullMask, v, int(t) + 1, width);
}

TEST(CudaEmu, WarpShufflesFollowCudaRules) {
  for (int width : {32, 16, 8}) {
    DeviceBuffer<int> out(64 * 5);
    ASSERT_EQ(launch(shuffles, dim3(1), dim3(64), 0, nullptr, out.get(), width), "");
    std::vector<int> got = out.download();
    for (int t = 0; t < 64; ++t) {
      int lane = t % 32, warpBase = t - lane;
      int seg = lane & ~(width - 1), in = lane & (width - 1);
      auto at = [&](int l) { return 100 + warpBase + l; };
      // xor past the segment's end gives the lane its own value; into an
      // earlier segment it reads that lane (PTX shfl.bfly).
      int x = lane ^ 9;
      EXPECT_EQ(got[size_t(t * 5 + 0)], x < seg + width ? at(x) : at(lane)) << width << t;
      EXPECT_EQ(got[size_t(t * 5 + 1)], in + 3 < width ? at(lane + 3) : at(lane)) << width << t;
      EXPECT_EQ(got[size_t(t * 5 + 2)], in >= 2 ? at(lane - 2) : at(lane)) << width << t;
      EXPECT_EQ(got[size_t(t * 5 + 3)], at(seg + 9 % width)) << width << t;
      EXPECT_EQ(got[size_t(t * 5 + 4)], at(seg + (in + 1) % width)) << width << t;
    }
  }
}

LLMC_GLOBAL void votes(unsigned *out) {
  LLMC_KERNEL_BEGIN();
  unsigned t = threadIdx.x;
  bool odd = t % 2, lane7 = t % 32 == 7;
  out[t * 4 + 0] = __ballot_sync(kFullMask, odd);
  out[t * 4 + 1] = __any_sync(kFullMask, lane7 && t >= 32);
  out[t * 4 + 2] = __all_sync(kFullMask, t < 64);
  // Half the warp votes among itself.
  unsigned lower = 0x0000ffffu, upper = 0xffff0000u;
  out[t * 4 + 3] = __ballot_sync(t % 32 < 16 ? lower : upper, t % 3 == 0);
}

TEST(CudaEmu, WarpVotes) {
  DeviceBuffer<unsigned> out(96 * 4);
  ASSERT_EQ(launch(votes, dim3(1), dim3(96), 0, nullptr, out.get()), "");
  std::vector<unsigned> got = out.download();
  for (unsigned t = 0; t < 96; ++t) {
    unsigned warp = t / 32, lane = t % 32;
    EXPECT_EQ(got[t * 4 + 0], 0xaaaaaaaau) << t;
    EXPECT_EQ(got[t * 4 + 1], warp >= 1 ? 1u : 0u) << t;
    EXPECT_EQ(got[t * 4 + 2], warp < 2 ? 1u : 0u) << t;
    unsigned want = 0;
    for (unsigned l = lane < 16 ? 0 : 16; l < (lane < 16 ? 16u : 32u); ++l)
      if ((warp * 32 + l) % 3 == 0)
        want |= 1u << l;
    EXPECT_EQ(got[t * 4 + 3], want) << t;
  }
}

LLMC_GLOBAL void atomics(int *counter, float *sum, unsigned long long *first, int *maximum) {
  LLMC_KERNEL_BEGIN();
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(counter, 1);
  atomicAdd(sum, 0.5f);
  atomicCAS(first, 0ull, 1ull + g); // only one thread wins
  atomicMax(maximum, int(g * 7 % 1000));
}

TEST(CudaEmu, AtomicsAcrossBlocks) {
  DeviceBuffer<int> counter(std::vector<int>{0}), maximum(std::vector<int>{-1});
  DeviceBuffer<float> sum(std::vector<float>{0});
  DeviceBuffer<unsigned long long> first(std::vector<unsigned long long>{0});
  ASSERT_EQ(launch(atomics, dim3(6), dim3(64), 0, nullptr, counter.get(), sum.get(), first.get(),
                   maximum.get()),
            "");
  EXPECT_EQ(counter.download()[0], 384);
  EXPECT_EQ(sum.download()[0], 192.0f);
  unsigned long long won = first.download()[0];
  EXPECT_GE(won, 1u);
  EXPECT_LE(won, 384u);
  int want = 0;
  for (int g = 0; g < 384; ++g)
    want = std::max(want, g * 7 % 1000);
  EXPECT_EQ(maximum.download()[0], want);
}

TEST(CudaEmu, HalfAndBfloat16RoundToNearestEven) {
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10 in half: even is 1.
  EXPECT_EQ(toFloat(fromFloat<half>(1.0f + 1.0f / 2048)), 1.0f);
  EXPECT_EQ(toFloat(fromFloat<half>(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);
  EXPECT_EQ(toFloat(fromFloat<bfloat16>(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(toFloat(fromFloat<bfloat16>(1.0f + 3.0f / 256)), 1.0f + 2.0f / 128);
  EXPECT_EQ(toFloat(fromFloat<half>(70000.0f)), INFINITY);
}

/// cp.async in three groups: words 0-7 and 8-15 (its thread's two rows of
/// 16 bytes, the second zero-filled for odd threads), then 16-23; after
/// waiting for all but the newest group and a barrier, each thread reads
/// its neighbour's first two rows; after waiting for all, its third.
LLMC_GLOBAL void asyncGroups(const unsigned *src, unsigned *out) {
  LLMC_KERNEL_BEGIN();
  LLMC_DYNAMIC_SHARED(unsigned, rows);
  unsigned t = threadIdx.x, n = blockDim.x;
  asyncCopy16(rows + 4 * t, src + 4 * t, true);
  asyncCommit();
  asyncCopy16(rows + 4 * (n + t), src + 4 * (n + t), t % 2 == 0);
  asyncCommit();
  asyncCopy16(rows + 4 * (2 * n + t), src + 4 * (2 * n + t), true);
  asyncCommit();
  asyncWait<1>();
  __syncthreads();
  unsigned other = (t + 1) % n;
  for (unsigned i = 0; i < 4; ++i) {
    out[4 * t + i] = rows[4 * other + i];
    out[4 * (n + t) + i] = rows[4 * (n + other) + i];
  }
  asyncWait<0>();
  __syncthreads();
  for (unsigned i = 0; i < 4; ++i)
    out[4 * (2 * n + t) + i] = rows[4 * (2 * n + other) + i];
}

TEST(CudaEmu, AsyncCopiesLandByTheirWait) {
  const unsigned n = 64;
  std::vector<unsigned> src(12 * n);
  std::iota(src.begin(), src.end(), 1000u);
  DeviceBuffer<unsigned> dsrc(src), out(12 * n);
  ASSERT_EQ(launch(asyncGroups, dim3(1), dim3(n), 12 * n * sizeof(unsigned), nullptr, dsrc.get(),
                   out.get()),
            "");
  std::vector<unsigned> got = out.download();
  for (unsigned row = 0; row < 3 * n; ++row) {
    unsigned thread = (row % n + 1) % n, from = row / n * n + thread;
    bool zeros = row / n == 1 && thread % 2 == 1;
    for (unsigned i = 0; i < 4; ++i)
      ASSERT_EQ(got[4 * row + i], zeros ? 0u : src[4 * from + i]) << row << " " << i;
  }
}

LLMC_GLOBAL void addAtPosition(const int64_t *pos, float *buf, float v) {
  LLMC_KERNEL_BEGIN();
  if (threadIdx.x == 0)
    buf[*pos] += v;
}

/// A captured graph replays its copies and launches; what the host wrote
/// into the pinned staging buffer before each launch is what the copy reads.
TEST(CudaGraph, ReplaysWithTheValuesOfEachLaunch) {
  Stream s = nullptr;
  ASSERT_EQ(streamCreate(&s), "");
  void *staging = nullptr;
  ASSERT_EQ(hostAllocPinned(&staging, sizeof(int64_t)), "");
  auto *hostPos = static_cast<int64_t *>(staging);
  DeviceBuffer<int64_t> pos(std::vector<int64_t>{0});
  DeviceBuffer<float> buf(std::vector<float>(8, 0.0f));
  Graph g = nullptr;
  ASSERT_EQ(captureBegin(s), "");
  ASSERT_EQ(copyAsync(pos.get(), hostPos, sizeof(int64_t), s), "");
  ASSERT_EQ(launch(addAtPosition, dim3(1), dim3(32), 0, s, pos.get(), buf.get(), 1.5f), "");
  ASSERT_EQ(launch(addAtPosition, dim3(1), dim3(32), 0, s, pos.get(), buf.get(), 2.0f), "");
  ASSERT_EQ(captureEnd(s, &g), "");
  EXPECT_EQ(buf.download(), std::vector<float>(8, 0.0f)); // nothing ran while capturing
  for (int64_t p : {3, 5, 3}) {
    *hostPos = p;
    ASSERT_EQ(graphLaunch(g, s), "");
    ASSERT_EQ(streamSynchronize(s), "");
  }
  std::vector<float> got = buf.download();
  EXPECT_EQ(got[3], 7.0f);
  EXPECT_EQ(got[5], 3.5f);
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(graphDestroy(g), "");
  EXPECT_EQ(hostFreePinned(staging), "");
  EXPECT_EQ(streamDestroy(s), "");
}

TEST(CudaDevice, ReportsWhatTheRuntimeChecks) {
  DeviceInfo info;
  ASSERT_EQ(deviceInfo(&info), "");
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GE(info.major, 7);
  EXPECT_GT(info.totalBytes, size_t(0));
  EXPECT_LE(info.freeBytes, info.totalBytes);
}

#if LLMC_CUDA_EMULATED

// What the GPU leaves undefined or refuses, the emulation reports.

/// Reads the shared word its cp.async is writing before waiting for it (a
/// race on the GPU), then waits for all but the newest of two groups and
/// reads both destinations.
LLMC_GLOBAL void readBeforeTheWait(const unsigned *src, unsigned *out) {
  LLMC_KERNEL_BEGIN();
  LLMC_DYNAMIC_SHARED(unsigned, rows);
  unsigned t = threadIdx.x;
  rows[4 * t] = 7;
  __syncthreads();
  asyncCopy16(rows + 4 * t, src + 4 * t, true);
  asyncCommit();
  out[t] = rows[4 * t];
  asyncWait<0>();
  out[32 + t] = rows[4 * t];
  asyncCopy16(rows + 4 * (32 + t), src + 4 * (32 + t), true);
  asyncCommit();
  asyncCopy16(rows + 4 * (64 + t), src + 4 * (64 + t), true);
  asyncCommit();
  asyncWait<1>();
  out[64 + t] = rows[4 * (32 + t)];
  out[96 + t] = rows[4 * (64 + t)];
}

/// Warp 0 writes a shared word after the barrier; the other warps read it
/// with no barrier between (a race on the GPU).
LLMC_GLOBAL void readWithoutBarrier(int *out) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(int, word);
  if (threadIdx.x == 0)
    word = 0;
  __syncthreads();
  if (threadIdx.x == 0)
    word = 1;
  out[threadIdx.x] = word;
}

/// Half the warp shuffles while the other half votes, with the same mask.
LLMC_GLOBAL void shuffleBesideVote(int *out) {
  LLMC_KERNEL_BEGIN();
  if (threadIdx.x < 16)
    out[threadIdx.x] = __shfl_xor_sync(kFullMask, int(threadIdx.x), 1);
  else
    out[threadIdx.x] = int(__ballot_sync(kFullMask, 1));
}

LLMC_GLOBAL void asyncCopyToGlobal(const unsigned *src, unsigned *out) {
  LLMC_KERNEL_BEGIN();
  asyncCopy16(out, src, true);
  asyncCommit();
  asyncWait<0>();
}

LLMC_GLOBAL void ldmatrixFromGlobal(const unsigned *src, unsigned *out) {
  LLMC_KERNEL_BEGIN();
  unsigned r[4];
  tc::ldmatrix(r, src + 4 * threadIdx.x);
  out[threadIdx.x] = r[0];
}

// A cp.async's destination holds NaNs (0xff bytes) until the wait that
// releases its group, the latest moment the GPU may complete the copy, so a
// kernel that reads early, or copies over a tile still being read, reads
// NaNs; asyncWait<1> leaves the newest group pending; cp.async and ldmatrix
// address the block's dynamic shared memory; the lanes of a warp exchange
// must be at the same kind of operation.
TEST(CudaEmuChecks, AsyncCopiesLdmatrixAndExchangesAreChecked) {
  std::vector<unsigned> src(384);
  std::iota(src.begin(), src.end(), 1u);
  DeviceBuffer<unsigned> dsrc(src), out(128);
  ASSERT_EQ(launch(readBeforeTheWait, dim3(1), dim3(32), 1536, nullptr, dsrc.get(), out.get()),
            "");
  std::vector<unsigned> got = out.download();
  for (unsigned t = 0; t < 32; ++t) {
    EXPECT_EQ(got[t], 0xffffffffu);
    EXPECT_EQ(got[32 + t], src[4 * t]);
    EXPECT_EQ(got[64 + t], src[4 * (32 + t)]);
    EXPECT_EQ(got[96 + t], 0xffffffffu);
  }
  // Between barriers the warps run one after another: warp 0's write is
  // what the later warps read; in reverse order they run before it and
  // read the word before the write (each order shows one side of a race).
  DeviceBuffer<int> seen(96);
  for (bool reverse : {false, true}) {
    bool was = ::llmc::cudaemu::setReverseOrder(reverse);
    ASSERT_EQ(launch(readWithoutBarrier, dim3(1), dim3(96), 0, nullptr, seen.get()), "");
    ::llmc::cudaemu::setReverseOrder(was);
    std::vector<int> s = seen.download();
    for (int t = 32; t < 96; ++t)
      EXPECT_EQ(s[size_t(t)], reverse ? 0 : 1) << t << (reverse ? " reverse" : " forward");
  }
  { // An order the emulation does not know fails every launch.
    const char *env = std::getenv("LLMC_CUDAEMU_ORDER");
    std::string before = env ? env : "";
    int flag = ::llmc::cudaemu::orderFlag().exchange(-1);
    setenv("LLMC_CUDAEMU_ORDER", "backwards", 1);
    std::string e = launch(readWithoutBarrier, dim3(1), dim3(96), 0, nullptr, seen.get());
    EXPECT_NE(e.find("LLMC_CUDAEMU_ORDER is neither forward nor reverse"), std::string::npos) << e;
    if (env)
      setenv("LLMC_CUDAEMU_ORDER", before.c_str(), 1);
    else
      unsetenv("LLMC_CUDAEMU_ORDER");
    ::llmc::cudaemu::orderFlag() = flag;
  }
  DeviceBuffer<int> words(32);
  std::string mixed = launch(shuffleBesideVote, dim3(1), dim3(32), 0, nullptr, words.get());
  EXPECT_NE(mixed.find("meet at different warp-collective operations (a "), std::string::npos)
      << mixed;
  std::string e = launch(asyncCopyToGlobal, dim3(1), dim3(1), 0, nullptr, dsrc.get(), out.get());
  EXPECT_NE(e.find("cp.async to an address outside the block's dynamic shared memory"),
            std::string::npos)
      << e;
  e = launch(ldmatrixFromGlobal, dim3(1), dim3(32), 0, nullptr, dsrc.get(), out.get());
  EXPECT_NE(e.find("ldmatrix row outside the block's dynamic shared memory"), std::string::npos)
      << e;
}

TEST(CudaEmuChecks, NoAllocationOrSynchronisationWhileCapturing) {
  Stream s = nullptr;
  ASSERT_EQ(streamCreate(&s), "");
  ASSERT_EQ(captureBegin(s), "");
  void *p = nullptr;
  EXPECT_NE(deviceAlloc(&p, 64).find("capturing"), std::string::npos);
  EXPECT_NE(synchronize().find("capturing"), std::string::npos);
  EXPECT_NE(streamSynchronize(s).find("capturing"), std::string::npos);
  EXPECT_NE(captureBegin(s), "");
  Graph g = nullptr;
  ASSERT_EQ(captureEnd(s, &g), "");
  EXPECT_EQ(deviceAlloc(&p, 64), "");
  deviceFree(p);
  EXPECT_NE(captureBegin(nullptr), ""); // the default stream cannot capture
  graphDestroy(g);
  streamDestroy(s);
}

LLMC_GLOBAL void earlyExitBeforeBarrier(int *out) {
  LLMC_KERNEL_BEGIN();
  if (threadIdx.x >= 40)
    return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

LLMC_GLOBAL void deadlock(int *out) {
  LLMC_KERNEL_BEGIN();
  // Odd lanes wait at the barrier, even lanes at a shuffle that needs them.
  if (threadIdx.x % 2)
    __syncthreads();
  else
    out[0] = __shfl_sync(kFullMask, int(threadIdx.x), 0) + __shfl_xor_sync(kFullMask, 1, 1);
}

LLMC_GLOBAL void shuffleWithoutItsLane(int *out) {
  LLMC_KERNEL_BEGIN();
  out[threadIdx.x] = __shfl_sync(0x0000ffffu, 1, 0);
}

LLMC_GLOBAL void partialWarpFullMask(int *out) {
  LLMC_KERNEL_BEGIN();
  out[threadIdx.x] = __shfl_xor_sync(kFullMask, 1, 1);
}

LLMC_GLOBAL void tooMuchShared(int *out) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(float[16 * 1024], big);
  big[threadIdx.x] = 1;
  out[0] = int(big[0]);
}

LLMC_GLOBAL void withoutKernelBegin(int *out) { out[threadIdx.x] = 1; }

// On a GPU of compute capability 9.0 or later every launch is programmatic:
// a kernel that does not begin with LLMC_KERNEL_BEGIN() would read what the
// kernel before it has not finished writing. The emulation refuses it.
TEST(CudaEmuChecks, KernelWithoutItsBeginIsAnError) {
  DeviceBuffer<int> out(32);
  std::string e = launch(withoutKernelBegin, dim3(1), dim3(32), 0, nullptr, out.get());
  EXPECT_NE(e.find("without LLMC_KERNEL_BEGIN()"), std::string::npos) << e;
}

TEST(CudaEmuChecks, BarrierAfterSomeThreadsExitedIsAnError) {
  DeviceBuffer<int> out(64);
  std::string e = launch(earlyExitBeforeBarrier, dim3(2), dim3(64), 0, nullptr, out.get());
  // (The first block to run: block 0, or block 1 in reverse order.)
  EXPECT_EQ(e.rfind("block (", 0), 0u) << e;
  EXPECT_NE(e.find("): __syncthreads() reached by 40 of 64 threads"), std::string::npos) << e;
}

TEST(CudaEmuChecks, DeadlockIsAnError) {
  DeviceBuffer<int> out(1);
  std::string e = launch(deadlock, dim3(1), dim3(64), 0, nullptr, out.get());
  EXPECT_NE(e.find("deadlock"), std::string::npos) << e;
}

TEST(CudaEmuChecks, WarpMasksAreChecked) {
  DeviceBuffer<int> out(64);
  std::string e = launch(shuffleWithoutItsLane, dim3(1), dim3(32), 0, nullptr, out.get());
  EXPECT_NE(e.find("does not name it"), std::string::npos) << e;
  e = launch(partialWarpFullMask, dim3(1), dim3(48), 0, nullptr, out.get());
  EXPECT_NE(e.find("which has 16 threads"), std::string::npos) << e;
}

TEST(CudaEmuChecks, LaunchLimitsAreChecked) {
  DeviceBuffer<int> out(1024);
  EXPECT_NE(launch(dynamicSharedReverse, dim3(1), dim3(2048), 0, nullptr, out.get(), out.get()),
            "");
  EXPECT_NE(launch(dynamicSharedReverse, dim3(1, 70000), dim3(32), 0, nullptr, out.get(),
                   out.get()),
            "");
  std::string e = launch(dynamicSharedReverse, dim3(1), dim3(32), 64 * 1024, nullptr, out.get(),
                         out.get());
  EXPECT_NE(e.find("exceeds the kernel's limit of 49152"), std::string::npos) << e;
  EXPECT_EQ(setMaxDynamicShared(dynamicSharedReverse, 100 * 1024), "");
  std::vector<int> in(32, 3);
  DeviceBuffer<int> din(in);
  EXPECT_EQ(launch(dynamicSharedReverse, dim3(1), dim3(32), 64 * 1024, nullptr, din.get(),
                   out.get()),
            "");
  e = launch(tooMuchShared, dim3(1), dim3(32), 0, nullptr, out.get());
  EXPECT_NE(e.find("shared memory of 65536 bytes exceeds"), std::string::npos) << e;
}

/// Two host threads launching at once (two sessions of a model on two
/// threads): each block's fibers see their own indices and barriers.
TEST(CudaEmu, LaunchesFromSeveralHostThreads) {
  dim3 grid(4, 3), block(32, 4);
  size_t n = 12 * 128;
  std::vector<std::string> errors(2);
  std::vector<std::vector<unsigned>> got(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20 && errors[t].empty(); ++round) {
        DeviceBuffer<unsigned> out(std::vector<unsigned>(n, 0));
        errors[t] = launch(writeIndices, grid, block, 0, nullptr, out.get());
        got[t] = out.download();
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (int t = 0; t < 2; ++t) {
    ASSERT_EQ(errors[t], "");
    for (unsigned b = 0; b < 12; ++b)
      for (unsigned i = 0; i < 128; ++i)
        ASSERT_EQ(got[t][b * 128 + i], 1u + b * 1000u + i) << t << " " << b << " " << i;
  }
}

LLMC_GLOBAL void writePastTheEnd(float *out, int n) {
  LLMC_KERNEL_BEGIN();
  out[n + int(threadIdx.x)] = 1.0f;
}

LLMC_GLOBAL void recurseDeeply(int *out) {
  LLMC_KERNEL_BEGIN();
  volatile char frame[1024];
  frame[0] = char(threadIdx.x);
  if (out[0] == 0) { // it is: recurse until the stack runs out
    recurseDeeply(out);
    out[1] = frame[0];
  }
}

/// Device memory ends at an inaccessible page, and a fiber's stack at a
/// guard page: running past either faults at the access, as on the GPU
/// (an illegal address), instead of corrupting what lies beyond.
TEST(CudaEmuChecks, OverrunsFault) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  DeviceBuffer<float> small(64); // 256 bytes: the next byte is past the mapping
  EXPECT_DEATH(launch(writePastTheEnd, dim3(1), dim3(1), 0, nullptr, small.get(), 64), "");
  EXPECT_EQ(launch(writePastTheEnd, dim3(1), dim3(1), 0, nullptr, small.get(), 63), "");
  DeviceBuffer<int> zero(std::vector<int>(2, 0));
  EXPECT_DEATH(launch(recurseDeeply, dim3(1), dim3(1), 0, nullptr, zero.get()), "");
}

// The programmatic-launch check (runtime/src/cudaemu/Programmatic.h): what
// a kernel does before its LLMC_KERNEL_BEGIN() overlaps the kernel before
// it on a GPU of compute capability 9.0 and later.

/// Turns the check on for a test.
struct PdlCheck {
  bool was = ::llmc::cudaemu::pdl::setEnabled(true);
  ~PdlCheck() { ::llmc::cudaemu::pdl::setEnabled(was); }
};

LLMC_GLOBAL void produce(unsigned *buf, unsigned v) {
  LLMC_KERNEL_BEGIN();
  buf[threadIdx.x] = v + threadIdx.x;
}

/// Reads buf and w before its LLMC_KERNEL_BEGIN() and buf again after it.
LLMC_GLOBAL void consumeEarly(const unsigned *buf, const unsigned *w, unsigned *out) {
  unsigned t = threadIdx.x;
  unsigned early = buf[t], weight = w[t];
  LLMC_KERNEL_BEGIN();
  out[t] = early;
  out[32 + t] = weight;
  out[64 + t] = buf[t];
}

/// The same with buf's words copied by cp.async issued before the begin
/// and waited for after it.
LLMC_GLOBAL void consumeEarlyAsync(const unsigned *buf, const unsigned *w, unsigned *out) {
  LLMC_DYNAMIC_SHARED(unsigned, rows);
  unsigned t = threadIdx.x;
  if (t < 8)
    asyncCopy16(rows + 4 * t, buf + 4 * t, true);
  asyncCommit();
  unsigned weight = w[t];
  LLMC_KERNEL_BEGIN();
  asyncWait<0>();
  __syncthreads();
  out[t] = rows[t];
  out[32 + t] = weight;
  out[64 + t] = buf[t];
}

LLMC_GLOBAL void writeEarly(unsigned *out, unsigned v) {
  out[threadIdx.x] = v;
  LLMC_KERNEL_BEGIN();
}

using ConsumeKernel = void (*)(const unsigned *, const unsigned *, unsigned *);

/// produce then `consume` on stream s, with `between` issued between them;
/// returns what consume wrote.
template <class Between>
std::vector<unsigned> produceThenConsume(ConsumeKernel consume, Stream s, Between between) {
  DeviceBuffer<unsigned> buf(std::vector<unsigned>(32, 0)), out(std::vector<unsigned>(96, 0));
  std::vector<unsigned> weights(32);
  std::iota(weights.begin(), weights.end(), 500u);
  DeviceBuffer<unsigned> w(weights);
  EXPECT_EQ(launch(produce, dim3(1), dim3(32), 0, s, buf.get(), 100u), "");
  between(buf.get());
  EXPECT_EQ(launch(consume, dim3(2), dim3(32), 128, s, buf.get(), w.get(), out.get()), "");
  return out.download();
}

/// out's three parts: the early read of buf, the weights, buf after the begin.
void expectConsumed(const std::vector<unsigned> &out, bool marked) {
  for (unsigned t = 0; t < 32; ++t) {
    EXPECT_EQ(out[t], marked ? 0xffffffffu : 100u + t) << t;
    EXPECT_EQ(out[32 + t], 500u + t) << t;
    EXPECT_EQ(out[64 + t], 100u + t) << t;
  }
}

TEST(CudaEmuProgrammatic, EarlyReadsOfTheKernelBeforeSeeMarkedBytes) {
  PdlCheck on;
  for (ConsumeKernel consume : {ConsumeKernel(consumeEarly), ConsumeKernel(consumeEarlyAsync)}) {
    Stream s = nullptr;
    ASSERT_EQ(streamCreate(&s), "");
    // Kernel after kernel: the early read is of bytes the kernel before is
    // writing (marked); the weights no kernel writes read as they are.
    expectConsumed(produceThenConsume(consume, s, [](unsigned *) {}), true);
    // A copy, a memset or a synchronisation between: the kernel before is
    // done when the consumer starts.
    DeviceBuffer<unsigned> other(std::vector<unsigned>(1, 7));
    expectConsumed(produceThenConsume(consume, s,
                                      [&](unsigned *) {
                                        EXPECT_EQ(copyAsync(other.get(), other.get(), 4, s), "");
                                      }),
                   false);
    expectConsumed(produceThenConsume(
                       consume, s, [&](unsigned *) { EXPECT_EQ(streamSynchronize(s), ""); }),
                   false);
    // The default stream chains its kernels the same way.
    expectConsumed(produceThenConsume(consume, nullptr, [](unsigned *) {}), true);
    EXPECT_EQ(streamDestroy(s), "");
  }
  // Without the check: blocks run in order, the early read sees the writes.
  ::llmc::cudaemu::pdl::setEnabled(false);
  expectConsumed(produceThenConsume(consumeEarly, nullptr, [](unsigned *) {}), false);
}

/// In a graph the kernels chain as on the stream; its first kernel waits for
/// everything before the graph.
TEST(CudaEmuProgrammatic, GraphsChainTheirKernels) {
  PdlCheck on;
  Stream s = nullptr;
  ASSERT_EQ(streamCreate(&s), "");
  DeviceBuffer<unsigned> buf(std::vector<unsigned>(32, 0)), out(std::vector<unsigned>(96, 0));
  std::vector<unsigned> weights(32);
  std::iota(weights.begin(), weights.end(), 500u);
  DeviceBuffer<unsigned> w(weights);
  Graph inside = nullptr, first = nullptr;
  ASSERT_EQ(captureBegin(s), "");
  ASSERT_EQ(launch(produce, dim3(1), dim3(32), 0, s, buf.get(), 100u), "");
  ASSERT_EQ(launch(consumeEarly, dim3(1), dim3(32), 0, s, buf.get(), w.get(), out.get()), "");
  ASSERT_EQ(captureEnd(s, &inside), "");
  ASSERT_EQ(captureBegin(s), "");
  ASSERT_EQ(launch(consumeEarly, dim3(1), dim3(32), 0, s, buf.get(), w.get(), out.get()), "");
  ASSERT_EQ(captureEnd(s, &first), "");
  ASSERT_EQ(graphLaunch(inside, s), "");
  expectConsumed(out.download(), true);
  // Launched right after a kernel on the stream, the graph's first kernel
  // still sees that kernel's writes.
  ASSERT_EQ(launch(produce, dim3(1), dim3(32), 0, s, buf.get(), 100u), "");
  ASSERT_EQ(graphLaunch(first, s), "");
  expectConsumed(out.download(), false);
  EXPECT_EQ(graphDestroy(inside), "");
  EXPECT_EQ(graphDestroy(first), "");
  EXPECT_EQ(streamDestroy(s), "");
}

/// A write to device memory before LLMC_KERNEL_BEGIN() is an error (on the
/// GPU the kernel before may still read or write it), whether or not a
/// kernel came before (found by its change: a write of the value a byte
/// holds is not); the words the check marked are back afterwards.
TEST(CudaEmuProgrammatic, EarlyWritesAreErrors) {
  PdlCheck on;
  DeviceBuffer<unsigned> buf(std::vector<unsigned>(32, 0)), out(std::vector<unsigned>(32, 0));
  std::string e = launch(writeEarly, dim3(1), dim3(32), 0, nullptr, out.get(), 1u);
  EXPECT_NE(e.find("block (0, 0, 0): wrote device memory before LLMC_KERNEL_BEGIN() (byte 0 of "
                   "an allocation of 256 bytes)"),
            std::string::npos)
      << e;
  ASSERT_EQ(launch(produce, dim3(1), dim3(32), 0, nullptr, buf.get(), 100u), "");
  e = launch(writeEarly, dim3(1), dim3(32), 0, nullptr, out.get(), 2u);
  EXPECT_NE(e.find("wrote device memory before LLMC_KERNEL_BEGIN()"), std::string::npos) << e;
  std::vector<unsigned> got = buf.download();
  for (unsigned t = 0; t < 32; ++t)
    EXPECT_EQ(got[t], 100u + t) << t;
}

#endif

} // namespace
