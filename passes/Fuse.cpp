//===- Fuse.cpp - merged projections and fused kernels ---------------------===//
//
// Merges linear layers that share an input (weights concatenated at compile
// time) and outlines groups of operations into llm.fused regions, one kernel
// each; counts the kernels of every function. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/BuildHelpers.h"
#include "passes/KernelBridge.h"
#include "passes/Passes.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::llmc {
#define GEN_PASS_DEF_FUSEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

/// Integer and boolean values (sizes, positions, protocol checks): work on
/// indices, not kernels of the model's computation.
bool isBookkeeping(Operation *op) {
  return op->getNumResults() > 0 && llvm::all_of(op->getResultTypes(), [](Type t) {
           auto r = dyn_cast<RankedTensorType>(t);
           return r && !isa<FloatType>(r.getElementType());
         });
}

struct FusePass : mlir::llmc::impl::FusePassBase<FusePass> {
  void runOnOperation() override {
    func::FuncOp f = getOperation();
    mergeProjections(f);
    bringRopesTogether(f);
    fuseAttention(f);
    fuseLinearResidual(f);
    fuseFromNorms(f);
    fuseElementwiseChains(f);
    // The weights the merge replaced, and other dead values.
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<Operation *> ops;
      for (Operation &op : f.getBody().front())
        ops.push_back(&op);
      for (Operation *op : llvm::reverse(ops))
        if (isa<LLMDialect>(op->getDialect()) && op->getNumResults() > 0 && isOpTriviallyDead(op)) {
          op->erase();
          changed = true;
        }
    }
    if (failed(refineResultTypes(f)))
      return signalPassFailure();
    int64_t kernels = 0;
    for (Operation &op : f.getBody().front())
      if (!isa<ConstantOp, NoneOp, func::ReturnOp>(op) && !isView(&op) && !isBookkeeping(&op))
        ++kernels;
    f->setAttr("llm.kernels", Builder(f.getContext()).getI64IntegerAttr(kernels));
  }

  /// An attention's two ropes (queries, then keys) with work for the keys'
  /// rope between them, such as Qwen 3's and Gemma 3's RMS norm of each key
  /// head: that work moves before the queries' rope when it does not
  /// depend on it, so the ropes are neighbours, which the CUDA code runs as
  /// one launch (and, at decode, in the attention's launch).
  void bringRopesTogether(func::FuncOp f) {
    Block &block = f.getBody().front();
    RopeOp last;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      auto rope = dyn_cast<RopeOp>(&op);
      if (!rope)
        continue;
      RopeOp first = last;
      last = rope;
      if (!first)
        continue;
      // What the second rope needs that is computed after the first.
      llvm::SetVector<Operation *> needed;
      SmallVector<Operation *> work{rope};
      bool independent = true;
      while (!work.empty() && independent) {
        Operation *o = work.pop_back_val();
        for (Value v : o->getOperands()) {
          Operation *d = v.getDefiningOp();
          if (!d || d->getBlock() != &block || d->isBeforeInBlock(first) || needed.contains(d))
            continue;
          if (d == first.getOperation() || !isMemoryEffectFree(d)) {
            independent = false;
            break;
          }
          needed.insert(d);
          work.push_back(d);
        }
      }
      if (!independent || needed.empty())
        continue;
      SmallVector<Operation *> moved(needed.begin(), needed.end());
      llvm::sort(moved, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
      for (Operation *o : moved)
        o->moveBefore(first);
      last = RopeOp();
    }
  }

  //===--------------------------------------------------------------------===//
  // Projections sharing an input
  //===--------------------------------------------------------------------===//

  /// Linear layers (float or quantized) whose operands other than x are
  /// constants (or none) with their output features as dimension 0: those
  /// of one x, one kind and the same attributes become one layer over the
  /// operands stacked along dimension 0, and slices of its result.
  void mergeProjections(func::FuncOp f) {
    llvm::MapVector<std::pair<Value, Attribute>, SmallVector<Operation *>> byInput;
    f.walk([&](Operation *op) {
      if (!isa<LinearOp, QuantizedLinearOp>(op))
        return;
      for (Value v : op->getOperands().drop_front())
        if (!isNone(v) && !v.getDefiningOp<ConstantOp>())
          return;
      Attribute key = StringAttr::get(f.getContext(), op->getName().getStringRef());
      key = ArrayAttr::get(f.getContext(), {key, op->getAttrDictionary()});
      byInput[{op->getOperand(0), key}].push_back(op);
    });
    for (auto &[key, group] : byInput) {
      if (group.size() < 2)
        continue;
      Operation *head = group[0];
      // Every operand but x: none in all, or constants that differ only in
      // dimension 0 (the layer's output features).
      bool alike = llvm::all_of(group, [&](Operation *op) {
        for (unsigned i = 1; i < op->getNumOperands(); ++i) {
          Value a = head->getOperand(i), v = op->getOperand(i);
          if (isNone(a) != isNone(v))
            return false;
          if (isNone(a))
            continue;
          auto ta = cast<RankedTensorType>(a.getType()), tv = cast<RankedTensorType>(v.getType());
          if (ta.getElementType() != tv.getElementType() || ta.getRank() != tv.getRank() ||
              ta.getShape().drop_front() != tv.getShape().drop_front())
            return false;
        }
        return true;
      });
      if (!alike)
        continue;
      // Stack each operand in the group's order.
      unsigned operands = head->getNumOperands();
      std::vector<std::vector<char>> stacked(operands);
      SmallVector<int64_t> rows;
      bool ok = true;
      for (Operation *op : group) {
        rows.push_back(cast<RankedTensorType>(op->getOperand(1).getType()).getDimSize(0));
        for (unsigned i = 1; i < operands && ok; ++i) {
          if (isNone(op->getOperand(i)))
            continue;
          std::optional<cpu::Tensor> t = constantOf(op->getOperand(i));
          if (!t) {
            ok = false;
            break;
          }
          const char *p = static_cast<const char *>(t->raw());
          stacked[i].insert(stacked[i].end(), p, p + t->bytes());
        }
      }
      if (!ok)
        continue;
      // Before the first member (x and constants dominate it).
      Operation *firstOp = head;
      for (Operation *op : group)
        if (op->isBeforeInBlock(firstOp))
          firstOp = op;
      OpBuilder b(firstOp);
      Location loc = firstOp->getLoc();
      int64_t total = 0;
      for (int64_t r : rows)
        total += r;
      SmallVector<Value> merged{key.first};
      for (unsigned i = 1; i < operands; ++i) {
        Value a = head->getOperand(i);
        if (isNone(a)) {
          merged.push_back(a);
          continue;
        }
        auto t = cast<RankedTensorType>(a.getType());
        SmallVector<int64_t> shape(t.getShape());
        shape[0] = total;
        merged.push_back(blobConstant(b, loc, RankedTensorType::get(shape, t.getElementType()),
                                      stacked[i], i == 1 ? "merged_weight" : "merged_operand"));
      }
      Value result = isa<LinearOp>(head)
                         ? createOp<LinearOp>(b, loc, merged, head->getAttrs())
                         : createOp<QuantizedLinearOp>(b, loc, merged, head->getAttrs());
      int64_t offset = 0;
      for (auto [op, r] : llvm::zip(group, rows)) {
        Value part = b.create<OnnxSliceOp>(
                          loc,
                          ValueRange{result, i64Constant(b, loc, {offset}),
                                     i64Constant(b, loc, {offset + r}), i64Constant(b, loc, {-1}),
                                     i64Constant(b, loc, {1})},
                          ArrayRef<NamedAttribute>{})
                         .getResult();
        offset += r;
        op->getResult(0).replaceAllUsesWith(part);
      }
      for (Operation *op : group) // (after: the builder inserts before one of them)
        op->erase();
    }
  }

  //===--------------------------------------------------------------------===//
  // Outlining
  //===--------------------------------------------------------------------===//

  /// Moves `ops` (one block, any order) into an llm.fused at the position of
  /// the last of them, if every value they give is read after that.
  bool outline(SmallVector<Operation *> ops, StringRef kind) {
    if (ops.size() < 2)
      return false;
    llvm::sort(ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    llvm::SmallPtrSet<Operation *, 16> set(ops.begin(), ops.end());
    Operation *last = ops.back();
    llvm::SetVector<Value> inputs;
    SmallVector<Value> outputs;
    for (Operation *op : ops) {
      for (Value v : op->getOperands())
        if (!set.contains(v.getDefiningOp()))
          inputs.insert(v);
      for (Value r : op->getResults()) {
        bool outside = false;
        for (Operation *user : r.getUsers()) {
          if (set.contains(user))
            continue;
          if (user->getBlock() != last->getBlock() || !last->isBeforeInBlock(user))
            return false; // read before the group would run
          outside = true;
        }
        if (outside)
          outputs.push_back(r);
      }
    }
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    Location loc = last->getLoc();
    SmallVector<Type> resultTypes;
    for (Value o : outputs)
      resultTypes.push_back(o.getType());
    auto fused = b.create<FusedOp>(loc, resultTypes, inputs.getArrayRef(), b.getStringAttr(kind));
    Block *body = new Block();
    fused.getBody().push_back(body);
    IRMapping map;
    for (Value in : inputs)
      map.map(in, body->addArgument(in.getType(), in.getLoc()));
    OpBuilder inner = OpBuilder::atBlockEnd(body);
    for (Operation *op : ops)
      inner.clone(*op, map);
    SmallVector<Value> yielded;
    for (Value o : outputs)
      yielded.push_back(map.lookup(o));
    inner.create<YieldOp>(loc, yielded);
    for (auto [o, r] : llvm::zip(outputs, fused.getResults()))
      o.replaceAllUsesWith(r);
    for (Operation *op : llvm::reverse(ops))
      op->erase();
    return true;
  }

  /// Split-KV partials, their combination and the cast back.
  void fuseAttention(func::FuncOp f) {
    SmallVector<DecodeAttentionPartialOp> partials;
    f.walk([&](DecodeAttentionPartialOp p) { partials.push_back(p); });
    for (DecodeAttentionPartialOp p : partials) {
      SmallVector<Operation *> ops{p};
      if (!p.getPartial().hasOneUse())
        continue;
      Operation *combine = *p.getPartial().getUsers().begin();
      if (!isa<AttentionCombineOp>(combine))
        continue;
      ops.push_back(combine);
      if (combine->getResult(0).hasOneUse()) {
        Operation *cast = *combine->getResult(0).getUsers().begin();
        if (shortName(cast) == "onnx.cast")
          ops.push_back(cast);
      }
      outline(ops, "attention");
    }
  }


  /// Float elementwise operations (and views between them) where each feeds
  /// only the next: one kernel.
  static bool isElementwise(Operation *op) {
    static const llvm::StringSet<> kOps = {
        "onnx.add", "onnx.sub", "onnx.mul", "onnx.div", "onnx.neg", "onnx.exp", "onnx.tanh",
        "onnx.sigmoid", "onnx.sqrt", "onnx.pow", "onnx.erf", "onnx.cast", "onnx.where",
        "gelu", "silu", "relu", "swiglu"};
    return op->getNumResults() == 1 && kOps.contains(shortName(op)) &&
           isa<FloatType>(getElementTypeOrSelf(op->getResult(0).getType()));
  }

  void fuseElementwiseChains(func::FuncOp f) {
    SmallVector<Operation *> heads;
    for (Operation &op : f.getBody().front())
      if (isElementwise(&op))
        heads.push_back(&op);
    llvm::SmallPtrSet<Operation *, 16> used;
    for (Operation *head : heads) {
      if (used.contains(head) || !head->getBlock())
        continue;
      SmallVector<Operation *> chain{head};
      Operation *cur = head;
      while (cur->getResult(0).hasOneUse()) {
        Operation *next = *cur->getResult(0).getUsers().begin();
        if (next->getBlock() != head->getBlock() || !(isElementwise(next) || isView(next)))
          break;
        chain.push_back(next);
        cur = next;
      }
      while (!chain.empty() && isView(chain.back()))
        chain.pop_back();
      if (chain.size() < 2)
        continue;
      used.insert(chain.begin(), chain.end());
      outline(chain, "elementwise");
    }
  }

  /// A projection and the residual add that reads it.
  void fuseLinearResidual(func::FuncOp f) {
    SmallVector<Operation *> linears;
    f.walk([&](Operation *op) {
      if (isa<LinearOp, QuantizedLinearOp>(op))
        linears.push_back(op);
    });
    for (Operation *l : linears) {
      if (!l->getParentOfType<FusedOp>() && l->getResult(0).hasOneUse()) {
        Operation *user = *l->getResult(0).getUsers().begin();
        SmallVector<Operation *> ops{l};
        // Through views (the attention output's head merge comes before).
        if (shortName(user) == "onnx.add" && user->getParentOp() == l->getParentOp() &&
            !user->getOperand(0).getDefiningOp<ConstantOp>() &&
            !user->getOperand(1).getDefiningOp<ConstantOp>()) {
          ops.push_back(user);
          outline(ops, "linear_residual");
        }
      }
    }
  }

  /// A norm and what it feeds, up to attention, another norm or a residual,
  /// when that includes a linear layer.
  void fuseFromNorms(func::FuncOp f) {
    SmallVector<Operation *> norms;
    f.walk([&](Operation *op) {
      if (isa<RmsNormOp, LayerNormOp>(op) && !op->getParentOfType<FusedOp>())
        norms.push_back(op);
    });
    for (Operation *norm : norms) {
      SmallVector<Operation *> ops{norm};
      llvm::SmallPtrSet<Operation *, 16> seen{norm};
      bool cache = false, gated = false;
      for (size_t i = 0; i < ops.size(); ++i)
        for (Value r : ops[i]->getResults())
          for (Operation *user : r.getUsers()) {
            if (seen.contains(user) || user->getBlock() != norm->getBlock())
              continue;
            StringRef n = shortName(user);
            bool fusable = isa<LinearOp, QuantizedLinearOp, RopeOp, SwigluOp, GeluOp, SiluOp, ReluOp, CacheUpdateOp,
                                     QuantizedCacheUpdateOp>(user) ||
                           n == "onnx.slice" || n == "onnx.split" || n == "onnx.transpose" ||
                           n == "onnx.cast" ||
                           isView(user) ||
                           (n == "onnx.mul" && llvm::any_of(user->getOperands(), [&](Value v) {
                              return v.getDefiningOp() &&
                                     isa<GeluOp, SiluOp, ReluOp>(v.getDefiningOp());
                            }));
            if (!fusable)
              continue;
            // Every operand from inside, a constant, or a function input.
            bool inside = llvm::all_of(user->getOperands(), [&](Value v) {
              Operation *d = v.getDefiningOp();
              return !d || seen.contains(d) || isa<ConstantOp, NoneOp>(d) || isBookkeeping(d);
            });
            if (!inside)
              continue;
            cache |= isa<CacheUpdateOp, QuantizedCacheUpdateOp>(user);
            gated |= isa<SwigluOp, GeluOp, SiluOp, ReluOp>(user);
            seen.insert(user);
            ops.push_back(user);
          }
      // A norm of each head before a rope (Qwen 3's, Gemma 3's) feeds no
      // projection: it stays on its own, for the ropes to pair.
      if (llvm::none_of(ops, [](Operation *o) { return isa<LinearOp, QuantizedLinearOp>(o); }))
        continue;
      outline(ops, cache ? "norm_qkv_rope_cache" : gated ? "norm_gated_mlp" : "norm_linear");
    }
  }
};

} // namespace
