//===- Canonicalize.cpp - fold what an export computes about shapes -------===//
//
// Repeats, until nothing changes: symbolic evaluation of small integer
// values (passes/SymbolicShapes.h) to constants and to constant Reshape,
// Expand and Slice operands; evaluation of operations on constants with their
// own CPU kernels; removal of operations that do nothing; CSE and dead code
// elimination; type refinement.
//
//===----------------------------------------------------------------------===//
#include "passes/BuildHelpers.h"
#include "passes/KernelBridge.h"
#include "passes/Passes.h"
#include "passes/SymbolicShapes.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"
#include "runtime/src/cpu/ThreadPool.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/CSE.h"

#define DEBUG_TYPE "llmc-canonicalize"

namespace mlir::llmc {
#define GEN_PASS_DEF_CANONICALIZEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

/// Results of at most this many elements are folded into constants.
constexpr int64_t kMaxFoldedElements = 1 << 16;

bool isConstantOrNone(Value v) { return v.getDefiningOp<ConstantOp>() || isNone(v); }

StringRef onnxName(Operation *op) {
  StringRef name = op->getName().getStringRef();
  return name.consume_front("llm.onnx.") ? name : StringRef();
}

/// The elements of an integer constant operand.
std::optional<SmallVector<int64_t>> constantInts(Value v) {
  if (auto c = v.getDefiningOp<ConstantOp>())
    return readIntElements(c.getValue());
  return std::nullopt;
}

int64_t intAttrOr(Operation *op, StringRef name, int64_t dflt) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getValue().getSExtValue();
  return dflt;
}

Value makeI64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({int64_t(values.size())}, b.getI64Type());
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, values));
}

