//===- Templates.cpp - Operations run by the kernel templates ---------------===//
//
// emitOp: what each operation becomes. The heavy ones call the templates of
// runtime/src/model/cuda (gemv / gemm with bias and residual epilogues, RMS
// and layer norm, rope, embedding, cache writes, decode and flash
// attention); the rest go to GeneratedKernels.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CUDA/EmitCudaInternal.h"

#include "compiler/Codegen/CUDA/EmitCuda.h"
#include "compiler/Executor/Error.h"
#include "dialects/LLM/IR/ShapeInference.h"
#include "passes/BuildHelpers.h"
#include "passes/KernelBridge.h"
#include "runtime/src/model/cuda/Gemv.h"
#include "runtime/src/model/cuda/QuantGemv.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::codegen;
using namespace mlir::llmc::cudagen;

llvm::Error CudaEmitter::placeConstant(ConstantOp c) {
  auto attr = dyn_cast<ElementsAttr>(c.getValue());
  if (!attr)
    return makeError(nodeName(c) + ": a constant that is not a tensor");
  auto it = constantOffsets.find(attr);
  int64_t offset;
  if (it != constantOffsets.end()) {
    offset = it->second;
  } else {
    auto t = constantTensor(attr);
    if (!t)
      return t.takeError();
    offset = int64_t(weightsWriter.store(
        llvm::StringRef(static_cast<const char *>(t->raw()), t->bytes()), nodeName(c)));
    constantOffsets[attr] = offset;
  }
  Ref r;
  r.kind = Ref::Weight;
  r.offset = offset;
  refs[c.getResult()] = r;
  return llvm::Error::success();
}

/// A device pointer to the f32 `sinks` of an attention operation (stored
/// with the weights, once for each distinct set), or "nullptr".
std::string CudaEmitter::sinksPtr(Operation *op) {
  auto sinks = op->getAttrOfType<DenseF32ArrayAttr>("sinks");
  if (!sinks)
    return "nullptr";
  auto it = constantOffsets.find(sinks);
  int64_t offset;
  if (it != constantOffsets.end()) {
    offset = it->second;
  } else {
    ArrayRef<float> v = sinks.asArrayRef();
    offset = int64_t(weightsWriter.store(
        llvm::StringRef(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float)),
        nodeName(op) + " sinks"));
    constantOffsets[sinks] = offset;
  }
  return llvm::formatv("m.weight<float>({0})", offset).str();
}

llvm::Expected<CudaEmitter::GatherOut> CudaEmitter::gatherOut(Operation *gather) {
  Value y = gather->getResult(0);
  Operation *mul = embeddingScales.lookup(gather);
  if (!mul) {
    define(y);
    return GatherOut{y, ""};
  }
  Value scale = mul->getOperand(0) == y ? mul->getOperand(1) : mul->getOperand(0);
  if (!known(scale))
    if (llvm::Error e = placeConstant(scale.getDefiningOp<ConstantOp>()))
      return std::move(e);
  define(mul->getResult(0));
  return GatherOut{mul->getResult(0), ", " + ptr(scale)};
}

DecodeAttentionPartialOp CudaEmitter::decodeAttentionOf(FusedOp fused, Value &result) {
  if (fused.getKind() != "attention")
    return {};
  Block &block = fused.getRegion().front();
  auto ops = block.without_terminator();
  auto partial = ops.empty() ? DecodeAttentionPartialOp()
                             : dyn_cast<DecodeAttentionPartialOp>(&*ops.begin());
  if (!partial || std::next(ops.begin()) == ops.end())
    return {};
  auto combine = dyn_cast<AttentionCombineOp>(&*std::next(ops.begin()));
  if (!combine || combine->getOperand(0) != partial->getResult(0) ||
      combine->getOperand(1) != partial->getResult(1))
    return {};
  Operation *castOp = std::next(ops.begin(), 2) != ops.end() ? &*std::next(ops.begin(), 2) : nullptr;
  if (castOp && (shortName(castOp) != "onnx.cast" || castOp->getOperand(0) != combine.getResult() ||
                 std::next(ops.begin(), 3) != ops.end()))
    return {};
  result = castOp ? Value(castOp->getResult(0)) : Value(combine.getResult());
  auto yield = cast<YieldOp>(block.getTerminator());
  if (yield->getNumOperands() != 1 || yield->getOperand(0) != result || fused->getNumResults() != 1)
    return {};
  return partial;
}

