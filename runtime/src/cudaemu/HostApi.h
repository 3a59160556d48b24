//===- HostApi.h - the emulation's device memory, streams and launches ----===//
//
// What the host side of runtime/src/model/cuda/Cuda.h's emulation calls:
// device memory that ends at an inaccessible page, streams that run their
// work when it is issued (or record it while capturing: CUDA graphs), and
// kernel launches (runKernel: Scheduler.h's runGrid, under the
// programmatic-launch check of Programmatic.h when it is on).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDAEMU_HOSTAPI_H
#define LLMC_RUNTIME_CUDAEMU_HOSTAPI_H

#include "runtime/src/cudaemu/Scheduler.h"
#include "runtime/src/cudaemu/Programmatic.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace llmc::cudaemu {

//===----------------------------------------------------------------------===//
// Device memory
//===----------------------------------------------------------------------===//

/// Device memory ends at an inaccessible page, so a kernel that reads or
/// writes past the end of its buffer faults at once, wherever the buffer
/// lies (from malloc, such an overrun faults only when the next page
/// happens to be unmapped, and corrupts the heap silently otherwise). The
/// pointer is 256-byte aligned as cudaMalloc's, so an overrun of less than
/// the rounding to 256 bytes stays unseen. The mapping's start and length
/// sit in the 64 bytes before the pointer.
inline constexpr size_t kDeviceAlignment = 256;
inline constexpr uint64_t kDeviceMagic = 0x6c6c6d6364657621ull;

inline void *deviceAlloc(size_t bytes) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t rounded = (std::max<size_t>(bytes, 1) + kDeviceAlignment - 1) / kDeviceAlignment *
                   kDeviceAlignment;
  if (rounded < bytes)
    return nullptr;
  size_t data = (rounded + 64 + page - 1) / page * page;
  size_t length = data + page;
  if (length < data)
    return nullptr;
  void *base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return nullptr;
  char *guard = static_cast<char *>(base) + data;
  if (mprotect(guard, page, PROT_NONE) != 0) {
    munmap(base, length);
    return nullptr;
  }
  char *p = guard - rounded;
  uint64_t header[3] = {kDeviceMagic, uint64_t(reinterpret_cast<uintptr_t>(base)), length};
  std::memcpy(p - 64, header, sizeof header);
  pdl::registerAllocation(p, rounded);
  return p;
}

/// Frees what deviceAlloc returned; false for any other pointer.
inline bool deviceFree(void *p) {
  if (!p)
    return true;
  uint64_t header[3];
  std::memcpy(header, static_cast<char *>(p) - 64, sizeof header);
  if (header[0] != kDeviceMagic)
    return false;
  std::memset(static_cast<char *>(p) - 64, 0, sizeof header);
  pdl::forgetAllocation(p);
  return munmap(reinterpret_cast<void *>(uintptr_t(header[1])), size_t(header[2])) == 0;
}

//===----------------------------------------------------------------------===//
// Streams and graphs
//===----------------------------------------------------------------------===//

/// Work runs when it is issued, except on a stream that is capturing: then
/// it is recorded (with its arguments by value, as CUDA's graph nodes hold
/// them) and runs each time the graph is launched. Host memory a recorded
/// copy reads is read at launch, as with CUDA.
struct Stream {
  bool capturing = false;
  std::vector<std::function<std::string()>> recorded;
  pdl::StreamState pdl; // whether its last work was a kernel, and its writes
};

struct Graph {
  std::vector<std::function<std::string()>> work;
};

/// An event: the host's clock when its stream reached the record.
struct Event {
  bool recorded = false;
  std::chrono::steady_clock::time_point at;
};

/// Streams capturing now (allocation and synchronisation are refused
/// meanwhile, as under CUDA's global capture mode).
inline int &capturingStreams() {
  static int n = 0;
  return n;
}

/// The stream whose work runs now on this thread (issue), and the default
/// stream's state.
inline Stream *&issuing() {
  static thread_local Stream *s = nullptr;
  return s;
}
inline Stream &defaultStream() {
  static Stream s;
  return s;
}

inline std::string issue(Stream *s, std::function<std::string()> work) {
  if (s && s->capturing) {
    s->recorded.push_back(std::move(work));
    return {};
  }
  if (!pdl::enabled())
    return work();
  Stream &stream = s ? *s : defaultStream();
  Stream *outer = issuing();
  issuing() = &stream;
  stream.pdl.ranKernel = false;
  std::string e = work();
  // A copy or memset between two kernels: the second waits for it.
  if (!stream.pdl.ranKernel)
    stream.pdl.clear();
  issuing() = outer;
  return e;
}

/// A kernel launch (the work launch issues): runGrid, under the
/// programmatic-launch check when it is on (Programmatic.h), the bytes the
/// stream's kernel before changed marked in each block's early part.
inline std::string runKernel(const void *kernel, dim3 grid, dim3 block, size_t dynamicBytes,
                             const std::function<void()> &body) {
  Stream *s = issuing();
  if (!pdl::enabled() || !s)
    return runGrid(kernel, grid, block, dynamicBytes, body);
  std::lock_guard<std::recursive_mutex> lock(pdl::deviceMutex());
  pdl::StreamState &state = s->pdl;
  bool chained = state.lastWasKernel && state.generation == pdl::generation();
  pdl::View view(chained ? &state.writes : nullptr);
  pdl::Snapshot before = pdl::snapshot();
  std::string e = runGrid(kernel, grid, block, dynamicBytes, body, &view);
  state.writes = pdl::changedSince(before);
  state.generation = pdl::generation();
  state.lastWasKernel = state.ranKernel = true;
  return e;
}

} // namespace llmc::cudaemu

#endif // LLMC_RUNTIME_CUDAEMU_HOSTAPI_H
