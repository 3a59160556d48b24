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

/// Blocks a GPU's decode attention should run to keep it busy: two for each
/// of an H100's or H200's 132 multiprocessors (a block per kv head, split
/// and sequence).
constexpr int64_t kGpuDecodeBlocks = 264;
/// The CUDA kernel's tile of keys: no split is given fewer.
constexpr int64_t kGpuDecodeTile = 32;
/// Nor more than this many tiles of a full cache: a block walks its split's
/// tiles one after another, so with many sequences (which alone make
/// kGpuDecodeBlocks) long splits left the GPU waiting on a few long chains:
/// at batch 8 and context 4096 a 1B Llama's 5 splits of 26 tiles read the
/// cache at about 1 TB/s on an H200.
constexpr int64_t kGpuDecodeMaxTiles = 8;
/// Nor more splits than this (each costs the partial results of its block,
/// B * splits * Hq * Dv floats, and a turn of the merge): a 128k cache
/// would otherwise ask for 512.
constexpr int64_t kGpuDecodeMaxSplits = 64;

struct AttentionToFlashPass : mlir::llmc::impl::AttentionToFlashPassBase<AttentionToFlashPass> {
  using AttentionToFlashPassBase::AttentionToFlashPassBase;

  /// num-splits, or (0) enough splits for kGpuDecodeBlocks blocks and for
  /// at most kGpuDecodeMaxTiles tiles each over the whole cache, at most one
  /// per kGpuDecodeTile cache rows and kGpuDecodeMaxSplits in all. At
  /// context 4096 a 1B Llama (8 kv heads, batch 1) then reads its cache
  /// with 33 blocks per kv head rather than 4 (which ran at 65 GB/s on an
  /// H200), and at batch 8 with 17 rather than 5. (The kernel counts the
  /// splits with keys on the device: a short context leaves the rest idle.)
  int64_t splitsFor(CachedAttentionOp a, RankedTensorType q) {
    if (numSplits > 0)
      return numSplits;
    int64_t rows = kGpuDecodeTile;
    if (auto k = dyn_cast<RankedTensorType>(a.getKCache().getType()))
      if (k.getRank() == 4 && !k.isDynamicDim(2))
        rows = k.getDimSize(2);
    int64_t streams = std::max<int64_t>(1, a.getNumKvHeads() * q.getDimSize(0));
    int64_t want = std::max((kGpuDecodeBlocks + streams - 1) / streams,
                            (rows + kGpuDecodeMaxTiles * kGpuDecodeTile - 1) /
                                (kGpuDecodeMaxTiles * kGpuDecodeTile));
    return std::clamp<int64_t>(want, 1,
                               std::min(kGpuDecodeMaxSplits,
                                        (rows + kGpuDecodeTile - 1) / kGpuDecodeTile));
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
