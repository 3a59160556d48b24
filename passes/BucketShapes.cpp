//===- BucketShapes.cpp - static shape buckets for prefill and decode ----===//
//
// Clones the prefill/decode entry points of llmc-insert-kv-cache into one
// function per (batch, sequence) bucket with static argument types and
// re-infers the result types; llmc-canonicalize then folds the sizes.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

namespace mlir::llmc {
#define GEN_PASS_DEF_BUCKETSHAPESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

struct BucketShapesPass : mlir::llmc::impl::BucketShapesPassBase<BucketShapesPass> {
  using BucketShapesPassBase::BucketShapesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto prefill = module.lookupSymbol<func::FuncOp>("prefill");
    auto decode = module.lookupSymbol<func::FuncOp>("decode");
    if (!prefill || !decode) {
      module.emitError("llmc-bucket-shapes: run llmc-insert-kv-cache first (no prefill and "
                       "decode functions)");
      return signalPassFailure();
    }
    // The capacity: a cache argument's sequence size.
    int64_t capacity = -1;
    if (prefill.getNumArguments() > 2)
      if (MaybeShape c = getShape(prefill.getArgument(2).getType());
          c && c->size() == 4 && (*c)[2].isStatic())
        capacity = (*c)[2].size;
    if (capacity <= 0) {
      prefill.emitError("llmc-bucket-shapes: the caches have no static capacity");
      return signalPassFailure();
    }
    SmallVector<int64_t> batches(batch.begin(), batch.end());
    if (batches.empty())
      batches.push_back(1);
    SmallVector<int64_t> lengths(prefillBuckets.begin(), prefillBuckets.end());
    if (lengths.empty())
      for (int64_t s : {16, 64, 256, 1024})
        if (s <= capacity)
          lengths.push_back(s);
    if (lengths.empty())
      lengths.push_back(capacity);
    for (int64_t b : batches)
      if (b <= 0) {
        module.emitError("llmc-bucket-shapes: batch sizes must be positive, got ") << b;
        return signalPassFailure();
      }
    for (int64_t s : lengths)
      if (s <= 0 || s > capacity) {
        module.emitError("llmc-bucket-shapes: prefill bucket ")
            << s << " is outside 1 .. the cache capacity " << capacity;
        return signalPassFailure();
      }
    for (int64_t b : batches) {
      if (failed(specialise(decode, "decode_b" + std::to_string(b), b, 1)))
        return signalPassFailure();
      for (int64_t s : lengths)
        if (failed(specialise(prefill, "prefill_b" + std::to_string(b) + "_s" + std::to_string(s),
                              b, s)))
          return signalPassFailure();
    }
    prefill.erase();
    decode.erase();
  }

  /// A copy of `f` called `name` with tokens [b, s] and caches of batch b.
  LogicalResult specialise(func::FuncOp f, const std::string &name, int64_t b, int64_t s) {
    func::FuncOp g = f.clone();
    g.setSymName(name);
    getOperation().insert(Block::iterator(f), g);
    Block &body = g.getBody().front();
    for (BlockArgument arg : body.getArguments()) {
      MaybeShape shape = getShape(arg.getType());
      if (!shape)
        return g.emitError("llmc-bucket-shapes: unranked input");
      Shape fixed = *shape;
      if (arg.getArgNumber() == 0) { // tokens
        if (fixed.size() != 2)
          return g.emitError("llmc-bucket-shapes: tokens must be [batch, sequence]");
        fixed[0] = Dim::fixed(b);
        fixed[1] = Dim::fixed(s);
      } else if (fixed.size() == 4) { // a cache
        fixed[0] = Dim::fixed(b);
      }
      arg.setType(makeTensorType(fixed, getElementTypeOrSelf(arg.getType())));
    }
    g.setFunctionType(
        FunctionType::get(g.getContext(), body.getArgumentTypes(), g.getResultTypes()));
    return refineResultTypes(g);
  }
};

} // namespace
