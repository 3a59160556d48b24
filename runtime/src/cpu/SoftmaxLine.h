//===- SoftmaxLine.h - ONNX Softmax's definition for one line, shared ------===//
//
// The one definition of a softmax (or log-softmax) line as the reference
// kernel computes it (Normalization.cpp): max, sum of exponentials and the
// results in double, each result rounded once. The compiled model's f32
// template (runtime/src/model/kernels/Pointwise.h's softmaxRow) falls back to
// it for the rows it declines (all -inf, an infinity, a NaN), so those come
// out as the reference kernel's.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_SOFTMAXLINE_H
#define LLMC_RUNTIME_CPU_SOFTMAXLINE_H

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace llmc::cpu {

/// Softmax (log-softmax when `log`) of a line of `dim` elements: load(j)
/// gives element j as a double, store(j, v) writes result j. A line of
/// -inf gives NaN (ONNX's formula: e^(-inf - -inf)).
template <typename Load, typename Store>
void softmaxLine(int64_t dim, bool log, Load &&load, Store &&store) {
  double mx = -INFINITY;
  for (int64_t j = 0; j < dim; ++j)
    mx = std::max(mx, load(j));
  double sum = 0;
  for (int64_t j = 0; j < dim; ++j)
    sum += std::exp(load(j) - mx);
  // Each exp is computed again rather than kept (no buffer: compiled
  // models call this after warm-up, where nothing may allocate).
  for (int64_t j = 0; j < dim; ++j) {
    double d = load(j) - mx;
    store(j, log ? d - std::log(sum) : std::exp(d) / sum);
  }
}

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_SOFTMAXLINE_H
