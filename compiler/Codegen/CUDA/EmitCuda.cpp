//===- EmitCuda.cpp - CUDA C++ from the compiled entry points --------------===//
//
// See EmitCuda.h. Each entry is emitted in program order into text whose
// arena addresses are placeholders ("@@B<n>@@", a buffer); once the entry is
// done, the buffers' lifetimes (first and last statement that touches them)
// give them offsets (first fit, 256-byte aligned) and the placeholders are
// replaced. Entries run one at a time per context, so they share one arena.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CUDA/EmitCuda.h"
#include "compiler/Codegen/CUDA/EmitCudaInternal.h"

#include "compiler/Executor/Error.h"
#include "dialects/LLM/IR/ShapeInference.h"
#include "passes/BuildHelpers.h"
#include "passes/KernelBridge.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::codegen;

namespace mlir::llmc::cudagen {

static bool isViewOrIdentity(Operation *op) {
  return isView(op) || shortName(op) == "onnx.identity";
}

llvm::Error CudaEmitter::emitBlock(Block &block, CpuModel::Entry &stats) {
  prepareBlock(block);
  return emitOps(block, stats);
}

void CudaEmitter::prepareBlock(Block &block) {
  // Transposes that only feed cache updates are folded into the writes.
  for (Operation &op : block.without_terminator())
    if (isa<CacheUpdateOp, QuantizedCacheUpdateOp>(&op) && !hasRunTimeShape(&op)) {
      Value update = isa<CacheUpdateOp>(&op) ? cast<CacheUpdateOp>(&op).getUpdate()
                                             : cast<QuantizedCacheUpdateOp>(&op).getUpdate();
      Operation *t = update.getDefiningOp();
      auto perm = t ? t->getAttrOfType<DenseI64ArrayAttr>("perm") : DenseI64ArrayAttr();
      if (t && shortName(t) == "onnx.transpose" && t->getBlock() == &block && perm &&
          perm.asArrayRef() == ArrayRef<int64_t>{0, 2, 1, 3} && t->getResult(0).hasOneUse()) {
        folded.insert(t);
        transposedUpdates[&op] = t->getOperand(0);
      }
    }
  // A static export's TensorScatter writes the session's cache in place
  // (codegen::inPlaceScatters), where the device takes it.
  for (auto [scatter, update] : codegen::inPlaceScatters(block))
    if (scatterOnDevice(scatter)) {
      scattersInPlace.insert(scatter);
      inPlaceUpdates.insert(update);
    }
  // A GELU-gated product read only by decode GEMVs (Gemma's GeGLU before
  // the down projection) is their prologue, as a SwiGLU is: neither the
  // GELU nor the product is a launch of its own (gatedGemv).
  for (Operation &op : block.without_terminator())
    if (GeluOp gelu = geluGate(&op); gelu && gelu->getBlock() == &block &&
                                     !hasRunTimeShape(&op) && foldsIntoGemv(&op)) {
      folded.insert(gelu);
      folded.insert(&op);
      foldedInputs[op.getResult(0)] = &op;
    }
  // Gemma's scaling of the embeddings (a Mul by sqrt(hidden)) is the
  // gather's: no launch of its own.
  for (Operation &op : block.without_terminator())
    if (isa<EmbeddingOp, QuantizedEmbeddingOp>(&op) && !hasRunTimeShape(&op))
      if (Operation *mul = embeddingScale(&op)) {
        embeddingScales[&op] = mul;
        folded.insert(mul);
      }
  // Runs of element-wise operations over floats, each result read only by
  // the next (of the same shape), become one kernel: the earlier ones are
  // emitted inside the last.
  for (SmallVector<Operation *> &chain : pointwiseRuns(block, [&](Operation *op) {
         return !folded.contains(op) && !hasRunTimeShape(op);
       })) {
    for (Operation *o : ArrayRef(chain).drop_back())
      folded.insert(o);
    chains[chain.back()] = std::move(chain);
  }
  // Two ropes (queries and keys), two cache writes (keys and values) or two
  // RMS norms (of the query and key heads) one after the other, with only
  // views between them, become one launch at the second: the first is
  // deferred to it. A rope pair right before a
  // cache-write pair of the same attention joins it (ropeCacheWrite).
  Operation *pending = nullptr, *lastPair = nullptr;
  for (Operation &op : block.without_terminator()) {
    if (folded.contains(&op) || isa<ConstantOp>(&op) || isView(&op) ||
        shortName(&op) == "onnx.identity" || inPlaceUpdates.contains(&op))
      continue;
    if (hasRunTimeShape(&op)) { // (a host step: nothing pairs across it)
      pending = lastPair = nullptr;
      continue;
    }
    if (pending && pairable(pending, &op)) {
      pairs[&op] = pending;
      folded.insert(pending);
      pending = nullptr;
      if (isa<RopeOp>(&op))
        ropeInt8IntoAttention(&op);
      if (lastPair && isa<CacheUpdateOp>(&op) && ropeCacheFusable(lastPair, &op)) {
        folded.insert(lastPair); // (ropeCaches[&op] says what joins it)
        ropeIntoAttention(&op);
        // Not a decode attention's: the heads' norms before the ropes join
        // this launch instead (a prefill's).
        if (!intoAttention.contains(&op)) {
          RopeCache &rc = ropeCaches.find(&op)->second;
          std::tie(rc.queriesNorm, rc.keysNorm) = headNormsBefore(rc.queries, rc.keys);
        }
      }
      lastPair = &op;
      continue;
    }
    // (The pair before stays "last" only for the first half of the next.)
    if (pending || !isa<CacheUpdateOp>(&op))
      lastPair = nullptr;
    pending = isa<RopeOp, CacheUpdateOp>(&op) || pairableNorm(&op) ? &op : nullptr;
  }
}

llvm::Error CudaEmitter::emitOps(Block &block, CpuModel::Entry &stats,
                                 const llvm::DenseSet<Operation *> *skip) {
  for (Operation &op : block.without_terminator())
    if (!folded.contains(&op) && !(skip && skip->contains(&op)))
      if (llvm::Error e = emitOnDeviceOrHost(&op, stats))
        return e;
  return llvm::Error::success();
}

bool CudaEmitter::tailApart(const LogitsTail &tail) {
  for (auto &[second, first] : pairs)
    if (tail.ops.contains(second) != tail.ops.contains(first))
      return false;
  for (auto &[last, chain] : chains)
    for (Operation *o : chain)
      if (tail.ops.contains(o) != tail.ops.contains(last))
        return false;
  return true;
}

llvm::Error CudaEmitter::emitTailAt(func::FuncOp f, const LogitsTail &tail, Value logits,
                                    int64_t rows, const std::string &first,
                                    CpuModel::Entry &stats) {
  Value h = tail.input;
  auto ht = cast<RankedTensorType>(h.getType());
  int64_t batch = ht.getDimSize(0), seq = ht.getDimSize(1);
  // [B, S, n] -> [B, rows, n]: the values along the rows (the operations'
  // results, and inside a fused region its row argument and results).
  auto atRows = [&](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (t && t.getRank() == 3 && t.getDimSize(0) == batch && t.getDimSize(1) == seq)
      v.setType(RankedTensorType::get({batch, rows, t.getDimSize(2)}, t.getElementType(),
                                      t.getEncoding()));
  };
  OpBuilder b(f.getContext());
  auto rowsType =
      RankedTensorType::get({batch, rows, ht.getDimSize(2)}, ht.getElementType(), ht.getEncoding());
  auto copy = b.create<func::FuncOp>(f.getLoc(), f.getSymName().str() + "_logits_rows",
                                     b.getFunctionType({rowsType}, {}));
  tailCopies.emplace_back(copy);
  Block *copied = copy.addEntryBlock();
  Value selected = copied->getArgument(0);
  IRMapping map;
  map.map(h, selected);
  OpBuilder in = OpBuilder::atBlockEnd(copied);
  for (Operation &op : f.getBody().front().without_terminator()) {
    if (!tail.ops.contains(&op))
      continue;
    Value row = map.lookup(op.getOperand(0));
    for (Value o : op.getOperands()) // (constants, and none: the weights)
      if (!map.contains(o))
        if (Operation *d = o.getDefiningOp(); d && d->getNumOperands() == 0)
          in.clone(*d, map);
    Operation *c = in.clone(op, map);
    atRows(c->getResult(0));
    if (auto fused = dyn_cast<FusedOp>(c)) {
      Block &inner = fused.getRegion().front();
      for (auto [arg, operand] : llvm::zip(inner.getArguments(), fused->getOperands()))
        if (operand == row)
          atRows(arg);
      for (Operation &o : inner.without_terminator())
        atRows(o.getResult(0));
    }
  }
  Value out = map.lookup(logits); // (read by the return: not dead)
  in.create<func::ReturnOp>(f.getLoc(), out);
  copy.setFunctionType(b.getFunctionType({rowsType}, {out.getType()}));

  define(selected);
  // (One position a sequence: read on the device, m.row, so that a
  // captured graph serves every prompt length.)
  statement(llvm::formatv("selectRows<{0}>({1}, {2}, {3}, {4}, {5}, {6}, a.stream)",
                          cxxType(ht.getElementType()), ptr(h), ptr(selected), batch, seq,
                          ht.getDimSize(2), rows == 1 ? "m.row, 0, 1" : "nullptr, " + first +
                                                                          ", " +
                                                                          std::to_string(rows))
                .str(),
            "the positions whose logits are asked for -> " + describeType(selected.getType()));
  ++stats.kernelCalls;
  if (llvm::Error e = emitBlock(*copied, stats))
    return e;
  if (!known(out))
    return makeError("@" + f.getSymName().str() + ": the logits' tail left no logits");
  body += llvm::formatv("  // the logits of these positions\n"
                        "  LLMC_CUDA_TRY(m.storeLogitRows({0}, {1}, {2}, a.stream));\n",
                        ptr(out), rows, first)
              .str();
  ++step;
  return llvm::Error::success();
}

llvm::Error CudaEmitter::emitLogitRows(func::FuncOp f, const LogitsTail &tail, Value logits,
                                       CpuModel::Entry &entry) {
  int64_t chunk = std::min(entry.seq, kLogitsChunk);
  body += "  if (a.rows == 1) { // one position a sequence\n";
  if (llvm::Error e = emitTailAt(f, tail, logits, 1, "a.row0", entry))
    return e;
  body += llvm::formatv("  } else {{ // chunks of up to {0} positions\n"
                        "  for (int64_t row = a.row0; row < a.row0 + a.rows; row += {0}) {{\n",
                        chunk)
              .str();
  CpuModel::Entry uncounted = entry; // (the launches counted are a prompt's: one position)
  if (llvm::Error e = emitTailAt(f, tail, logits, chunk, "row", uncounted))
    return e;
  body += "  }\n  }\n";
  // Every chunk selects from the hidden state: it lives to the loop's end.
  Buffer &hidden = buffers[size_t(refs.find(tail.input)->second.buffer)];
  hidden.last = std::max(hidden.last, step);
  logitsFloats = std::max(logitsFloats, entry.batch * chunk * model.vocab);
  return llvm::Error::success();
}

Operation *CudaEmitter::embeddingScale(Operation *gather) {
  Value y = gather->getResult(0);
  Operation *mul = y.hasOneUse() ? *y.getUsers().begin() : nullptr;
  if (!mul || shortName(mul) != "onnx.mul" || mul->getNumOperands() != 2 ||
      mul->getBlock() != gather->getBlock() || mul->getResult(0).getType() != y.getType())
    return nullptr;
  Value other = mul->getOperand(0) == y ? mul->getOperand(1) : mul->getOperand(0);
  if (other == y || !other.getDefiningOp<ConstantOp>() || !isStatic(other.getType()) ||
      numel(other) != 1 || cxxType(other.getType()) != cxxType(y.getType()))
    return nullptr;
  return mul;
}

bool CudaEmitter::pairable(Operation *first, Operation *second) {
  // Nothing reads first's results before second (they are made there).
  for (Value r : first->getResults())
    for (Operation *user : r.getUsers()) {
      Operation *at = second->getBlock()->findAncestorOpInBlock(*user);
      if (!at || !second->isBeforeInBlock(at))
        return false;
    }
  if (isa<RmsNormOp>(first)) {
    // The first norm's input must stay stored until the second (the memory
    // plan could otherwise give the second's output its place): both read
    // one buffer, as the query and key heads of one projection do.
    auto stored = [](Value v) {
      while (true) {
        v = outside(v);
        Operation *d = v.getDefiningOp();
        if (!d || !(isStorageView(d) || isViewOrIdentity(d)))
          return v;
        v = d->getOperand(0);
      }
    };
    auto a = cast<RmsNormOp>(first);
    auto b = dyn_cast<RmsNormOp>(second);
    return b && pairableNorm(b) && !a.getResult().use_empty() && !b.getResult().use_empty() &&
           stored(a.getX()) == stored(b.getX()) &&
           cxxType(a.getX().getType()) == cxxType(b.getX().getType()) &&
           cxxType(a.getWeight().getType()) == cxxType(b.getWeight().getType()) &&
           cxxType(a.getResult().getType()) == cxxType(b.getResult().getType()) &&
           shapeOf(a.getX()).back() == shapeOf(b.getX()).back();
  }
  if (auto a = dyn_cast<RopeOp>(first)) {
    auto b = dyn_cast<RopeOp>(second);
    // (A rope nothing reads is not emitted, and would take its pair along.)
    if (!b || a.getResult().use_empty() || b.getResult().use_empty() || !ropeSupported(a) ||
        !ropeSupported(b) || a.getCos() != b.getCos() ||
        a.getSin() != b.getSin() || a.getPositions() != b.getPositions() ||
        a.getRotaryDim() != b.getRotaryDim() || a.getInterleaved() != b.getInterleaved() ||
        cxxType(a.getX().getType()) != cxxType(b.getX().getType()) ||
        cxxType(a.getResult().getType()) != cxxType(a.getX().getType()) ||
        cxxType(b.getResult().getType()) != cxxType(b.getX().getType()))
      return false;
    auto as = shapeOf(a.getX()), bs = shapeOf(b.getX());
    return as[0] == bs[0] && as[1] == bs[1] && as[3] == bs[3];
  }
  auto a = dyn_cast<CacheUpdateOp>(first), b = dyn_cast<CacheUpdateOp>(second);
  if (!a || !b || a->getOperand(2) != b->getOperand(2) ||
      shapeOf(a->getOperand(0)) != shapeOf(b->getOperand(0)) ||
      cxxType(a->getOperand(0).getType()) != cxxType(b->getOperand(0).getType()))
    return false;
  CacheSource as = cacheUpdateSource(a), bs = cacheUpdateSource(b);
  return as.s == bs.s && cxxType(as.value.getType()) == cxxType(bs.value.getType());
}

bool CudaEmitter::ropeCacheFusable(Operation *ropes, Operation *caches) {
  auto r2 = dyn_cast<RopeOp>(ropes);
  auto r1 = r2 ? dyn_cast_or_null<RopeOp>(pairs.lookup(r2)) : RopeOp();
  auto c1 = dyn_cast_or_null<CacheUpdateOp>(pairs.lookup(caches));
  if (!r1 || !c1)
    return false;
  // Which write caches a roped value: the keys'; the other the values'.
  CacheSource s1 = cacheUpdateSource(c1), s2 = cacheUpdateSource(caches);
  auto isRoped = [&](Value v) { return v == r1.getResult() || v == r2.getResult(); };
  if (isRoped(s1.value) == isRoped(s2.value))
    return false;
  // The launch defines the ropes' results at `caches`: nothing but the two
  // writes (and transposes folded into them) may read them before.
  for (RopeOp r : {r1, r2})
    for (Operation *user : r.getResult().getUsers()) {
      Operation *at = caches->getBlock()->findAncestorOpInBlock(*user);
      bool intoWrites = at && folded.contains(at) && llvm::all_of(at->getUsers(), [&](Operation *u) {
                          return u == c1.getOperation() || u == caches;
                        });
      if (!at || !(at == c1.getOperation() || at == caches || caches->isBeforeInBlock(at) ||
                   intoWrites))
        return false;
    }
  Operation *keysWrite = isRoped(s1.value) ? c1.getOperation() : caches;
  CacheSource keys = isRoped(s1.value) ? s1 : s2, values = isRoped(s1.value) ? s2 : s1;
  RopeOp keysRope = keys.value == r1.getResult() ? r1 : r2;
  // The keys' write reads the rope's own [B, S, Hkv, D] layout, and one
  // element type runs through ropes, updates and caches.
  auto ks = shapeOf(keysRope.getX()), cs = shapeOf(keysWrite->getOperand(0));
  std::string t = cxxType(keysRope.getX().getType());
  if (!(ks.size() == 4 && cs.size() == 4 && ks[0] == cs[0] && ks[1] == keys.s &&
        ks[2] == cs[1] && ks[3] == cs[3] && keys.sb == ks[1] * ks[2] * ks[3] &&
        keys.ss == ks[2] * ks[3] && keys.sh == ks[3] &&
        cxxType(keysWrite->getOperand(0).getType()) == t &&
        cxxType(values.value.getType()) == t))
    return false;
  ropeCaches[caches] = {keysRope == r1 ? r2 : r1, keysRope, keysWrite};
  return true;
}

/// Whether every reader of v, through views and out of the (non-attention)
/// fused regions that yield it, is `reader`.
static bool readOnlyBy(Value v, Operation *reader) {
  return llvm::all_of(v.getUses(), [&](OpOperand &use) {
    Operation *u = use.getOwner();
    if (u == reader)
      return true;
    if (isViewOrIdentity(u))
      return readOnlyBy(u->getResult(0), reader);
    auto region = isa<YieldOp>(u) ? dyn_cast<FusedOp>(u->getParentOp()) : FusedOp();
    return region && region.getKind() != "attention" &&
           readOnlyBy(region->getResult(use.getOperandNumber()), reader);
  });
}

/// Where v is made: through views and into the fused regions that yield it.
static Value madeAt(Value v) {
  while (true) {
    v = outside(v);
    Operation *d = v.getDefiningOp();
    if (d && isViewOrIdentity(d)) {
      v = d->getOperand(0);
    } else if (auto region = dyn_cast_or_null<FusedOp>(d)) {
      v = cast<YieldOp>(region.getRegion().front().getTerminator())
              ->getOperand(cast<OpResult>(v).getResultNumber());
    } else {
      return v;
    }
  }
}

/// The next operation after op that launches anything: past constants,
/// views and operations folded into others (a transpose into a cache
/// write), and, when outOfRegions, out of the fused regions that end.
static Operation *nextLaunch(Operation *op, const llvm::DenseSet<Operation *> &folded,
                             bool outOfRegions) {
  Operation *next = op->getNextNode();
  while (next && (isa<ConstantOp>(next) || isViewOrIdentity(next) || folded.contains(next) ||
                  (outOfRegions && isa<YieldOp>(next) && isa<FusedOp>(next->getParentOp()))))
    next = isa<YieldOp>(next) ? next->getParentOp()->getNextNode() : next->getNextNode();
  return next;
}

void CudaEmitter::ropeIntoAttention(Operation *caches) {
  const RopeCache &rc = ropeCaches.find(caches)->second;
  Operation *first = pairs.lookup(caches);
  ropesIntoAttention(rc.queries, rc.keys, rc.keysWrite, rc.keysWrite == first ? caches : first,
                     caches);
}

void CudaEmitter::ropeInt8IntoAttention(Operation *ropes) {
  auto r2 = cast<RopeOp>(ropes), r1 = cast<RopeOp>(pairs.lookup(ropes));
  // The next two launches: int8 cache writes.
  auto w1 = dyn_cast_or_null<QuantizedCacheUpdateOp>(nextLaunch(ropes, folded, false));
  auto w2 = w1 ? dyn_cast_or_null<QuantizedCacheUpdateOp>(nextLaunch(w1, folded, false)) : nullptr;
  if (!w2)
    return;
  // Which writes the roped keys; the other writes values.
  CacheSource s1 = cacheUpdateSource(w1), s2 = cacheUpdateSource(w2);
  auto isRoped = [&](Value v) { return v == r1.getResult() || v == r2.getResult(); };
  if (isRoped(s1.value) == isRoped(s2.value))
    return;
  QuantizedCacheUpdateOp keysWrite = isRoped(s1.value) ? w1 : w2,
                         valuesWrite = isRoped(s1.value) ? w2 : w1;
  RopeOp keys = cacheUpdateSource(keysWrite).value == r1.getResult() ? r1 : r2;
  if (!ropesIntoAttention(keys == r1 ? r2 : r1, keys, keysWrite, valuesWrite, w2))
    return;
  folded.insert(ropes); // (the first rope is already: pairs)
}

bool CudaEmitter::ropesIntoAttention(RopeOp qr, RopeOp kr, Operation *keysWrite,
                                     Operation *valuesWrite, Operation *last) {
  auto xs = shapeOf(kr.getX()), cs = shapeOf(keysWrite->getOperand(0));
  std::string t = cxxType(kr.getX().getType());
  CacheSource keys = cacheUpdateSource(keysWrite), values = cacheUpdateSource(valuesWrite);
  bool int8 = isa<QuantizedCacheUpdateOp>(keysWrite);
  // One token; the keys' write reads the rope's [B, 1, Hkv, D] as it lies
  // (the kernel ropes the rope's input there); tables of the queries' type.
  if (xs[1] != 1 || keys.s != 1 || values.s != 1 || cs.size() != 4 || cs[0] != xs[0] ||
      cs[1] != xs[2] || cs[3] != xs[3] || keys.sb != xs[2] * xs[3] || keys.sh != xs[3] ||
      cxxType(kr.getCos().getType()) != t || cxxType(kr.getSin().getType()) != t ||
      cxxType(values.value.getType()) != t || cxxType(qr.getX().getType()) != t ||
      kr.getPositions() != qr.getPositions() || keysWrite->getOperand(int8 ? 3 : 2) !=
                                                      valuesWrite->getOperand(int8 ? 3 : 2))
    return false;
  // The next launch, out of the fused regions that end here.
  auto fused = dyn_cast_or_null<FusedOp>(nextLaunch(last, folded, true));
  Value result;
  DecodeAttentionPartialOp partial = fused ? decodeAttentionOf(fused, result) : nullptr;
  if (!partial || partial->getNumOperands() != (int8 ? 6u : 4u))
    return false;
  Value q = outside(partial->getOperand(0));
  if (madeAt(q) != qr.getResult() || madeAt(partial->getOperand(1)) != keysWrite->getResult(0) ||
      madeAt(partial->getOperand(2)) != valuesWrite->getResult(0) ||
      madeAt(partial->getOperand(3)) != madeAt(keysWrite->getOperand(int8 ? 3 : 2)) ||
      (int8 && (madeAt(partial->getOperand(4)) != keysWrite->getResult(1) ||
                madeAt(partial->getOperand(5)) != valuesWrite->getResult(1))) ||
      cxxType(q.getType()) != t || shapeOf(q).back() != xs[3] ||
      numel(q) != numel(qr.getResult()))
    return false;
  // Nothing else reads the roped queries, and the roped keys only the
  // keys' write (or a transpose folded into it).
  if (!readOnlyBy(qr.getResult(), fused))
    return false;
  for (Operation *u : kr.getResult().getUsers())
    if (u != keysWrite && !(folded.contains(u) && llvm::all_of(u->getUsers(), [&](Operation *w) {
                              return w == keysWrite;
                            })))
      return false;
  attentionRopes[fused] = {qr, kr, keysWrite, valuesWrite, {}, {}};
  headNormsIntoAttention(fused);
  unstored.insert(qr.getResult());
  unstored.insert(kr.getResult());
  intoAttention.insert(keysWrite);
  intoAttention.insert(valuesWrite);
  return true;
}

std::pair<RmsNormOp, RmsNormOp> CudaEmitter::headNormsBefore(RopeOp queries, RopeOp keys) {
  auto normBefore = [&](RopeOp r) -> RmsNormOp {
    Value x = r.getX();
    while (Operation *d = x.getDefiningOp()) {
      if (!isViewOrIdentity(d))
        break;
      x = d->getOperand(0);
    }
    auto n = x.getDefiningOp<RmsNormOp>();
    std::string t = cxxType(r.getX().getType());
    if (!n || !isStatic(n.getX().getType()) || shapeOf(n.getX()).back() != shapeOf(r.getX()).back() ||
        numel(n.getX()) != numel(r.getX()) || cxxType(n.getX().getType()) != t ||
        cxxType(n.getWeight().getType()) != t || cxxType(n.getResult().getType()) != t ||
        !readOnlyBy(n.getResult(), r))
      return {};
    return n;
  };
  RmsNormOp qn = normBefore(queries), kn = normBefore(keys);
  if (!qn || !kn || qn == kn)
    return {};
  // Paired (rmsNormPair) with nothing but each other: a pair's launch at
  // its second norm would write the first's result too.
  for (auto [second, first] : pairs)
    for (Operation *n : {qn.getOperation(), kn.getOperation()})
      if ((second == n || first == n) &&
          !llvm::is_contained({qn.getOperation(), kn.getOperation()}, second == n ? first : second))
        return {};
  for (RmsNormOp n : {qn, kn}) {
    folded.insert(n);
    unstored.insert(n.getResult());
  }
  return {qn, kn};
}

void CudaEmitter::headNormsIntoAttention(Operation *fused) {
  AttentionRopes &ar = attentionRopes.find(fused)->second;
  std::tie(ar.queriesNorm, ar.keysNorm) = headNormsBefore(ar.queries, ar.keys);
}

bool CudaEmitter::ropePositionsPerBatch(RopeOp r) {
  auto xs = shapeOf(r.getX()), ps = shapeOf(r.getPositions());
  return ps.size() == 2 && ps[0] == xs[0] && xs[0] > 1;
}

int64_t CudaEmitter::planArena(std::string &text) {
  // First fit over the buffers in order of creation (their first use).
  struct Placed {
    int64_t offset, end;
    int last;
  };
  std::vector<Placed> live;
  int64_t top = 0;
  for (Buffer &b : buffers) {
    llvm::erase_if(live, [&](const Placed &p) { return p.last < b.first; });
    llvm::sort(live, [](const Placed &x, const Placed &y) { return x.offset < y.offset; });
    int64_t size = (b.bytes + 255) / 256 * 256, at = 0;
    for (const Placed &p : live) {
      if (p.offset - at >= size)
        break;
      at = std::max(at, p.end);
    }
    b.offset = at;
    live.push_back({at, at + size, b.last});
    top = std::max(top, at + size);
  }
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("@@B", pos);
    if (open == std::string::npos)
      break;
    size_t close = text.find("@@", open + 3);
    out += text.substr(pos, open - pos);
    int id = std::stoi(text.substr(open + 3, close - open - 3));
    out += std::to_string(buffers[size_t(id)].offset);
    pos = close + 2;
  }
  out += text.substr(pos);
  text = std::move(out);
  return top;
}

