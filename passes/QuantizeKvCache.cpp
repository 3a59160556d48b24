//===- QuantizeKvCache.cpp - int8 KV caches with per-row scales -----------===//
//
// Turns llmc's float caches (cache.k.N, cache.v.N) into int8 caches with an
// f32 scale per (batch, head, position) beside them. See Passes.td for the
// contract.
//
//===----------------------------------------------------------------------===//
#include "passes/BuildHelpers.h"
#include "passes/Passes.h"

#include "dialects/LLM/IR/LLMOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::llmc {
#define GEN_PASS_DEF_QUANTIZEKVCACHEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

StringRef argName(func::FuncOp f, unsigned i) {
  auto n = f.getArgAttrOfType<StringAttr>(i, "llm.name");
  return n ? n.getValue() : StringRef();
}

struct QuantizeKvCachePass : mlir::llmc::impl::QuantizeKvCachePassBase<QuantizeKvCachePass> {
  using QuantizeKvCachePassBase::QuantizeKvCachePassBase;

  void runOnOperation() override {
    if (dtype != "int8") {
      getOperation().emitError("llmc-quantize-kv-cache: the cache type must be int8, not '")
          << dtype << "'";
      return signalPassFailure();
    }
    bool any = false;
    for (func::FuncOp f : llvm::make_early_inc_range(getOperation().getOps<func::FuncOp>())) {
      FailureOr<bool> done = rewrite(f);
      if (failed(done))
        return signalPassFailure();
      any |= *done;
    }
    // Asked for an int8 cache and none to make: say so rather than compile
    // a float one.
    if (!any) {
      getOperation().emitError(
          "llmc-quantize-kv-cache: no attention reads a cache llmc manages (the model keeps "
          "its own cache IO or its token history), so there is no KV cache to make int8");
      return signalPassFailure();
    }
  }

  /// The update of cache argument `arg` (its only reader besides shape
  /// reads; the caller found it), or an error naming another reader.
  static FailureOr<CacheUpdateOp> onlyUpdate(func::FuncOp f, BlockArgument arg) {
    CacheUpdateOp update;
    for (Operation *user : arg.getUsers()) {
      if (isa<OnnxShapeOp>(user)) // its shape only, which stays
        continue;
      auto u = dyn_cast<CacheUpdateOp>(user);
      if (!u || u.getCache() != arg || update)
        return user->emitError("llmc-quantize-kv-cache: cache '")
               << argName(f, arg.getArgNumber()) << "' is read by " << user->getName()
               << ", not only by its llm.cache_update (and shape reads)";
      update = u;
    }
    return update;
  }

  /// Whether `f` had caches to quantize (and did), or failure.
  FailureOr<bool> rewrite(func::FuncOp f) {
    SmallVector<CachedAttentionOp> attentions;
    f.walk([&](CachedAttentionOp a) {
      if (a.getKvScales().empty())
        attentions.push_back(a);
    });
    if (attentions.empty())
      return false;
    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    MLIRContext *ctx = f.getContext();
    OpBuilder b(ctx);
    Type i8 = IntegerType::get(ctx, 8), f32 = Float32Type::get(ctx);
    // Each cache argument once: (its new update's results).
    llvm::DenseMap<Value, std::pair<Value, Value>> quantized;
    SmallVector<std::pair<Value, std::string>> scaleResults;
    auto quantize = [&](CachedAttentionOp a,
                        Value cacheValue) -> FailureOr<std::pair<Value, Value>> {
      auto u = cacheValue.getDefiningOp<CacheUpdateOp>();
      auto arg = u ? dyn_cast<BlockArgument>(u.getCache()) : BlockArgument();
      if (!arg || arg.getOwner() != &body || !argName(f, arg.getArgNumber()).starts_with("cache."))
        return a.emitError("llmc-quantize-kv-cache: an attention's cache is not an "
                           "llm.cache_update of a cache argument");
      if (auto it = quantized.find(arg); it != quantized.end())
        return it->second;
      FailureOr<CacheUpdateOp> only = onlyUpdate(f, arg);
      if (failed(only))
        return failure();
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() != 4 || !isa<FloatType>(type.getElementType()))
        return f.emitError("llmc-quantize-kv-cache: cache '")
               << argName(f, arg.getArgNumber()) << "' is not a [B, H, M, D] float tensor";
      // The update's results: every use of the old one (the attention, the
      // return) reads the int8 cache.
      for (OpOperand &use : u.getResult().getUses())
        if (!isa<CachedAttentionOp, func::ReturnOp, OnnxShapeOp>(use.getOwner()))
          return use.getOwner()->emitError("llmc-quantize-kv-cache: the updated cache '")
                 << argName(f, arg.getArgNumber()) << "' is read by "
                 << use.getOwner()->getName();
      std::string name = (argName(f, arg.getArgNumber()) + ".scale").str();
      SmallVector<int64_t> scaleShape(type.getShape());
      scaleShape[3] = 1;
      arg.setType(RankedTensorType::get(type.getShape(), i8));
      unsigned idx = f.getNumArguments();
      (void)f.insertArgument(
          idx, RankedTensorType::get(scaleShape, f32),
          b.getDictionaryAttr({b.getNamedAttr("llm.name", b.getStringAttr(name)),
                               b.getNamedAttr("llm.keep_f32", b.getUnitAttr())}),
          f.getLoc());
      Value scales = f.getArgument(idx);
      b.setInsertionPoint(u);
      auto q = b.create<QuantizedCacheUpdateOp>(
          u.getLoc(), ValueRange{arg, scales, u.getUpdate(), u.getPos()},
          ArrayRef<NamedAttribute>{b.getNamedAttr("llm.keep_f32", b.getUnitAttr())});
      u.getResult().replaceAllUsesWith(q.getOutput());
      u.erase();
      scaleResults.push_back({q.getOutputScales(), name});
      return quantized[arg] = {q.getOutput(), q.getOutputScales()};
    };
    for (CachedAttentionOp a : attentions) {
      auto k = quantize(a, a.getKCache());
      if (failed(k))
        return failure();
      auto v = quantize(a, a.getVCache());
      if (failed(v))
        return failure();
      b.setInsertionPoint(a);
      auto n = b.create<CachedAttentionOp>(
          a.getLoc(), a.getResult().getType(),
          ValueRange{a.getQ(), k->first, v->first, a.getPos(), k->second, v->second},
          a->getAttrs());
      a.getResult().replaceAllUsesWith(n.getResult());
      a.erase();
    }
    // The scale caches after the other results, named like their arguments.
    SmallVector<Value> results(ret.getOperands());
    SmallVector<Attribute> resultAttrs;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      resultAttrs.push_back(f.getResultAttrDict(i) ? Attribute(f.getResultAttrDict(i))
                                                   : b.getDictionaryAttr({}));
    for (auto &[v, name] : scaleResults) {
      results.push_back(v);
      resultAttrs.push_back(
          b.getDictionaryAttr(b.getNamedAttr("llm.name", b.getStringAttr(name))));
    }
    b.setInsertionPoint(ret);
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    f.setFunctionType(FunctionType::get(ctx, body.getArgumentTypes(), ValueRange(results).getTypes()));
    f.setAllResultAttrs(resultAttrs);
    return true;
  }
};

} // namespace
