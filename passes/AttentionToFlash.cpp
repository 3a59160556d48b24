//===- AttentionToFlash.cpp - flash forms of cached attention -------------===//
#include "passes/Passes.h"

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

  void runOnOperation() override {
    if (numSplits <= 0 || blockQ <= 0 || blockK <= 0) {
      getOperation().emitError("llmc-attention-to-flash: num-splits, block-q and block-k must "
                               "be positive");
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
        attrs.push_back(b.getNamedAttr("num_splits", b.getI64IntegerAttr(numSplits)));
        auto partial = b.create<DecodeAttentionPartialOp>(loc, operands, attrs);
        out = b.create<AttentionCombineOp>(loc, ValueRange{partial.getPartial(), partial.getLse()},
                                           ArrayRef<NamedAttribute>{})
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