llvm::Error CudaEmitter::emitFunction(func::FuncOp f) {
  std::string fname = f.getSymName().str();
  llvm::Expected<EntrySignature> sig = entrySignature(f, /*allowI32Tokens=*/true);
  if (!sig)
    return sig.takeError();
  CpuModel::Entry entry = sig->entry;
  maxTokens = std::max(maxTokens, entry.batch * entry.seq);
  refs.clear();
  buffers.clear();
  segmented.clear(); // (by buffer number: each entry numbers its own)
  hostNames.clear();
  step = 0;
  body.clear();
  refs[f.getArgument(0)] = Ref{Ref::Tokens};
  if (sig->tokens32) {
    // The model takes i32 ids (onnxruntime's fused GPT-2, for one); the
    // interface's are i64, checked against the vocabulary before the
    // step: a generated kernel narrows them into the arena first.
    Value ids = f.getArgument(0);
    SmallVector<int64_t> strides = contiguousStrides(shapeOf(ids));
    define(ids);
    statement(generated("tokens: the interface's i64 ids as the model's i32", shapeOf(ids),
                        {{Access{"int64_t", strides, 0}, "a.tokens"}},
                        Access{"int32_t", strides, 0}, ptr(ids), "x0"),
              "tokens -> " + describeType(ids.getType()));
    ++entry.kernelCalls;
  }
  refs[f.getArgument(1)] = Ref{Ref::Pos};
  for (unsigned i = 2; i < f.getNumArguments(); ++i) {
    Ref r;
    r.kind = Ref::Cache;
    r.cache = int(i - 2);
    refs[f.getArgument(i)] = r;
    // (Read whole by another operation: at the compiled capacity only.)
    anyCapacity = anyCapacity && readsCapacityAtRunTime(f.getArgument(i));
  }
  if (llvm::Error e = takeCaches(model, sig->caches, fname))
    return e;

  Block &block = f.getBody().front();
  prepareBlock(block);
  // A prefill's logits' tail runs apart, on the positions asked for
  // (emitLogitRows), when the hidden state it reads is stored.
  std::optional<LogitsTail> tail = logitsTail(f, entry.batch, entry.seq);
  bool rowsApart = tail && entry.seq > 1 && tailApart(*tail);
  if (llvm::Error e = emitOps(block, entry, rowsApart ? &tail->ops : nullptr))
    return e;
  if (rowsApart) {
    auto h = refs.find(tail->input);
    if (h == refs.end() || h->second.kind != Ref::Arena) {
      rowsApart = false; // (the tail as it is, after everything else)
      for (Operation &op : block.without_terminator())
        if (tail->ops.contains(&op) && !folded.contains(&op))
          if (llvm::Error e = emitOnDeviceOrHost(&op, entry))
            return e;
    }
  }
  entry.logitsRows = tail && (entry.seq == 1 || rowsApart);
  logitRowsOnDevice.push_back(rowsApart);
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  bool haveLogits = false;
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    auto n = f.getResultAttrOfType<StringAttr>(i, "llm.name");
    Value v = ret.getOperand(i);
    if (n && n.getValue() == "logits") {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      // (Made on the host, their positions may have a run-time size: the
      // upload checks it is the entry's.)
      bool host = !refs.count(v) && hostNames.count(v);
      auto fits = [&](unsigned i, int64_t want) {
        return t.getDimSize(i) == want || (host && t.isDynamicDim(i));
      };
      if (!t || t.getRank() != 3 || !fits(0, entry.batch) || !fits(1, entry.seq) ||
          t.isDynamicDim(2) || !isFloatType(t))
        return makeError("@" + fname + ": the logits must be a static float [batch, seq, vocab]");
      if (model.vocab && model.vocab != t.getDimSize(2))
        return makeError("@" + fname + ": the vocabulary differs between entry points");
      model.vocab = t.getDimSize(2);
      if (rowsApart) {
        if (llvm::Error e = emitLogitRows(f, *tail, v, entry))
          return e;
        haveLogits = true;
        continue;
      }
      if (host)
        uploadAs(v, {entry.batch, entry.seq, model.vocab}, "the logits");
      if (known(v)) {
        body += "  // the logits, to the host as f32\n";
        body += llvm::formatv("  LLMC_CUDA_TRY(m.storeLogitRows({0}, {1}, 0, a.stream));\n",
                              ptr(v), entry.seq)
                    .str();
        ++step;
      }
      logitsFloats = std::max(logitsFloats, entry.batch * entry.seq * model.vocab);
      haveLogits = true;
      continue;
    }
    Value c = cacheSource(v);
    auto arg = dyn_cast<BlockArgument>(c);
    if (!n || !arg || arg.getOwner() != &block || arg.getArgNumber() < 2 ||
        sig->caches[arg.getArgNumber() - 2].name != n.getValue())
      return makeError("@" + fname + ": result " + std::to_string(i) +
                       " is neither the logits nor an in-place update of its cache");
  }
  if (!haveLogits)
    return makeError("@" + fname + " returns no logits");
  int64_t arena = planArena(body);
  arenaBytes = std::max(arenaBytes, arena);
  entry.arenaBytes = arena;
  std::string text;
  text += llvm::formatv("// {0}: tokens i64[{1}, {2}], arena {3} bytes\n", fname, entry.batch,
                        entry.seq, arena)
              .str();
  text += "std::string Model::" + fname + "(Model &m, const Args &a) {\n" + body +
          "  return {};\n}\n\n";
  entries += text;
  entry.weightBytesRead = weightBytesRead(f);
  model.entries.push_back(entry);
  return llvm::Error::success();
}

