//===- HostSteps.cpp - the CUDA target's operations that run on the host ---===//
//
// An operation of run-time shape (the fallback's attention over the model's
// own cache IO, or a stateless model run over its whole token history), or
// one the device has no kernel for, runs on the host through its reference
// kernel, as the CPU target runs it (runtime/src/model/cuda/HostSteps.h):
// what it reads from the device is copied down when first read on the host,
// what it makes is copied up into the arena when a device operation reads
// it. The cache reads and writes of such a step copy only the rows they
// touch. A model with host steps runs every entry without a CUDA graph.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CUDA/EmitCudaInternal.h"

#include "compiler/Executor/Error.h"
#include "passes/KernelBridge.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::codegen;

namespace mlir::llmc::cudagen {

bool CudaEmitter::hasRunTimeShape(Operation *op) {
  auto dynamic = [](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && !t.hasStaticShape();
  };
  bool any = false;
  op->walk([&](Operation *o) {
    any = any || llvm::any_of(o->getOperands(), dynamic) || llvm::any_of(o->getResults(), dynamic);
  });
  return any;
}

bool CudaEmitter::prefersHost(Operation *op) {
  auto fused = dyn_cast<FusedOp>(op);
  if (!(shortName(op).starts_with("onnx.") || (fused && fused.getKind() == "elementwise")) ||
      chains.count(op) || pairs.count(op))
    return false;
  bool hostInput = false;
  for (Value v : op->getOperands()) {
    if (!v || isNone(v))
      continue;
    if (!refs.count(v) && hostNames.count(v)) {
      hostInput = true;
      continue;
    }
    Ref::Kind kind = refs.lookup(v).kind;
    auto c = v.getDefiningOp<ConstantOp>();
    if ((c && bytesOf(v.getType()) <= kHostConstantBytes) || kind == Ref::Pos ||
        kind == Ref::Tokens)
      continue;
    return false;
  }
  return hostInput;
}

llvm::Error CudaEmitter::emitOnDeviceOrHost(Operation *op, CpuModel::Entry &stats) {
  if (!isa<ConstantOp, NoneOp>(op) && (hasRunTimeShape(op) || prefersHost(op)))
    return emitHost(op, stats);
  // What the device attempt may change, to take it back.
  size_t bodySize = body.size(), buffersSize = buffers.size();
  int stepBefore = step;
  CpuModel::Entry statsBefore = stats;
  std::set<std::string> missingBefore = missing;
  if (llvm::Error e = emitOp(op, stats))
    return e;
  // A refusal the host cannot take: the 4-launch forms built around it.
  if (missing.size() == missingBefore.size() || ropeCaches.count(op) || attentionRopes.count(op) ||
      intoAttention.count(op) || isa<QuantizedCacheUpdateOp>(op))
    return llvm::Error::success();
  body.resize(bodySize);
  step = stepBefore;
  stats = statsBefore;
  missing = std::move(missingBefore);
  buffers.resize(buffersSize);
  // The values it made (its results and those inside it: also views of
  // older buffers), and those given buffers that are gone (uploads).
  op->walk([&](Operation *o) {
    for (Value r : o->getResults())
      refs.erase(r);
    for (Region &region : o->getRegions())
      for (Block &b : region)
        for (Value a : b.getArguments())
          refs.erase(a);
  });
  SmallVector<Value> stale;
  for (auto &[v, r] : refs)
    if (r.kind == Ref::Arena && r.buffer >= int(buffersSize))
      stale.push_back(v);
  for (Value v : stale)
    refs.erase(v);
  return emitHost(op, stats);
}

llvm::Error CudaEmitter::emitHost(Operation *op, CpuModel::Entry &stats) {
  if (auto chain = chains.find(op); chain != chains.end())
    for (Operation *o : ArrayRef(chain->second).drop_back())
      if (llvm::Error e = emitHostOp(o, stats))
        return e;
  if (Operation *first = pairs.lookup(op))
    if (llvm::Error e = emitHostOp(first, stats))
      return e;
  return emitHostOp(op, stats);
}

llvm::Expected<std::string> CudaEmitter::hostValue(Value v) {
  if (auto it = hostNames.find(v); it != hostNames.end())
    return it->second;
  if (!v || isNone(v))
    return std::string();
  if (auto c = v.getDefiningOp<ConstantOp>(); c && !refs.count(v))
    if (llvm::Error e = placeConstant(c))
      return std::move(e);
  auto it = refs.find(v);
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (it == refs.end() || !t || !t.hasStaticShape())
    return makeError("a value the host reads has no storage (" + describeType(v.getType()) +
                     "): a bug in llmc's CUDA code generator");
  Ref r = it->second;
  std::string shape = shapeExpr(t.getShape()), type = dtypeExpr(t);
  switch (r.kind) {
  case Ref::Weight: {
    std::string name = newHostTensor(v);
    body += llvm::formatv("  {0} = HostTensor::wrap({1}, {2}, static_cast<const char *>("
                          "m.hostWeights) + {3});\n",
                          name, type, shape, r.offset)
                .str();
    return name;
  }
  case Ref::Pos: {
    std::string name = newHostTensor(v);
    body += "  " + name + " = HostTensor::wrap(DType::Int64, {}, m.hostPos);\n";
    return name;
  }
  case Ref::Tokens: {
    std::string name = newHostTensor(v);
    body += llvm::formatv("  {0} = HostTensor::wrap(DType::Int64, {1}, m.hostTokens);\n", name,
                          shape)
                .str();
    return name;
  }
  case Ref::Cache: {
    // The whole cache: its capacity is the compiled one (anyCapacity off).
    anyCapacity = false;
    std::string p = ptr(v), name = newHostTensor(v);
    auto s = t.getShape();
    statement(llvm::formatv("host::cacheRows({0}, {1}, {2}, {3}, {4}, a.capacity, a.capacity, "
                            "{5}, \"a cache\", a.stream)",
                            name, type, s[0], s[1], s[3], p)
                  .str(),
              "the whole cache to the host");
    return name;
  }
  case Ref::Arena: {
    std::string p = ptr(v), name = newHostTensor(v);
    statement(llvm::formatv("host::download({0}, {1}, {2}, {3}, a.stream)", name, type, shape, p)
                  .str(),
              "to the host: " + describeType(v.getType()));
    return name;
  }
  case Ref::None:
    break;
  }
  return makeError("a value the host reads (" + describeType(v.getType()) +
                   ") has no storage: a bug in llmc's CUDA code generator");
}

std::string CudaEmitter::uploadHost(Value v, const std::string &type) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  Operation *def = v.getDefiningOp();
  if (!t || !t.hasStaticShape()) {
    missing.insert("a value of run-time shape read on the device (" +
                   describeType(v.getType()) + ")" + (def ? " at " + nodeName(def) : ""));
    return "nullptr";
  }
  uploadAs(v, t.getShape(), def ? nodeName(def) : std::string("a value"));
  return ptr(v, type);
}