bool CudaEmitter::emitDecodeAttention(FusedOp fused, CpuModel::Entry &stats, llvm::Error &err) {
  Value result;
  DecodeAttentionPartialOp partial = decodeAttentionOf(fused, result);
  if (!partial)
    return false;
  SmallVector<Value> args;
  for (Value a : partial->getOperands())
    args.push_back(outside(a));
  Value q = args[0], kc = args[1], vc = args[2], pos = args[3];
  bool int8 = args.size() == 6; // an int8 cache's scales follow
  // The ropes and cache writes folded in (ropeIntoAttention): q is a view
  // of the roped queries, which have no storage; the kernel reads them
  // before their rope.
  auto ropes = attentionRopes.find(fused);
  bool roped = ropes != attentionRopes.end();
  for (Value v : args)
    if (!known(v) && !(roped && v == q)) {
      err = makeError(nodeName(partial) + ": an operand has no value");
      return true;
    }
  auto qs = shapeOf(q), ks = shapeOf(kc), vs = shapeOf(vc);
  std::string t = cxxType(q.getType()), k = cxxType(kc.getType());
  if (int8 ? k != "int8_t" : k != t) {
    unsupported(partial, "query and cache types differ");
    return true;
  }
  int64_t splits = partial.getNumSplits(), b = qs[0], hq = partial.getNumHeads(),
          hkv = partial.getNumKvHeads();
  int64_t d = ks[3], dv = vs[3];
  if ((d * elemBytes(kc.getType())) % 16 || (dv * elemBytes(kc.getType())) % 16) {
    unsupported(partial, "head size not a whole number of 16-byte vectors");
    return true;
  }
  // partial [B, splits, Hq, Dv] and lse [B, splits, Hq] f32 in the arena.
  Ref pr = define(partial->getResult(0));
  Ref lr = define(partial->getResult(1));
  (void)pr, (void)lr;
  Ref out = define(fused->getResult(0));
  (void)out;
  std::string y = cxxType(result.getType());
  // The kernel reads *pos before its programmatic wait unless told to wait
  // first: right for the step's positions (copied in before the step's
  // first kernel) and constants, not for a position a kernel computes.
  Ref::Kind posKind = refs.lookup(pos).kind;
  bool waitFirst = !(posKind == Ref::Pos || posKind == Ref::Weight);
  std::string posAfterWait = waitFirst ? ", 0, true" : "";
  // The sinks (the combine's), after the two defaulted arguments.
  std::string sinks = sinksPtr(*partial->getResult(0).getUsers().begin());
  if (sinks != "nullptr")
    posAfterWait = llvm::formatv(", 0, {0}, {1}", waitFirst ? "true" : "false", sinks).str();
  std::string common =
      llvm::formatv("{0}, {1}, {2}, {3}, m.counters, {4}, {5}, {6}, a.capacity, {7}, {8}, "
                    "{9:e9}f, {10:e9}f",
                    ptr(pos), ptr(partial->getResult(0)), ptr(partial->getResult(1)),
                    ptr(fused->getResult(0)), b, hq, hkv, splits, partial.getWindow(),
                    partial.getScale().convertToFloat(), partial.getSoftcap().convertToFloat())
          .str();
  if (roped) {
    RopeOp kr = ropes->second.keys;
    CacheSource values = cacheUpdateSource(ropes->second.valuesWrite);
    // The heads' norms in the same launch (headNormsIntoAttention): the
    // kernel reads the norms' inputs, and their weights.
    RmsNormOp qn = ropes->second.queriesNorm, kn = ropes->second.keysNorm;
    Value xq = qn ? qn.getX() : ropes->second.queries.getX(), xk = kn ? kn.getX() : kr.getX();
    if (qn)
      posAfterWait = llvm::formatv(", 0, {0}, {1}, {2}", waitFirst ? "true" : "false", sinks,
                                   headNormsArg(t, qn, kn))
                         .str();
    statement(llvm::formatv("decodeAttentionRope<{0}, {1}, {2}, {3}, {4}{22}>({5}, {6}, {7}, {8}, "
                            "{9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, "
                            "{20}, m.error, a.stream{21})",
                            t, k, d, dv, y, ptr(xq), ptr(xk),
                            ptr(values.value), values.sb, values.sh, ptr(kc), ptr(vc),
                            int8 ? ptr(args[4]) + ", " + ptr(args[5])
                                 : std::string("nullptr, nullptr"),
                            ptr(kr.getCos()), ptr(kr.getSin()), ptr(kr.getPositions()),
                            ropePositionsPerBatch(kr) ? "true" : "false", kr.getRotaryDim(),
                            shapeOf(kr.getCos())[0], kr.getInterleaved() ? "true" : "false", common,
                            posAfterWait, qn ? ", true" : "")
                  .str(),
              std::string(qn ? "rms_norm x 2 + " : "") +
                  (int8 ? "rope x 2 + quantized_cache_update x 2" : "rope x 2 + cache_update x 2") +
                  " + fused \"attention\" (decode, split-KV) -> " + describeType(result.getType()));
  } else {
    statement(llvm::formatv("decodeAttention<{0}, {1}, {2}, {3}, {4}>({5}, {6}, {7}, {8}, {9}, "
                            "a.stream{10})",
                            t, k, d, dv, y, ptr(q), ptr(kc), ptr(vc),
                            int8 ? ptr(args[4]) + ", " + ptr(args[5])
                                 : std::string("nullptr, nullptr"),
                            common, posAfterWait)
                  .str(),
              "fused \"attention\" (decode, split-KV) -> " + describeType(result.getType()));
  }
  ++stats.fusedRegions; // (one launch: the last block of each group combines)
  return true;
}

