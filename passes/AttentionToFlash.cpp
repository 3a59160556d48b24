//===- AttentionToFlash.cpp - flash forms of cached attention -------------===//
#include "passes/Passes.h"

#include "passes/GpuDecodeSplits.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

namespace mlir::llmc {
#define GEN_PASS_DEF_ATTENTIONTOFLASHPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

struct AttentionToFlashPass : mlir::llmc::impl::AttentionToFlashPassBase<AttentionToFlashPass> {
  using AttentionToFlashPassBase::AttentionToFlashPassBase;

  /// num-splits, or (0) the GPU's rule (GpuDecodeSplits.h) over the cache's
  /// rows (its static capacity, else one tile).
  int64_t splitsFor(CachedAttentionOp a, RankedTensorType q) {
    if (numSplits > 0)
      return numSplits;
    int64_t rows = ::llmc::kGpuDecodeTile;
    if (auto k = dyn_cast<RankedTensorType>(a.getKCache().getType()))
      if (k.getRank() == 4 && !k.isDynamicDim(2))
        rows = k.getDimSize(2);
    return ::llmc::gpuDecodeSplits(a.getNumKvHeads() * q.getDimSize(0), rows);
  }

  void runOnOperation() override {
    if (numSplits < 0 || blockQ <= 0 || blockK <= 0) {
      getOperation().emitError("llmc-attention-to-flash: num-splits must be >= 0 (0: enough "
                               "for a GPU), block-q and block-k positive");
      return signalPassFailure();
    }
    SmallVector<CachedAttentionOp> ops;
    getOperation().walk([&](CachedAttentionOp op) { ops.push_back(op); });
    for (CachedAttentionOp a : ops) {
      OpBuilder b(a);
      Location loc = a.getLoc();
      auto q = dyn_cast<RankedTensorType>(a.getQ().getType());
      if (!q || q.getRank() != 4 || q.isDynamicDim(1))
        continue; // a dynamic query length: not bucketed yet
      SmallVector<NamedAttribute> common{
          b.getNamedAttr("num_heads", a.getNumHeadsAttr()),
          b.getNamedAttr("num_kv_heads", a.getNumKvHeadsAttr()),
          b.getNamedAttr("window", a.getWindowAttr()),
          b.getNamedAttr("scale", a.getScaleAttr()),
          b.getNamedAttr("softcap", a.getSoftcapAttr())};
      // (An int8 cache's scales follow, as kv_scales.)
      SmallVector<Value> operands(a->getOperands());
      Value out;
      if (q.getDimSize(1) == 1 && a.getCausal()) {
        SmallVector<NamedAttribute> attrs(common);
        attrs.push_back(b.getNamedAttr("num_splits", b.getI64IntegerAttr(splitsFor(a, q))));
        auto partial = b.create<DecodeAttentionPartialOp>(loc, operands, attrs);
        // (The sinks join at the merge: no split's partial result has them.)
        SmallVector<NamedAttribute> combineAttrs;
        if (auto sinks = a.getSinksAttr())
          combineAttrs.push_back(b.getNamedAttr("sinks", sinks));
        out = b.create<AttentionCombineOp>(loc, ValueRange{partial.getPartial(), partial.getLse()},
                                           combineAttrs)
                  .getResult();
        if (!q.getElementType().isF32()) {
          int64_t code = q.getElementType().isF16() ? 10 : q.getElementType().isBF16() ? 16 : 0;
          if (!code) {
            out.getDefiningOp()->erase();
            partial.erase();
            continue;
          }
          out = b.create<OnnxCastOp>(loc, ValueRange{out},
                                     ArrayRef<NamedAttribute>{
                                         b.getNamedAttr("to", b.getI64IntegerAttr(code)),
                                         b.getNamedAttr("saturate", b.getI64IntegerAttr(1)),
                                         b.getNamedAttr("round_mode", b.getStringAttr("up"))})
                    .getResult();
        }
      } else {
        SmallVector<NamedAttribute> attrs(common);
        attrs.push_back(b.getNamedAttr("causal", a.getCausalAttr()));
        attrs.push_back(b.getNamedAttr(
            "block_q", b.getI64IntegerAttr(std::min<int64_t>(blockQ, q.getDimSize(1)))));
        attrs.push_back(b.getNamedAttr("block_k", b.getI64IntegerAttr(blockK)));
        if (auto sinks = a.getSinksAttr())
          attrs.push_back(b.getNamedAttr("sinks", sinks));
        out = b.create<FlashAttentionOp>(loc, operands, attrs).getResult();
      }
      a.getResult().replaceAllUsesWith(out);
      a.erase();
    }
    if (failed(refineResultTypes(getOperation())))
      signalPassFailure();
  }
};

} // namespace
