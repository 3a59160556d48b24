//===- PlanMemory.cpp - a static arena per entry point ---------------------===//
//
// Liveness-based placement of every activation of a function in one arena,
// with exact byte counts for weights, KV cache and activations; see
// Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/BuildHelpers.h"
#include "passes/Passes.h"
#include "passes/ElementwiseRuns.h"
#include "passes/StorageFacts.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <functional>

namespace mlir::llmc {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

constexpr int64_t kAlign = 64;

int64_t alignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

struct PlanMemoryPass : mlir::llmc::impl::PlanMemoryPassBase<PlanMemoryPass> {
  void runOnOperation() override {
    func::FuncOp f = getOperation();
    Block &body = f.getBody().front();
    // The cache capacity and, for a prefill bucket, the prompt length.
    int64_t capacity = 0, promptLength = 0;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      auto name = f.getArgAttrOfType<StringAttr>(i, "llm.name");
      auto t = dyn_cast<RankedTensorType>(f.getArgument(i).getType());
      if (!name || !t)
        continue;
      if (name.getValue().starts_with("cache.") && t.getRank() == 4 && !t.isDynamicDim(2))
        capacity = std::max(capacity, t.getDimSize(2));
      if (name.getValue() == "tokens" && t.getRank() == 2 && !t.isDynamicDim(1))
        promptLength = t.getDimSize(1);
    }
    int64_t bound = arenaBound(f);
    bool bounded = false;

