//===- Raise.h - the steps of llmc-raise-transformer ----------------------===//
//
// llmc-raise-transformer (RaiseTransformer.cpp) runs these steps, in order,
// over one function; each rewrites what exporters spell as operator
// sequences or contrib operators into llm operations. They are split by what
// they recognise:
//
//   RaiseTransformer.cpp  the pass, norms, activations, linear layers,
//                         embeddings, SwiGLU, rope;
//   RaiseAttention.cpp    attention written as MatMul and a softmax (an
//                         eager or hand-written attention) and its masks;
//   RaiseExported.cpp     onnxruntime's contrib operators (GroupQueryAttention,
//                         RotaryEmbedding, MultiHeadAttention, Attention,
//                         EmbedLayerNormalization) and the ONNX standard
//                         RotaryEmbedding and Attention (with a static cache);
//   RaiseUtil.cpp         the matching helpers they share.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_RAISE_H
#define LLMC_PASSES_RAISE_H

#include "passes/BuildHelpers.h"
#include "passes/SymbolicShapes.h"
#include "runtime/src/cpu/Tensor.h"

#include "dialects/LLM/IR/LLMOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <array>
#include <optional>
#include <utility>
#include <vector>

namespace mlir::llmc::raise {

namespace cpu = ::llmc::cpu;

//===----------------------------------------------------------------------===//
// Matching helpers (RaiseUtil.cpp)
//===----------------------------------------------------------------------===//

/// `v`'s defining operation when it is the llm op `name` ("onnx.mul").
Operation *defOf(Value v, StringRef name);

bool isLlmOp(Operation *op, StringRef name);

/// The operations of `func` called `name` (without "llm."), in order.
SmallVector<Operation *> opsNamed(func::FuncOp func, StringRef name);

/// Operand i of `op`, or null when absent or none.
Value optionalOperand(Operation *op, unsigned i);

/// The value of a one-element integer or float constant.
std::optional<double> scalarOf(Value v);

/// x scaled by a scalar constant (Mul or Div), with the factor; x and 1
/// otherwise.
std::pair<Value, double> unscale(Value v);

/// cap * tanh(x / cap) (or x times 1 / cap inside), a softcap (Gemma 2's of
/// the attention scores and of the logits): x, cap > 0 and the tanh.
struct Softcap {
  Value x;
  double cap;
  Operation *tanh;
};
std::optional<Softcap> softcapOf(Value v);

int64_t rankOf(Value v);

/// The static size of `v`'s last dimension, or -1.
int64_t lastDim(Value v);

int64_t intAttrOr(Operation *op, StringRef name, int64_t dflt);

double floatAttrOr(Operation *op, StringRef name, double dflt);

/// A constant of rank 1 whose size is `size` (any size when -1).
bool isVectorConstant(Value v, int64_t size);

/// Whether a reduction over `axes` (operand 1 or attribute) is over the last
/// dimension only, keeping it.
bool reducesLastDimKept(Operation *reduce);

FloatAttr f32(Builder &b, double v);

/// Same element type, rank and static sizes.
bool sameShapeAndType(Value a, Value b);

std::optional<SmallVector<int64_t>> constInts(Value v);

/// A value computed from one integer input (the positions) and constants,
/// tabulated per position: value[b, .., s, :] == rows[positions[b, s]].
struct PositionTable {
  Value positions;
  int64_t seqAxis;
  cpu::Tensor rows; // [maxPos, D], the value's element type
};

/// Runs `ops` (in order) with the values in `bound` given; the value of `v`.
std::optional<cpu::Tensor> evaluateSlice(ArrayRef<Operation *> ops,
                                         const llvm::DenseMap<Value, const cpu::Tensor *> &bound,
                                         Value v);

std::optional<cpu::Tensor> evaluateSlice(ArrayRef<Operation *> ops, Value positions,
                                         const cpu::Tensor &p, Value v);

/// Elementwise floats of a tensor as doubles (f32/f16/bf16/f64).
std::optional<std::vector<double>> floatsOf(const cpu::Tensor &t);

constexpr size_t kMaxSliceOps = 96;

/// The operations between `v` and its leaves, which must be constants and
/// `positions`; fails on a function argument or an operation without a
/// kernel on the way.
bool backwardSlice(Value v, Value positions, llvm::SetVector<Operation *> &slice);

/// Tabulates `v` over the nearest integer value of rank 1 or 2 that it is
/// computed from alone (with constants): the position ids, or the range an
/// export builds from the cache length.
std::optional<PositionTable> tabulate(Value v, int64_t maxPos);

std::optional<PositionTable> tabulateWith(Value v, Value positions, int64_t maxPos);

struct RopeTables {
  Value cos, sin, positions;
  int64_t seqAxis;
};

/// The steps, over the function `root`.
class Raiser {
public:
  Raiser(func::FuncOp root, int64_t maxPositions) : root(root), maxPositions(maxPositions) {}