llvm::Error CudaEmitter::emitOp(Operation *op, CpuModel::Entry &stats) {
  StringRef name = shortName(op);
  if (auto c = dyn_cast<ConstantOp>(op))
    return placeConstant(c);
  if (isa<NoneOp>(op))
    return llvm::Error::success();
  if (chains.count(op)) // the last of a run of element-wise operations
    return emitPointwise(op, stats);
  // An operation whose results nothing reads (and that writes nothing) is
  // dead: the fallback's mask arithmetic the raised attention replaced.
  if (op->getNumResults() && llvm::all_of(op->getResults(), [](Value r) { return r.use_empty(); }) &&
      !isa<CacheUpdateOp, QuantizedCacheUpdateOp, AssertEqualOp>(op))
    return llvm::Error::success();
  // An operand that has no value comes from an operation already reported:
  // its results have none either, and nothing more is said. (An attention
  // that ropes its queries reads them before their rope, and its cache
  // writes launch nothing: ropeIntoAttention; a view of those queries has
  // no storage either.) With nothing reported, it is a bug here: an error,
  // not an entry that stops short.
  for (Value v : op->getOperands())
    if (!known(v) && !foldedInputs.count(v) &&
        !(v.getDefiningOp() && isTransposeReadInPlace(v.getDefiningOp())) &&
        !attentionRopes.count(op) &&
        !intoAttention.count(op) &&
        !(transposedUpdates.lookup(op) &&
                       ((isa<CacheUpdateOp>(op) && v == cast<CacheUpdateOp>(op).getUpdate()) ||
                        (isa<QuantizedCacheUpdateOp>(op) &&
                         v == cast<QuantizedCacheUpdateOp>(op).getUpdate())))) {
      if (unstored.contains(v)) {
        for (Value r : op->getResults())
          unstored.insert(r);
        return llvm::Error::success();
      }
      if (missing.empty())
        return makeError(nodeName(op) + " (" + name.str() +
                         "): an operand has no value and no operation before it was refused "
                         "(a bug in llmc's CUDA code generator)");
      return llvm::Error::success();
    }
  for (Type t : op->getResultTypes())
    if (!isStatic(t)) {
      unsupported(op, "a result of run-time shape");
      return llvm::Error::success();
    }
  // Views: the same storage.
  if (isView(op) || name == "onnx.identity") {
    if (!refs.count(op->getOperand(0))) // (made by a host step: uploaded first)
      (void)ptr(op->getOperand(0));
    Ref same = refs[op->getOperand(0)]; // a copy: refs[...] may grow the map
    refs[op->getResult(0)] = same;
    ++stats.views;
    return llvm::Error::success();
  }
  if (auto fused = dyn_cast<FusedOp>(op)) {
    if (fused.getKind() == "attention") {
      llvm::Error err = llvm::Error::success();
      if (emitDecodeAttention(fused, stats, err))
        return err;
    }
    Block &block = fused.getRegion().front();
    for (auto [arg, operand] : llvm::zip(block.getArguments(), fused->getOperands()))
      if (refs.count(operand)) {
        Ref same = refs[operand]; // a copy: refs[arg] may grow the map
        refs[arg] = same;
      } else if (Operation *f = foldedInputs.lookup(operand)) {
        foldedInputs[arg] = f; // applied by the GEMVs that read arg
      } else if (hostNames.count(operand)) {
        std::string host = hostNames.lookup(operand); // (made by a host step)
        hostNames[arg] = host;
      }
    if (llvm::Error e = emitBlock(block, stats))
      return e;
    auto yield = cast<YieldOp>(block.getTerminator());
    for (auto [r, v] : llvm::zip(fused->getResults(), yield->getOperands()))
      if (refs.count(v)) {
        Ref same = refs[v]; // a copy: refs[r] may grow the map
        refs[r] = same;
      } else if (Operation *f = foldedInputs.lookup(v)) {
        foldedInputs[r] = f; // applied by the GEMVs that read r
      } else if (unstored.contains(v)) {
        unstored.insert(r);
      } else if (hostNames.count(v)) {
        std::string host = hostNames.lookup(v); // (made by a host step)
        hostNames[r] = host;
      }
    ++stats.fusedRegions;
    return llvm::Error::success();
  }
  if (name == "onnx.slice" || name == "onnx.transpose" || name == "onnx.split" ||
      name == "onnx.concat")
    return emitCopy(op, stats);
  if (isa<SwigluOp>(op) && foldsIntoGemv(op)) {
    foldedInputs[op->getResult(0)] = op; // (no storage, no launch of its own)
    return llvm::Error::success();
  }
  if (!pointwiseExpr(op).empty())
    return emitPointwise(op, stats);
  if (name == "onnx.gather")
    return emitGather(op, stats);
  if (name == "onnx.matmul")
    return emitMatmul(op, stats);
  if (name == "onnx.softmax" || name == "onnx.log_softmax")
    return emitSoftmax(op, stats);
  if (name == "onnx.tensor_scatter")
    return emitTensorScatter(op, stats);
  if (name == "onnx.range")
    return emitRange(op, stats);
  if (auto check = dyn_cast<AssertEqualOp>(op))
    return emitAssert(check, stats);
  if (auto e = dyn_cast<EmbeddingOp>(op)) {
    Value table = e.getTable(), ids = e.getIds(), y = e.getResult();
    if (!(getElementTypeOrSelf(ids.getType()).isInteger(64) ||
          getElementTypeOrSelf(ids.getType()).isInteger(32)) ||
        cxxType(table.getType()).empty()) {
      unsupported(op, "ids must be i64 or i32");
      return llvm::Error::success();
    }
    llvm::Expected<GatherOut> out = gatherOut(op);
    if (!out)
      return out.takeError();
    auto ts = shapeOf(table);
    statement(llvm::formatv("embedding<{0}>({1}, {2}, {3}, {4}, {5}, {6}, m.error, a.stream{7})",
                            cxxType(table.getType()), ptr(table), ptr(ids), ptr(out->value),
                            numel(ids), ts[0], ts[1], out->scaleArg)
                  .str(),
              std::string(out->scaleArg.empty() ? "embedding" : "embedding + onnx.mul") + " -> " +
                  describeType(out->value.getType()));
    ++stats.kernelCalls;
    return llvm::Error::success();
  }
  if (auto e = dyn_cast<QuantizedEmbeddingOp>(op)) {
    Value q = e.getTable(), scales = e.getScales(), zeros = e.getZeroPoints(), ids = e.getIds(),
          y = e.getResult();
    int64_t bits = e.getBits();
    if (!(getElementTypeOrSelf(ids.getType()).isInteger(64) ||
          getElementTypeOrSelf(ids.getType()).isInteger(32)) ||
        (bits != 4 && bits != 8) || !isFloatType(scales.getType())) {
      unsupported(op, "ids must be i64 or i32, bits 4 or 8");
      return llvm::Error::success();
    }
    bool hasZeros = zeros && !isNone(zeros);
    recordQuantizedLayer(op, model, recordedQuantized);
    llvm::Expected<GatherOut> out = gatherOut(op);
    if (!out)
      return out.takeError();
    auto ss = shapeOf(scales);
    statement(llvm::formatv("quantEmbedding<{0}, {1}, {2}>({3}, {4}, {5}, {6}, {7}, {8}, {9}, "
                            "{10}, {11}, m.error, a.stream{12})",
                            cxxType(scales.getType()), cxxType(y.getType()), bits, ptr(q),
                            ptr(scales), hasZeros ? ptr(zeros) : "nullptr", ptr(ids),
                            ptr(out->value), numel(ids), ss[0], e.getGroupSize(), ss[1],
                            out->scaleArg)
                  .str(),
              std::string(out->scaleArg.empty() ? "quantized_embedding"
                                                : "quantized_embedding + onnx.mul") +
                  " -> " + describeType(out->value.getType()));
    ++stats.kernelCalls;
    return llvm::Error::success();
  }
  if (auto n = dyn_cast<RmsNormOp>(op)) {
    Value x = n.getX(), y = n.getResult();
    int64_t h = shapeOf(x).back();
    if (foldsIntoGemv(op)) {
      foldedInputs[y] = op; // (no storage, no launch of its own)
      return llvm::Error::success();
    }
    // Two norms in one launch (Qwen 3's and Gemma 3's of the query and the
    // key heads): the first was deferred to the second.
    if (auto first = dyn_cast_or_null<RmsNormOp>(pairs.lookup(op))) {
      define(first.getResult());
      define(y);
      int64_t h1 = shapeOf(first.getX()).back();
      statement(llvm::formatv("rmsNormPair<{0}, {1}, {2}>({3}, {4}, {5}, {6}, {7:e9}f, {8:e9}f, "
                              "{9}, {10}, {11}, {12}, {13:e9}f, {14:e9}f, {15}, a.stream)",
                              cxxType(x.getType()), cxxType(n.getWeight().getType()),
                              cxxType(y.getType()), ptr(first.getX()), ptr(first.getWeight()),
                              ptr(first.getResult()), numel(first.getX()) / h1,
                              first.getEpsilon().convertToFloat(),
                              first.getWeightOffset().convertToFloat(), ptr(x), ptr(n.getWeight()),
                              ptr(y), numel(x) / h, n.getEpsilon().convertToFloat(),
                              n.getWeightOffset().convertToFloat(), h)
                    .str(),
                "rms_norm x 2 -> " + describeType(first.getResult().getType()) + ", " +
                    describeType(y.getType()));
      ++stats.kernelCalls;
      return llvm::Error::success();
    }
    Value after = normAddedAfter(op);
    Operation *add = after ? *y.getUsers().begin() : nullptr;
    Value out = after ? add->getResult(0) : y;
    define(out);
    statement(llvm::formatv("rmsNorm<{0}, {1}, {2}>({3}, nullptr, nullptr, {4}, {5}, {6}, {7}, "
                            "{8:e9}f, {9:e9}f, a.stream{10})",
                            cxxType(x.getType()), cxxType(n.getWeight().getType()),
                            cxxType(y.getType()), ptr(x), ptr(n.getWeight()), ptr(out),
                            numel(x) / h, h, n.getEpsilon().convertToFloat(),
                            n.getWeightOffset().convertToFloat(),
                            after ? ", " + ptr(after) : std::string())
                  .str(),
              std::string(after ? "rms_norm + onnx.add" : "rms_norm") + " -> " +
                  describeType(out.getType()));
    if (after)
      folded.insert(add);
    ++stats.kernelCalls;
    return llvm::Error::success();
  }
  if (auto n = dyn_cast<LayerNormOp>(op)) {
    Value x = n.getX(), y = n.getResult();
    int64_t h = shapeOf(x).back();
    Value bias = n.getBias();
    if (bias && !isNone(bias) && cxxType(bias.getType()) != cxxType(n.getWeight().getType())) {
      unsupported(op, "bias and weight types differ");
      return llvm::Error::success();
    }
    define(y);
    statement(llvm::formatv("layerNorm<{0}, {1}, {2}>({3}, {4}, {5}, {6}, {7}, {8}, {9:e9}f, "
                            "a.stream)",
                            cxxType(x.getType()), cxxType(n.getWeight().getType()),
                            cxxType(y.getType()), ptr(x), ptr(n.getWeight()),
                            ptr(bias, cxxType(n.getWeight().getType())), ptr(y), numel(x) / h, h,
                            n.getEpsilon().convertToFloat())
                  .str(),
              "layer_norm -> " + describeType(y.getType()));
    ++stats.kernelCalls;
    return llvm::Error::success();
  }
  if (isa<LinearOp, QuantizedLinearOp>(op))
    return emitLinear(op, stats);
  if (auto r = dyn_cast<RopeOp>(op)) {
    Value x = r.getX(), y = r.getResult(), positions = r.getPositions();
    auto xs = shapeOf(x);
    if (!ropeSupported(r)) {
      unsupported(op, "positions must be i64, x [B, S, N, D]");
      return llvm::Error::success();
    }
    // A rope paired with this one (pairs): both in one launch, here.
    auto first = dyn_cast_or_null<RopeOp>(pairs.lookup(op));
    if (first)
      define(first.getResult());
    define(y);
    bool perBatch = ropePositionsPerBatch(r);
    std::string tensors =
        first ? llvm::formatv("{0}, {1}, {2}, {3}, {4}, {5}", ptr(first.getX()),
                              ptr(first.getResult()), shapeOf(first.getX())[2], ptr(x), ptr(y),
                              xs[2])
                    .str()
              : llvm::formatv("{0}, {1}", ptr(x), ptr(y)).str();
    std::string sizes = first ? llvm::formatv("{0}, {1}, {2}", xs[0], xs[1], xs[3]).str()
                              : llvm::formatv("{0}, {1}, {2}, {3}", xs[0], xs[1], xs[2], xs[3]).str();
    statement(llvm::formatv("{0}<{1}, {2}>({3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, m.error, "
                            "a.stream)",
                            first ? "ropePair" : "rope", cxxType(x.getType()),
                            cxxType(r.getCos().getType()), tensors, ptr(r.getCos()),
                            ptr(r.getSin()), ptr(positions), perBatch ? "true" : "false", sizes,
                            r.getRotaryDim(), shapeOf(r.getCos())[0],
                            r.getInterleaved() ? "true" : "false")
                  .str(),
              std::string(first ? "rope x 2" : "rope") + " -> " + describeType(y.getType()));
    ++stats.kernelCalls;
    return llvm::Error::success();
  }
  if (isa<CacheUpdateOp, QuantizedCacheUpdateOp>(op)) {
    auto qu = dyn_cast<QuantizedCacheUpdateOp>(op);
    Value cache = op->getOperand(0);
    Value scales = qu ? qu.getScales() : Value();
    Ref cr = refs[cache]; // a copy: refs[result] below may grow the map
    Operation *first = pairs.lookup(op);
    if (cr.kind != Ref::Cache || (scales && refs[scales].kind != Ref::Cache) ||
        (first && refs[first->getOperand(0)].kind != Ref::Cache)) {
      unsupported(op, "not the session's cache");
      return llvm::Error::success();
    }
    if (inPlaceUpdates.contains(op)) { // (its TensorScatter wrote the cache)
      refs[op->getResult(0)] = cr;
      ++stats.views;
      return llvm::Error::success();
    }
    auto cs = shapeOf(cache); // [B, H, C, D]
    int64_t b = cs[0], h = cs[1], d = cs[3];
    CacheSource src = cacheUpdateSource(op);
    Value pos = op->getOperand(qu ? 3 : 2);
    refs[op->getResult(0)] = cr;
    if (first) { // (the pair's first write: its cache, written in the same launch)
      Ref fr = refs[first->getOperand(0)];
      refs[first->getResult(0)] = fr;
    }
    if (qu) {
      Ref sr = refs[scales];
      refs[qu.getOutputScales()] = sr;
    }
    if (intoAttention.count(op)) {
      // (the attention right after does the ropes and both writes:
      // ropeIntoAttention; the caches' results are set above)
    } else if (qu) {
      statement(llvm::formatv("cacheWriteInt8<{0}>({1}, {2}, {3}, {4}, {5}, {6}, a.capacity, {7}, "
                              "{8}, {9}, {10}, {11}, m.error, a.stream)",
                              cxxType(src.value.getType()), ptr(cache), ptr(scales),
                              ptr(src.value), ptr(pos), b, h, src.s, d, src.sb, src.ss, src.sh)
                    .str(),
                "quantized_cache_update -> " + describeType(cache.getType()) + ", " +
                    describeType(scales.getType()) + ", in place");
    } else if (auto fused = ropeCaches.find(op); fused != ropeCaches.end()) {
      // (ropeCacheFusable: the rope pair before, one launch for all four)
      RopeOp qr = fused->second.queries, kr = fused->second.keys;
      bool keysFirst = fused->second.keysWrite == first;
      CacheSource fs = cacheUpdateSource(first);
      CacheSource values = keysFirst ? src : fs;
      Value kCache = keysFirst ? first->getOperand(0) : cache;
      Value vCache = keysFirst ? cache : first->getOperand(0);
      define(qr.getResult());
      define(kr.getResult());
      auto xs = shapeOf(kr.getX());
      bool perBatch = ropePositionsPerBatch(kr);
      // The heads' norms in the same launch (headNormsBefore): the kernel
      // reads the norms' inputs, and their weights.
      RmsNormOp qn = fused->second.queriesNorm, kn = fused->second.keysNorm;
      Value xq = qn ? qn.getX() : qr.getX(), xk = kn ? kn.getX() : kr.getX();
      std::string norms = qn ? ", " + headNormsArg(cxxType(kr.getX().getType()), qn, kn) : "";
      statement(
          llvm::formatv(
              "ropeCacheWrite<{0}, {1}>({2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, "
              "{13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, "
              "a.capacity, m.error, a.stream{25})",
              cxxType(kr.getX().getType()), cxxType(kr.getCos().getType()), ptr(xq),
              ptr(qr.getResult()), shapeOf(qr.getX())[2], ptr(xk), ptr(kr.getResult()),
              xs[2], ptr(kCache), ptr(vCache), ptr(values.value), values.sb, values.ss, values.sh,
              ptr(kr.getCos()), ptr(kr.getSin()), ptr(kr.getPositions()),
              perBatch ? "true" : "false", ptr(pos), xs[0], xs[1], xs[3], kr.getRotaryDim(),
              shapeOf(kr.getCos())[0], kr.getInterleaved() ? "true" : "false", norms)
              .str(),
          std::string(qn ? "rms_norm x 2 + " : "") + "rope x 2 + cache_update x 2 -> " +
              describeType(qr.getResult().getType()) + ", " +
              describeType(kr.getResult().getType()) + ", " + describeType(cache.getType()) +
              " x 2, in place");
      ++stats.kernelCalls;
    } else if (first) { // (pairs: the same shape, types and position)
      CacheSource fs = cacheUpdateSource(first);
      statement(llvm::formatv("cacheWritePair<{0}, {1}>({2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, "
                              "{10}, {11}, {12}, {13}, {14}, a.capacity, {15}, {16}, m.error, "
                              "a.stream)",
                              cxxType(cache.getType()), cxxType(src.value.getType()),
                              ptr(first->getOperand(0)), ptr(fs.value), fs.sb, fs.ss, fs.sh,
                              ptr(cache), ptr(src.value), src.sb, src.ss, src.sh, ptr(pos), b, h,
                              src.s, d)
                    .str(),
                "cache_update x 2 -> " + describeType(cache.getType()) + ", in place");
    } else {
      statement(llvm::formatv("cacheWrite<{0}, {1}>({2}, {3}, {4}, {5}, {6}, a.capacity, {7}, "
                              "{8}, {9}, {10}, {11}, m.error, a.stream)",
                              cxxType(cache.getType()), cxxType(src.value.getType()), ptr(cache),
                              ptr(src.value), ptr(pos), b, h, src.s, d, src.sb, src.ss, src.sh)
                    .str(),
                "cache_update -> " + describeType(cache.getType()) + ", in place");
    }
    ++stats.cacheUpdates;
    return llvm::Error::success();
  }
  if (auto fa = dyn_cast<FlashAttentionOp>(op)) {
    Value q = fa.getQ(), kc = fa.getKCache(), vc = fa.getVCache(), y = fa.getResult();
    auto qs = shapeOf(q);
    int64_t d = shapeOf(kc)[3], dv = shapeOf(vc)[3];
    std::string t = cxxType(q.getType()), k = cxxType(kc.getType());
    bool int8 = fa.getKvScales().size() == 2;
    if ((int8 ? k != "int8_t" : k != t) || (d * elemBytes(kc.getType())) % 16 ||
        (dv * elemBytes(kc.getType())) % 16) {
      unsupported(op, "query/cache types or head size");
      return llvm::Error::success();
    }
    define(y);
    std::string sinks = sinksPtr(op);
    statement(llvm::formatv("flashAttention<{0}, {17}, {1}, {2}, {3}>({4}, {5}, {6}, {18}, {7}, "
                            "{8}, {9}, {10}, {11}, {12}, a.capacity, {13}, {14}, {15:e9}f, "
                            "{16:e9}f, a.stream{19})",
                            t, d, dv, cxxType(y.getType()), ptr(q), ptr(kc), ptr(vc),
                            ptr(fa.getPos()), ptr(y), qs[0], qs[1], fa.getNumHeads(),
                            fa.getNumKvHeads(), fa.getCausal() ? "true" : "false", fa.getWindow(),
                            fa.getScale().convertToFloat(), fa.getSoftcap().convertToFloat(), k,
                            int8 ? ptr(fa.getKvScales()[0]) + ", " + ptr(fa.getKvScales()[1])
                                 : std::string("nullptr, nullptr"),
                            sinks == "nullptr" ? std::string() : ", " + sinks)
                  .str(),
              "flash_attention -> " + describeType(y.getType()));
    ++stats.kernelCalls;
    return llvm::Error::success();
  }
  unsupported(op);
  return llvm::Error::success();
}

