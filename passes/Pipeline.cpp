//===- Pipeline.cpp - llmc-pipeline: the transformer passes in order ------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::llmc;

namespace {

struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<int64_t> maxSeq{*this, "max-seq",
                         llvm::cl::desc("Cache capacity and rope table length"),
                         llvm::cl::init(4096)};
  ListOption<int64_t> batch{*this, "batch", llvm::cl::desc("Batch sizes to compile")};
  ListOption<int64_t> prefillBuckets{*this, "prefill-buckets",
                                     llvm::cl::desc("Prompt lengths to compile")};
  Option<std::string> dtype{*this, "dtype",
                            llvm::cl::desc("Compute and weight type: f32, f16 or bf16"),
                            llvm::cl::init("f32")};
  Option<int64_t> quantBits{*this, "quant-bits",
                            llvm::cl::desc("Weight bits: 0 (float), 8 or 4"),
                            llvm::cl::init(0)};
  Option<int64_t> quantGroup{*this, "quant-group",
                             llvm::cl::desc("Values per scale (0: per output channel)"),
                             llvm::cl::init(32)};
  Option<bool> quantAsym{*this, "quant-asym", llvm::cl::desc("Zero points per group"),
                         llvm::cl::init(false)};
  Option<bool> quantInt8Acts{*this, "quant-int8-activations",
                             llvm::cl::desc("Integer dot products over int8 activations"),
                             llvm::cl::init(true)};
  ListOption<std::string> quantSkip{*this, "quant-skip",
                                    llvm::cl::desc("Layers kept in float (lm_head, names)")};
  Option<bool> quantEmbeddings{*this, "quant-embeddings",
                               llvm::cl::desc("Also quantize token embedding tables"),
                               llvm::cl::init(false)};
  Option<std::string> kvDtype{*this, "kv-dtype",
                              llvm::cl::desc("KV cache element type: the compute type "
                                             "(default) or int8"),
                              llvm::cl::init("")};
  Option<int64_t> decodeSplits{
      *this, "decode-splits",
      llvm::cl::desc("Key chunks of a decode step's attention (llmc-attention-to-flash's "
                     "num-splits; 0: enough for a GPU)"),
      llvm::cl::init(4)};
  Option<bool> untilQuantization{
      *this, "until-quantization",
      llvm::cl::desc("Stop where weight quantization runs (the float layers calibration "
                     "statistics are collected on)"),
      llvm::cl::init(false)};
  Option<std::string> quantCalibration{
      *this, "quant-calibration",
      llvm::cl::desc("Calibration statistics file: GPTQ instead of round to nearest")};
};

void buildPipeline(OpPassManager &pm, const PipelineOptions &o) {
  pm.addNestedPass<func::FuncOp>(createCanonicalizePass());
  RaiseTransformerPassOptions raise;
  raise.maxPositions = o.maxSeq;
  pm.addNestedPass<func::FuncOp>(createRaiseTransformerPass(raise));
  InsertKvCachePassOptions cache;
  cache.maxSeq = o.maxSeq;
  pm.addPass(createInsertKvCachePass(cache));
  if (!o.kvDtype.empty()) {
    QuantizeKvCachePassOptions kv;
    kv.dtype = o.kvDtype;
    pm.addPass(createQuantizeKvCachePass(kv));
  }
  BucketShapesPassOptions buckets;
  buckets.batch = o.batch;
  buckets.prefillBuckets = o.prefillBuckets;
  pm.addPass(createBucketShapesPass(buckets));
  CanonicalizePassOptions canonical;
  canonical.unitTransposes = true;
  canonical.symbolicValues = true;
  pm.addNestedPass<func::FuncOp>(createCanonicalizePass(canonical));
  if (o.untilQuantization)
    return;
  if (o.quantBits != 0) {
    QuantizeWeightsPassOptions quant;
    quant.bits = o.quantBits;
    quant.groupSize = o.quantGroup;
    quant.asymmetric = o.quantAsym;
    quant.int8Activations = o.quantInt8Acts;
    quant.skip = o.quantSkip;
    quant.calibration = o.quantCalibration;
    quant.embeddings = o.quantEmbeddings;
    pm.addPass(createQuantizeWeightsPass(quant));
  }
  ConvertDtypePassOptions convert;
  convert.dtype = o.dtype;
  pm.addNestedPass<func::FuncOp>(createConvertDtypePass(convert));
  AttentionToFlashPassOptions flash;
  flash.numSplits = o.decodeSplits;
  pm.addNestedPass<func::FuncOp>(createAttentionToFlashPass(flash));
  pm.addNestedPass<func::FuncOp>(createFusePass());
  pm.addNestedPass<func::FuncOp>(createPlanMemoryPass());
}

} // namespace

void mlir::llmc::registerLLMCPipeline() {
  static bool once = [] {
    PassPipelineRegistration<PipelineOptions>(
        "llmc-pipeline",
        "The transformer passes in order: canonicalize, raise, KV cache, buckets, "
        "canonicalize, weight quantization (when asked), dtype, flash attention, fusion, "
        "memory plan (--max-seq, --batch, --prefill-buckets, --dtype, --quant-*)",
        buildPipeline);
    return true;
  }();
  (void)once;
}
