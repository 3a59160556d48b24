//===- EmitCommon.cpp - what the CPU and CUDA code generators share --------===//
#include "compiler/Codegen/EmitCommon.h"

#include "compiler/Executor/Error.h"
#include "dialects/LLM/IR/LLMDialect.h"
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"
#include "passes/BuildHelpers.h"
#include "passes/KernelBridge.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <array>
#include <tuple>
#include <cstring>

using namespace mlir;
using namespace mlir::llmc;

namespace mlir::llmc::codegen {

std::string shapeExpr(llvm::ArrayRef<int64_t> dims) {
  return "{" + llvm::join(llvm::map_range(dims, [](int64_t d) { return std::to_string(d); }), ", ") +
         "}";
}

std::string stridedBatchFields(const StridedMatmul &s) {
  auto list = [](llvm::ArrayRef<int64_t> v, int64_t fill) {
    llvm::SmallVector<int64_t, 4> padded(v);
    padded.resize(StridedMatmul::kStridedBatchDims, fill);
    return shapeExpr(padded);
  };
  return std::to_string(s.dims.size()) + ", " + list(s.dims, 1) + ", " + list(s.aBatch, 0) +
         ", " + list(s.bBatch, 0);
}

/// "f32[1, 8, 256]" for comments.
std::string describeType(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << getElementTypeOrSelf(type) << "[";
  if (auto r = dyn_cast<RankedTensorType>(type))
    llvm::interleave(r.getShape(), os,
                     [&](int64_t d) { os << (ShapedType::isDynamic(d) ? "?" : std::to_string(d)); },
                     ", ");
  os << "]";
  return s;
}

DictionaryAttr kernelAttributes(Operation *op) {
  SmallVector<NamedAttribute> kept;
  for (NamedAttribute a : op->getAttrs())
    if (!a.getName().getValue().starts_with("llm."))
      kept.push_back(a);
  return DictionaryAttr::get(op->getContext(), kept);
}

llvm::Expected<std::string>
attributeExpr(Operation *op, NamedAttribute a,
              llvm::function_ref<llvm::Expected<std::string>(ElementsAttr)> tensor) {
  Attribute v = a.getValue();
  if (auto b = dyn_cast<BoolAttr>(v))
    return llvm::formatv("intAttr({0})", b.getValue() ? 1 : 0).str();
  if (auto i = dyn_cast<IntegerAttr>(v))
    return llvm::formatv("intAttr({0})", i.getValue().getSExtValue()).str();
  if (auto f = dyn_cast<FloatAttr>(v))
    return llvm::formatv("floatAttr({0})", llvm::formatv("{0:e17}", f.getValueAsDouble())).str();
  if (auto s = dyn_cast<StringAttr>(v))
    return "stringAttr(" + quote(s.getValue()) + ")";
  if (auto ints = dyn_cast<DenseI64ArrayAttr>(v))
    return "intsAttr(" + shapeExpr(ints.asArrayRef()) + ")";
  if (auto floats = dyn_cast<DenseF32ArrayAttr>(v))
    return "floatsAttr({" +
           llvm::join(llvm::map_range(floats.asArrayRef(),
                                      [](float x) { return llvm::formatv("{0:e9}", x).str(); }),
                      ", ") +
           "})";
  if (auto arr = dyn_cast<ArrayAttr>(v)) {
    std::vector<std::string> items;
    for (Attribute e : arr) {
      auto s = dyn_cast<StringAttr>(e);
      if (!s)
        return makeError(nodeName(op) + ": attribute '" + a.getName().str() +
                         "' is an array of non-strings");
      items.push_back(quote(s.getValue()));
    }
    return "stringsAttr({" + llvm::join(items, ", ") + "})";
  }
  if (auto e = dyn_cast<ElementsAttr>(v))
    return tensor(e);
  return makeError(nodeName(op) + ": attribute '" + a.getName().str() + "' has no C++ spelling");
}

static const char *dtypeSpelling(::llmc::cpu::DType t) {
  switch (t) {
  case ::llmc::cpu::DType::Float:
    return "DType::Float";
  case ::llmc::cpu::DType::Float16:
    return "DType::Float16";
  case ::llmc::cpu::DType::BFloat16:
    return "DType::BFloat16";
  case ::llmc::cpu::DType::Double:
    return "DType::Double";
  case ::llmc::cpu::DType::Int64:
    return "DType::Int64";
  case ::llmc::cpu::DType::Int32:
    return "DType::Int32";
  case ::llmc::cpu::DType::Int8:
    return "DType::Int8";
  case ::llmc::cpu::DType::UInt8:
    return "DType::UInt8";
  case ::llmc::cpu::DType::Bool:
    return "DType::Bool";
  default:
    return nullptr;
  }
}

std::string dtypeExpr(::llmc::cpu::DType t) {
  if (const char *s = dtypeSpelling(t))
    return s;
  return "DType(" + std::to_string(int(t)) + ")";
}

std::string dtypeExpr(Type t) {
  return dtypeExpr(
      ::llmc::cpu::DType(getOnnxCodeForElementType(getElementTypeOrSelf(t))));
}

/// A C++ string literal.
std::string quote(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string nodeName(Operation *op) {
  std::string where = "operation";
  if (auto n = dyn_cast<NameLoc>(op->getLoc()))
    where = n.getName().str();
  return where + " (" + shortName(op).str() + ")";
}

/// One record per quantized layer (see EmitCommon.h).
void recordQuantizedLayer(Operation *quantized, CpuModel &model,
                          std::set<std::string> &recorded, int64_t storedBytes) {
  CpuModel::QuantizedTensor t;
  t.name = nodeName(quantized);
  Value values, scales, zeroPoints;
  if (auto op = dyn_cast<QuantizedLinearOp>(quantized)) {
    values = op.getWeight(), scales = op.getScales(), zeroPoints = op.getZeroPoints();
    t.cols = cast<RankedTensorType>(op.getX().getType()).getShape().back();
    t.bits = op.getBits(), t.groupSize = op.getGroupSize();
    t.int8Activations = op.getInt8Activations();
  } else {
    auto e = cast<QuantizedEmbeddingOp>(quantized);
    values = e.getTable(), scales = e.getScales(), zeroPoints = e.getZeroPoints();
    t.bits = e.getBits(), t.groupSize = e.getGroupSize();
    t.cols = cast<RankedTensorType>(values.getType()).getDimSize(1) * t.groupSize;
    t.embedding = true;
  }
  if (!recorded.insert(t.name + " " + describeType(values.getType())).second)
    return;
  auto qType = cast<RankedTensorType>(values.getType());
  t.zeroPoints = !isNone(zeroPoints);
  t.rows = qType.getDimSize(0);
  // A linear layer's scales are written as f32 whatever their type (the
  // kernels read f32); an embedding's in its own.
  t.bytes = bytesOf(values.getType()) +
            (t.embedding ? bytesOf(scales.getType()) : t.rows * qType.getDimSize(1) * 4) +
            (t.zeroPoints ? bytesOf(zeroPoints.getType()) : 0);
  if (storedBytes >= 0)
    t.bytes = storedBytes;
  t.floatBytes = t.rows * t.cols *
                 int64_t(getElementTypeOrSelf(quantized->getResult(0).getType())
                             .getIntOrFloatBitWidth() /
                         8);
  model.quantized.push_back(t);
}

int64_t bytesOf(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  if (!r || !r.hasStaticShape())
    return 0;
  unsigned bits = r.getElementType().isIntOrFloat() ? r.getElementType().getIntOrFloatBitWidth() : 8;
  return (r.getNumElements() * int64_t(std::max(bits, 8u)) + 7) / 8;
}

/// The bytes of weights one call of `f` reads (see CpuModel::Entry).
int64_t weightBytesRead(func::FuncOp f, const llvm::DenseMap<Attribute, int64_t> *stored) {
  llvm::DenseSet<Attribute> seen;
  int64_t total = 0;
  f.walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      // Through fused regions to what they were given.
      while (auto arg = dyn_cast<BlockArgument>(v)) {
        auto fused = dyn_cast<FusedOp>(arg.getOwner()->getParentOp());
        if (!fused)
          break;
        v = fused->getOperand(arg.getArgNumber());
      }
      auto c = v.getDefiningOp<ConstantOp>();
      if (!c)
        continue;
      // An embedding reads the rows its ids name (a quantized one: of its
      // values, scales and zero points).
      bool gathered = (isa<EmbeddingOp>(op) && use.getOperandNumber() == 0) ||
                      (isa<QuantizedEmbeddingOp>(op) && use.getOperandNumber() < 3);
      if (gathered) {
        auto table = dyn_cast<RankedTensorType>(c.getType());
        auto ids = dyn_cast<RankedTensorType>(
            op->getOperand(isa<EmbeddingOp>(op) ? 1 : 3).getType());
        if (table && ids && table.hasStaticShape() && ids.hasStaticShape() && table.getDimSize(0))
          total += ids.getNumElements() * (bytesOf(table) / table.getDimSize(0));
        continue;
      }
      if (!seen.insert(c.getValue()).second)
        continue;
      int64_t bytes = bytesOf(c.getType());
      if (stored)
        if (auto it = stored->find(c.getValue()); it != stored->end())
          bytes = it->second;
      total += bytes;
    }
  });
  return total;
}