/// Whether a linear layer's weight is a constant (the linear layers sit in
/// fused regions by then: it is followed out of them). gemv reads its
/// weights before the wait for the kernel before it (Gemv.h), so only
/// constant ones go to it; a weight some kernel computes (none, as the
/// importer raises linear layers today) takes gemm.
static bool constantWeight(Value w) { return bool(outside(w).getDefiningOp<ConstantOp>()); }
/// Whether a quantized linear's values, scales and zero points (if any) are
/// constants: qgemv reads them before the wait for the kernel before.
static bool constantWeights(QuantizedLinearOp q) {
  Value zeros = q.getZeroPoints();
  return constantWeight(q.getWeight()) && constantWeight(q.getScales()) &&
         (!zeros || isNone(zeros) || constantWeight(zeros));
}

/// The uses that read `v`, looking through fused regions (into a region's
/// argument, out of its yield); false when `v` or a value it passes through
/// has no reader, or an attention region or something other than a fused
/// region takes or yields it.
static bool readersThroughRegions(Value v, SmallVectorImpl<OpOperand *> &out) {
  if (v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isa<YieldOp>(user)) {
      auto fused = dyn_cast<FusedOp>(user->getParentOp());
      if (!fused || fused.getKind() == "attention" ||
          !readersThroughRegions(fused->getResult(use.getOperandNumber()), out))
        return false;
    } else if (auto fused = dyn_cast<FusedOp>(user)) {
      if (fused.getKind() == "attention" ||
          !readersThroughRegions(fused.getRegion().front().getArgument(use.getOperandNumber()),
                                 out))
        return false;
    } else {
      out.push_back(&use);
    }
  }
  return true;
}

