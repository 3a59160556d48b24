//===- InsertKvCache.cpp - prefill/decode over a static KV cache ----------===//
//
// Clones the raised `main` into `prefill` and `decode`, binds its inputs to
// (tokens, start_pos, caches), rewrites every attention over past ++ new
// keys into a cache update and an attention over the cache, and returns the
// logits and the updated caches. See Passes.td for the contract.
//
//===----------------------------------------------------------------------===//
#include "passes/BuildHelpers.h"
#include "passes/Passes.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::llmc {
#define GEN_PASS_DEF_INSERTKVCACHEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

StringRef nameOfArg(func::FuncOp f, unsigned i) {
  auto n = f.getArgAttrOfType<StringAttr>(i, "llm.name");
  return n ? n.getValue() : StringRef();
}

/// One attention over past ++ new keys and values (or new ones only).
struct CachedLayer {
  AttentionOp attn;
  Value pastK, pastV; // null for a stateless export
  Value newK, newV;   // [B, Hkv, S, D]
};

/// A past input whose own cache IO the entry points keep (the fallback):
/// `fixed` when the present has the past's length (a static cache the
/// model writes itself), else it grows by the new rows.
struct OwnCache {
  Value past;
  unsigned result;
  bool fixed;
};

/// `x` when `v` is Transpose(x, 0, 2, 1, 3).
Value fromBshd(Value v) {
  auto t = v.getDefiningOp<OnnxTransposeOp>();
  if (!t || !t.getPerm() || *t.getPerm() != ArrayRef<int64_t>{0, 2, 1, 3})
    return {};
  return t.getData();
}

/// (past, new) when `x` is Concat(past, new) on the sequence axis; (null,
/// x) otherwise.
std::pair<Value, Value> splitConcat(Value x) {
  if (Operation *c = x.getDefiningOp(); c && shortName(c) == "onnx.concat" &&
                                        c->getNumOperands() == 2) {
    auto axis = c->getAttrOfType<IntegerAttr>("axis");
    if (axis && (axis.getInt() == 2 || axis.getInt() == -2))
      return {c->getOperand(0), c->getOperand(1)};
  }
  return {Value(), x};
}

