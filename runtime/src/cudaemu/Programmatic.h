//===- Programmatic.h - the emulation's check of programmatic launches -----===//
//
// On sm_90 and later llmc launches kernels with programmatic stream
// serialization (runtime/src/model/cuda/Cuda.h, launch): a kernel's blocks
// start as soon as every block of the kernel before has passed its
// LLMC_KERNEL_BEGIN(), and wait in their own LLMC_KERNEL_BEGIN() for that
// kernel to finish. What a kernel does before its LLMC_KERNEL_BEGIN() (the
// decode GEMVs' first weights, the decode attention's cache tiles other than
// the new row's) therefore runs while the kernel before is still writing:
// it may read only what that kernel does not write, and write nothing.
//
// The emulation runs kernels one after another, so it cannot see such a
// read. With the check on (LLMC_CUDAEMU_PDL_CHECK=1, or setEnabled), every
// launch runs each block in two phases:
//
//   before its threads' LLMC_KERNEL_BEGIN()  if the launch follows a kernel
//       on its stream (nothing between them that the GPU would wait for: a
//       copy, a memset, a synchronisation, a graph launch's edge), the
//       4-byte words that kernel changed (found by comparing all device
//       memory before and after it) read as 0xff bytes (NaN in f32, half
//       and bfloat16; -1 as integers), so a kernel that reads them early
//       computes NaNs or faults and fails its test; cp.async copies issued
//       in this phase read their source at the issue (CudaEmu.h,
//       asyncCopy); any change to device memory is an error naming the
//       allocation and offset (a write of the value a byte holds is not
//       seen);
//   after it  the words are back, and the block runs as usual.
//
// Words the kernel before wrote with the value they held are not marked:
// reading those early reads the same either way. The check copies all
// device memory for every block, so it is for the tiny fixtures
// (test/models/cuda-emulated.test) and the emulation's own tests.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDAEMU_PROGRAMMATIC_H
#define LLMC_RUNTIME_CUDAEMU_PROGRAMMATIC_H

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace llmc::cudaemu::pdl {

/// Whether the check is on: LLMC_CUDAEMU_PDL_CHECK=1 in the environment
/// when first asked, or what setEnabled last said.
inline bool &enabledFlag() {
  static bool on = [] {
    const char *v = std::getenv("LLMC_CUDAEMU_PDL_CHECK");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}
inline bool enabled() { return enabledFlag(); }
/// Turns the check on or off; returns what it was.
inline bool setEnabled(bool on) {
  bool was = enabledFlag();
  enabledFlag() = on;
  return was;
}

/// Held by a launch under the check, and by the emulation's copies and
/// allocations, so that another host thread's work cannot change device
/// memory while a block's early part runs (the check serialises launches;
/// what host code writes straight into pinned memory meanwhile it cannot
/// hold back, and would report as an early write).
inline std::recursive_mutex &deviceMutex() {
  static std::recursive_mutex m;
  return m;
}
/// deviceMutex() held while the check is on, else nothing.
inline std::unique_lock<std::recursive_mutex> lockIfChecking() {
  return enabled() ? std::unique_lock<std::recursive_mutex>(deviceMutex())
                   : std::unique_lock<std::recursive_mutex>();
}

/// Every live device allocation (deviceAlloc's, by start): what a snapshot
/// copies.
inline std::map<unsigned char *, size_t> &allocations() {
  static std::map<unsigned char *, size_t> a;
  return a;
}
inline void registerAllocation(void *p, size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(deviceMutex());
  allocations()[static_cast<unsigned char *>(p)] = bytes;
}
inline void forgetAllocation(void *p) {
  std::lock_guard<std::recursive_mutex> lock(deviceMutex());
  allocations().erase(static_cast<unsigned char *>(p));
}

/// All device memory at one moment.
struct Snapshot {
  struct Copy {
    unsigned char *at;
    std::vector<unsigned char> bytes;
  };
  std::vector<Copy> copies;
};
inline Snapshot snapshot() {
  std::lock_guard<std::recursive_mutex> lock(deviceMutex());
  Snapshot s;
  for (auto &[p, n] : allocations())
    s.copies.push_back({p, std::vector<unsigned char>(p, p + n)});
  return s;
}

/// A run of bytes a kernel changed.
struct Run {
  unsigned char *at;
  size_t bytes;
};
/// The runs of 4-byte words (allocations are 256-byte aligned) in which
/// some byte differs now from `before` (a kernel that changes an integer's
/// or a float's low byte writes its other bytes too; allocations made or
/// freed since are not compared: no kernel does either).
inline std::vector<Run> changedSince(const Snapshot &before) {
  std::vector<Run> runs;
  std::lock_guard<std::recursive_mutex> lock(deviceMutex());
  for (const Snapshot::Copy &c : before.copies) {
    auto live = allocations().find(c.at);
    if (live == allocations().end() || live->second != c.bytes.size())
      continue;
    const unsigned char *now = c.at;
    size_t n = c.bytes.size();
    auto differs = [&](size_t word) {
      size_t end = std::min(n, 4 * word + 4);
      return std::memcmp(now + 4 * word, c.bytes.data() + 4 * word, end - 4 * word) != 0;
    };
    size_t words = (n + 3) / 4;
    for (size_t i = 0; i < words;) {
      if (!differs(i)) {
        ++i;
        continue;
      }
      size_t j = i + 1;
      while (j < words && differs(j))
        ++j;
      runs.push_back({c.at + 4 * i, std::min(n, 4 * j) - 4 * i});
      i = j;
    }
  }
  return runs;
}

/// The first byte that differs now from `before`, as an error naming its
/// allocation, or "".
inline std::string firstChange(const Snapshot &before) {
  for (const Snapshot::Copy &c : before.copies) {
    size_t n = c.bytes.size();
    if (std::memcmp(c.at, c.bytes.data(), n) == 0)
      continue;
    size_t i = 0;
    while (c.at[i] == c.bytes[i])
      ++i;
    return "wrote device memory before LLMC_KERNEL_BEGIN() (byte " + std::to_string(i) +
           " of an allocation of " + std::to_string(n) +
           " bytes): on the GPU the kernel before may still be reading or writing it "
           "(programmatic launches)";
  }
  return {};
}

/// A synchronisation (a blocking copy, cudaDeviceSynchronize, a stream's):
/// the kernels before it are done before any kernel after it starts.
inline std::atomic<uint64_t> &generation() {
  static std::atomic<uint64_t> g{0};
  return g;
}
inline void synchronized() { ++generation(); }

/// A stream's last operation, if it was a kernel: the bytes it changed.
struct StreamState {
  bool lastWasKernel = false;
  bool ranKernel = false; // the work issue() runs now launched a kernel
  uint64_t generation = 0;
  std::vector<Run> writes;
  void clear() {
    lastWasKernel = false;
    writes.clear();
  }
};

/// One launch's two phases (see the top of this file), block by block.
class View {
public:
  /// `before`: the bytes the kernel before changed, or null when the
  /// launch follows no kernel.
  explicit View(const std::vector<Run> *before) : before_(before) {}

  bool early() const { return early_; }

  /// A block starts: mark the bytes, and remember all device memory.
  void enter() {
    early_ = true;
    saved_.clear();
    if (before_)
      for (const Run &r : *before_) {
        saved_.emplace_back(r.at, r.at + r.bytes);
        std::memset(r.at, 0xff, r.bytes);
      }
    image_ = snapshot();
  }

  /// Every thread of the block is at LLMC_KERNEL_BEGIN() (or past the
  /// block's end of its early part): the bytes come back. Returns an error
  /// if the block wrote device memory meanwhile.
  std::string leave() {
    early_ = false;
    std::string error = firstChange(image_);
    image_.copies.clear();
    if (before_)
      for (size_t i = 0; i < saved_.size(); ++i)
        std::memcpy((*before_)[i].at, saved_[i].data(), saved_[i].size());
    saved_.clear();
    return error;
  }

private:
  const std::vector<Run> *before_;
  std::vector<std::vector<unsigned char>> saved_;
  Snapshot image_;
  bool early_ = false;
};

} // namespace llmc::cudaemu::pdl

#endif // LLMC_RUNTIME_CUDAEMU_PROGRAMMATIC_H