/// Whether every reader of `v` (through the fused regions that take it or
/// yield it) is operand 0 of an llm.linear with constant float weights, of
/// type `wt` unless that is empty.
static bool readOnlyByGemvs(Value v, const std::string &wt) {
  SmallVector<OpOperand *> readers;
  if (!readersThroughRegions(v, readers))
    return false;
  return llvm::all_of(readers, [&](OpOperand *use) {
    if (use->getOperandNumber() != 0)
      return false;
    if (auto l = dyn_cast<LinearOp>(use->getOwner()))
      return constantWeight(l.getWeight()) && isFloatType(l.getWeight().getType()) &&
             (wt.empty() || cxxType(l.getWeight().getType()) == wt);
    // A 4- or 8-bit one (qnormGemv, qswigluGemv) as emitLinear takes it,
    // reading a norm's weights as x's type.
    auto q = dyn_cast<QuantizedLinearOp>(use->getOwner());
    return q && (q.getBits() == 4 || q.getBits() == 8) && constantWeights(q) &&
           ::llmc::cuda::quantChunkBytes(int(q.getBits()), int(q.getGroupSize())) != 0 &&
           isFloatType(q.getScales().getType()) &&
           (wt.empty() || cxxType(v.getType()) == wt);
  });
}

bool CudaEmitter::ropeSupported(RopeOp r) {
  return shapeOf(r.getX()).size() == 4 &&
         getElementTypeOrSelf(r.getPositions().getType()).isInteger(64) &&
         shapeOf(r.getCos()).size() == 2;
}

