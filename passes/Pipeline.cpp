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
};

void buildPipeline(OpPassManager &pm, const PipelineOptions &o) {
  pm.addNestedPass<func::FuncOp>(createCanonicalizePass());
  RaiseTransformerPassOptions raise;
  raise.maxPositions = o.maxSeq;
  pm.addNestedPass<func::FuncOp>(createRaiseTransformerPass(raise));
  InsertKvCachePassOptions cache;
  cache.maxSeq = o.maxSeq;
  pm.addPass(createInsertKvCachePass(cache));
  BucketShapesPassOptions buckets;
  buckets.batch = o.batch;
  buckets.prefillBuckets = o.prefillBuckets;
  pm.addPass(createBucketShapesPass(buckets));
  pm.addNestedPass<func::FuncOp>(createCanonicalizePass());
  ConvertDtypePassOptions convert;
  convert.dtype = o.dtype;
  pm.addNestedPass<func::FuncOp>(createConvertDtypePass(convert));
  pm.addNestedPass<func::FuncOp>(createAttentionToFlashPass());
  pm.addNestedPass<func::FuncOp>(createFusePass());
  pm.addNestedPass<func::FuncOp>(createPlanMemoryPass());
}

} // namespace

void mlir::llmc::registerLLMCPipeline() {
  static bool once = [] {
    PassPipelineRegistration<PipelineOptions>(
        "llmc-pipeline",
        "The transformer passes in order: canonicalize, raise, KV cache, buckets, "
        "canonicalize, dtype, flash attention, fusion, memory plan (--max-seq, --batch, "
        "--prefill-buckets, --dtype)",
        buildPipeline);
    return true;
  }();
  (void)once;
}