struct CanonicalizePass : mlir::llmc::impl::CanonicalizePassBase<CanonicalizePass> {
  using CanonicalizePassBase::CanonicalizePassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    for (int round = 0; round < 16; ++round) {
      bool changed = false;
      changed |= foldSymbolic(func);
      changed |= foldOverExpandedScalars(func);
      changed |= foldConstants(func);
      changed |= removeNoOps(func);
      changed |= foldIndexPicks(func);
      if (unitTransposes)
        changed |= unitTransposesAsReshapes(func);
      IRRewriter rewriter(&getContext());
      DominanceInfo dom(func);
      changed |= removeRepeatedChecks(func, dom);
      if (symbolicValues)
        changed |= reuseSymbolicValues(func);
      bool cse = false;
      eliminateCommonSubExpressions(rewriter, dom, func, &cse);
      changed |= cse;
      changed |= eraseDead(func);
      if (failed(refineResultTypes(func)))
        return signalPassFailure();
      if (!changed)
        break;
    }
  }

  /// What is computed from a scalar expanded to a shape of run-time size
  /// (the attention mask of ones a cached export gets, start_pos + S long)
  /// without reading the expanded tensor: its Shape is the shape operand,
  /// and a ReduceSum of an integer constant over it is the constant times
  /// the summed sizes (genai's seqlens_k and total_sequence_length). The
  /// expanded tensor then has no readers left and goes.
  bool foldOverExpandedScalars(func::FuncOp func) {
    bool changed = false;
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      StringRef name = onnxName(op);
      if ((name != "shape" && name != "reduce_sum") || op->getNumOperands() < 1)
        continue;
      Operation *expand = op->getOperand(0).getDefiningOp();
      if (!expand || onnxName(expand) != "expand")
        continue;
      Value x = expand->getOperand(0), shape = expand->getOperand(1);
      auto xt = dyn_cast<RankedTensorType>(x.getType());
      if (!xt || xt.getRank() != 0)
        continue;
      OpBuilder b(op);
      Location loc = op->getLoc();
      if (name == "shape") {
        auto s = cast<OnnxShapeOp>(op);
        if (s.getStart() != 0 || s.getEnd() || shape.getType() != s.getResult().getType())
          continue;
        op->getResult(0).replaceAllUsesWith(shape);
        changed = true;
        continue;
      }
      // reduce_sum(expand(c, shape), axes): c * prod(shape[axes]) everywhere.
      auto c = x.getDefiningOp<ConstantOp>();
      auto yt = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      std::optional<SmallVector<int64_t>> axes =
          op->getNumOperands() > 1 ? constantInts(op->getOperand(1)) : std::nullopt;
      auto st = dyn_cast<RankedTensorType>(shape.getType());
      if (!c || !isa<IntegerType>(xt.getElementType()) || !yt || !yt.hasStaticShape() || !axes ||
          axes->empty() || !st || !st.hasStaticShape())
        continue;
      int64_t rank = st.getDimSize(0);
      Value count;
      bool ok = true;
      for (int64_t a : *axes) {
        if (a < 0)
          a += rank;
        if (a < 0 || a >= rank) {
          ok = false;
          break;
        }
        Value size = createOp<OnnxGatherOp>(b, loc, {shape, i64Constant(b, loc, {a}, true)});
        count = count ? createOp<OnnxMulOp>(b, loc, {count, size}) : size;
      }
      if (!ok)
        continue;
      Value value = count;
      if (!xt.getElementType().isInteger(64))
        value = createOp<OnnxCastOp>(b, loc, {value},
                                     {b.getNamedAttr("to", b.getI64IntegerAttr(getOnnxCodeForElementType(
                                                               xt.getElementType())))});
      std::optional<SmallVector<int64_t>> cv = constantInts(x);
      if (!cv || cv->size() != 1 || (*cv)[0] != 1)
        value = createOp<OnnxMulOp>(b, loc, {x, value});
      Value out = createOp<OnnxExpandOp>(b, loc, {value, i64Constant(b, loc, yt.getShape())});
      auto ot = cast<RankedTensorType>(out.getType());
      if (ot.getShape() != yt.getShape() || ot.getElementType() != yt.getElementType())
        continue; // leaves unused operations for eraseDead
      op->getResult(0).replaceAllUsesWith(out);
      changed = true;
    }
    return changed;
  }

  /// Values the symbolic analysis knows completely become constants; Reshape,
  /// Expand and Slice get constant operands where their computed ones can be
  /// spelled with ONNX's placeholders.
  bool foldSymbolic(func::FuncOp func) {
    SymbolicShapes sym(func);
    bool changed = false;
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      if (isa<ConstantOp, NoneOp>(op))
        continue;
      OpBuilder b(op);
      if (op->getNumResults() == 1)
        if (const std::vector<SymExpr> *v = sym.lookup(op->getResult(0))) {
          auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
          SmallVector<int64_t> ints;
          for (const SymExpr &e : *v)
            if (std::optional<int64_t> c = e.asConstant())
              ints.push_back(*c);
          if (type && type.hasStaticShape() && ints.size() == v->size()) {
            if (Attribute attr = intElements(type, ints)) {
              Value c = b.create<ConstantOp>(op->getLoc(), cast<ElementsAttr>(attr));
              op->getResult(0).replaceAllUsesWith(c);
              changed = true;
              continue;
            }
          }
        }
      StringRef name = onnxName(op);
      if (name == "reshape")
        changed |= rewriteReshape(op, sym);
      else if (name == "expand")
        changed |= rewriteExpand(op, sym);
      else if (name == "slice")
        changed |= rewriteSliceEnds(op, sym);
      changed |= refineFromSymbols(op, sym);
    }
    return changed;
  }

  /// A dimension for a symbolic size: static, named, or unknown.
  static Dim dimFor(const SymExpr &e, const SymbolicShapes &sym, MLIRContext *ctx) {
    if (std::optional<int64_t> c = e.asConstant())
      return *c >= 0 ? Dim::fixed(*c) : Dim::dynamic();
    if (std::optional<std::string> n = sym.nameOf(e))
      return Dim::dynamic(StringAttr::get(ctx, *n));
    return Dim::dynamic();
  }

  /// Fills unknown dimensions of v's type from `dims` (static sizes and
  /// names); returns whether the type changed.
  static bool refineValue(Value v, ArrayRef<Dim> dims) {
    MaybeShape cur = getShape(v.getType());
    if (!cur || cur->size() != dims.size())
      return false;
    Shape out = *cur;
    bool changed = false;
    for (auto [o, d] : llvm::zip(out, dims)) {
      // (A named size the computation shows to be a constant becomes it: a
      // bucket's sequence_length.)
      if (o.isStatic() || (o.name && !d.isStatic()) || (!d.isStatic() && !d.name))
        continue;
      o = d;
      changed = true;
    }
    if (changed)
      v.setType(makeTensorType(out, getElementTypeOrSelf(v.getType())));
    return changed;
  }

  /// Result dimensions of operations sized by a computed shape (Expand,
  /// Reshape, ConstantOfShape, Range) from what the computation says.
  bool refineFromSymbols(Operation *op, SymbolicShapes &sym) {
    StringRef name = onnxName(op);
    MLIRContext *ctx = op->getContext();
    if (name == "range")
      return refineValue(op->getResult(0), {dimFor(sym.dimOf(op->getResult(0), 0), sym, ctx)});
    if (name != "expand" && name != "reshape" && name != "constant_of_shape")
      return false;
    Value shapeOperand = op->getOperand(name == "constant_of_shape" ? 0 : 1);
    const std::vector<SymExpr> *target = sym.lookup(shapeOperand);
    if (!target)
      return false;
    Shape dims;
    if (name == "constant_of_shape") {
      for (const SymExpr &e : *target)
        dims.push_back(dimFor(e, sym, ctx));
      return refineValue(op->getResult(0), dims);
    }
    Value x = op->getOperand(0);
    MaybeShape xs = getShape(x.getType());
    if (!xs)
      return false;
    int64_t n = int64_t(target->size()), rank = int64_t(xs->size());
    if (name == "reshape") {
      bool allowZero = intAttrOr(op, "allowzero", 0) != 0;
      for (int64_t i = 0; i < n; ++i) {
        const SymExpr &e = (*target)[size_t(i)];
        if (e.asConstant() == 0 && !allowZero)
          dims.push_back(i < rank ? (*xs)[size_t(i)] : Dim::dynamic());
        else if (e.asConstant() == -1) // (what the symbols say it is)
          dims.push_back(dimFor(sym.dimOf(op->getResult(0), i), sym, ctx));
        else
          dims.push_back(dimFor(e, sym, ctx));
      }
      return refineValue(op->getResult(0), dims);
    }
    // Expand: each output size broadcasts x's against the target's.
    int64_t outRank = std::max(n, rank);
    for (int64_t j = 0; j < outRank; ++j) {
      int64_t t = j - (outRank - n), k = j - (outRank - rank);
      const SymExpr *e = t >= 0 ? &(*target)[size_t(t)] : nullptr;
      const Dim *xd = k >= 0 ? &(*xs)[size_t(k)] : nullptr;
      if (!e) {
        dims.push_back(*xd);
      } else if (!xd || (xd->isStatic() && xd->size == 1)) {
        dims.push_back(dimFor(*e, sym, ctx));
      } else if (e->asConstant() == 1 || *e == sym.dimOf(x, k)) {
        dims.push_back(*xd);
      } else {
        dims.push_back(Dim::dynamic());
      }
    }
    return refineValue(op->getResult(0), dims);
  }

  static Attribute intElements(RankedTensorType type, ArrayRef<int64_t> values) {
    Type e = type.getElementType();
    if (!e.isInteger() || e.getIntOrFloatBitWidth() > 64)
      return {};
    SmallVector<APInt> ints;
    for (int64_t v : values)
      ints.push_back(APInt(e.getIntOrFloatBitWidth(), uint64_t(v), /*isSigned=*/true));
    return DenseElementsAttr::get(type, ints);
  }

  /// Reshape(x, computed): a constant target with 0 ("as in x") and at most
  /// one -1; the result keeps the dimension names the computation carried.
  bool rewriteReshape(Operation *op, SymbolicShapes &sym) {
    Value x = op->getOperand(0), shape = op->getOperand(1);
    const std::vector<SymExpr> *target = sym.lookup(shape);
    if (!target || shape.getDefiningOp<ConstantOp>())
      return false;
    bool allowZero = intAttrOr(op, "allowzero", 0) != 0;
    // allowzero only changes what a literal 0 means: without one, the
    // target can be spelled with 0 for "as in x" like any other Reshape.
    bool dropAllowZero = allowZero && llvm::none_of(*target, [](const SymExpr &e) {
                           return e.asConstant() == 0;
                         });
    if (dropAllowZero)
      allowZero = false;
    auto xt = dyn_cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> spelled;
    Shape dims;
    int unknowns = 0;
    for (auto [i, e] : llvm::enumerate(*target)) {
      std::optional<int64_t> c = e.asConstant();
      if (c && (*c > 0 || (*c == 0 && allowZero))) {
        spelled.push_back(*c);
        dims.push_back(Dim::fixed(*c));
      } else if (c && *c == -1) {
        spelled.push_back(-1);
        dims.push_back(Dim::dynamic());
        ++unknowns;
      } else if (c && *c == 0) { // copies x's dimension
        spelled.push_back(0);
        dims.push_back(xt && int64_t(i) < xt.getRank() ? getShape(xt)->operator[](i)
                                                        : Dim::dynamic());
      } else if (c) {
        return false; // an invalid target: leave it to execution to report
      } else if (!allowZero && xt && int64_t(i) < xt.getRank() && e == sym.dimOf(x, i)) {
        spelled.push_back(0);
        dims.push_back((*getShape(xt))[i]);
      } else {
        spelled.push_back(-1);
        ++unknowns;
        dims.push_back(dimFor(e, sym, op->getContext()));
      }
    }
    if (unknowns > 1)
      return false;
    OpBuilder b(op);
    if (dropAllowZero)
      op->setAttr("allowzero",
                  IntegerAttr::get(op->getAttrOfType<IntegerAttr>("allowzero").getType(), 0));
    op->setOperand(1, makeI64Constant(b, op->getLoc(), spelled));
    Type element = getElementTypeOrSelf(op->getResult(0).getType());
    op->getResult(0).setType(makeTensorType(dims, element));
    return true;
  }

  /// Expand(x, computed): constant sizes, 1 where the size is x's own.
  bool rewriteExpand(Operation *op, SymbolicShapes &sym) {
    Value x = op->getOperand(0), shape = op->getOperand(1);
    const std::vector<SymExpr> *target = sym.lookup(shape);
    auto xt = dyn_cast<RankedTensorType>(x.getType());
    if (!target || !xt || shape.getDefiningOp<ConstantOp>())
      return false;
    int64_t n = int64_t(target->size()), rank = xt.getRank();
    SmallVector<int64_t> spelled;
    for (int64_t j = 0; j < n; ++j) {
      const SymExpr &e = (*target)[size_t(j)];
      int64_t k = j - (n - rank); // x's dimension under this entry
      if (std::optional<int64_t> c = e.asConstant())
        spelled.push_back(*c);
      else if (k >= 0 && e == sym.dimOf(x, k))
        spelled.push_back(1);
      else
        return false;
    }
    OpBuilder b(op);
    op->setOperand(1, makeI64Constant(b, op->getLoc(), spelled));
    return true;
  }

  /// Slice ends that equal the sliced dimension become INT64_MAX.
  bool rewriteSliceEnds(Operation *op, SymbolicShapes &sym) {
    if (op->getNumOperands() < 3 || op->getOperand(2).getDefiningOp<ConstantOp>())
      return false;
    Value x = op->getOperand(0);
    auto xt = dyn_cast<RankedTensorType>(x.getType());
    const std::vector<SymExpr> *ends = sym.lookup(op->getOperand(2));
    if (!xt || !ends)
      return false;
    SmallVector<int64_t> axes;
    if (op->getNumOperands() > 3 && !isNone(op->getOperand(3))) {
      const std::vector<SymExpr> *a = sym.lookup(op->getOperand(3));
      if (!a)
        return false;
      for (const SymExpr &e : *a) {
        std::optional<int64_t> c = e.asConstant();
        if (!c)
          return false;
        axes.push_back(*c < 0 ? *c + xt.getRank() : *c);
      }
    } else {
      for (int64_t i = 0; i < int64_t(ends->size()); ++i)
        axes.push_back(i);
    }
    if (axes.size() != ends->size())
      return false;
    SmallVector<int64_t> spelled;
    for (auto [axis, e] : llvm::zip(axes, *ends)) {
      if (std::optional<int64_t> c = e.asConstant())
        spelled.push_back(*c);
      else if (axis >= 0 && axis < xt.getRank() && e == sym.dimOf(x, axis))
        spelled.push_back(INT64_MAX);
      else
        return false;
    }
    OpBuilder b(op);
    op->setOperand(2, makeI64Constant(b, op->getLoc(), spelled));
    return true;
  }

  /// Operations whose operands are all constants run their CPU kernel now.
  bool foldConstants(func::FuncOp func) {
    bool changed = false;
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (!isa<ConstantOp, NoneOp>(op) && op->getNumResults() > 0 &&
          isa<LLMDialect>(op->getDialect()) && llvm::all_of(op->getOperands(), isConstantOrNone))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      std::vector<cpu::Tensor> inputs(op->getNumOperands());
      std::vector<const cpu::Tensor *> args;
      bool ok = true;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        if (isNone(v)) {
          args.push_back(nullptr);
          continue;
        }
        auto t = constantTensor(v.getDefiningOp<ConstantOp>().getValue());
        if (!t) {
          llvm::consumeError(t.takeError());
          ok = false;
          break;
        }
        inputs[i] = std::move(*t);
        args.push_back(&inputs[i]);
      }
      if (!ok)
        continue;
      auto results = evaluateOp(op, args);
      if (!results) { // execution will report the same error
        llvm::consumeError(results.takeError());
        continue;
      }
      SmallVector<Value> folded;
      OpBuilder b(op);
      for (auto [r, t] : llvm::zip(op->getResults(), *results)) {
        if (!t.defined() || t.numel() > kMaxFoldedElements)
          break;
        auto type = RankedTensorType::get(ArrayRef<int64_t>(t.shape().data(), t.shape().size()), getElementTypeOrSelf(r.getType()));
        ElementsAttr attr = denseFromTensor(t, type);
        if (!attr)
          break;
        folded.push_back(b.create<ConstantOp>(op->getLoc(), attr));
      }
      if (folded.size() != op->getNumResults()) {
        for (Value v : folded)
          v.getDefiningOp()->erase();
        continue;
      }
      op->replaceAllUsesWith(folded);
      changed = true;
    }
    return changed;
  }

  /// Identity, casts to the same type, Expand by ones, Reshape to the same
  /// shape, inference-mode Dropout.
  /// Position arithmetic that picks one run-time value out of a vector (a
  /// cache position computed from a shape with the past length spliced in):
  /// a Gather at a constant index from a Concat of parts of static sizes is
  /// the Gather from the part holding it, or the scalar itself where that
  /// part is an Unsqueezed scalar; a Range of static length 1 is its start
  /// reshaped to [1]. Each would be a kernel (a launch on the GPU) per step.
  bool foldIndexPicks(func::FuncOp func) {
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<OnnxGatherOp, OnnxRangeOp>(op))
        ops.push_back(op);
    });
    bool changed = false;
    for (Operation *op : ops) {
      auto rt = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      if (!rt || !rt.hasStaticShape())
        continue;
      OpBuilder b(op);
      Value replacement;
      bool built = true;
      if (auto range = dyn_cast<OnnxRangeOp>(op)) {
        auto st = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
        if (rt.getShape() != ArrayRef<int64_t>{1} || !st || st.getRank() != 0)
          continue;
        replacement = createOp<OnnxReshapeOp>(b, op->getLoc(),
                                              {op->getOperand(0), i64Constant(b, op->getLoc(), {1})});
      } else {
        auto concat = op->getOperand(0).getDefiningOp<OnnxConcatOp>();
        std::optional<SmallVector<int64_t>> index = constantInts(op->getOperand(1));
        auto it = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
        if (!concat || !index || index->size() != 1 || !it || it.getRank() > 1 ||
            intAttrOr(op, "axis", 0) != 0 ||
            cast<RankedTensorType>(concat.getType()).getRank() != 1)
          continue;
        int64_t total = 0;
        for (Value part : concat->getOperands()) {
          auto pt = dyn_cast<RankedTensorType>(part.getType());
          total = pt && pt.hasStaticShape() && total >= 0 ? total + pt.getDimSize(0) : -1;
        }
        int64_t i = (*index)[0] < 0 ? (*index)[0] + total : (*index)[0];
        if (total < 0 || i < 0 || i >= total)
          continue;
        for (Value part : concat->getOperands()) {
          int64_t size = cast<RankedTensorType>(part.getType()).getDimSize(0);
          if (i >= size) {
            i -= size;
            continue;
          }
          Operation *u = part.getDefiningOp();
          Value scalar = u && isa<OnnxUnsqueezeOp>(u) ? u->getOperand(0) : Value();
          if (scalar && it.getRank() == 0 && scalar.getType() == rt) {
            replacement = scalar;
            built = false;
          } else
            replacement = createOp<OnnxGatherOp>(
                b, op->getLoc(), {part, i64Constant(b, op->getLoc(), {i}, it.getRank() == 0)});
          break;
        }
      }
      if (!replacement)
        continue;
      auto yt = dyn_cast<RankedTensorType>(replacement.getType());
      if (!yt || yt.getShape() != rt.getShape() || yt.getElementType() != rt.getElementType()) {
        if (built) { // (erase what was built, and its index or shape constant)
          Operation *made = replacement.getDefiningOp();
          Operation *index = made->getOperand(1).getDefiningOp();
          made->erase();
          if (index && index->use_empty())
            index->erase();
        }
        continue;
      }
      op->getResult(0).replaceAllUsesWith(replacement);
      changed = true;
    }
    return changed;
  }

  /// A Transpose of static shapes whose permutation keeps the axes of size
  /// above 1 in their order moves no data (a decode step's [B, 1, H, D] to
  /// [B, H, 1, D]): it becomes a Reshape to its result's shape, a view.
  bool unitTransposesAsReshapes(func::FuncOp func) {
    SmallVector<OnnxTransposeOp> ops;
    func.walk([&](OnnxTransposeOp op) { ops.push_back(op); });
    bool changed = false;
    for (OnnxTransposeOp op : ops) {
      auto xt = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
      auto rt = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      auto perm = op->getAttrOfType<DenseI64ArrayAttr>("perm");
      if (!xt || !rt || !xt.hasStaticShape() || !rt.hasStaticShape() || !perm ||
          int64_t(perm.size()) != xt.getRank())
        continue;
      // (A cache update's [B, S, H, D] to [B, H, S, D] stays: the code
      // generators fold it into the cache write, with the rope before.)
      if (llvm::any_of(op->getUsers(), [](Operation *u) {
            return isa<CacheUpdateOp, QuantizedCacheUpdateOp>(u);
          }))
        continue;
      int64_t last = -1;
      bool ordered = true;
      for (int64_t axis : perm.asArrayRef()) {
        if (axis < 0 || axis >= xt.getRank()) {
          ordered = false;
          break;
        }
        if (xt.getDimSize(axis) == 1)
          continue;
        ordered &= axis > last;
        last = axis;
      }
      if (!ordered)
        continue;
      OpBuilder b(op);
      Value y = createOp<OnnxReshapeOp>(b, op->getLoc(),
                                        {op->getOperand(0), i64Constant(b, op->getLoc(), rt.getShape())});
      auto yt = dyn_cast<RankedTensorType>(y.getType());
      if (!yt || yt.getShape() != rt.getShape() || yt.getElementType() != rt.getElementType()) {
        y.getDefiningOp()->erase();
        continue;
      }
      y.setType(rt); // (its dimension names, if any)
      op->getResult(0).replaceAllUsesWith(y);
      op->erase();
      changed = true;
    }
    return changed;
  }

  /// An llm.assert_equal whose check one before it (dominating it) already
  /// made, of the same two values (either order; values seen through the
  /// checks they passed, which return them unchanged), cannot fail: it
  /// goes, its result being the earlier check's where both pass one value
  /// on (so what each computes from it becomes one expression for CSE),
  /// else its own value. onnxruntime-genai's exports check the same
  /// sequence lengths in every layer's GroupQueryAttention.
  bool removeRepeatedChecks(func::FuncOp func, DominanceInfo &dom) {
    auto checked = [](Value v) {
      while (auto a = v.getDefiningOp<AssertEqualOp>())
        v = a.getValue();
      return v;
    };
    SmallVector<AssertEqualOp> checks;
    func.walk([&](AssertEqualOp a) { checks.push_back(a); });
    bool changed = false;
    for (size_t i = 0; i < checks.size(); ++i) {
      AssertEqualOp b = checks[i];
      Value bl = checked(b.getLhs()), br = checked(b.getRhs());
      for (size_t j = 0; j < i; ++j) {
        AssertEqualOp a = checks[j];
        if (!a)
          continue;
        Value al = checked(a.getLhs()), ar = checked(a.getRhs());
        if (!((al == bl && ar == br) || (al == br && ar == bl)) ||
            !dom.properlyDominates(a.getOperation(), b.getOperation()))
          continue;
        Value same = checked(a.getValue()) == checked(b.getValue()) ? a.getResult() : b.getValue();
        if (same.getType() != b.getResult().getType())
          continue;
        b.getResult().replaceAllUsesWith(same);
        b->erase();
        checks[i] = nullptr;
        changed = true;
        break;
      }
    }
    return changed;
  }

  /// Small integer values the symbolic analysis knows (constants aside:
  /// foldSymbolic makes those) that equal one before them in the function's
  /// block, or an argument (start_pos), are that value: itself where the
  /// types match, else a Reshape of it (a view) where the element type and
  /// count do, or an Expand of it where every element is that one value (a
  /// batch's lengths, start_pos for each sequence). A check
  /// (llm.assert_equal) whose two sides the analysis shows equal cannot
  /// fail and goes. onnxruntime-genai's exports compute
  /// the past length from the attention mask's sum through casts to i32 and
  /// back, and check it against start_pos and the total length in every
  /// layer; with the mask of ones folded (foldOverExpandedScalars) all of
  /// it is start_pos, and none of it is computed.
  bool reuseSymbolicValues(func::FuncOp func) {
    SymbolicShapes sym(func);
    const std::vector<std::string> &names = sym.symbolNames();
    // A spelling of what an integer value holds (none for constants and
    // what the analysis does not know).
    auto contents = [&](Value v) -> std::optional<std::string> {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      const std::vector<SymExpr> *e = sym.lookup(v);
      if (!t || !t.hasStaticShape() || !isa<IntegerType>(t.getElementType()) || !e)
        return std::nullopt;
      std::string k;
      bool constant = true;
      for (const SymExpr &x : *e) {
        if (x.overflowed())
          return std::nullopt;
        constant &= x.isConstant();
        k += x.str(names) + ";";
      }
      if (constant)
        return std::nullopt;
      return k;
    };
    bool changed = false;
    std::map<std::string, SmallVector<Value, 2>> seen; // contents -> first of each type
    Block &block = func.getBody().front();
    for (BlockArgument a : block.getArguments())
      if (std::optional<std::string> k = contents(a))
        seen[*k].push_back(a);
    for (Operation &op : llvm::make_early_inc_range(block.without_terminator())) {
      if (auto check = dyn_cast<AssertEqualOp>(&op)) {
        const std::vector<SymExpr> *l = sym.lookup(check.getLhs()), *r = sym.lookup(check.getRhs());
        auto same = [&](const std::vector<SymExpr> &x, const std::vector<SymExpr> &y) {
          if (x.empty() || y.empty() || (x.size() != y.size() && y.size() != 1))
            return false;
          for (size_t i = 0; i < x.size(); ++i)
            if (x[i].overflowed() || y[y.size() == 1 ? 0 : i].overflowed() ||
                x[i] != y[y.size() == 1 ? 0 : i])
              return false;
          return true;
        };
        if (l && r && (same(*l, *r) || same(*r, *l))) {
          check.getResult().replaceAllUsesWith(check.getValue());
          check->erase();
          changed = true;
        }
        continue;
      }
      if (op.getNumResults() != 1 || isa<ConstantOp>(&op) || !isMemoryEffectFree(&op))
        continue;
      Value v = op.getResult(0);
      std::optional<std::string> k = contents(v);
      if (!k)
        continue;
      SmallVector<Value, 2> &earlier = seen[*k];
      auto t = cast<RankedTensorType>(v.getType());
      Value replacement;
      for (Value u : earlier)
        if (u.getType() == t)
          replacement = u;
      // u reshaped (or expanded) to v's type, before op, from the values
      // `from` of v's element type and `count` elements.
      auto remake = [&](bool expand, ArrayRef<Value> from, int64_t count) -> Value {
        for (Value u : from) {
          auto ut = cast<RankedTensorType>(u.getType());
          if (ut.getElementType() != t.getElementType() || ut.getNumElements() != count)
            continue;
          OpBuilder b(&op);
          SmallVector<Value, 2> operands = {u, i64Constant(b, op.getLoc(), t.getShape())};
          Value y = expand ? createOp<OnnxExpandOp>(b, op.getLoc(), operands)
                           : createOp<OnnxReshapeOp>(b, op.getLoc(), operands);
          if (y.getType() == Type(t))
            return y;
          y.getDefiningOp()->erase();
        }
        return Value();
      };
      // (A view of a value of the same contents is left as it is: it would
      // be made again, and a view moves no data; an Expand is not remade.)
      if (!replacement && !isView(&op))
        replacement = remake(false, earlier, t.getNumElements());
      // Every element the value of one element before it (a batch's
      // lengths, start_pos for each sequence): an Expand of that value.
      const std::vector<SymExpr> &e = *sym.lookup(v);
      if (!replacement && !isView(&op) && e.size() > 1 && onnxName(&op) != "expand" &&
          llvm::all_of(e, [&](const SymExpr &x) { return x == e[0]; }))
        replacement = remake(true, seen[e[0].str(names) + ";"], 1);
      if (!replacement) {
        earlier.push_back(v);
        continue;
      }
      v.replaceAllUsesWith(replacement);
      if (isa_and_nonnull<OnnxReshapeOp, OnnxExpandOp>(replacement.getDefiningOp()) &&
          !llvm::is_contained(earlier, replacement))
        earlier.push_back(replacement);
      changed = true;
    }
    return changed;
  }

  bool removeNoOps(func::FuncOp func) {
    bool changed = false;
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      StringRef name = onnxName(op);
      if (name.empty() || op->getNumOperands() == 0)
        continue;
      Value x = op->getOperand(0);
      Value result = op->getResult(0);
      bool noop = false;
      if (name == "identity") {
        noop = true;
      } else if (name == "cast" || name == "cast_like") {
        noop = getElementTypeOrSelf(x.getType()) == getElementTypeOrSelf(result.getType());
      } else if (name == "dropout") { // training_mode absent or false
        std::optional<SmallVector<int64_t>> training =
            op->getNumOperands() < 3 || isNone(op->getOperand(2))
                ? SmallVector<int64_t>{0}
                : constantInts(op->getOperand(2));
        noop = (op->getNumResults() < 2 || op->getResult(1).use_empty()) && training &&
               llvm::all_of(*training, [](int64_t v) { return v == 0; });
      } else if (name == "expand") {
        auto xt = dyn_cast<RankedTensorType>(x.getType());
        std::optional<SmallVector<int64_t>> sizes = constantInts(op->getOperand(1));
        noop = sizes && xt && int64_t(sizes->size()) <= xt.getRank() &&
               llvm::all_of(*sizes, [](int64_t s) { return s == 1; });
      } else if (name == "reshape" || name == "squeeze" || name == "unsqueeze" ||
                 name == "flatten") {
        auto xt = dyn_cast<RankedTensorType>(x.getType());
        auto rt = dyn_cast<RankedTensorType>(result.getType());
        noop = xt && rt && xt.hasStaticShape() && rt.hasStaticShape() &&
               xt.getShape() == rt.getShape();
        if (name == "reshape" && !noop && xt && rt && xt.getRank() == rt.getRank())
          if (std::optional<SmallVector<int64_t>> s = constantInts(op->getOperand(1)))
            noop = intAttrOr(op, "allowzero", 0) == 0 &&
                   llvm::all_of(*s, [](int64_t v) { return v == 0; });
      } else if (name == "concat") {
        // Operands of static size 0 on the axis add nothing; one left over
        // of the result's type is the result.
        MaybeShape rs = getShape(result.getType());
        int64_t axis = intAttrOr(op, "axis", 0), rank = rs ? int64_t(rs->size()) : 0;
        if (axis < 0)
          axis += rank;
        Value kept;
        int live = 0;
        for (Value v : op->getOperands()) {
          MaybeShape sv = getShape(v.getType());
          if (sv && axis >= 0 && axis < int64_t(sv->size()) && (*sv)[size_t(axis)].isStatic() &&
              (*sv)[size_t(axis)].size == 0)
            continue;
          kept = v;
          ++live;
        }
        if (live == 1 && op->getNumOperands() > 1 &&
            getElementTypeOrSelf(kept.getType()) == getElementTypeOrSelf(result.getType()) &&
            getShape(kept.getType()) && getShape(result.getType()) &&
            getShape(kept.getType())->size() == getShape(result.getType())->size()) {
          x = kept;
          noop = true;
        }
      } else if ((name == "add" || name == "sub") && op->getNumOperands() == 2 &&
                 isa<IntegerType>(getElementTypeOrSelf(result.getType()))) {
        // Integers plus (or minus) zeros: a decode step's positions,
        // start_pos plus a range of one 0.
        auto zeros = [](Value v) {
          std::optional<SmallVector<int64_t>> c = constantInts(v);
          return c && llvm::all_of(*c, [](int64_t e) { return e == 0; });
        };
        if (name == "add" && zeros(x))
          x = op->getOperand(1);
        else if (!zeros(op->getOperand(1)))
          x = Value();
        noop = x && x.getType() == result.getType();
      } else if (name == "slice") {
        // Every sliced axis taken whole, in order: starts 0, ends past the
        // (static) size, steps 1.
        auto xt = dyn_cast<RankedTensorType>(x.getType());
        auto starts = constantInts(op->getOperand(1)), ends = constantInts(op->getOperand(2));
        std::optional<SmallVector<int64_t>> axes, steps;
        if (op->getNumOperands() > 3 && !isNone(op->getOperand(3)))
          axes = constantInts(op->getOperand(3));
        if (op->getNumOperands() > 4 && !isNone(op->getOperand(4)))
          steps = constantInts(op->getOperand(4));
        bool axesOk = !(op->getNumOperands() > 3 && !isNone(op->getOperand(3))) || axes;
        bool stepsOk = !(op->getNumOperands() > 4 && !isNone(op->getOperand(4))) ||
                       (steps && llvm::all_of(*steps, [](int64_t v) { return v == 1; }));
        if (xt && starts && ends && axesOk && stepsOk && starts->size() == ends->size()) {
          noop = true;
          for (size_t i = 0; i < starts->size() && noop; ++i) {
            int64_t a = axes ? (*axes)[i] : int64_t(i);
            if (a < 0)
              a += xt.getRank();
            noop = a >= 0 && a < xt.getRank() && !xt.isDynamicDim(a) && (*starts)[i] == 0 &&
                   (*ends)[i] >= xt.getDimSize(a);
          }
        }
      }
      if (!noop)
        continue;
      result.replaceAllUsesWith(x);
      changed = true;
    }
    return changed;
  }

  bool eraseDead(func::FuncOp func) {
    bool changed = false;
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : llvm::reverse(ops))
      if (isa<LLMDialect>(op->getDialect()) && isOpTriviallyDead(op)) {
        op->erase();
        changed = true;
      }
    return changed;
  }
};

} // namespace