CudaEmitter::CacheSource CudaEmitter::cacheUpdateSource(Operation *op) {
  auto qu = dyn_cast<QuantizedCacheUpdateOp>(op);
  Value update = qu ? qu.getUpdate() : op->getOperand(1);
  auto cs = shapeOf(op->getOperand(0)); // [B, H, C, D]
  int64_t h = cs[1], d = cs[3];
  CacheSource src;
  if (Value from = transposedUpdates.lookup(op)) { // [B, S, H, D]
    src.value = from;
    src.s = shapeOf(from)[1];
    src.sb = src.s * h * d, src.ss = h * d, src.sh = d;
  } else { // [B, H, S, D]
    src.value = update;
    src.s = shapeOf(update)[2];
    src.sb = h * src.s * d, src.sh = src.s * d, src.ss = d;
  }
  return src;
}

SmallVector<int64_t, 2> CudaEmitter::outputSegments(Value y, int64_t rows, int64_t n) {
  SmallVector<OpOperand *> readers;
  if (rows < 2 || !readersThroughRegions(y, readers))
    return {};
  std::map<int64_t, int64_t> ranges; // start -> width
  auto add = [&](std::optional<SliceSegments> seg) {
    if (!seg || seg->count != rows || seg->stride != n || seg->len < 1)
      return false;
    auto [it, fresh] = ranges.try_emplace(seg->base, seg->len);
    return fresh || it->second == seg->len;
  };
  for (OpOperand *use : readers) {
    Operation *r = use->getOwner();
    if (use->getOperandNumber() != 0)
      return {};
    if (shortName(r) == "onnx.slice") {
      if (!add(sliceSegments(r)))
        return {};
    } else if (shortName(r) == "onnx.split") { // (each part a range)
      for (unsigned i = 0; i < r->getNumResults(); ++i)
        if (!add(splitSegments(r, i)))
          return {};
    } else {
      return {};
    }
  }
  // Consecutive ranges from 0 to n, two or three of them.
  SmallVector<int64_t, 2> ends;
  int64_t at = 0;
  for (auto [start, width] : ranges) {
    if (start != at)
      return {};
    at += width;
    if (at < n)
      ends.push_back(at);
  }
  if (at != n || ends.empty() || ends.size() > 2)
    return {};
  return ends;
}

Value CudaEmitter::normAddedAfter(Operation *op) {
  // A norm after a block, added to the residual stream right after it
  // (Gemma 2's and 3's post-attention and post-MLP norms): the add in the
  // same launch, written where the add's result lives. (Nothing runs
  // between the two, so no value the plan placed there is live.)
  auto n = dyn_cast<RmsNormOp>(op);
  Value y = n ? n.getResult() : Value();
  Operation *add = y && y.hasOneUse() ? *y.getUsers().begin() : nullptr;
  if (!add || shortName(add) != "onnx.add" || add->getBlock() != op->getBlock() ||
      add->getResult(0).getType() != y.getType() || chains.count(add))
    return Value();
  Operation *next = op->getNextNode();
  while (next && next != add && (isa<ConstantOp>(next) || isView(next)))
    next = next->getNextNode();
  Value other = add->getOperand(0) == y ? add->getOperand(1) : add->getOperand(0);
  if (next == add && other != y && other.getType() == y.getType() && refs.count(other))
    return other;
  return Value();
}

