//===- WeightQuantization.h - rounding weights to 8 or 4 bits -------------===//
//
// The arithmetic of llmc-quantize-weights, apart from the IR: a weight
// [N, K] (row n: output channel n, its K input features in order) becomes
// q [N, G, gs * bits / 8] (values of row n in order along K, two per byte at
// 4 bits, low nibble first), f32 scales [N, G] and, when asymmetric, ui8
// zero points [N, G], with W ~ (q - zero) * scale.
//
// Two methods:
//
// - round to nearest: each group's scale from its own values, each value
//   rounded on its own (Passes.td states the rule);
// - GPTQ (Frantar et al., 2022): the columns are rounded in order along K,
//   and the error each column's rounding makes is spread over the columns
//   not yet rounded, weighted by the inverse of the Hessian H = sum x^T x of
//   the layer's inputs over calibration tokens, so that the output error
//   ||x (W - Wq)^T|| is small on inputs like those, not each weight's error.
//   A group's scale (and zero point) is taken, by the same rule as above,
//   from its values as they are when its first column comes up (already
//   corrected by the columns before it). Per output channel (one group of
//   K) it is the row's values before any correction. The arithmetic is in
//   double, the scales rounded to f32 before they are used, so that every
//   stored value is (q - zero) * scale as the kernels compute it.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_WEIGHTQUANTIZATION_H
#define LLMC_PASSES_WEIGHTQUANTIZATION_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::llmc {

struct QuantScheme {
  int64_t bits = 4;      // 4 or 8
  int64_t groupSize = 0; // values per scale along K; divides K
  bool asymmetric = false;
  /// Scales rounded to the nearest f16 where that is a normal one (the
  /// CPU's packed panels then store them in two bytes).
  bool halfScales = false;
};

struct QuantizedWeight {
  std::vector<uint8_t> q, zeroPoints; // zero points empty when symmetric
  std::vector<float> scales;
};

/// Round to nearest, group by group.
QuantizedWeight quantizeNearest(const std::vector<float> &w, int64_t N, int64_t K,
                                const QuantScheme &scheme);

/// What GPTQ needs of a layer's inputs: the upper triangular U with
/// U^T U = (H + damp I)^-1, H the K x K Gram matrix sum x^T x of the inputs,
/// damp = `dampRatio` x the mean of H's diagonal. Inputs that were always 0
/// (H's diagonal 0) are `dead`: their weights are rounded as zero and H
/// gets 1 on their diagonal.
struct HessianFactor {
  int64_t K = 0;
  std::vector<double> u; // K x K, row-major; below the diagonal 0
  std::vector<bool> dead;
};

/// Factors `gram` (K x K, symmetric). An error (non-empty string) when
/// H + damp I is not positive definite (it is for any Gram matrix with
/// damp > 0: only non-finite statistics fail).
std::string factorHessian(const std::vector<double> &gram, int64_t K, double dampRatio,
                          HessianFactor &out);

/// GPTQ over the rows of `w` (rows are independent: parallel over row
/// tiles on the reference kernels' thread pool).
QuantizedWeight quantizeGptq(const std::vector<float> &w, int64_t N, int64_t K,
                             const QuantScheme &scheme, const HessianFactor &h);

} // namespace mlir::llmc

#endif // LLMC_PASSES_WEIGHTQUANTIZATION_H
