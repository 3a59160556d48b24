//===- CudaTestUtil.h - device buffers and references for the CUDA tests ---===//
//
// The CUDA kernel tests build twice from the same source: with the host
// compiler against the emulation (CI) and with nvcc for a GPU
// (scripts/test-gpu.sh). Buffers go through llmc::cuda's allocation and
// copies, so the tests read the same either way.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_UNIT_CUDATESTUTIL_H
#define LLMC_TEST_UNIT_CUDATESTUTIL_H

#include "runtime/src/model/cuda/Common.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace llmc::cuda::test {

/// An environment variable (the kernels' LLMC_CUDA_* comparison settings,
/// read at each launch) set for a test's scope and restored after it, so an
/// exported value changes no other test. set(nullptr) unsets it.
class EnvSetting {
public:
  EnvSetting(const char *name, const char *value) : name_(name) {
    const char *old = std::getenv(name);
    had_ = old != nullptr;
    if (had_)
      old_ = old;
    set(value);
  }
  ~EnvSetting() { set(had_ ? old_.c_str() : nullptr); }
  EnvSetting(const EnvSetting &) = delete;
  EnvSetting &operator=(const EnvSetting &) = delete;
  void set(const char *value) {
    if (value)
      setenv(name_.c_str(), value, 1);
    else
      unsetenv(name_.c_str());
  }

private:
  std::string name_, old_;
  bool had_ = false;
};

/// A device allocation of n T, filled from or read back into host vectors.
template <class T> class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    std::string e = deviceAlloc(reinterpret_cast<void **>(&p_), sizeof(T) * (n ? n : 1));
    EXPECT_EQ(e, "");
  }
  explicit DeviceBuffer(const std::vector<T> &host) : DeviceBuffer(host.size()) { upload(host); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { deviceFree(p_); }

  void upload(const std::vector<T> &host) {
    EXPECT_EQ(host.size(), n_);
    EXPECT_EQ(copyToDevice(p_, host.data(), sizeof(T) * n_), "");
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    EXPECT_EQ(synchronize(), "");
    EXPECT_EQ(copyToHost(host.data(), p_, sizeof(T) * n_), "");
    return host;
  }
  T *get() const { return p_; }

private:
  T *p_ = nullptr;
  size_t n_;
};

/// A context's split counters (Common.h): zero before a launch that counts
/// its splits, and checked to be zero again after it (the last block of
/// each group must return its counter, or the next launch would miscount).
class SplitCounters {
public:
  SplitCounters() : buffer_(std::vector<unsigned>(size_t(kSplitCounters), 0u)) {}
  unsigned *get() const { return buffer_.get(); }
  /// How many counters a launch left nonzero.
  size_t leftNonzero() const {
    auto v = buffer_.download();
    return size_t(std::count_if(v.begin(), v.end(), [](unsigned c) { return c != 0; }));
  }

private:
  DeviceBuffer<unsigned> buffer_;
};

/// n values of T drawn uniformly from [-scale, scale], rounded to T.
template <class T> std::vector<T> randomValues(size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<T> v(n);
  for (T &x : v)
    x = fromFloat<T>(dist(rng));
  return v;
}

/// The values as doubles (exact: every stored type widens exactly).
template <class T> std::vector<double> widen(const std::vector<T> &v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    d[i] = double(toFloat(v[i]));
  return d;
}

/// The largest |got - want| over the largest |want| (or 1 if that is 0);
/// infinite where got holds a NaN (std::max would pass over it).
template <class T> double relativeError(const std::vector<T> &got, const std::vector<double> &want) {
  EXPECT_EQ(got.size(), want.size());
  double scale = 0, err = 0;
  for (double w : want)
    scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    double g;
    if constexpr (std::is_same_v<T, double>)
      g = got[i];
    else
      g = double(toFloat(got[i]));
    double d = std::fabs(g - want[i]);
    if (std::isnan(d))
      return INFINITY;
    err = std::max(err, d);
  }
  return err / (scale > 0 ? scale : 1);
}

/// The unit roundoff of T's storage: the tolerance of a result written as T.
template <class T> double storageEpsilon() {
  if (sizeof(T) == 4)
    return 0;
  return std::is_same_v<T, half> ? 1.0 / 2048 : 1.0 / 256;
}

/// f32 results: within this of the output's scale (f32 accumulation).
constexpr double kF32Tolerance = 1e-5;

/// A result written as T: f32's tolerance and one unit of T's rounding.
template <class T> double tolerance() { return kF32Tolerance + storageEpsilon<T>(); }

/// Rotary tables of p positions for rotary dimension `rot`.
struct RopeTables {
  std::vector<float> cosT, sinT;
  RopeTables(int p, int rot) : cosT(size_t(p) * size_t(rot / 2)), sinT(cosT.size()) {
    int half = rot / 2;
    for (int pos = 0; pos < p; ++pos)
      for (int i = 0; i < half; ++i) {
        double angle = pos * std::pow(10000.0, -2.0 * i / rot);
        cosT[size_t(pos * half + i)] = float(std::cos(angle));
        sinT[size_t(pos * half + i)] = float(std::sin(angle));
      }
  }
};

/// Positions for b sequences (one row shared when !perBatch) of s tokens.
inline std::vector<int64_t> ropePositions(int b, int s, bool perBatch, int p) {
  std::vector<int64_t> positions(size_t(perBatch ? b : 1) * size_t(s));
  for (size_t i = 0; i < positions.size(); ++i)
    positions[i] = int64_t((i * 7 + 3) % size_t(p));
  return positions;
}

/// rope of x [b, s, n, d] in float64.
template <class T>
std::vector<double> ropeReference(const std::vector<T> &x, const RopeTables &t,
                                  const std::vector<int64_t> &positions, int b, int s, int n,
                                  int d, int r, bool interleaved, bool perBatch) {
  int rot = r ? r : d, half = rot / 2;
  std::vector<double> want = widen(x);
  for (int bi = 0; bi < b; ++bi)
    for (int si = 0; si < s; ++si) {
      int64_t pos = positions[size_t(perBatch ? bi : 0) * size_t(s) + size_t(si)];
      for (int hi = 0; hi < n; ++hi) {
        size_t base = ((size_t(bi) * size_t(s) + size_t(si)) * size_t(n) + size_t(hi)) * size_t(d);
        for (int i = 0; i < half; ++i) {
          size_t i1 = base + size_t(interleaved ? 2 * i : i);
          size_t i2 = base + size_t(interleaved ? 2 * i + 1 : i + half);
          double c = t.cosT[size_t(pos * half + i)], sn = t.sinT[size_t(pos * half + i)];
          double a = toFloat(x[i1]), bb = toFloat(x[i2]);
          want[i1] = a * c - bb * sn;
          want[i2] = bb * c + a * sn;
        }
      }
    }
  return want;
}

/// A gated activation's act(g) in float64 (Gemv.h's GateAct): silu(g) = g /
/// (1 + e^-g), GELU exactly (erf) or by its tanh approximation.
template <class Act> double gateReference(Act act, double g) {
  if (act == Act::GeluErf)
    return 0.5 * g * (1.0 + std::erf(g / std::sqrt(2.0)));
  if (act == Act::GeluTanh)
    return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
  return g / (1.0 + std::exp(-g));
}

} // namespace llmc::cuda::test

#endif // LLMC_TEST_UNIT_CUDATESTUTIL_H