bool CudaEmitter::pairableNorm(Operation *op) {
  auto n = dyn_cast<RmsNormOp>(op);
  return n && isStatic(n.getX().getType()) && isFloatType(n.getX().getType()) &&
         !shapeOf(n.getX()).empty() && !foldsIntoGemv(op) && !normAddedAfter(op);
}

GeluOp mlir::llmc::cudagen::geluGate(Operation *op, Value *gate, Value *up) {
  if (shortName(op) != "onnx.mul" || op->getNumOperands() != 2)
    return GeluOp();
  for (int side = 0; side < 2; ++side) {
    auto gelu = op->getOperand(side).getDefiningOp<GeluOp>();
    if (!gelu || !gelu->hasOneUse() || op->getOperand(1 - side) == gelu.getResult())
      continue;
    if (gate)
      *gate = gelu.getX();
    if (up)
      *up = op->getOperand(1 - side);
    return gelu;
  }
  return GeluOp();
}

bool CudaEmitter::foldsIntoGemv(Operation *op) {
  auto n = dyn_cast<RmsNormOp>(op);
  auto swiglu = dyn_cast<SwigluOp>(op);
  Value gate, up;
  GeluOp gelu = geluGate(op, &gate, &up);
  if ((!n && !swiglu && !gelu) || chains.count(op)) // (a SwiGLU that ends a run is the run's kernel)
    return false;
  Value y = op->getResult(0);
  // The kernel reads its operands as y's type, of y's shape, and writes
  // their norm, SwiGLU or GELU-gated product into shared memory.
  SmallVector<Value, 2> inputs;
  if (n)
    inputs.push_back(n.getX());
  else if (gelu)
    inputs.append({gate, up});
  else
    inputs.append(op->operand_begin(), op->operand_end());
  for (Value x : inputs)
    if (cxxType(x.getType()) != cxxType(y.getType()) || shapeOf(x) != shapeOf(y))
      return false;
  if (!isFloatType(y.getType()))
    return false;
  int64_t k = shapeOf(y).empty() ? 0 : shapeOf(y).back();
  if (k < 1 || numel(y) / k > ::llmc::cuda::kGemvMaxRows ||
      int64_t(numel(y)) * elemBytes(y.getType()) > ::llmc::cuda::kGemvPrologueSharedBytes)
    return false;
  return readOnlyByGemvs(y, n ? cxxType(n.getWeight().getType()) : "");
}

