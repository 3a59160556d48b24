//===- EmitCpp.cpp - C++ for the CPU from the compiled entry points -------===//
//
// emitCpuModel: the generated model.cpp, an entry function per compiled
// entry point (its statements: EmitCppOps.cpp), Model::init (weights and
// tables: EmitCppWeights.cpp) and the model ABI's glue. An entry whose
// logits come from the hidden state position by position computes them for
// only the positions its caller asks for (the logits tail).
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CPU/EmitCppInternal.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::cpugen;


llvm::Error Emitter::emitBlock(Block &block, CpuModel::Entry &stats, int depth) {
  findRuns(block);
  for (Operation &op : block.without_terminator())
    if (!folded.contains(&op))
      if (llvm::Error e = emitOp(&op, stats, depth))
        return e;
  return llvm::Error::success();
}

llvm::Error Emitter::emitFunction(func::FuncOp f) {
  std::string fname = f.getSymName().str();
  llvm::Expected<EntrySignature> sig = entrySignature(f, /*allowI32Tokens=*/true);
  if (!sig)
    return sig.takeError();
  CpuModel::Entry entry = sig->entry;
  const std::vector<CpuModel::Cache> &caches = sig->caches;
  bool tokens32 = sig->tokens32;
  names.clear();
  bound = arenaBound(f);
  names[f.getArgument(0)] = "a.tokens";
  names[f.getArgument(1)] = "a.start";
  for (unsigned i = 2; i < f.getNumArguments(); ++i) {
    names[f.getArgument(i)] = "a.caches[" + std::to_string(i - 2) + "]";
    anyCapacity = anyCapacity && readsCapacityAtRunTime(f.getArgument(i));
  }
  if (llvm::Error e = takeCaches(model, caches, fname))
    return e;

  body += llvm::formatv("// {0}: tokens i64[{1}, {2}], start_pos, {3} caches\n", fname, entry.batch,
                        entry.seq, caches.size())
              .str();
  body += llvm::formatv("Status Model::{0}(Model &m, const Args &a) {{\n", fname).str();
  if (tokens32) { // the model takes i32 ids; the interface is i64
    body += "  Tensor tokens;\n  LLMC_TRY(narrowTokens(m, a.tokens, tokens));\n";
    names[f.getArgument(0)] = "tokens";
  }
  Block &block = f.getBody().front();
  for (auto [scatter, update] : inPlaceScatters(block)) {
    scattersInPlace.insert(scatter);
    updatesInPlace.insert(update);
  }
  tail = logitsTail(f, entry.batch, entry.seq);
  entry.logitsRows = tail.has_value();
  if (llvm::Error e = emitBlock(block, entry, 1))
    return e;
  // Results: the logits, then each cache (which must be the caller's
  // buffer, updated in place).
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  bool haveLogits = false;
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    auto n = f.getResultAttrOfType<StringAttr>(i, "llm.name");
    Value v = ret.getOperand(i);
    if (n && n.getValue() == "logits") {
      // (Sizes the types leave open, as after a region the raise did not
      // recognise, are checked when the entry runs: storeLogits.)
      auto t = dyn_cast<RankedTensorType>(v.getType());
      auto fits = [&](int64_t d, int64_t want) {
        return t.isDynamicDim(d) || t.getDimSize(d) == want;
      };
      if (!t || t.getRank() != 3 || t.isDynamicDim(2) || !fits(0, entry.batch) ||
          !fits(1, entry.seq))
        return makeError("@" + fname + ": the logits must be [batch, seq, vocab]");
      if (model.vocab && model.vocab != t.getDimSize(2))
        return makeError("@" + fname + ": the vocabulary differs between entry points");
      model.vocab = t.getDimSize(2);
      auto ref = operandRef(ret, v);
      if (!ref)
        return ref.takeError();
      body += llvm::formatv("  LLMC_TRY(storeLogits({0}, a));\n", *ref).str();
      haveLogits = true;
      continue;
    }
    // A cache result: the chain of in-place updates of its argument.
    Value c = cacheSource(v);
    auto arg = dyn_cast<BlockArgument>(c);
    if (!n || !arg || arg.getOwner() != &block || arg.getArgNumber() < 2 ||
        caches[arg.getArgNumber() - 2].name != n.getValue())
      return makeError("@" + fname + ": result " + std::to_string(i) +
                       " is neither the logits nor an in-place update of its cache");
  }
  if (!haveLogits)
    return makeError("@" + fname + " returns no logits");
  body += "  return Status::ok();\n}\n\n";
  // Constants in panels count as their panels, plus their own bytes when
  // something also reads them as they are.
  llvm::DenseMap<Attribute, int64_t> stored;
  for (auto &[attr, bytes] : panelBytes)
    stored[attr] =
        bytes + (storedPlain.contains(attr) ? bytesOf(cast<ElementsAttr>(attr).getType()) : 0);
  entry.weightBytesRead = weightBytesRead(f, &stored);
  // The linear layers' FLOPs (llmc bench reports prefill against the
  // machine's peak FMA rate with them).
  f.walk([&](Operation *op) {
    if (!isa<LinearOp, QuantizedLinearOp>(op))
      return;
    auto x = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    auto y = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!x || !y || !x.hasStaticShape() || !y.hasStaticShape() || x.getRank() < 1)
      return;
    int64_t k = x.getShape().back(), n = y.getShape().back(), m = k ? x.getNumElements() / k : 0;
    Operation *top = op;
    while (top->getParentOp() != f.getOperation())
      top = top->getParentOp();
    if (tail && tail->ops.contains(top))
      entry.logitsFlopsPerRow += 2 * n * k;
    else
      entry.linearFlops += 2 * m * n * k;
  });
  if (auto plan = f->getAttrOfType<DictionaryAttr>("llm.memory_plan"))
    if (auto arena = plan.getAs<IntegerAttr>("arena"))
      entry.arenaBytes = arena.getInt();
  model.entries.push_back(entry);
  return llvm::Error::success();
}