    // Buffers: each value's root (a view's source, an in-place update's
    // cache) and its interval.
    llvm::DenseMap<Value, Value> root;
    llvm::DenseMap<Operation *, int64_t> index;
    int64_t weights = 0, kvCache = 0, position = 0;
    for (BlockArgument a : body.getArguments()) {
      auto name = f.getArgAttrOfType<StringAttr>(a.getArgNumber(), "llm.name");
      if (name && name.getValue().starts_with("cache.")) {
        int64_t b = arenaBytesOf(a.getType(), bound, &bounded);
        kvCache += std::max<int64_t>(b, 0);
      }
      root[a] = a;
    }
    struct Buffer {
      Value value;
      int64_t bytes, first, last, offset = -1;
    };
    SmallVector<Buffer> buffers;
    llvm::DenseMap<Value, size_t> bufferOf;
    // Positions in the order the code runs: a fused region's operations
    // just before the region itself (the CPU code runs them in place; their
    // values need memory as any other).
    std::function<LogicalResult(Block &)> place = [&](Block &block) -> LogicalResult {
      for (Operation &op : block) {
        if (auto fused = dyn_cast<FusedOp>(op)) {
          Block &inner = fused.getBody().front();
          for (BlockArgument a : inner.getArguments())
            root[a] = root.lookup(fused->getOperand(a.getArgNumber()));
          if (failed(place(inner)))
            return failure();
          index[&op] = position++;
          // A region's result is the value its yield names (a cache written
          // inside: the cache, in place).
          auto yield = cast<YieldOp>(inner.getTerminator());
          for (auto [r, y] : llvm::zip(fused->getResults(), yield.getValues()))
            root[r] = root.lookup(y);
          continue;
        }
        index[&op] = position++;
        if (auto c = dyn_cast<ConstantOp>(op)) {
          weights += std::max<int64_t>(arenaBytesOf(c.getType(), bound, &bounded), 0);
          root[c.getResult()] = c.getResult();
          continue;
        }
        for (Value r : op.getResults()) {
          if (isNone(r) || !isa<RankedTensorType>(r.getType())) {
            root[r] = r;
            continue;
          }
          if (isStorageView(&op) || isView(&op) || isa<CacheUpdateOp>(op) || // in place
              isTransposeReadInPlace(&op) || // its product reads the input
              isa<AssertEqualOp>(op)) { // passes its value through
            root[r] = root.lookup(op.getOperand(0));
            continue;
          }
          if (isa<QuantizedCacheUpdateOp>(op)) { // both in place: cache, scales
            root[r] = root.lookup(op.getOperand(cast<OpResult>(r).getResultNumber()));
            continue;
          }
          // A residual add the code folds into a linear layer: the layer's
          // buffer.
          if (shortName(&op) == "onnx.add") {
            Operation *linear = nullptr;
            for (Value o : op.getOperands())
              if (Operation *d = o.getDefiningOp(); d && foldedResidualAdd(d) == &op)
                linear = d;
            if (linear) {
              root[r] = root.lookup(linear->getResult(0));
              continue;
            }
          }
          int64_t b = arenaBytesOf(r.getType(), bound, &bounded);
          if (b < 0) {
            op.emitError("llmc-plan-memory: cannot size ") << r.getType();
            return failure();
          }
          // Scores become a materialised matrix only to be normalised: a
          // softmax over [.., S, keys] buffers is the sign of one.
          auto t = cast<RankedTensorType>(r.getType());
          bool normalises = op.getName().getStringRef() == "llm.onnx.softmax" ||
                            op.getName().getStringRef() == "llm.onnx.log_softmax";
          if (normalises && promptLength > 1 && t.getRank() >= 2 &&
              t.getDimSize(t.getRank() - 2) == promptLength &&
              (t.getDimSize(t.getRank() - 1) == promptLength ||
               t.getDimSize(t.getRank() - 1) == capacity) &&
              t.getDimSize(t.getRank() - 1) > 1) {
            op.emitError("llmc-plan-memory: a ")
                << t << " buffer (prompt length " << promptLength
                << " by keys) remains: an attention score matrix must not be materialised";
            return failure();
          }
          root[r] = r;
          bufferOf[r] = buffers.size();
          buffers.push_back({r, b, index[&op], index[&op]});
        }
      }
      return success();
    };
    if (failed(place(body)))
      return signalPassFailure();
    // Lifetimes: through every use of a value or of a view of it; an
    // operand of an element-wise run's operation through the run's last
    // operation, which computes it (ElementwiseRuns.h).
    int64_t end = position;
    f.walk([&](Operation *op) {
      for (Value o : op->getOperands()) {
        Value r = root.lookup(o);
        auto it = bufferOf.find(r);
        if (it == bufferOf.end())
          continue;
        int64_t at = isa<func::ReturnOp>(op) ? end : index.lookup(runEnd(op));
        buffers[it->second].last = std::max(buffers[it->second].last, at);
      }
    });
    // Largest first, lowest free aligned offset over the interval.
    SmallVector<size_t> order;
    for (size_t i = 0; i < buffers.size(); ++i)
      order.push_back(i);
    llvm::stable_sort(order, [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
    SmallVector<size_t> placed;
    int64_t arena = 0, total = 0;
    for (size_t i : order) {
      Buffer &buf = buffers[i];
      SmallVector<std::pair<int64_t, int64_t>> taken; // [offset, end) overlapping in time
      for (size_t j : placed) {
        const Buffer &o = buffers[j];
        if (o.first <= buf.last && buf.first <= o.last)
          taken.push_back({o.offset, o.offset + alignUp(o.bytes)});
      }
      llvm::sort(taken);
      int64_t offset = 0;
      for (auto [s, e] : taken) {
        if (offset + alignUp(buf.bytes) <= s)
          break;
        offset = std::max(offset, e);
      }
      buf.offset = offset;
      arena = std::max(arena, offset + alignUp(buf.bytes));
      total += buf.bytes;
      placed.push_back(i);
    }
    // Record it: the offset of each result with a buffer of its own (-1
    // for the others).
    Builder b(f.getContext());
    f.walk([&](Operation *op) {
      if (op->getNumResults() == 0 || isa<ConstantOp>(op))
        return;
      SmallVector<int64_t> offsets;
      bool any = false;
      for (Value r : op->getResults()) {
        auto it = bufferOf.find(r);
        offsets.push_back(it == bufferOf.end() ? -1 : buffers[it->second].offset);
        any |= it != bufferOf.end();
      }
      if (any)
        op->setAttr("llm.arena_offsets", b.getDenseI64ArrayAttr(offsets));
    });
    f->setAttr("llm.memory_plan",
               b.getDictionaryAttr({b.getNamedAttr("activations", b.getI64IntegerAttr(total)),
                                    b.getNamedAttr("arena", b.getI64IntegerAttr(arena)),
                                    b.getNamedAttr("bounded", b.getBoolAttr(bounded)),
                                    b.getNamedAttr("kv_cache", b.getI64IntegerAttr(kvCache)),
                                    b.getNamedAttr("weights", b.getI64IntegerAttr(weights))}));
  }
};

} // namespace
