//===- WeightQuantization.cpp - rounding weights to 8 or 4 bits -----------===//
#include "passes/WeightQuantization.h"

#include "runtime/src/cpu/Numeric.h"
#include "runtime/src/cpu/ThreadPool.h"

#include <algorithm>
#include <cmath>

using namespace mlir::llmc;

namespace {

/// A group's scale and zero point (the rule of Passes.td), from its values
/// in T (float for round to nearest, double for GPTQ); the scale is rounded
/// to f32 (and with halfScales to f16) before anything uses it.
struct GroupParams {
  float scale = 0;
  int64_t zero = 0;
};

/// s as stored: f32, or with s.halfScales the nearest f16 when that is a
/// normal number (2^-14 <= |h| <= 65504; a subnormal would lose bits, an
/// overflow the value: those stay f32, and the panels then store f32).
float storedScale(float v, const QuantScheme &s) {
  if (!s.halfScales)
    return v;
  float h = ::llmc::cpu::halfToFloat(::llmc::cpu::floatToHalf(v));
  return std::isfinite(h) && std::fabs(h) >= 0x1p-14f ? h : v;
}

template <typename T>
GroupParams groupParams(const T *v, int64_t gs, const QuantScheme &s) {
  int64_t levels = int64_t(1) << s.bits, half = levels / 2;
  GroupParams p;
  if (s.asymmetric) {
    // [min, max] widened to hold 0, so zeros (and padding) stay exact.
    T lo = 0, hi = 0;
    for (int64_t i = 0; i < gs; ++i)
      lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
    p.scale = storedScale(float((hi - lo) / T(levels - 1)), s);
    p.zero = p.scale > 0
                 ? std::clamp<int64_t>(int64_t(std::nearbyint(-lo / T(p.scale))), 0, levels - 1)
                 : 0;
  } else {
    // The value of largest magnitude maps to -2^(bits-1) (the whole signed
    // range used).
    T peak = 0;
    for (int64_t i = 0; i < gs; ++i)
      if (std::fabs(v[i]) > std::fabs(peak))
        peak = v[i];
    p.scale = storedScale(float(peak / T(-half)), s);
    p.zero = half;
  }
  return p;
}

/// The stored value of `v` in a group with parameters `p` (`inv`: 1 / its
/// scale in T, 0 for a zero scale).
template <typename T>
int64_t roundValue(T v, T inv, const GroupParams &p, int64_t levels) {
  return std::clamp<int64_t>(int64_t(std::nearbyint(v * inv)) + p.zero, 0, levels - 1);
}

struct Packer {
  QuantizedWeight out;
  int64_t K, G, gs, bits;
  Packer(int64_t N, int64_t K, const QuantScheme &s)
      : K(K), G(K / s.groupSize), gs(s.groupSize), bits(s.bits) {
    out.q.assign(size_t(N * K * bits / 8), 0);
    out.scales.assign(size_t(N * G), 0.f);
    if (s.asymmetric)
      out.zeroPoints.assign(size_t(N * G), 0);
  }
  void params(int64_t n, int64_t g, const GroupParams &p) {
    out.scales[size_t(n * G + g)] = p.scale;
    if (!out.zeroPoints.empty())
      out.zeroPoints[size_t(n * G + g)] = uint8_t(p.zero);
  }
  void value(int64_t n, int64_t k, int64_t q) {
    if (bits == 8)
      out.q[size_t(n * K + k)] = uint8_t(q);
    else
      out.q[size_t((n * K + k) / 2)] |= uint8_t(q << ((k % 2) * 4));
  }
};

} // namespace

QuantizedWeight mlir::llmc::quantizeNearest(const std::vector<float> &w, int64_t N, int64_t K,
                                            const QuantScheme &s) {
  Packer pack(N, K, s);
  int64_t levels = int64_t(1) << s.bits;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < pack.G; ++g) {
      const float *v = w.data() + n * K + g * s.groupSize;
      GroupParams p = groupParams(v, s.groupSize, s);
      pack.params(n, g, p);
      float inv = p.scale != 0 ? 1.f / p.scale : 0.f;
      for (int64_t i = 0; i < s.groupSize; ++i)
        pack.value(n, g * s.groupSize + i, roundValue(v[i], inv, p, levels));
    }
  return std::move(pack.out);
}