llvm::Expected<CpuModel> Emitter::run(llvm::StringRef version) {
  SmallVector<func::FuncOp> funcs = entryFunctionsInOrder(module);
  if (funcs.empty())
    return makeError("the module has no functions");
  for (func::FuncOp f : funcs)
    if (llvm::Error e = emitFunction(f))
      return std::move(e);
  if (deferredError)
    return std::move(deferredError);
  if (llvm::none_of(model.entries, [](const CpuModel::Entry &e) { return e.decode; }))
    return makeError("the module has no decode entry point");
  model.numWeights = numWeights;
  finishWeights(model);

  std::string s;
  llvm::raw_string_ostream os(s);
  os << "// Generated by llmc " << version << " (llmc compile --target cpu). Do not edit.\n"
     << "//\n// Entry points (llmc_model_abi, runtime/include/llmc/model_abi.h):\n";
  writeEntryComment(os, model);
  os << "// Caches: " << model.caches.size() << " x [batch, " 
     << (model.caches.empty() ? 0 : model.caches[0].heads) << ", "
     << (model.caches.empty() ? 0 : model.caches[0].capacity) << ", "
     << (model.caches.empty() ? 0 : model.caches[0].headDim) << "]; weights.bin "
     << model.weights.size() << " bytes, sha256 " << model.weightsSha256 << "\n\n"
     << "#include \"runtime/src/model/ModelSupport.h\"\n"
     << "#include \"runtime/src/model/GeneratedLoops.h\"\n"
     << "#include \"runtime/src/model/ModelGlue.h\"\n\n"
     << "namespace {\nusing namespace llmc::model;\n\n"
     << loops << (loops.empty() ? "" : "\n")
     << "struct Model final : Context {\n"
     << "  Tensor w[" << std::max(numWeights, 1) << "];\n"
     << "  Attributes at[" << std::max(numAttrs, 1) << "];\n"
     << "  const KernelEntry *k[" << std::max<size_t>(kernels.size(), 1) << "] = {};\n"
     << "  Status init();\n\n";
  for (const CpuModel::Entry &e : model.entries)
    os << "  static Status " << e.name << "(Model &m, const Args &a);\n";
  os << "\n";
  writeAbiTables(os, model, "Status");
  int64_t arenaBytes = 0, maxTokens = 1;
  for (const CpuModel::Entry &e : model.entries)
    arenaBytes = std::max(arenaBytes, e.arenaBytes),
    maxTokens = std::max(maxTokens, e.batch * e.seq);
  os << "  // The memory plan's arena (the largest entry's: one runs at a time)\n"
     << "  // and the most token ids an entry takes.\n"
     << "  static constexpr uint64_t kArenaBytes = " << arenaBytes << ";\n"
     << "  static constexpr int64_t kMaxTokens = " << maxTokens << ";\n"
     << "  // The largest hidden state whose rows an entry gathers for its logits\n"
     << "  // (selectRows, with batch > 1).\n"
     << "  static constexpr uint64_t kRowsBytes = " << rowsBytes << ";\n"
     << "  // Whether the caches' capacity may differ from the compiled one.\n"
     << "  static constexpr int32_t kAnyCapacity = " << (anyCapacity ? 1 : 0) << ";\n"
     << "};\n\n"
     << "Status Model::init() {\n"
     << init << "  return Status::ok();\n}\n\n"
     << body << "} // namespace\n\n"
     << "extern \"C\" __attribute__((visibility(\"default\"))) const llmc_model_abi *"
        "llmc_model_abi_v1(void) {\n"
     << "  static const llmc_model_abi abi = {LLMC_MODEL_ABI_VERSION, " << quote(version) << ", "
     << quote(model.weightsSha256) << ",\n"
     << "                                     Model::kWeightsBytes, Model::kVocab, "
        "Model::kNumEntries, Model::kEntries,\n"
     << "                                     Model::kNumCaches, Model::kCaches, "
        "&Glue<Model>::create,\n"
     << "                                     &Glue<Model>::destroy, &Glue<Model>::run,\n"
     << "                                     Model::kAnyCapacity, &Glue<Model>::runAtCapacity,\n"
     << "                                     LLMC_BUFFERS_HOST, \"cpu\", nullptr, nullptr, nullptr,\n"
     << "                                     &Glue<Model>::runRows, &Glue<Model>::setAffinity,\n"
     << "                                     nullptr};\n"
     << "  return &abi;\n}\n";
  model.anyCapacity = anyCapacity;
  model.source = std::move(s);
  return std::move(model);
}


llvm::Expected<CpuModel> mlir::llmc::emitCpuModel(ModuleOp module, llvm::StringRef llmcVersion) {
  return Emitter(module).run(llmcVersion);
}