/// Whether everything that reads the cache `v` takes its capacity from the
/// tensor at run time: cache updates (whose result is the same cache), the
/// attention kernels over the cache (decode partial, flash, cached), fused
/// regions whose inner uses pass the same test, yields and returns. Any
/// other reader (a view, a reference kernel of another op) has the compiled
/// [B, H, capacity, D] shape built in.
bool readsCapacityAtRunTime(Value v) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto u = dyn_cast<CacheUpdateOp>(user)) {
      if (use.get() != u.getCache() || !readsCapacityAtRunTime(u.getResult()))
        return false;
    } else if (auto q = dyn_cast<QuantizedCacheUpdateOp>(user)) {
      unsigned i = use.getOperandNumber();
      if (i > 1 || !readsCapacityAtRunTime(q->getResult(i)))
        return false;
    } else if (auto fused = dyn_cast<FusedOp>(user)) {
      if (!readsCapacityAtRunTime(fused.getRegion().front().getArgument(use.getOperandNumber())))
        return false;
    } else if (auto yield = dyn_cast<YieldOp>(user)) {
      auto fused = dyn_cast<FusedOp>(yield->getParentOp());
      if (!fused || !readsCapacityAtRunTime(fused->getResult(use.getOperandNumber())))
        return false;
    } else if (!isa<DecodeAttentionPartialOp, FlashAttentionOp, CachedAttentionOp, CacheReadOp,
                    func::ReturnOp>(user)) {
      return false;
    }
  }
  return true;
}

