//===- EmitCppOps.cpp - one C++ statement (or a few) per operation ---------===//
//
// In program order: constants are references to weight tensors wrapped once
// at init, views share storage, cache updates write the caller's cache in
// place, a static export's TensorScatter writes the session's cache in
// place, products are strided (a transpose only they read is read in
// place), linear layers, attention, rope and norms call ModelSupport's
// templates, fused regions become a block of their inner operations,
// element-wise operations and runs of them become loops of their own
// (EmitCppPointwise.cpp), and every other operation calls its reference
// kernel through ModelSupport's bridge with attributes built once at init.
// Shapes are static, so each statement's comment gives its result type.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CPU/EmitCppInternal.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::cpugen;

llvm::Error Emitter::emitOp(Operation *op, CpuModel::Entry &stats, int depth) {
  std::string in = indent(depth);
  StringRef name = shortName(op);
  if (isa<QuantizedEmbeddingOp>(op))
    recordQuantizedLayer(op, model, recordedQuantized);
  // The logits' tail runs on the rows the caller asks for (a.row0, a.rows).
  if (tail && depth == 1 && op->getNumOperands() && op->getOperand(0) == tail->input) {
    auto h = operandRef(op, tail->input);
    if (!h)
      return h.takeError();
    std::string v = newName();
    body += llvm::formatv("{0}Tensor {1}; // the rows of {2} whose logits the caller asks for\n"
                          "{0}LLMC_TRY(selectRows(m, a, {2}, {1}));\n",
                          in, v, *h)
                .str();
    names[tail->input] = v;
    rowsBytes = std::max(rowsBytes, bytesOf(tail->input.getType()));
  }
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto e = dyn_cast<ElementsAttr>(c.getValue());
    if (!e)
      return makeError(nodeName(op) + ": a constant that is not a tensor");
    // Referenced where used (and only then stored): no statement.
    lazyConstants.push_back(c);
    names[c.getResult()] = "\x01" + std::to_string(lazyConstants.size() - 1);
    return llvm::Error::success();
  }
  if (isa<NoneOp>(op)) {
    names[op->getResult(0)] = "";
    return llvm::Error::success();
  }
  // The last operation of an element-wise run computes the run (an identity
  // too); one alone, but a cast (its template) or an identity (a view).
  if (runs.count(op) ||
      (generatesLoop(op) && name != "onnx.cast" && name != "onnx.identity"))
    return emitPointwise(op, stats, depth);
  // Views: the same storage with the result's static shape.
  if ((isView(op) || name == "onnx.identity") && isStatic(op->getOperand(0).getType()) &&
      isStatic(op->getResult(0).getType())) {
    auto x = operandRef(op, op->getOperand(0));
    if (!x)
      return x.takeError();
    std::string v = newName();
    body += llvm::formatv("{0}Tensor {1} = {2}.view({3}); // {4} -> {5}\n", in, v, *x,
                          shapeExpr(cast<RankedTensorType>(op->getResult(0).getType()).getShape()),
                          name, describeType(op->getResult(0).getType()))
                .str();
    names[op->getResult(0)] = v;
    stats.views += depth == 1;
    return llvm::Error::success();
  }
  // A slice of segments of its input: a view when it is one contiguous
  // range, else a copy loop over the segments (sliceCopy where there is
  // none: a shape or type the loops do not take).
  if (name == "onnx.slice") {
    if (std::optional<SliceSegments> seg = sliceSegments(op);
        seg && (seg->count > 1 || !mayChange(op->getOperand(0)))) {
      if (seg->count > 1 && generatesCopy(op)) // (a loop over the segments)
        return emitCopy(op, stats, depth);
      auto x = operandRef(op, op->getOperand(0));
      if (!x)
        return x.takeError();
      std::string v = newName();
      std::string shape =
          shapeExpr(cast<RankedTensorType>(op->getResult(0).getType()).getShape());
      if (seg->count == 1) {
        body += llvm::formatv("{0}Tensor {1}; // onnx.slice (a view) -> {2}\n"
                              "{0}LLMC_TRY({3}.slice({4}, {5}, {1}));\n",
                              in, v, describeType(op->getResult(0).getType()), *x, seg->base,
                              shape)
                    .str();
        stats.views += depth == 1;
      } else {
        body += llvm::formatv("{0}Tensor {1}{9}; // onnx.slice -> {2}\n"
                              "{0}LLMC_TRY(sliceCopy({3}, {4}, {5}, {6}, {7}, {8}, {1}));\n",
                              in, v, describeType(op->getResult(0).getType()), *x, seg->base,
                              seg->count, seg->stride, seg->len, shape,
                              placed(op->getResult(0)))
                    .str();
        stats.kernelCalls += depth == 1;
      }
      names[op->getResult(0)] = v;
      return llvm::Error::success();
    }
  }
  if (isa<CacheUpdateOp, QuantizedCacheUpdateOp>(op)) {
    SmallVector<std::string> ops;
    for (Value o : op->getOperands()) {
      auto r = operandRef(op, o);
      if (!r)
        return r.takeError();
      ops.push_back(*r);
    }
    std::string v = newName();
    if (updatesInPlace.contains(op)) { // (its TensorScatter wrote the cache)
      body += llvm::formatv("{0}Tensor {1} = {2}; // cache_update -> {3}, written in place\n", in,
                            v, ops[0], describeType(op->getResult(0).getType()))
                  .str();
    } else if (isa<CacheUpdateOp>(op)) {
      body += llvm::formatv("{0}Tensor {1}; // cache_update -> {2}, in place\n"
                            "{0}LLMC_TRY(cacheUpdate({3}, {4}, {5}, {1}, {6}));\n",
                            in, v, describeType(op->getResult(0).getType()), ops[0], ops[1],
                            ops[2], quote(nodeName(op)))
                  .str();
    } else { // the int8 cache and its scales
      std::string s = newName();
      body += llvm::formatv("{0}Tensor {1}, {2}; // quantized_cache_update -> {3}, {4}, in place\n"
                            "{0}LLMC_TRY(quantizedCacheUpdate({5}, {6}, {7}, {8}, {1}, {2}, "
                            "{9}));\n",
                            in, v, s, describeType(op->getResult(0).getType()),
                            describeType(op->getResult(1).getType()), ops[0], ops[1], ops[2],
                            ops[3], quote(nodeName(op)))
                  .str();
      names[op->getResult(1)] = s;
    }
    names[op->getResult(0)] = v;
    stats.cacheUpdates += depth == 1;
    return llvm::Error::success();
  }
  // A static export's TensorScatter into the session's cache: its rows
  // written where the cache is, not into a copy of the whole cache.
  if (scattersInPlace.contains(op)) {
    SmallVector<std::string> ops; // past_cache, update, write_indices
    for (Value o : op->getOperands()) {
      auto r = operandRef(op, o);
      if (!r)
        return r.takeError();
      ops.push_back(*r);
    }
    auto axis = op->getAttrOfType<IntegerAttr>("axis");
    std::string v = newName();
    body += llvm::formatv("{0}Tensor {1}; // onnx.tensor_scatter -> {2}, in place\n"
                          "{0}LLMC_TRY(tensorScatterInPlace({3}, {4}, {5}, {6}, {1}, {7}));\n",
                          in, v, describeType(op->getResult(0).getType()), ops[0], ops[1],
                          ops[2], axis ? axis.getInt() : -2, quote(nodeName(op)))
                .str();
    names[op->getResult(0)] = v;
    stats.kernelCalls += depth == 1;
    return llvm::Error::success();
  }
  // A transpose that only a strided product reads: the product reads its
  // input in place (the plan keeps that alive until then).
  if (isTransposeReadInPlace(op)) {
    body += llvm::formatv("{0}// {1}: read in place by its product\n", in, nodeName(op)).str();
    stats.views += depth == 1;
    return llvm::Error::success();
  }
  if (std::optional<StridedMatmul> s = stridedMatmul(op)) {
    static_assert(int64_t(StridedMatmul::kStridedBatchDims) == cpu::MatmulStrides::kBatchDims);
    auto a = operandRef(op, s->a), b = operandRef(op, s->b);
    if (!a)
      return a.takeError();
    if (!b)
      return b.takeError();
    Value y = op->getResult(0);
    std::string v = newName();
    body += llvm::formatv("{0}Tensor {1}{2}; // onnx.matmul{3} -> {4}\n", in, v, placed(y),
                          s->readsTranspose() ? " (transpose read in place)" : "",
                          describeType(y.getType()))
                .str();
    body += llvm::formatv("{0}LLMC_TRY(stridedMatmul(m, {1}, {2}, {3}, MatmulStrides{{{4}, "
                          "{5}, {6}, {7}, {8}, {9}, {10}, {11}}, {12}, {13}));\n",
                          in, quote(nodeName(op)), *a, *b, s->m, s->n, s->k, s->aRow, s->aCol,
                          s->bRow, s->bCol, stridedBatchFields(*s),
                          shapeExpr(cast<RankedTensorType>(y.getType()).getShape()), v)
                .str();
    names[y] = v;
    stats.kernelCalls += depth == 1;
    return llvm::Error::success();
  }
  if (auto fused = dyn_cast<FusedOp>(op); fused && fused.getKind() == "attention") {
    // decode_attention_partial -> attention_combine -> yield: one call.
    Block &block = fused.getRegion().front();
    auto ops = block.without_terminator();
    auto partial = ops.empty() ? DecodeAttentionPartialOp()
                               : dyn_cast<DecodeAttentionPartialOp>(&*ops.begin());
    auto combine = partial && std::next(ops.begin()) != ops.end()
                       ? dyn_cast<AttentionCombineOp>(&*std::next(ops.begin()))
                       : AttentionCombineOp();
    auto yield = cast<YieldOp>(block.getTerminator());
    // (After llmc-convert-dtype a cast of the f32 result follows.)
    Operation *castOp = partial && combine && std::next(ops.begin(), 2) != ops.end()
                            ? &*std::next(ops.begin(), 2)
                            : nullptr;
    if (castOp && (shortName(castOp) != "onnx.cast" ||
                   castOp->getOperand(0) != combine.getResult() ||
                   std::next(ops.begin(), 3) != ops.end()))
      castOp = nullptr, combine = AttentionCombineOp();
    Value result = castOp ? castOp->getResult(0) : combine ? combine.getResult() : Value();
    if (partial && combine && (castOp || std::next(ops.begin(), 2) == ops.end()) &&
        combine->getOperand(0) == partial->getResult(0) &&
        combine->getOperand(1) == partial->getResult(1) && yield->getNumOperands() == 1 &&
        yield->getOperand(0) == result && fused->getNumResults() == 1) {
      SmallVector<std::string> args;
      for (Value a : partial->getOperands()) {
        auto arg = dyn_cast<BlockArgument>(a);
        if (!arg || arg.getOwner() != &block)
          break;
        auto r = operandRef(op, fused->getOperand(arg.getArgNumber()));
        if (!r)
          return r.takeError();
        args.push_back(*r);
      }
      if (args.size() == partial->getNumOperands() && (args.size() == 4 || args.size() == 6)) {
        auto at = attrIndex(partial);
        if (!at)
          return at.takeError();
        auto combineAt = attrIndex(combine); // (its sinks, if any)
        if (!combineAt)
          return combineAt.takeError();
        auto attrsPtr = [](int index) {
          return index < 0 ? std::string("nullptr") : llvm::formatv("&m.at[{0}]", index).str();
        };
        // An int8 cache's scales, or none.
        std::string scales = args.size() == 6 ? "&" + args[4] + ", &" + args[5]
                                              : std::string("nullptr, nullptr");
        std::string v = newName();
        body += llvm::formatv("{0}Tensor {1}{11}; // fused \"attention\" (decode) -> {2}\n"
                              "{0}LLMC_TRY(decodeAttention(m, m.k[{3}], m.k[{4}], {5}, {6}, {7}, "
                              "{8}, {9}, {12}, {10}, {13}, {1}));\n",
                              in, v, describeType(combine.getType()),
                              kernelIndex("decode_attention_partial"),
                              kernelIndex("attention_combine"), quote(nodeName(partial)), args[0],
                              args[1], args[2], args[3], attrsPtr(*at),
                              placed(combine.getResult()), scales, attrsPtr(*combineAt))
                    .str();
        if (castOp) {
          auto castAttrs = attrIndex(castOp);
          if (!castAttrs)
            return castAttrs.takeError();
          std::string c = newName();
          body += llvm::formatv("{0}Tensor {1}{7}; // onnx.cast -> {2}\n"
                                "{0}LLMC_TRY(cast(m, m.k[{3}], {4}, {{&{5}}, &m.at[{6}], {{&{1}}));\n",
                                in, c, describeType(castOp->getResult(0).getType()),
                                kernelIndex("onnx.cast"), quote(nodeName(castOp)), v, *castAttrs,
                                placed(castOp->getResult(0)))
                      .str();
          v = c;
        }
        names[fused->getResult(0)] = v;
        stats.fusedRegions += depth == 1;
        return llvm::Error::success();
      }
    }
  }
  if (auto rope = dyn_cast<RopeOp>(op)) {
    SmallVector<std::string> args;
    for (Value a : op->getOperands()) {
      auto r = operandRef(op, a);
      if (!r)
        return r.takeError();
      args.push_back(*r);
    }
    auto at = attrIndex(op);
    if (!at)
      return at.takeError();
    std::string v = newName();
    names[rope.getResult()] = v;
    body += llvm::formatv("{0}Tensor {1}{10}; // rope -> {2}\n"
                          "{0}LLMC_TRY(rope(m, m.k[{3}], {4}, {5}, {6}, {7}, {8}, {9}, {1}));\n",
                          in, v, describeType(rope.getType()), kernelIndex("rope"),
                          quote(nodeName(op)), args[0], args[1], args[2], args[3],
                          *at < 0 ? std::string("nullptr") : llvm::formatv("&m.at[{0}]", *at).str(),
                          placed(rope.getResult()))
                .str();
    stats.kernelCalls += depth == 1;
    return llvm::Error::success();
  }
  if (auto fused = dyn_cast<FusedOp>(op)) {
    std::vector<std::string> results;
    for (Value r : fused->getResults()) {
      results.push_back(newName());
      names[r] = results.back();
      body += llvm::formatv("{0}Tensor {1}; // {2}\n", in, results.back(), describeType(r.getType()))
                  .str();
    }
    body += llvm::formatv("{0}{{ // fused \"{1}\"\n", in, fused.getKind()).str();
    Block &block = fused.getRegion().front();
    for (auto [arg, operand] : llvm::zip(block.getArguments(), fused->getOperands()))
      names[arg] = names.lookup(operand);
    if (llvm::Error e = emitBlock(block, stats, depth + 1))
      return e;
    auto yield = cast<YieldOp>(block.getTerminator());
    for (auto [r, v] : llvm::zip(results, yield->getOperands())) {
      auto ref = operandRef(yield, v);
      if (!ref)
        return ref.takeError();
      body += llvm::formatv("{0}  {1} = {2};\n", in, r, *ref).str();
    }
    body += in + "}\n";
    ++stats.fusedRegions;
    return llvm::Error::success();
  }
  if (isa<LinearOp, QuantizedLinearOp>(op)) {
    // y = x W^T (+ b), and a following residual add of a value that is
    // already computed folded into its epilogue (computed in f32, rounded
    // once).
    auto x = operandRef(op, op->getOperand(0));
    if (!x)
      return x.takeError();
    Value result = op->getResult(0);
    Value residual;
    Operation *add = foldedResidualAdd(op, &residual);
    Type element = getElementTypeOrSelf(result.getType());
    std::string v = newName();
    names[result] = v;
    if (add) {
      names[add->getResult(0)] = v;
      folded.insert(add);
    }
    if (auto ql = dyn_cast<QuantizedLinearOp>(op))
      return emitQuantizedLinear(ql, *x, v, add ? operandPtr(residual) : "nullptr", stats, depth);
    auto lin = cast<LinearOp>(op);
    // A constant f32/f16/bf16 weight with x, bias and result of its type:
    // the packed kernel over weights stored in its panels.
    auto wType = dyn_cast<RankedTensorType>(lin.getWeight().getType());
    auto xType = dyn_cast<RankedTensorType>(lin.getX().getType());
    ElementsAttr wAttr;
    auto wConst = outside(lin.getWeight()).getDefiningOp<ConstantOp>();
    if (wConst)
      wAttr = dyn_cast<ElementsAttr>(wConst.getValue());
    Value bias = lin.getBias();
    bool hasBias = bias && !isa<NoneType>(bias.getType());
    if (wAttr && wType && xType && wType.hasStaticShape() && xType.hasStaticShape() &&
        wType.getRank() == 2 && xType.getRank() >= 1 &&
        xType.getShape().back() == wType.getDimSize(1) &&
        wType.getElementType() == element && xType.getElementType() == element &&
        (!hasBias || getElementTypeOrSelf(bias.getType()) == element)) {
      auto packed = packedWeightIndex(wAttr, nodeName(wConst));
      if (!packed)
        return packed.takeError();
      body += llvm::formatv("{0}Tensor {1}{4}; // linear{2} -> {3}\n", in, v,
                            add ? " + residual" : "", describeType(lin.getType()),
                            placed(result))
                  .str();
      body += llvm::formatv("{0}LLMC_TRY(packedLinear(m, {1}, {2}, m.w[{3}], {4}, {5}, {6}, {7}));\n",
                            in, quote(nodeName(op)), *x, *packed, wType.getDimSize(0),
                            hasBias ? operandPtr(bias) : "nullptr",
                            add ? operandPtr(residual) : "nullptr", v)
                  .str();
      stats.kernelCalls += depth == 1;
      return llvm::Error::success();
    }
    auto w = operandRef(op, lin.getWeight());
    if (!w)
      return w.takeError();
    body += llvm::formatv("{0}Tensor {1}{4}; // linear{2} -> {3}\n", in, v,
                          add ? " + residual" : "", describeType(lin.getType()), placed(result))
                .str();
    body += llvm::formatv("{0}LLMC_TRY(linear(m, m.k[{1}], {2}, {3}, {4}, {5}, {6}, {7}));\n", in,
                          kernelIndex("linear"), quote(nodeName(op)), *x, *w,
                          operandPtr(lin.getBias()), add ? operandPtr(residual) : "nullptr", v)
                .str();
    stats.kernelCalls += depth == 1;
    return llvm::Error::success();
  }
  // Transposes (not read in place), splits and concats of static shapes:
  // copy loops of their own.
  if (generatesCopy(op))
    return emitCopy(op, stats, depth);
  // Everything else: its reference kernel.
  if (!kernelFor(op))
    return makeError(nodeName(op) + ": no CPU kernel implements " + op->getName().getStringRef().str());
  int k = kernelIndex(name);
  auto a = attrIndex(op);
  if (!a)
    return a.takeError();
  std::vector<std::string> inputs, outputs;
  for (Value o : op->getOperands()) {
    if (!names.count(o))
      return makeError(nodeName(op) + ": an operand has no value");
    inputs.push_back(operandPtr(o));
  }
  uint64_t unwanted = 0;
  std::string decl;
  for (OpResult r : op->getResults()) {
    std::string v = newName();
    names[r] = v;
    outputs.push_back("&" + v);
    decl += (decl.empty() ? "" : ", ") + v + placed(r);
    if (r.use_empty() && r.getResultNumber() < 64)
      unwanted |= uint64_t(1) << r.getResultNumber();
  }
  std::string types = llvm::join(
      llvm::map_range(op->getResultTypes(), [](Type t) { return describeType(t); }), ", ");
  body += llvm::formatv("{0}Tensor {1}; // {2} -> {3}\n", in, decl, name, types).str();
  // Ops with a template in ModelSupport.h (same signature as call(), which
  // they fall back to).
  StringRef fn = llvm::StringSwitch<StringRef>(name)
                     .Case("rms_norm", "rmsNorm")
                     .Case("swiglu", "swiglu")
                     .Case("onnx.cast", "cast")
                     .Case("onnx.softmax", "softmax")
                     .Case("onnx.log_softmax", "logSoftmax")
                     .Case("flash_attention", "flashAttention")
                     .Default("call");
  body += llvm::formatv("{0}LLMC_TRY({7}(m, m.k[{1}], {2}, {{{3}}, {4}, {{{5}}{6}));\n", in, k,
                        quote(nodeName(op)), llvm::join(inputs, ", "),
                        *a < 0 ? std::string("nullptr") : llvm::formatv("&m.at[{0}]", *a).str(),
                        llvm::join(outputs, ", "),
                        unwanted ? ", " + std::to_string(unwanted) + "u" : std::string(), fn)
              .str();
  stats.kernelCalls += depth == 1;
  return llvm::Error::success();
}

