//===- GeneratedLoops.h - what the CPU target's generated loops build on --===//
//
// The emitted model source writes a loop of its own for each element-wise
// operation, or run of them (compiler/Codegen/CPU/EmitCppPointwise.cpp):
// a static function over a range [b, e) of the result's elements, with the
// static shapes and strides built in, that loads its inputs as f32 (or
// int64), computes the operations' expression and stores the result; and
// copy loops for a transpose, split or concat of static shapes, which
// store each element as it is. This header gives them the spelling they
// share with the CUDA target's generated kernels (half, bfloat16,
// toFloat, fromFloat<T>: compiler/Codegen/Pointwise.h), `pointwise`,
// which checks the operands, places the result and runs the loop over the
// context's pool, and `partOf`, which cuts a concat's range into its
// parts.
//
// Numerics: as the reference kernels (runtime/src/cpu/kernels/
// Elementwise.cpp) compute f32, f16 and bf16 operations, in float, with
// each f16 or bf16 result inside a run rounded as its storage would round
// it; the activations' formulas are written in float (sigmoid as
// 1 / (1 + e^-x)). Their exp, tanh and erf are kernels/Pointwise.h's
// fastExp, fastTanh and fastErf (within 2.5e-7 relative, or 1.2e-7 absolute
// for erf past 1: a few ulps where libm's are within one), which the
// emitter writes for the shared expressions' expf, tanhf and erff: GCC
// vectorises them, and libm's scalar calls took 4-18 ns an element.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_GENERATEDLOOPS_H
#define LLMC_RUNTIME_MODEL_GENERATEDLOOPS_H

#include "runtime/src/model/ModelSupport.h"

#include "runtime/src/cpu/Numeric.h"

#include <cmath>

namespace llmc::model {

using kernels::fastErf;
using kernels::fastExp;
using kernels::fastTanh;

using half = cpu::Half;
using bfloat16 = cpu::BFloat16;

inline float toFloat(float x) { return x; }
inline float toFloat(half x) { return cpu::halfToFloat(x.bits); }
inline float toFloat(bfloat16 x) { return cpu::bf16ToFloat(x.bits); }
template <class T> T fromFloat(float x);
template <> inline float fromFloat<float>(float x) { return x; }
template <> inline half fromFloat<half>(float x) { return half{cpu::floatToHalf(x)}; }
template <> inline bfloat16 fromFloat<bfloat16>(float x) { return bfloat16{cpu::floatToBf16(x)}; }

/// An operand of a generated loop: the tensor and what the loop reads of it.
struct LoopInput {
  const Tensor *tensor;
  DType type;
  int64_t count; // elements
};

/// Elements a chunk of a generated loop takes at least (a chunk is a few
/// microseconds of work).
constexpr int64_t kLoopGrain = 16384;

/// Checks that every input has the type and element count the loop was
/// generated for (the shapes are static; an error names `opName`, nothing
/// is written), places `out` ([type, shape], in its arena buffer when it
/// has one) and runs `loop(b, e)` over its elements: on the calling thread
/// up to 2 x kLoopGrain elements, above that split among the pool in chunks
/// of at least kLoopGrain (but the last). LLMC_PROFILE counts its time
/// under `kind` (the operations it computes).
template <class F>
Status pointwise(const Context &ctx, const char *kind, const char *opName,
                 std::initializer_list<LoopInput> inputs, DType type, const Shape &shape,
                 Tensor &out, F &&loop) {
  for (const LoopInput &in : inputs)
    if (!in.tensor || in.tensor->dtype() != in.type || in.tensor->numel() != in.count)
      return Status::error(std::string(opName) + ": an operand is not the " +
                           cpu::dtypeName(in.type) + " tensor of " + std::to_string(in.count) +
                           " elements the generated loop reads");
  LLMC_RETURN_IF_ERROR(Tensor::allocateUninitialized(type, shape, out));
  Context::Timer timer(ctx, kind);
  int64_t n = out.numel();
  if (n >= 2 * kLoopGrain && ctx.pool->size() > 1)
    ctx.pool->parallelFor(n, kLoopGrain, [&](int64_t b, int64_t e) { loop(b, e); });
  else if (n > 0)
    loop(int64_t(0), n);
  return Status::ok();
}

/// A concatenation's part inside a loop range: runs `loop(b', e')` over
/// the elements of [b, e) in the part's [from, to) of the result's element
/// range, counted from `from`; nothing where they do not meet. (A concat's
/// generated loops, one per input over its own elements, share one
/// `pointwise` call: the pool's chunks are cut at the parts' ends.)
template <class F> void partOf(int64_t b, int64_t e, int64_t from, int64_t to, F &&loop) {
  b = b > from ? b : from;
  e = e < to ? e : to;
  if (b < e)
    loop(b - from, e - from);
}

} // namespace llmc::model

#endif // LLMC_RUNTIME_MODEL_GENERATEDLOOPS_H