std::string mlir::llmc::factorHessian(const std::vector<double> &gram, int64_t K,
                                      double dampRatio, HessianFactor &out) {
  std::vector<double> h(gram);
  out.K = K;
  out.dead.assign(size_t(K), false);
  double diag = 0;
  for (int64_t i = 0; i < K; ++i) {
    double &d = h[size_t(i * K + i)];
    if (d == 0)
      out.dead[size_t(i)] = true, d = 1;
    diag += d;
  }
  double damp = dampRatio * diag / double(K);
  for (int64_t i = 0; i < K; ++i)
    h[size_t(i * K + i)] += damp;
  // H = R R^T with R upper triangular (Cholesky from the last column back):
  // then H^-1 = U^T U with U = R^-1, upper triangular with a positive
  // diagonal, which is the upper Cholesky factor of H^-1 GPTQ uses.
  std::vector<double> r(size_t(K * K), 0.0);
  ::llmc::cpu::ThreadPool &pool = ::llmc::cpu::ThreadPool::global();
  for (int64_t j = K - 1; j >= 0; --j) {
    const double *rj = r.data() + j * K;
    double d = h[size_t(j * K + j)];
    for (int64_t k = j + 1; k < K; ++k)
      d -= rj[k] * rj[k];
    if (!(d > 0) || !std::isfinite(d))
      return "the Hessian of the layer's inputs is not positive definite at input " +
             std::to_string(j) + " (non-finite calibration statistics?)";
    double rjj = std::sqrt(d);
    r[size_t(j * K + j)] = rjj;
    // Column j above the diagonal: independent dot products.
    auto column = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const double *ri = r.data() + i * K;
        double s = h[size_t(i * K + j)];
        for (int64_t k = j + 1; k < K; ++k)
          s -= ri[k] * rj[k];
        r[size_t(i * K + j)] = s / rjj;
      }
    };
    if (j * (K - j) >= (int64_t(1) << 16))
      pool.parallelFor(j, 16, column);
    else
      column(0, j);
  }
  // U = R^-1 row by row from the last: row i of R U = e_i gives
  // U[i] = (e_i - sum_{k>i} R[i][k] U[k]) / R[i][i].
  out.u.assign(size_t(K * K), 0.0);
  for (int64_t i = K - 1; i >= 0; --i) {
    const double *ri = r.data() + i * K;
    double inv = 1 / ri[i];
    double *ui = out.u.data() + i * K;
    // Columns [begin, end) of row i (U[k][j] = 0 for j < k).
    auto columns = [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j)
        ui[j] = j == i ? 1.0 : 0.0;
      for (int64_t k = i + 1; k < end; ++k) {
        const double *uk = out.u.data() + k * K;
        double f = ri[k];
        for (int64_t j = std::max(k, begin); j < end; ++j)
          ui[j] -= f * uk[j];
      }
      for (int64_t j = begin; j < end; ++j)
        ui[j] *= inv;
    };
    int64_t n = K - i;
    if (n * n >= (int64_t(1) << 17))
      pool.parallelFor(n, 64, [&](int64_t b, int64_t e) { columns(i + b, i + e); });
    else
      columns(i, K);
  }
  return "";
}

QuantizedWeight mlir::llmc::quantizeGptq(const std::vector<float> &w, int64_t N, int64_t K,
                                         const QuantScheme &s, const HessianFactor &h) {
  Packer pack(N, K, s);
  const int64_t levels = int64_t(1) << s.bits, gs = s.groupSize;
  // Rows are independent; a tile of them shares each read of a row of U.
  constexpr int64_t kTile = 8;
  int64_t tiles = (N + kTile - 1) / kTile;
  auto body = [&](int64_t begin, int64_t end) {
    std::vector<double> rows(size_t(kTile * K));
    GroupParams params[kTile];
    double inv[kTile];
    for (int64_t t = begin; t < end; ++t) {
      int64_t n0 = t * kTile, count = std::min(kTile, N - n0);
      for (int64_t r = 0; r < count; ++r)
        for (int64_t k = 0; k < K; ++k)
          rows[size_t(r * K + k)] = h.dead[size_t(k)] ? 0.0 : double(w[size_t((n0 + r) * K + k)]);
      for (int64_t i = 0; i < K; ++i) {
        if (i % gs == 0)
          for (int64_t r = 0; r < count; ++r) {
            params[r] = groupParams(rows.data() + r * K + i, gs, s);
            inv[r] = params[r].scale != 0 ? 1.0 / double(params[r].scale) : 0.0;
            pack.params(n0 + r, i / gs, params[r]);
          }
        const double *ui = h.u.data() + i * K;
        double d = ui[i];
        for (int64_t r = 0; r < count; ++r) {
          double *row = rows.data() + r * K;
          int64_t q = roundValue(row[i], inv[r], params[r], levels);
          pack.value(n0 + r, i, q);
          double err = (row[i] - double(q - params[r].zero) * double(params[r].scale)) / d;
          for (int64_t j = i + 1; j < K; ++j)
            row[j] -= err * ui[j];
        }
      }
    }
  };
  ::llmc::cpu::ThreadPool::global().parallelFor(tiles, 1, body);
  return std::move(pack.out);
}