bool isStatic(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.hasStaticShape();
}

llvm::SmallVector<std::pair<Operation *, Operation *>> inPlaceScatters(Block &block) {
  SmallVector<std::pair<Operation *, Operation *>> pairs;
  for (Operation &op : block.without_terminator()) {
    auto update = dyn_cast<CacheUpdateOp>(&op);
    Operation *scatter = update ? update.getUpdate().getDefiningOp() : nullptr;
    if (!scatter || scatter->getBlock() != &block ||
        shortName(scatter) != "onnx.tensor_scatter")
      continue;
    Value cache = scatter->getOperand(0), indices = scatter->getOperand(2);
    auto arg = dyn_cast<BlockArgument>(cache);
    auto mode = scatter->getAttrOfType<StringAttr>("mode");
    auto indexType = dyn_cast<RankedTensorType>(indices.getType());
    std::optional<SmallVector<int64_t>> pos = getConstantInts(update.getPos());
    bool entryCache = arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()) &&
                      arg.getArgNumber() >= 2;
    if (entryCache && cache == update.getCache() && !(mode && mode.getValue() == "circular") &&
        !isNone(indices) && indexType && indexType.getElementType().isInteger(64) &&
        isStatic(scatter->getOperand(1).getType()) && isStatic(cache.getType()) && pos &&
        pos->size() == 1 && (*pos)[0] == 0 && update.getUpdate().getType() == cache.getType() &&
        llvm::all_of(cache.getUsers(), [&](Operation *u) { return u == scatter || u == &op; }))
      pairs.push_back({scatter, &op});
  }
  return pairs;
}

llvm::SmallVector<func::FuncOp> entryFunctionsInOrder(ModuleOp module) {
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  llvm::stable_sort(funcs, [](func::FuncOp a, func::FuncOp b) {
    auto key = [](func::FuncOp f) {
      auto t = f.getNumArguments() ? dyn_cast<RankedTensorType>(f.getArgument(0).getType())
                                   : RankedTensorType();
      bool decode = f.getSymName().starts_with("decode_");
      int64_t batch = t && t.hasStaticShape() ? t.getDimSize(0) : 0;
      int64_t seq = t && t.hasStaticShape() ? t.getDimSize(1) : 0;
      return std::make_tuple(decode, batch, seq);
    };
    return key(a) < key(b);
  });
  return funcs;
}