llvm::Expected<CpuModel> CudaEmitter::run(llvm::StringRef version) {
  SmallVector<func::FuncOp> funcs = entryFunctionsInOrder(module);
  if (funcs.empty())
    return makeError("the module has no functions");
  for (func::FuncOp f : funcs)
    if (llvm::Error e = emitFunction(f))
      return std::move(e);
  if (!missing.empty())
    return makeError("the CUDA target has no kernel yet for " + std::to_string(missing.size()) +
                     " operation(s): " + llvm::join(missing, "; "));
  if (llvm::none_of(model.entries, [](const CpuModel::Entry &e) { return e.decode; }))
    return makeError("the module has no decode entry point");
  model.target = "cuda";
  // Every kernel takes the capacity at run time, but a host step that
  // reads a cache whole (or a device kernel reading it as a tensor) needs
  // the compiled one.
  model.anyCapacity = anyCapacity;
  model.numWeights = int64_t(model.blobs.size());
  finishWeights(model);

  std::string s;
  llvm::raw_string_ostream os(s);
  os << "// Generated by llmc " << version << " (llmc compile --target cuda). Do not edit.\n"
     << "//\n// Built by nvcc into libmodel.so and by the host compiler against the CUDA\n"
     << "// emulation into libmodel-emulated.so. Entry points (model_abi.h):\n";
  writeEntryComment(os, model);
  os << "// Caches: " << model.caches.size() << " on the device; weights.bin "
     << model.weights.size() << " bytes, sha256 " << model.weightsSha256 << "; arena "
     << arenaBytes << " bytes\n\n"
     << "#include \"runtime/src/model/cuda/DeviceModel.h\"\n"
     << (model.hostOperations.empty() ? ""
                                      : "#include \"runtime/src/model/cuda/HostSteps.h\"\n")
     << "\n"
     << "namespace {\nusing namespace llmc::cuda;\nusing namespace llmc::cuda::model;\n\n"
     << "// Kernels written from the model's element-wise operations.\n"
     << kernels << "\n"
     << "struct Model final : DeviceContext {\n";
  for (const CpuModel::Entry &e : model.entries)
    os << "  static std::string " << e.name << "(Model &m, const Args &a);\n";
  os << "\n";
  writeAbiTables(os, model, "std::string");
  os << "  static constexpr uint64_t kArenaBytes = " << arenaBytes << ";\n"
     << "  static constexpr int64_t kLogitsFloats = " << logitsFloats << ";\n"
     << "  // Per entry: a prefill whose one-position logits tail reads the position on\n"
     << "  // the device (DeviceModel.h captures it as a graph for any prompt length).\n"
     << "  static inline const bool kLogitRows[] = {"
     << llvm::join(llvm::map_range(logitRowsOnDevice, [](bool b) { return b ? "true" : "false"; }),
                   ", ")
     << "};\n"
     << "  static constexpr int64_t kMaxTokens = " << maxTokens << ";\n"
     << "  static constexpr size_t kNumAsserts = " << assertMessages.size() << ";\n"
     << "  static constexpr bool kHostSteps = " << (model.hostOperations.empty() ? "false" : "true")
     << ";\n"
     << "  static constexpr int32_t kAnyCapacity = " << (anyCapacity ? 1 : 0) << ";\n"
     << "  static inline const char *const kAssertMessages[] = {"
     << (assertMessages.empty()
             ? std::string("\"\"")
             : llvm::join(llvm::map_range(assertMessages, [](const std::string &m) { return quote(m); }),
                          ", "))
     << "};\n"
     << "};\n\n"
     << (hostAttributeText.empty() ? ""
                                   : "// The host steps' attributes.\n" + hostAttributeText + "\n")
     << entries << "} // namespace\n\n"
     << "extern \"C\" __attribute__((visibility(\"default\"))) const llmc_model_abi *"
        "llmc_model_abi_v1(void) {\n"
     << "  static const llmc_model_abi abi = {\n"
     << "      LLMC_MODEL_ABI_VERSION, " << quote(version) << ", " << quote(model.weightsSha256)
     << ",\n"
     << "      Model::kWeightsBytes, Model::kVocab, Model::kNumEntries, Model::kEntries,\n"
     << "      Model::kNumCaches, Model::kCaches, &Glue<Model>::create, &Glue<Model>::destroy,\n"
     << "      &Glue<Model>::run, Model::kAnyCapacity, &Glue<Model>::runAtCapacity,\n"
     << "      LLMC_BUFFERS_DEVICE,\n"
     << "      LLMC_CUDA_EMULATED ? \"cuda-emulated\" : \"cuda\", &Glue<Model>::cacheAlloc,\n"
     << "      &Glue<Model>::cacheFree, &Glue<Model>::runGreedy, &Glue<Model>::runRows, nullptr,\n"
     << "      &Glue<Model>::runSample};\n"
     << "  return &abi;\n}\n";
  model.source = std::move(s);
  return std::move(model);
}

} // namespace mlir::llmc::cudagen

llvm::Expected<CpuModel> mlir::llmc::emitCudaModel(ModuleOp module, llvm::StringRef llmcVersion) {
  return cudagen::CudaEmitter(module).run(llmcVersion);
}
