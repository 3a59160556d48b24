//===- ShapeInference.h - symbolic shapes and shared inference rules -----===//
//
// The shape rules of the llm dialect live here once: broadcasting, axis
// normalisation, reductions, and reading small constant operands (shape
// tensors, axes) that inference needs. Every rule propagates symbolic
// dimension names (#llm.dims) where a dimension is carried over unchanged.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_IR_SHAPEINFERENCE_H
#define LLMC_DIALECTS_LLM_IR_SHAPEINFERENCE_H

#include "dialects/LLM/IR/Limits.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/TypeRange.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::llmc {

/// a * b or a + b when the result stays within [0, kMaxDimSize].
std::optional<int64_t> boundedMul(int64_t a, int64_t b);
std::optional<int64_t> boundedAdd(int64_t a, int64_t b);

/// One dimension as known at compile time: a static size, or dynamic with an
/// optional symbolic name.
struct Dim {
  int64_t size = ShapedType::kDynamic;
  StringAttr name; // only set on dynamic dimensions

  static Dim fixed(int64_t s) { return Dim{s, {}}; }
  static Dim dynamic(StringAttr n = {}) { return Dim{ShapedType::kDynamic, n}; }
  bool isStatic() const { return !ShapedType::isDynamic(size); }
  bool operator==(const Dim &o) const { return size == o.size && name == o.name; }
};

/// A ranked shape; std::nullopt stands for an unranked tensor.
using Shape = llvm::SmallVector<Dim, 6>;
using MaybeShape = std::optional<Shape>;

/// The shape of a tensor type (names from its #llm.dims encoding).
MaybeShape getShape(Type type);
/// A tensor type with `shape` (unranked for nullopt) and element type
/// `elementType`; names become a #llm.dims encoding when there are any.
Type makeTensorType(const MaybeShape &shape, Type elementType);
/// A ranked tensor type of fully dynamic dims (rank is at most kMaxRank).
Type makeDynamicTensorType(int64_t rank, Type elementType);
/// Fails when `rank` exceeds kMaxRank.
LogicalResult checkRank(std::optional<Location> loc, int64_t rank);

/// Whether `v` is the none value of a missing optional operand.
bool isNone(Value v);

/// The product of static dims, or kDynamic if any dim is dynamic.
int64_t staticProduct(llvm::ArrayRef<Dim> dims);

/// True if result types may stand where `inferred` were inferred: same element
/// types and ranks where ranked, no conflicting static dims. Names do not
/// matter.
bool areCompatibleReturnTypes(TypeRange inferred, TypeRange actual);

/// Checks that a type an operation produces is within llmc's limits: rank
/// at most kMaxRank, static dimensions and element count at most
/// kMaxDimSize.
LogicalResult checkTypeLimits(std::optional<Location> loc, Type type);

/// The printed form of a type, for messages.
std::string typeToString(Type type);

/// Emits `message` at `loc` (when present) and returns failure.
LogicalResult emitInferenceError(std::optional<Location> loc, const llvm::Twine &message);

/// Maps `axis` into [0, rank), failing with an error naming `what`.
FailureOr<int64_t> normalizeAxis(std::optional<Location> loc, int64_t axis,
                                 int64_t rank, llvm::StringRef what = "axis");

/// Multidirectional (numpy) broadcasting of two shapes.
FailureOr<Shape> broadcastShapes(std::optional<Location> loc, llvm::ArrayRef<Dim> a,
                                 llvm::ArrayRef<Dim> b);

/// Values of a constant integer operand (an llm.constant of i32/i64/...).
std::optional<llvm::SmallVector<int64_t>> getConstantInts(Value v);
/// Values of a constant floating-point or integer operand, as doubles.
std::optional<llvm::SmallVector<double>> getConstantDoubles(Value v);
/// Integer elements of an ElementsAttr (dense or dense_resource).
std::optional<llvm::SmallVector<int64_t>> readIntElements(ElementsAttr attr);
/// Elements of an ElementsAttr of any int/float type, as doubles.
std::optional<llvm::SmallVector<double>> readDoubleElements(ElementsAttr attr);
/// The bytes of an ElementsAttr as stored (dense or dense_resource), one
/// element per ceil(bits / 8) bytes; splats give one element.
std::optional<llvm::ArrayRef<char>> getRawElementBytes(ElementsAttr attr);

// --- Inference rules shared by several operations --------------------------

/// Result 0 has the type of operand `index`.
LogicalResult inferSameAsOperand(std::optional<Location> loc, ValueRange operands,
                                 unsigned index, llvm::SmallVectorImpl<Type> &types);
/// Like inferSameAsOperand, and checks that `axis` is valid for its rank.
LogicalResult inferSameAsOperandWithAxis(std::optional<Location> loc,
                                         ValueRange operands, unsigned index,
                                         int64_t axis,
                                         llvm::SmallVectorImpl<Type> &types);
/// Result 0 has the shape of `v` and element type `elementType`.
LogicalResult inferSameShape(std::optional<Location> loc, Value v, Type elementType,
                             llvm::SmallVectorImpl<Type> &types);
/// Broadcast of all operands; element type i1 for comparisons, else that of
/// operand 0. With `sameElementType`, operands must share an element type.
LogicalResult inferBroadcast(std::optional<Location> loc, ValueRange operands,
                             bool resultBool, bool sameElementType,
                             llvm::SmallVectorImpl<Type> &types);
/// ONNX Reduce* with optional axes operand.
LogicalResult inferReduce(std::optional<Location> loc, Value data, Value axes,
                          bool keepdims, bool noopWithEmptyAxes,
                          llvm::SmallVectorImpl<Type> &types);

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLM_IR_SHAPEINFERENCE_H