llvm::Expected<EntrySignature> entrySignature(func::FuncOp f, bool allowI32Tokens) {
  EntrySignature sig;
  CpuModel::Entry &entry = sig.entry;
  std::string fname = f.getSymName().str();
  entry.name = fname;
  entry.decode = f.getSymName().starts_with("decode_b");
  if (!entry.decode && !f.getSymName().starts_with("prefill_b"))
    return makeError("function @" + fname +
                     " is not an entry point (run llmc-insert-kv-cache and llmc-bucket-shapes: "
                     "the code generators compile prefill_b<B>_s<S> and decode_b<B>)");
  auto argName = [&](unsigned i) {
    auto n = f.getArgAttrOfType<StringAttr>(i, "llm.name");
    return n ? n.getValue() : StringRef();
  };
  if (f.getNumArguments() < 2 || argName(0) != "tokens" || argName(1) != "start_pos")
    return makeError("@" + fname + " must take (tokens, start_pos, caches...)");
  auto tokens = dyn_cast<RankedTensorType>(f.getArgument(0).getType());
  sig.tokens32 = tokens && tokens.getElementType().isInteger(32);
  if (!tokens || !tokens.hasStaticShape() || tokens.getRank() != 2 ||
      !(tokens.getElementType().isInteger(64) || (sig.tokens32 && allowI32Tokens)))
    return makeError("@" + fname + ": tokens must be a static " +
                     (allowI32Tokens ? "i64 or i32" : "i64") + " [batch, seq] tensor");
  entry.batch = tokens.getDimSize(0);
  entry.seq = tokens.getDimSize(1);
  for (unsigned i = 2; i < f.getNumArguments(); ++i) {
    auto t = dyn_cast<RankedTensorType>(f.getArgument(i).getType());
    if (!argName(i).starts_with("cache.") || !t || !t.hasStaticShape() || t.getRank() != 4 ||
        t.getDimSize(0) != entry.batch)
      return makeError("@" + fname + ": argument " + std::to_string(i) + " ('" + argName(i).str() +
                       "') is not a [batch, heads, capacity, head_dim] cache");
    sig.caches.push_back({argName(i).str(), t.getDimSize(1), t.getDimSize(2), t.getDimSize(3),
                          getOnnxCodeForElementType(t.getElementType())});
  }
  return sig;
}

llvm::Error takeCaches(CpuModel &model, const std::vector<CpuModel::Cache> &caches,
                       llvm::StringRef fname) {
  if (model.entries.empty()) {
    model.caches = caches;
    return llvm::Error::success();
  }
  bool same = caches.size() == model.caches.size();
  for (size_t i = 0; same && i < caches.size(); ++i)
    same = caches[i].name == model.caches[i].name && caches[i].heads == model.caches[i].heads &&
           caches[i].capacity == model.caches[i].capacity &&
           caches[i].headDim == model.caches[i].headDim && caches[i].dtype == model.caches[i].dtype;
  if (!same)
    return makeError("@" + fname.str() + ": its caches differ from @" + model.entries[0].name +
                     "'s");
  return llvm::Error::success();
}

void writeEntryComment(llvm::raw_ostream &os, const CpuModel &model) {
  for (const CpuModel::Entry &e : model.entries)
    os << "//   " << e.name << ": tokens i64[" << e.batch << ", " << e.seq << "], logits f32["
       << e.batch << ", " << e.seq << ", " << model.vocab << "]\n";
}

/// Whether `op` treats each row (position) of its [B, S, ...] operand
/// `row` on its own, every other operand being a constant (a linear layer's
/// weights; else of at most one dimension: a norm's weight, a bias, a
/// scalar): norms and linear layers over the last dimension, casts,
/// element-wise operations.
static bool rowWise(Operation *op, Value row, int64_t batch, int64_t seq) {
  auto rowShaped = [&](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && t.hasStaticShape() && t.getRank() == 3 && t.getDimSize(0) == batch &&
           t.getDimSize(1) == seq;
  };
  if (op->getNumResults() != 1 || !rowShaped(row) || !rowShaped(op->getResult(0)))
    return false;
  if (auto fused = dyn_cast<FusedOp>(op)) {
    Block &inner = fused.getRegion().front();
    Value at; // the region's row value
    for (auto [arg, operand] : llvm::zip(inner.getArguments(), fused->getOperands()))
      if (operand == row)
        at = arg;
    auto yield = cast<YieldOp>(inner.getTerminator());
    for (Operation &o : inner.without_terminator()) {
      if (o.getNumOperands() == 0 || o.getOperand(0) != at || !rowWise(&o, at, batch, seq))
        return false;
      at = o.getResult(0);
    }
    return yield->getNumOperands() == 1 && yield->getOperand(0) == at;
  }
  StringRef name = shortName(op);
  bool elementwise = name == "onnx.cast" || name == "onnx.tanh" || name == "onnx.mul" ||
                     name == "onnx.div" || name == "onnx.add" || name == "onnx.sub" ||
                     name == "onnx.neg";
  if (!isa<RmsNormOp, LayerNormOp, LinearOp, QuantizedLinearOp>(op) && !elementwise)
    return false;
  if (op->getOperand(0) != row)
    return false;
  // A linear layer's weights are any constants; the other operations'
  // constants must not vary along the positions.
  bool linear = isa<LinearOp, QuantizedLinearOp>(op);
  for (Value o : llvm::drop_begin(op->getOperands())) {
    if (isNone(o))
      continue;
    auto c = outside(o).getDefiningOp<ConstantOp>();
    auto t = dyn_cast<RankedTensorType>(o.getType());
    if (!c || !t || (!linear && t.getRank() > 1))
      return false;
  }
  return true;
}