llvm::Error CudaEmitter::emitLinear(Operation *op, CpuModel::Entry &stats) {
  auto quant = dyn_cast<QuantizedLinearOp>(op);
  Value x = op->getOperand(0), y = op->getResult(0);
  // An RMS norm or a SwiGLU folded in (foldsIntoGemv): its input (the
  // gate) is read instead.
  Operation *prologue = foldedInputs.lookup(x);
  auto norm = dyn_cast_or_null<RmsNormOp>(prologue);
  auto swiglu = dyn_cast_or_null<SwigluOp>(prologue);
  Value gate, up;
  GeluOp gelu = prologue ? geluGate(prologue, &gate, &up) : GeluOp();
  if (gelu)
    x = gate;
  else if (prologue)
    x = prologue->getOperand(0);
  if (swiglu)
    up = prologue->getOperand(1);
  Value bias = quant ? quant.getBias() : cast<LinearOp>(op).getBias();
  bool hasBias = bias && !isNone(bias);
  // A following residual add of a value already computed is folded into
  // the epilogue (as the CPU emitter does).
  Operation *add = nullptr;
  Value residual;
  if (y.hasOneUse()) {
    Operation *user = *y.getUsers().begin();
    if (shortName(user) == "onnx.add" && user->getBlock() == op->getBlock() &&
        user->getResult(0).getType() == y.getType()) {
      Value other = user->getOperand(0) == y ? user->getOperand(1) : user->getOperand(0);
      if (other.getType() == y.getType() && refs.count(other)) {
        add = user;
        residual = other;
      }
    }
  }
  std::string xt = cxxType(x.getType()), yt = cxxType(y.getType());
  int64_t k = shapeOf(x).back(), rows = numel(x) / std::max<int64_t>(k, 1), n = shapeOf(y).back();
  // The template arguments and operands after x of the two forms.
  std::string targs, wargs, bt;
  int64_t splits = 1;
  bool decode = rows <= ::llmc::cuda::kGemvMaxRows; // gemv (qgemv), else gemm (qgemm)
  if (quant) {
    int64_t bits = quant.getBits(), group = quant.getGroupSize();
    Value q = quant.getWeight(), scales = quant.getScales(), zeros = quant.getZeroPoints();
    bool hasZeros = zeros && !isNone(zeros);
    bt = hasBias ? cxxType(bias.getType()) : "float";
    if ((bits != 4 && bits != 8) || !isFloatType(x.getType()) || !isFloatType(scales.getType()) ||
        (hasZeros && !getElementTypeOrSelf(zeros.getType()).isUnsignedInteger(8)) ||
        (hasBias && !isFloatType(bias.getType()))) {
      unsupported(op, "bits, activation, scale, zero-point or bias types");
      return llvm::Error::success();
    }
    if (::llmc::cuda::quantChunkBytes(int(bits), int(group)) == 0) {
      unsupported(op, "groups of fewer than 4 bytes");
      return llvm::Error::success();
    }
    recordQuantizedLayer(op, model, recordedQuantized);
    decode = decode && constantWeights(quant);
    targs = llvm::formatv("{0}, {1}, {2}, {3}, {4}", xt, yt, cxxType(scales.getType()), bt, bits);
    wargs = ptr(q) + ", " + ptr(scales) + ", " + (hasZeros ? ptr(zeros) : "nullptr");
    if (decode)
      splits = ::llmc::cuda::qgemvSplits(int(n), int(k), int(bits), int(group),
                                         kCudaAssumedMultiprocessors);
  } else {
    Value w = cast<LinearOp>(op).getWeight();
    std::string wt = cxxType(w.getType());
    bt = wt;
    if (!isFloatType(w.getType()) || !isFloatType(x.getType()) ||
        (hasBias && cxxType(bias.getType()) != wt) || shapeOf(w).size() != 2) {
      unsupported(op, "weight, input and bias types");
      return llvm::Error::success();
    }
    targs = wt + ", " + xt + ", " + yt;
    wargs = ptr(w);
    decode = decode && constantWeight(w);
    int64_t eb = elemBytes(w.getType());
    if (decode && k % (16 / eb) == 0)
      splits = ::llmc::cuda::gemvSplits(int(n), int(k), int(eb), kCudaAssumedMultiprocessors);
  }
  define(y);
  if (add) {
    Ref same = refs[y]; // a copy: refs[...] may grow the map
    refs[add->getResult(0)] = same;
    folded.insert(add);
  }
  // A result read only as slices of whole column ranges (a merged
  // projection's q, k, v or gate and up): each range written as a block of
  // its own, so that the slices are views rather than copy kernels.
  // (A prefill's gemm or qgemm: one per range, over the range's rows of
  // the weight.)
  SmallVector<int64_t, 2> ends;
  if (!add) {
    ends = outputSegments(y, rows, n);
    if (!ends.empty()) {
      Segmented sg{rows, n, {0}};
      sg.starts.append(ends.begin(), ends.end());
      segmented[refs[y].buffer] = sg;
    }
  }
  std::string res = add ? ptr(residual) : "nullptr";
  std::string b = hasBias ? ptr(bias, bt) : "nullptr";
  std::string fn = quant ? "q" : "";
  std::string sizes = llvm::formatv("{0}, {1}, {2}", rows, n, k).str() +
                      (quant ? ", " + std::to_string(quant.getGroupSize()) : "");
  if (decode) {
    std::string partial = "nullptr, nullptr";
    if (splits > 1) { // a workspace buffer of its own, live for this statement
      buffers.push_back({splits * rows * n * 4, step, step, -1});
      partial = llvm::formatv("m.at<float>(@@B{0}@@ + 0), m.counters", buffers.size() - 1).str();
    }
    fn += norm ? "normGemv" : swiglu ? "swigluGemv" : gelu ? "gatedGemv" : "gemv";
    std::string in = ptr(x);
    if (up)
      in += ", " + ptr(up);
    if (gelu) // (the activation first)
      in = std::string(gelu.getApproximateTanh() ? "GateAct::GeluTanh, " : "GateAct::GeluErf, ") +
           in;
    if (norm) // (the norm's weights: W's type, or x's for the quantized GEMVs)
      in += llvm::formatv(", {0}, {1:e9}f, {2:e9}f", ptr(norm.getWeight(), quant ? xt : bt),
                          norm.getEpsilon().convertToFloat(),
                          norm.getWeightOffset().convertToFloat())
                .str();
    std::string segs = ends.empty() ? ""
                       : llvm::formatv(", GemvSegments{{{0}, {1}}", ends[0],
                                       ends.size() > 1 ? ends[1] : 0)
                             .str();
    // (The rows as a template argument too: only their kernel is compiled.)
    statement(llvm::formatv("{0}<{1}, {11}>({2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, a.stream{10})",
                            fn, targs, in, wargs, b, res, ptr(y), partial, sizes, splits, segs,
                            rows)
                  .str(),
              (gelu ? "gelu + " : "") + (prologue ? shortName(prologue).str() + " + " : "") +
                  shortName(op).str() +
                  (add ? " + residual" : "") +
                  " (" + fn + ") -> " + describeType(y.getType()));
  } else {
    fn += "gemm";
    SmallVector<int64_t, 4> bounds = {0}; // the column ranges, or all of them
    bounds.append(ends.begin(), ends.end());
    bounds.push_back(n);
    std::string how = fn, scratch = "nullptr";
    int scratchBuffer = -1;
    if (quant) { // the weight dequantized into a buffer of its own, live for these statements
      // (16-bit x only: an f32 copy would go to the same SIMT tiles that
      // dequantize as they stage, only later. Each range its rows of it.)
      Type xe = getElementTypeOrSelf(x.getType());
      size_t bytes = xe.isF16() || xe.isBF16()
                         ? ::llmc::cuda::qgemmScratchBytes(n, k, elemBytes(x.getType()))
                         : 0;
      if (bytes) {
        buffers.push_back({int64_t(bytes), step, step, -1});
        scratchBuffer = int(buffers.size() - 1);
        scratch = llvm::formatv("m.at<{0}>(@@B{1}@@ + 0)", xt, scratchBuffer).str();
        how += ", dequantized copy";
      }
    }
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      int64_t start = bounds[i], width = bounds[i + 1] - start;
      // The operands after x of rows [start, start + width) of W.
      auto at = [start](const std::string &p, int64_t perRow) {
        return start == 0 || p == "nullptr" ? p
                                            : llvm::formatv("{0} + {1}", p, start * perRow).str();
      };
      std::string weights;
      if (quant) {
        int64_t rowBytes = numel(quant.getWeight()) / n, groups = numel(quant.getScales()) / n;
        weights = at(ptr(quant.getWeight()), rowBytes) + ", " +
                  at(ptr(quant.getScales()), groups) + ", " +
                  at(ptr(quant.getZeroPoints()), groups);
      } else {
        weights = at(ptr(cast<LinearOp>(op).getWeight()), k);
      }
      std::string tail =
          quant ? llvm::formatv(", {0}, {1}", quant.getGroupSize(), at(scratch, k)).str() : "";
      std::string call = llvm::formatv("{0}<{1}>({2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}{10}, "
                                       "a.stream, &m.blas)",
                                       fn, targs, ptr(x), weights, at(b, 1), res,
                                       at(ptr(y), rows), rows, width, k, tail)
                             .str();
      std::string what = shortName(op).str() + (add ? " + residual" : "") + " (" + how + ")";
      if (scratchBuffer >= 0) // (live through every range's statement)
        buffers[size_t(scratchBuffer)].last = step;
      if (bounds.size() == 2) {
        statement(call, what + " -> " + describeType(y.getType()));
      } else {
        statement(call, llvm::formatv("{0}, columns {1}..{2} of {3} -> [{4}, {5}] at element {6}",
                                      what, start, start + width, n, rows, width, rows * start)
                            .str());
        ++stats.kernelCalls;
      }
    }
    if (bounds.size() > 2)
      return llvm::Error::success();
  }
  ++stats.kernelCalls;
  return llvm::Error::success();
}