struct InsertKvCachePass : mlir::llmc::impl::InsertKvCachePassBase<InsertKvCachePass> {
  using InsertKvCachePassBase::InsertKvCachePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main) {
      module.emitError("llmc-insert-kv-cache: the module has no main function");
      return signalPassFailure();
    }
    if (maxSeq <= 0) {
      module.emitError("llmc-insert-kv-cache: max-seq must be positive");
      return signalPassFailure();
    }
    for (auto [name, decode] : {std::pair{"prefill", false}, std::pair{"decode", true}}) {
      func::FuncOp f = main.clone();
      f.setSymName(name);
      module.insert(Block::iterator(main), f);
      if (failed(rewrite(f, decode)))
        return signalPassFailure();
    }
    main.erase();
  }

  /// Erases operations nothing reads, last first.
  static void eraseDead(func::FuncOp f) {
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<Operation *> ops;
      f.walk([&](Operation *op) { ops.push_back(op); });
      for (Operation *op : llvm::reverse(ops))
        if (isa<LLMDialect>(op->getDialect()) && op->getNumResults() > 0 && isOpTriviallyDead(op)) {
          op->erase();
          changed = true;
        }
    }
  }

  LogicalResult rewrite(func::FuncOp f, bool decode) {
    Block &body = f.getBody().front();
    Location loc = f.getLoc();
    // The inputs by role.
    int tokensArg = -1, positionsArg = -1, maskArg = -1;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      StringRef n = nameOfArg(f, i);
      if (n == "input_ids")
        tokensArg = int(i);
      else if (n == "position_ids")
        positionsArg = int(i);
      else if (n == "attention_mask")
        maskArg = int(i);
    }
    if (tokensArg < 0)
      return f.emitError("llmc-insert-kv-cache: no input_ids input");
    Value tokens = f.getArgument(unsigned(tokensArg));
    MaybeShape tokenShape = getShape(tokens.getType());
    if (!tokenShape || tokenShape->size() != 2)
      return f.emitError("llmc-insert-kv-cache: input_ids must be [batch, sequence]");
    // The model's own reads of the tokens (a stateless fallback rebinds them).
    SmallVector<OpOperand *> tokenUses;
    for (OpOperand &use : tokens.getUses())
      tokenUses.push_back(&use);

    // The attentions, with their keys and values.
    SmallVector<CachedLayer> layers;
    SmallVector<std::pair<AttentionOp, const char *>> kept; // and why
    WalkResult walk = f.walk([&](AttentionOp a) -> WalkResult {
      // One llmc's cache cannot serve stays as it is: its past and present
      // are then the model's own cache IO (below).
      if (!a.getCausal()) {
        kept.push_back({a, "not causal"});
        return WalkResult::advance();
      }
      if (!isNone(a.getMask()) && !readsOnly(a.getMask(), maskArg)) {
        kept.push_back({a, "a mask other than the attention mask's padding"});
        return WalkResult::advance();
      }
      // Keys are [B, T, H, D]: a transposed [B, H, T, D] (past ++ new, or
      // new), or new keys as they are (a stateless export whose transposes
      // cancelled): those are transposed for the cache here.
      auto bhsd = [&](Value x) -> Value {
        if (Value inner = fromBshd(x))
          return inner;
        OpBuilder xb(a);
        return createOp<OnnxTransposeOp>(
            xb, a.getLoc(), {x}, {xb.getNamedAttr("perm", xb.getDenseI64ArrayAttr({0, 2, 1, 3}))});
      };
      Value kx = bhsd(a.getK()), vx = bhsd(a.getV());
      CachedLayer l{a, {}, {}, {}, {}};
      std::tie(l.pastK, l.newK) = splitConcat(kx);
      std::tie(l.pastV, l.newV) = splitConcat(vx);
      if (bool(l.pastK) != bool(l.pastV) || getShape(l.newK.getType())->size() != 4)
        return a.emitError("llmc-insert-kv-cache: keys and values do not come alike");
      layers.push_back(l);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    // The model's own cache IO where no recognised attention owns it: a past
    // input and the present output computed from it.
    SmallVector<OwnCache> ownCaches = ownCacheIO(f, layers);
    // Nothing to keep between steps (a stateless export whose attention was
    // not recognised): the fallback keeps the tokens instead, in a cache of
    // their ids (f32, exact to 2^24), and every step runs the model over
    // all of them, returning the logits of the new ones.
    bool history = layers.empty() && ownCaches.empty();
    // A kept attention must otherwise read its earlier keys from a past
    // input of the model's own cache IO.
    for (auto [a, why] : history ? decltype(kept)() : kept) {
      bool fromOwn = false;
      SmallVector<Value> work{a.getK()};
      llvm::DenseSet<Value> seen;
      while (!work.empty() && !fromOwn) {
        Value w = work.pop_back_val();
        if (!seen.insert(w).second)
          continue;
        if (isa<BlockArgument>(w)) {
          fromOwn = llvm::any_of(ownCaches, [&](const OwnCache &own) { return own.past == w; });
          continue;
        }
        for (Value o : w.getDefiningOp()->getOperands())
          work.push_back(o);
      }
      if (!fromOwn)
        return a.emitError("llmc-insert-kv-cache: this attention cannot use llmc's cache (")
               << why << ") and reads no past input of the model's own cache IO";
    }

    // New inputs: start_pos and the caches, at the end.
    OpBuilder b = OpBuilder::atBlockBegin(&body);
    MLIRContext *ctx = f.getContext();
    auto i64Scalar = RankedTensorType::get({}, b.getI64Type());
    unsigned startIndex = f.getNumArguments();
    (void)f.insertArgument(startIndex, i64Scalar,
                           b.getDictionaryAttr(b.getNamedAttr("llm.name", b.getStringAttr("start_pos"))),
                           loc);
    Value start = f.getArgument(startIndex);
    SmallVector<Value> cachesK, cachesV;
    for (auto [i, l] : llvm::enumerate(layers)) {
      for (bool isKey : {true, false}) {
        Value n = isKey ? l.newK : l.newV;
        Shape shape = *getShape(n.getType());
        shape[0] = (*tokenShape)[0];
        shape[2] = Dim::fixed(maxSeq);
        Type type = makeTensorType(shape, getElementTypeOrSelf(n.getType()));
        std::string name = std::string("cache.") + (isKey ? "k." : "v.") + std::to_string(i);
        unsigned idx = f.getNumArguments();
        (void)f.insertArgument(idx, type,
                               b.getDictionaryAttr(b.getNamedAttr("llm.name", b.getStringAttr(name))),
                               loc);
        (isKey ? cachesK : cachesV).push_back(f.getArgument(idx));
      }
    }

    // The token history: [B, 1, max-seq, 1] ids, kept f32 whatever the dtype.
    Value historyArg;
    if (history) {
      unsigned idx = f.getNumArguments();
      Shape shape{(*tokenShape)[0], Dim::fixed(1), Dim::fixed(maxSeq), Dim::fixed(1)};
      (void)f.insertArgument(
          idx, makeTensorType(shape, b.getF32Type()),
          b.getDictionaryAttr({b.getNamedAttr("llm.name", b.getStringAttr("cache.tokens")),
                               b.getNamedAttr("llm.keep_f32", b.getUnitAttr())}),
          loc);
      historyArg = f.getArgument(idx);
    }

    // The model's own caches: [B, H, max-seq, D] like llmc's (a static one
    // of a fixed length keeps it), named after the past input.
    SmallVector<Value> ownCacheArgs;
    for (const OwnCache &own : ownCaches) {
      Value past = own.past;
      Shape shape = *getShape(past.getType());
      shape[0] = (*tokenShape)[0];
      if (!own.fixed || !shape[2].isStatic())
        shape[2] = Dim::fixed(maxSeq);
      if (shape[2].size != maxSeq && !layers.empty())
        return f.emitError("llmc-insert-kv-cache: the model's own static cache '")
               << nameOfArg(f, cast<BlockArgument>(past).getArgNumber()) << "' holds "
               << shape[2].size << " positions and llmc's caches " << maxSeq
               << ": compile with a capacity (--max-seq) of " << shape[2].size;
      unsigned idx = f.getNumArguments();
      std::string name = "cache.io." + nameOfArg(f, cast<BlockArgument>(past).getArgNumber()).str();
      (void)f.insertArgument(
          idx, makeTensorType(shape, getElementTypeOrSelf(past.getType())),
          b.getDictionaryAttr(b.getNamedAttr("llm.name", b.getStringAttr(name))), loc);
      ownCacheArgs.push_back(f.getArgument(idx));
    }

    // Past inputs and their caches (recorded now: the ops that read them
    // may be erased below, the arguments stay).
    llvm::DenseMap<Value, std::pair<Value, bool>> pastToCache; // arg -> (cache, stacked?)
    for (auto [i, l] : llvm::enumerate(layers))
      for (auto [past, cache] : {std::pair{l.pastK, cachesK[i]}, std::pair{l.pastV, cachesV[i]}})
        if (past && isa<BlockArgument>(past))
          pastToCache[past] = {cache, false};
    for (auto [i, own] : llvm::enumerate(ownCaches)) {
      if (own.fixed) // the whole cache, as the model reads it
        own.past.replaceAllUsesWith(ownCacheArgs[i]);
      else
        pastToCache[own.past] = {ownCacheArgs[i], false};
    }

    // Sizes and bound inputs.
    auto sizeOf = [&](Value x, int64_t d) {
      Value shape = createOp<OnnxShapeOp>(b, loc, {x});
      return createOp<OnnxGatherOp>(b, loc, {shape, i64Constant(b, loc, {d}, true)});
    };
    auto vec1 = [&](Value scalar) {
      return createOp<OnnxUnsqueezeOp>(b, loc, {scalar, i64Constant(b, loc, {0})});
    };
    Value batch = sizeOf(tokens, 0), seq = sizeOf(tokens, 1);
    Value total = createOp<OnnxAddOp>(b, loc, {start, seq});
    auto concat0 = b.getNamedAttr("axis", b.getI64IntegerAttr(0));
    // The stateless fallback: the new ids into the history at start_pos,
    // the model reads all start_pos + S of them (positions from 0).
    Value historyResult, posStart = start, posCount = seq;
    if (history) {
      auto keep = b.getNamedAttr("llm.keep_f32", b.getUnitAttr());
      Value axes = i64Constant(b, loc, {1, 3});
      Value rows = createOp<OnnxCastOp>(
          b, loc, {createOp<OnnxUnsqueezeOp>(b, loc, {tokens, axes})},
          {b.getNamedAttr("to", b.getI64IntegerAttr(1)), keep});
      historyResult = createOp<CacheUpdateOp>(b, loc, {historyArg, rows, start}, {keep});
      Value all = createOp<CacheReadOp>(b, loc, {historyResult, total}, {keep});
      Type element = getElementTypeOrSelf(tokens.getType());
      Value ids = createOp<OnnxCastOp>(
          b, loc, {createOp<OnnxSqueezeOp>(b, loc, {all, axes}, {keep})},
          {b.getNamedAttr("to", b.getI64IntegerAttr(element.isInteger(32) ? 6 : 7))});
      for (OpOperand *use : tokenUses)
        use->set(ids);
      posStart = i64Constant(b, loc, {0}, true), posCount = total;
    }
    if (positionsArg >= 0) {
      Value arg = f.getArgument(unsigned(positionsArg));
      // start_pos + range(S): static once S is (a range from start_pos
      // would not be).
      Value steps = createOp<OnnxRangeOp>(
          b, loc, {i64Constant(b, loc, {0}, true), posCount, i64Constant(b, loc, {1}, true)});
      Value row = createOp<OnnxUnsqueezeOp>(
          b, loc, {createOp<OnnxAddOp>(b, loc, {steps, posStart}), i64Constant(b, loc, {0})});
      Value shape = createOp<OnnxConcatOp>(b, loc, {vec1(batch), vec1(posCount)}, {concat0});
      Value positions = createOp<OnnxExpandOp>(b, loc, {row, shape});
      Type element = getElementTypeOrSelf(arg.getType());
      if (!element.isInteger(64))
        positions = createOp<OnnxCastOp>(
            b, loc, {positions},
            {b.getNamedAttr("to", b.getI64IntegerAttr(element.isInteger(32) ? 6 : 7))});
      arg.replaceAllUsesWith(positions);
    }
    if (maskArg >= 0) {
      // Ones over every key: start_pos + S (or S for a stateless export,
      // whose mask covers the tokens it is given).
      Value arg = f.getArgument(unsigned(maskArg));
      MaybeShape ms = getShape(arg.getType());
      bool sameAsTokens = ms && ms->size() == 2 && (*ms)[1].name &&
                          (*ms)[1].name == (*tokenShape)[1].name;
      bool anyPast = llvm::any_of(ownCaches, [](const OwnCache &o) { return !o.fixed; }) ||
                     (!layers.empty() && layers[0].pastK);
      Value keys = history || (anyPast && !sameAsTokens) ? total : seq;
      Value shape = createOp<OnnxConcatOp>(b, loc, {vec1(batch), vec1(keys)}, {concat0});
      Type element = getElementTypeOrSelf(arg.getType());
      Value one = b.create<ConstantOp>(
                       loc, DenseElementsAttr::get(RankedTensorType::get({}, element),
                                                   element.isInteger(32)
                                                       ? Attribute(b.getI32IntegerAttr(1))
                                                       : Attribute(b.getI64IntegerAttr(1))))
                      .getResult();
      arg.replaceAllUsesWith(createOp<OnnxExpandOp>(b, loc, {one, shape}));
    }

    // A static cache the model keeps writes at indices and counts valid keys
    // from inputs of its own: those that feed TensorScatter's write indices
    // and Attention's nonpad_kv_seqlen take the roles the raise gives them
    // when it recognises the attention; so do inputs named like those
    // operands (an attention written out reads its valid length in ops
    // that say nothing of it).
    if (llvm::any_of(ownCaches, [](const OwnCache &o) { return o.fixed; }))
      for (unsigned i = 0; i < startIndex; ++i) {
        Value arg = f.getArgument(i);
        if (f.getArgAttr(i, "llm.role") || !getElementTypeOrSelf(arg.getType()).isInteger())
          continue;
        std::string lower = nameOfArg(f, i).lower();
        if (StringRef(lower).contains("write_ind"))
          f.setArgAttr(i, "llm.role", b.getStringAttr("write_indices"));
        else if (StringRef(lower).contains("nonpad") || StringRef(lower).contains("kv_seqlen"))
          f.setArgAttr(i, "llm.role", b.getStringAttr("kv_valid_length"));
        for (Operation *user : arg.getUsers()) {
          Operation *reader = user;
          if (shortName(user) == "onnx.cast" && user->getResult(0).hasOneUse())
            reader = *user->getResult(0).getUsers().begin();
          Value through = reader == user ? arg : user->getResult(0);
          StringRef n = shortName(reader);
          if (n == "onnx.tensor_scatter" && reader->getNumOperands() > 2 &&
              reader->getOperand(2) == through)
            f.setArgAttr(i, "llm.role", b.getStringAttr("write_indices"));
          else if (n == "onnx.attention" && reader->getNumOperands() > 6 &&
                   reader->getOperand(6) == through)
            f.setArgAttr(i, "llm.role", b.getStringAttr("kv_valid_length"));
        }
      }

    // Inputs llmc-raise-transformer gave a role (a static-cache export's
    // write indices and valid key lengths): every sequence writes at
    // start_pos and has start_pos + S valid keys.
    for (unsigned i = 0; i < startIndex; ++i) {
      auto role = f.getArgAttrOfType<StringAttr>(i, "llm.role");
      if (!role)
        continue;
      Value arg = f.getArgument(i);
      Value value = role.getValue() == "write_indices"     ? start
                    : role.getValue() == "kv_valid_length" ? total
                                                           : Value();
      if (!value)
        return f.emitError("llmc-insert-kv-cache: input '")
               << nameOfArg(f, i) << "' has the unknown role '" << role.getValue() << "'";
      Value perSequence = createOp<OnnxExpandOp>(b, loc, {value, vec1(batch)});
      Type element = getElementTypeOrSelf(arg.getType());
      if (!element.isInteger(64))
        perSequence = createOp<OnnxCastOp>(
            b, loc, {perSequence},
            {b.getNamedAttr("to", b.getI64IntegerAttr(element.isInteger(32) ? 6 : 7))});
      arg.replaceAllUsesWith(perSequence);
    }

    // Attention over the cache.
    SmallVector<Value> newCaches;
    for (auto [i, l] : llvm::enumerate(layers)) {
      OpBuilder ab(l.attn);
      Location al = l.attn.getLoc();
      Value kc = createOp<CacheUpdateOp>(ab, al, {cachesK[i], l.newK, start});
      Value vc = createOp<CacheUpdateOp>(ab, al, {cachesV[i], l.newV, start});
      SmallVector<NamedAttribute> attrs{
          ab.getNamedAttr("num_heads", l.attn.getNumHeadsAttr()),
          ab.getNamedAttr("num_kv_heads", l.attn.getNumKvHeadsAttr()),
          ab.getNamedAttr("causal", ab.getBoolAttr(true)),
          ab.getNamedAttr("window", l.attn.getWindowAttr()),
          ab.getNamedAttr("scale", l.attn.getScaleAttr()),
          ab.getNamedAttr("softcap", l.attn.getSoftcapAttr())};
      if (auto sinks = l.attn.getSinksAttr())
        attrs.push_back(ab.getNamedAttr("sinks", sinks));
      Value out = createOp<CachedAttentionOp>(ab, al, {l.attn.getQ(), kc, vc, start}, attrs);
      l.attn.getResult().replaceAllUsesWith(out);
      l.attn.erase();
      newCaches.push_back(kc);
      newCaches.push_back(vc);
    }

    // The model's own present outputs: past ++ new rows, start_pos + S long
    // (checked at run time); the new rows go into the cache at start_pos.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<std::pair<Value, std::string>> ownResults;
    for (auto [i, own] : llvm::enumerate(ownCaches)) {
      OpBuilder rb(ret);
      Value present = ret.getOperand(own.result);
      std::string name =
          "cache.io." + nameOfArg(f, cast<BlockArgument>(own.past).getArgNumber()).str();
      if (own.fixed) { // the whole cache, written back
        ownResults.push_back(
            {createOp<CacheUpdateOp>(rb, loc, {ownCacheArgs[i], present,
                                               i64Constant(rb, loc, {0}, true)}),
             name});
        continue;
      }
      Value rows = createOp<OnnxSliceOp>(
          rb, loc,
          {present, vec1b(rb, start), vec1b(rb, total), i64Constant(rb, loc, {2}),
           i64Constant(rb, loc, {1})});
      rows = createOp<AssertEqualOp>(
          rb, loc, {rows, sizeOfB(rb, present, 2), total},
          {rb.getNamedAttr("message", rb.getStringAttr(
                                          "the model's present output '" +
                                          resultName(f, own.result) +
                                          "' must hold the past and the new rows (start_pos + S)"))});
      ownResults.push_back({createOp<CacheUpdateOp>(rb, loc, {ownCacheArgs[i], rows, start}), name});
    }

    // Results: the logits, then the caches.
    int logitsIndex = 0;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      if (auto n = f.getResultAttrOfType<StringAttr>(i, "llm.name"); n && n.getValue() == "logits")
        logitsIndex = int(i);
    Value logits = ret.getOperand(unsigned(logitsIndex));
    if (history) { // the new tokens' rows
      OpBuilder rb(ret);
      logits = createOp<OnnxSliceOp>(rb, loc,
                                     {logits, vec1b(rb, start), vec1b(rb, total),
                                      i64Constant(rb, loc, {1}), i64Constant(rb, loc, {1})});
      ownResults.push_back({historyResult, "cache.tokens"});
    }
    SmallVector<Value> results{logits};
    SmallVector<Attribute> resultAttrs{
        b.getDictionaryAttr(b.getNamedAttr("llm.name", b.getStringAttr("logits")))};
    for (auto [i, c] : llvm::enumerate(newCaches)) {
      results.push_back(c);
      std::string name =
          std::string("cache.") + (i % 2 ? "v." : "k.") + std::to_string(i / 2);
      resultAttrs.push_back(
          b.getDictionaryAttr(b.getNamedAttr("llm.name", b.getStringAttr(name))));
    }
    for (auto &[c, name] : ownResults) {
      results.push_back(c);
      resultAttrs.push_back(
          b.getDictionaryAttr(b.getNamedAttr("llm.name", b.getStringAttr(name))));
    }
    OpBuilder rb(ret);
    rb.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    eraseDead(f);

    // Past inputs still read (for their sizes): the cache rows before
    // start_pos. Everything else unbound is an error.
    for (unsigned i = 0; i < startIndex; ++i) {
      Value arg = f.getArgument(i);
      if (int(i) == tokensArg || arg.use_empty())
        continue;
      auto it = pastToCache.find(arg);
      if (it == pastToCache.end())
        return f.emitError("llmc-insert-kv-cache: cannot bind input '") << nameOfArg(f, i) << "'";
      Value cache = it->second.first;
      // Its shape [B, H, start_pos, D] where only that is read (exports
      // take the past length from it), the rows themselves otherwise.
      SmallVector<Operation *> shapeReads;
      for (Operation *user : arg.getUsers())
        if (shortName(user) == "onnx.shape")
          shapeReads.push_back(user);
      for (Operation *read : shapeReads) {
        OpBuilder sb(read);
        Value full = createOp<OnnxConcatOp>(
            sb, loc,
            {vec1b(sb, sizeOfB(sb, cache, 0)), vec1b(sb, sizeOfB(sb, cache, 1)), vec1b(sb, start),
             vec1b(sb, sizeOfB(sb, cache, 3))},
            {sb.getNamedAttr("axis", sb.getI64IntegerAttr(0))});
        int64_t from = 0, to = 4;
        if (auto a = read->getAttrOfType<IntegerAttr>("start"))
          from = a.getInt() < 0 ? a.getInt() + 4 : a.getInt();
        if (auto a = read->getAttrOfType<IntegerAttr>("end"))
          to = a.getInt() < 0 ? a.getInt() + 4 : std::min<int64_t>(a.getInt(), 4);
        Value value = full;
        if (from != 0 || to != 4)
          value = createOp<OnnxSliceOp>(
              sb, loc,
              {full, i64Constant(sb, loc, {from}), i64Constant(sb, loc, {to}),
               i64Constant(sb, loc, {0}), i64Constant(sb, loc, {1})});
        read->getResult(0).replaceAllUsesWith(value);
        read->erase();
      }
      if (arg.use_empty())
        continue;
      OpBuilder pb = OpBuilder::atBlockBegin(&body);
      pb.setInsertionPointAfterValue(start);
      arg.replaceAllUsesWith(createOp<CacheReadOp>(pb, loc, {cache, start}));
    }
    // Drop every old input but the tokens.
    for (int i = int(startIndex) - 1; i >= 0; --i)
      if (i != tokensArg) {
        if (!f.getArgument(unsigned(i)).use_empty())
          return f.emitError("llmc-insert-kv-cache: input '") << nameOfArg(f, unsigned(i))
                                                             << "' is still read";
        (void)f.eraseArgument(unsigned(i));
      }
    f.setFunctionType(FunctionType::get(ctx, f.getArgumentTypes(), ValueRange(results).getTypes()));
    f.setAllResultAttrs(resultAttrs);
    f.setArgAttr(0, "llm.name", b.getStringAttr("tokens"));
    if (decode) {
      Shape one = *tokenShape;
      one[1] = Dim::fixed(1);
      f.getArgument(0).setType(makeTensorType(one, getElementTypeOrSelf(tokens.getType())));
      f.setFunctionType(FunctionType::get(ctx, body.getArgumentTypes(), f.getResultTypes()));
    }
    return refineResultTypes(f);
  }

  static std::string resultName(func::FuncOp f, unsigned i) {
    auto n = f.getResultAttrOfType<StringAttr>(i, "llm.name");
    return n ? n.getValue().str() : "#" + std::to_string(i);
  }

  /// The model's own cache IO that no recognised attention owns: pairs of a
  /// past input ([B, H, P, D], float) and the present result computed from
  /// it ([B, H, P + S, D], or the past's own shape for a static cache the
  /// model writes itself; same element type): the nearest past input. A
  /// result as near to several (keys and values meet in an attention op)
  /// takes the one whose name is most like its own (the longest common
  /// prefix plus suffix: past_key_values.0.key / present.0.key,
  /// kv.0.key.in / kv.0.key.out); a tie pairs nothing.
  static SmallVector<OwnCache> ownCacheIO(func::FuncOp f, ArrayRef<CachedLayer> layers) {
    // The float inputs the recognised layers' pasts come from (the past
    // input itself, or a static cache a slice of which is the past).
    llvm::DenseSet<Value> owned;
    for (const CachedLayer &l : layers)
      for (Value v : {l.pastK, l.pastV}) {
        SmallVector<Value> work;
        if (v)
          work.push_back(v);
        while (!work.empty()) {
          Value w = work.pop_back_val();
          if (isa<BlockArgument>(w)) {
            if (isa<FloatType>(getElementTypeOrSelf(w.getType())))
              owned.insert(w);
            continue;
          }
          for (Value o : w.getDefiningOp()->getOperands())
            if (isa<FloatType>(getElementTypeOrSelf(o.getType())))
              work.push_back(o);
        }
      }
    auto isPast = [&](BlockArgument a) {
      auto t = dyn_cast<RankedTensorType>(a.getType());
      return t && t.getRank() == 4 && isa<FloatType>(t.getElementType()) && !a.use_empty() &&
             !f.getArgAttr(a.getArgNumber(), "llm.role");
    };
    auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
    auto similarity = [](StringRef x, StringRef y) {
      size_t p = 0, q = 0;
      while (p < x.size() && p < y.size() && x[p] == y[p])
        ++p;
      while (q < x.size() - p && q < y.size() - p && x[x.size() - 1 - q] == y[y.size() - 1 - q])
        ++q;
      return p + q;
    };
    SmallVector<OwnCache> pairs;
    llvm::DenseSet<Value> taken;
    for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
      Value out = ret.getOperand(r);
      auto ot = dyn_cast<RankedTensorType>(out.getType());
      if (!ot || ot.getRank() != 4 || resultName(f, r) == "logits")
        continue;
      // The nearest past inputs it is computed from (breadth first: the
      // concat or scatter that makes a present reads its own past first;
      // earlier layers' pasts lie further back). A result nearest to an
      // input a recognised layer owns (a static cache's present) is llmc's.
      SmallVector<BlockArgument> from;
      SmallVector<Value> level{out};
      llvm::DenseSet<Value> seen{out};
      bool ownedByLayer = false;
      while (!level.empty() && from.empty() && !ownedByLayer) {
        SmallVector<Value> next;
        for (Value w : level) {
          if (auto a = dyn_cast<BlockArgument>(w)) {
            if (a.getOwner() != &f.getBody().front() || !isPast(a) ||
                getElementTypeOrSelf(a.getType()) != ot.getElementType())
              continue;
            if (owned.contains(a))
              ownedByLayer = true;
            else
              from.push_back(a);
            continue;
          }
          for (Value o : w.getDefiningOp()->getOperands())
            if (seen.insert(o).second)
              next.push_back(o);
        }
        level = std::move(next);
      }
      BlockArgument best;
      size_t bestScore = 0;
      bool tie = false;
      for (BlockArgument a : from) {
        size_t score = similarity(nameOfArg(f, a.getArgNumber()), resultName(f, r));
        if (!best || score > bestScore) {
          best = a, bestScore = score, tie = false;
        } else if (score == bestScore) {
          tie = true;
        }
      }
      if (ownedByLayer || !best || tie || !taken.insert(best).second)
        continue;
      // Fixed: the same length as the past, a number or a named size.
      Dim pastLen = (*getShape(best.getType()))[2], outLen = (*getShape(ot))[2];
      bool fixed = pastLen == outLen && (pastLen.isStatic() || pastLen.name);
      pairs.push_back({best, r, fixed});
    }
    return pairs;
  }

  static Value sizeOfB(OpBuilder &b, Location loc, Value x, int64_t d) {
    Value shape = createOp<OnnxShapeOp>(b, loc, {x});
    return createOp<OnnxGatherOp>(b, loc, {shape, i64Constant(b, loc, {d}, true)});
  }
  Value sizeOfB(OpBuilder &b, Value x, int64_t d) { return sizeOfB(b, x.getLoc(), x, d); }
  static Value vec1b(OpBuilder &b, Value scalar) {
    return createOp<OnnxUnsqueezeOp>(b, scalar.getLoc(), {scalar, i64Constant(b, scalar.getLoc(), {0})});
  }

  /// Whether `v` is computed from constants and the argument at `arg` only.
  static bool readsOnly(Value v, int arg) {
    SmallVector<Value> work{v};
    llvm::DenseSet<Value> seen;
    while (!work.empty()) {
      Value w = work.pop_back_val();
      if (!seen.insert(w).second)
        continue;
      if (auto ba = dyn_cast<BlockArgument>(w)) {
        if (int(ba.getArgNumber()) != arg)
          return false;
        continue;
      }
      for (Value o : w.getDefiningOp()->getOperands())
        work.push_back(o);
    }
    return true;
  }
};

} // namespace