void CudaEmitter::uploadAs(Value v, ArrayRef<int64_t> shape, const std::string &what) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  buffers.push_back({std::max<int64_t>(count * elemBytes(v.getType()), 1), step, step, -1});
  Ref r;
  r.kind = Ref::Arena;
  r.buffer = int(buffers.size() - 1);
  refs[v] = r;
  statement(llvm::formatv("host::upload({0}, {1}, {2}, {3}, {4}, a.stream)", hostNames.lookup(v),
                          dtypeExpr(v.getType()), shapeExpr(shape), ptr(v, "void"), quote(what))
                .str(),
            "from the host: " + what + ", " + describeType(v.getType()));
  // (read by the statement being written)
  buffers[size_t(r.buffer)].last = step;
}

llvm::Error CudaEmitter::emitHostOp(Operation *op, CpuModel::Entry &stats) {
  if (auto c = dyn_cast<ConstantOp>(op))
    return placeConstant(c);
  if (isa<NoneOp>(op))
    return llvm::Error::success();
  // Dead (as on the device): nothing reads it, and it writes nothing.
  if (op->getNumResults() &&
      llvm::all_of(op->getResults(), [](Value r) { return r.use_empty(); }) &&
      !isa<CacheUpdateOp, AssertEqualOp>(op))
    return llvm::Error::success();
  model.hostOperations.insert(shortName(op).str());
  auto operand = [&](Value v) -> llvm::Expected<std::string> {
    auto name = hostValue(v);
    if (!name)
      return name.takeError();
    return name->empty() ? std::string("nullptr") : "&" + *name;
  };
  if (auto fused = dyn_cast<FusedOp>(op)) {
    Block &block = fused.getRegion().front();
    for (auto [arg, in] : llvm::zip(block.getArguments(), fused->getOperands())) {
      auto name = hostValue(in);
      if (!name)
        return name.takeError();
      hostNames[arg] = *name;
    }
    for (Operation &inner : block.without_terminator())
      if (llvm::Error e = emitHostOp(&inner, stats))
        return e;
    auto yield = cast<YieldOp>(block.getTerminator());
    for (auto [r, v] : llvm::zip(fused->getResults(), yield->getOperands())) {
      auto name = hostValue(v);
      if (!name)
        return name.takeError();
      hostNames[r] = *name;
    }
    return llvm::Error::success();
  }
  std::string node = quote(nodeName(op));
  // Cache rows: only those read or written cross.
  auto read = dyn_cast<CacheReadOp>(op);
  if (read && refs.lookup(read.getCache()).kind == Ref::Cache) {
    auto length = hostValue(read.getLength());
    if (!length)
      return length.takeError();
    auto s = shapeOf(read.getCache());
    std::string p = ptr(read.getCache()), name = newHostTensor(read.getResult());
    statement(llvm::formatv("host::cacheRows({0}, {1}, {2}, {3}, {4}, a.capacity, {5}, {6}, {7}, "
                            "a.stream)",
                            name, dtypeExpr(read.getType()), s[0], s[1], s[3], *length, p, node)
                  .str(),
              "cache_read on the host: the rows before the length");
    ++stats.kernelCalls;
    return llvm::Error::success();
  }
  if (auto update = dyn_cast<CacheUpdateOp>(op)) {
    Value cache = update->getOperand(0);
    Ref cr = refs.lookup(cache);
    if (cr.kind != Ref::Cache)
      return makeError(nodeName(op) + ": a cache update of run-time shape must write the "
                                      "session's cache");
    auto rows = hostValue(update->getOperand(1));
    if (!rows)
      return rows.takeError();
    auto pos = hostValue(update->getOperand(2));
    if (!pos)
      return pos.takeError();
    auto s = shapeOf(cache);
    statement(llvm::formatv("host::writeCacheRows({0}, {1}, {2}, {3}, {4}, a.capacity, {5}, {6}, "
                            "{7}, a.stream)",
                            ptr(cache), dtypeExpr(cache.getType()), s[0], s[1], s[3], *rows, *pos,
                            node)
                  .str(),
              "cache_update from the host, in place");
    refs[update->getResult(0)] = cr;
    ++stats.cacheUpdates;
    return llvm::Error::success();
  }
  const ::llmc::cpu::KernelEntry *kernel = kernelFor(op);
  if (!kernel)
    return makeError(nodeName(op) + ": neither the device nor the host has a kernel for " +
                     op->getName().getStringRef().str());
  std::vector<std::string> inputs;
  for (Value v : op->getOperands()) {
    auto in = operand(v);
    if (!in)
      return in.takeError();
    inputs.push_back(*in);
  }
  // The attributes: built once (a static of the model source), or per
  // call where a tensor attribute wraps this context's weights.
  std::string attrs = "nullptr";
  DictionaryAttr dict = kernelAttributes(op);
  if (!dict.empty()) {
    auto found = hostAttributes.find(dict);
    if (found == hostAttributes.end()) {
      std::vector<std::string> sets;
      bool tensors = false;
      for (NamedAttribute a : dict) {
        auto value = attributeExpr(op, a, [&](ElementsAttr e) -> llvm::Expected<std::string> {
          tensors = true;
          auto t = constantTensor(e);
          if (!t)
            return t.takeError();
          int64_t offset = int64_t(weightsWriter.store(
              llvm::StringRef(static_cast<const char *>(t->raw()), t->bytes()),
              nodeName(op) + " attribute " + a.getName().str()));
          return llvm::formatv("tensorAttr(HostTensor::wrap({0}, {1}, static_cast<const char *>("
                               "m.hostWeights) + {2}))",
                               dtypeExpr(cast<ShapedType>(e.getType())),
                               shapeExpr(cast<ShapedType>(e.getType()).getShape()), offset)
              .str();
        });
        if (!value)
          return value.takeError();
        sets.push_back(llvm::formatv("    at.set({0}, {1});\n", quote(a.getName().getValue()),
                                     *value)
                           .str());
      }
      std::string name = "hostAttributes" + std::to_string(hostAttributes.size());
      std::string build = "[&] {\n    ::llmc::cpu::Attributes at;\n" + llvm::join(sets, "") +
                          "    return at;\n  }()";
      hostAttributeText +=
          tensors ? "::llmc::cpu::Attributes " + name + "(const Model &m) {\n  return " + build +
                        ";\n}\n"
                  : "const ::llmc::cpu::Attributes &" + name +
                        "(const Model &) {\n  static const ::llmc::cpu::Attributes attrs = " +
                        build + ";\n  return attrs;\n}\n";
      found = hostAttributes.try_emplace(dict, name).first;
    }
    // (A reference: to the static, or to the per-call value it keeps alive.)
    attrs = "&a" + std::to_string(hostCounter++);
    body += "  const ::llmc::cpu::Attributes &" + attrs.substr(1) + " = " + found->second + "(m);\n";
  }
  std::vector<std::string> outputs;
  uint64_t unwanted = 0;
  for (OpResult r : op->getResults()) {
    outputs.push_back("&" + newHostTensor(r));
    if (r.use_empty() && r.getResultNumber() < 64)
      unwanted |= uint64_t(1) << r.getResultNumber();
  }
  statement(llvm::formatv("host::call({0}, {1}, {{{2}}, {3}, {{{4}}, {5}u)", quote(kernel->name),
                          node, llvm::join(inputs, ", "), attrs, llvm::join(outputs, ", "),
                          unwanted)
                .str(),
            shortName(op).str() + " on the host -> " +
                llvm::join(llvm::map_range(op->getResultTypes(),
                                           [](Type t) { return describeType(t); }),
                           ", "));
  ++stats.kernelCalls;
  return llvm::Error::success();
}

} // namespace mlir::llmc::cudagen