static bool containsLinear(Operation *op) {
  bool found = false;
  op->walk([&](Operation *o) { found |= isa<LinearOp, QuantizedLinearOp>(o); });
  return found;
}

static std::optional<LogitsTail> logitsTailOf(Block &block, Value logits, int64_t batch,
                                              int64_t seq) {
  LogitsTail tail;
  bool linear = false;
  Value v = logits;
  while (true) {
    Operation *d = v.getDefiningOp();
    if (!d || d->getBlock() != &block || d->getNumOperands() == 0 ||
        !rowWise(d, d->getOperand(0), batch, seq) || (v != logits && !v.hasOneUse()))
      break;
    tail.ops.insert(d);
    linear |= containsLinear(d);
    tail.input = d->getOperand(0);
    v = tail.input;
  }
  // The hidden state is read by the tail alone (it gets another name there).
  if (!linear || !tail.input || !tail.input.hasOneUse())
    return std::nullopt;
  return tail;
}


std::optional<LogitsTail> logitsTail(func::FuncOp f, int64_t batch, int64_t seq) {
  Block &block = f.getBody().front();
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (auto n = f.getResultAttrOfType<StringAttr>(i, "llm.name"); n && n.getValue() == "logits")
      return logitsTailOf(block, block.getTerminator()->getOperand(i), batch, seq);
  return std::nullopt;
}

void writeAbiTables(llvm::raw_ostream &os, const CpuModel &model, llvm::StringRef fnResult) {
  os << "  static constexpr uint32_t kNumEntries = " << model.entries.size() << ";\n"
     << "  static inline const llmc_model_entry kEntries[] = {\n";
  for (const CpuModel::Entry &e : model.entries)
    os << "      {" << quote(e.name) << ", " << (e.decode ? "LLMC_ENTRY_DECODE" : "LLMC_ENTRY_PREFILL")
       << ", " << e.batch << ", " << e.seq << "},\n";
  os << "  };\n  using EntryFn = " << fnResult << " (*)(Model &, const Args &);\n"
     << "  static inline const EntryFn kFns[] = {"
     << llvm::join(llvm::map_range(model.entries,
                                   [](const CpuModel::Entry &e) { return "&" + e.name; }),
                   ", ")
     << "};\n"
     << "  static constexpr uint32_t kNumCaches = " << model.caches.size() << ";\n"
     << "  static inline const llmc_model_cache kCaches[] = {\n";
  for (const CpuModel::Cache &c : model.caches)
    os << "      {" << quote(c.name) << ", " << c.heads << ", " << c.capacity << ", " << c.headDim
       << ", " << c.dtype << "},\n";
  if (model.caches.empty())
    os << "      {\"\", 0, 0, 0, 0},\n";
  os << "  };\n"
     << "  static constexpr uint64_t kWeightsBytes = " << model.weights.size() << ";\n"
     << "  static constexpr int64_t kVocab = " << model.vocab << ";\n";
}

void finishWeights(CpuModel &model) {
  model.weights.resize((model.weights.size() + 63) / 64 * 64, 0);
  std::array<uint8_t, 32> digest = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(model.weights.data()), model.weights.size()));
  model.weightsSha256 = llvm::toHex(digest, /*LowerCase=*/true);
}

size_t WeightsWriter::store(llvm::StringRef bytes, llvm::StringRef name) {
  uint64_t hash = llvm::xxh3_64bits(bytes);
  for (size_t candidate : byHash[hash])
    if (model.weights.size() >= candidate + bytes.size() &&
        llvm::StringRef(model.weights.data() + candidate, bytes.size()) == bytes)
      return candidate;
  size_t offset = (model.weights.size() + 63) / 64 * 64;
  model.weights.resize(offset + bytes.size(), 0);
  if (!bytes.empty())
    std::memcpy(model.weights.data() + offset, bytes.data(), bytes.size());
  byHash[hash].push_back(offset);
  model.blobs.push_back({name.str(), int64_t(offset), int64_t(bytes.size())});
  return offset;
}

} // namespace mlir::llmc::codegen