  /// What a mask keeps, from evaluating its construction: causal (query i
  /// sees keys up to its position Skv - Sq + i), a window, and whether the
  /// function argument `padding` (attention_mask, [B, Skv]) removes keys.
  struct MaskMeaning {
    int64_t window = 0;
    Value padding;
  };

  // RaiseTransformer.cpp
  void raiseNorms(func::FuncOp func);
  void raiseActivations(func::FuncOp func);
  void raiseLinears(func::FuncOp func);
  Value transposeWeight(OpBuilder &b, ConstantOp c);
  void raiseEmbeddings(func::FuncOp func);
  void raiseSwiglu(func::FuncOp func);
  void raiseRope(func::FuncOp func);
  Value tableConstant(ArrayRef<char> bytes, RankedTensorType type, StringRef key, Location loc);
  Value tableConstant(const cpu::Tensor &rows, Type element, StringRef key, Location loc);
  std::optional<RopeTables> makeTables(Value cosV, Value sinV, bool interleaved = false);
  /// norm(transpose(x)) -> transpose(norm(x)) for an RMS or layer norm
  /// (over the last axis) of a transpose that keeps the last axis, when
  /// only transposes read the norm: the transposes then meet
  /// (foldTransposePairs). Gemma 3's query head norm runs over [B, H, S, D]
  /// between two transposes of [B, S, H, D]: then over the projection as it
  /// lies, and the transposes go.
  void sinkTransposesIntoNorms(func::FuncOp func);
  void foldTransposePairs(func::FuncOp func);
  void eraseDead(func::FuncOp func);

  // RaiseAttention.cpp
  static int64_t dimSize(Value v, int64_t d);
  static std::optional<std::vector<float>> sinkLogits(Value column);
  static std::optional<std::pair<Value, Value>> withoutSinks(Value scores, Value probs,
                                                             std::vector<float> &sinks);
  Value unrepeat(Value v, SymbolicShapes &sym);
  Value untransposeKey(Value v, SymbolicShapes &sym);
  void raiseSoftmax(func::FuncOp func);
  static Value floatScalar(OpBuilder &b, Location loc, FloatType t, double v);
  std::optional<std::pair<Value, Value>> whereMasked(Value scores);
  void raiseAttention(func::FuncOp func);
  static std::optional<std::vector<int8_t>> keptOf(const cpu::Tensor &m);
  std::optional<MaskMeaning> analyseMask(AttentionOp attn, SymbolicShapes &sym);
  void simplifyMasks(func::FuncOp func);

  // RaiseExported.cpp
  static void replaceResults(Operation *op, ArrayRef<Value> values);
  static SmallVector<NamedAttribute> attentionAttrs(Builder &b, int64_t hq, int64_t hkv,
                                                    bool causal, double scale,
                                                    int64_t window = 0, double softcap = 0,
                                                    ArrayRef<float> sinks = {});
  Value sliceLast(OpBuilder &b, Location loc, Value x, int64_t lo, int64_t hi);
  Value sizeOf(OpBuilder &b, Location loc, Value x, int64_t d);
  Value assertEqual(OpBuilder &b, Location loc, Value value, Value lhs, Value rhs,
                    StringRef message);
  std::pair<Value, Value> appendToCache(OpBuilder &b, Location loc, Value past, Value newBshd);
  void raiseGroupQueryAttention(func::FuncOp func);
  void raiseContribRotary(func::FuncOp func);
  void raiseMultiHeadAttention(func::FuncOp func);
  void raiseContribAttention(func::FuncOp func);
  void raiseEmbedLayerNorm(func::FuncOp func);
  void raiseOnnxRotary(func::FuncOp func);
  void raiseOnnxAttention(func::FuncOp func);
  static std::optional<std::array<Value, 3>> matchCacheScatter(Value x);
  void raiseOnnxStaticCacheAttention(func::FuncOp func);

  template <typename OpT>
  Value create(OpBuilder &b, Location loc, ValueRange operands,
               ArrayRef<NamedAttribute> attrs = {}) {
    return createOp<OpT>(b, loc, operands, attrs);
  }

  /// One llm.none at the top of the function, for absent operands.
  Value none(OpBuilder &, Location loc) {
    if (!noneValue) {
      OpBuilder b = OpBuilder::atBlockBegin(&root.getBody().front());
      noneValue = b.create<NoneOp>(loc).getResult();
    }
    return noneValue;
  }

private:
  func::FuncOp root;
  int64_t maxPositions;
  Value noneValue; // none()'s
};

} // namespace mlir::llmc::raise

#endif // LLMC_PASSES_RAISE_H
