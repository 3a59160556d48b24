//===- EmitCpp.cpp - C++ for the CPU from the compiled entry points -------===//
//
// One C++ statement (or a few) per operation, in program order: constants
// are references to weight tensors wrapped once at init, views share
// storage, cache updates write the caller's cache in place, fused regions
// become a block of their inner operations, and every other operation calls
// its reference kernel through ModelSupport's bridge with attributes built
// once at init. Shapes are static, so each statement's comment gives its
// result type.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CPU/EmitCpp.h"
#include "compiler/Codegen/EmitCommon.h"

#include "compiler/Executor/Error.h"
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"
#include "passes/BuildHelpers.h"
#include "passes/KernelBridge.h"
#include "runtime/src/cpu/kernels/StridedMatmul.h"
#include "runtime/src/model/kernels/Packed.h"
#include "runtime/src/model/kernels/QuantPanels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::codegen;
namespace cpu = ::llmc::cpu;

namespace {

/// The operations at the end of an entry that make the logits from the
/// hidden state position by position (the final norm, lm_head, a softcap, a
/// cast): with them known, an entry computes the logits of only the
/// positions its caller asks for (model ABI run_rows), a bucket's padding
/// and a prompt's earlier positions skipped.
struct LogitsTail {
  Value input;                      // the hidden state [B, S, H] they read
  llvm::DenseSet<Operation *> ops;  // top-level operations of the entry
};

/// Whether `op` treats each row (position) of its [B, S, ...] operand
/// `row` on its own, every other operand being a constant (a linear layer's
/// weights; else of at most one dimension: a norm's weight, a bias, a
/// scalar): norms and linear layers over the last dimension, casts,
/// element-wise operations.
bool rowWise(Operation *op, Value row, int64_t batch, int64_t seq) {
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

bool containsLinear(Operation *op) {
  bool found = false;
  op->walk([&](Operation *o) { found |= isa<LinearOp, QuantizedLinearOp>(o); });
  return found;
}

/// The tail that makes `logits` (returned by the entry whose body is
/// `block`), or nothing when the logits do not end in one with a linear
/// layer.
std::optional<LogitsTail> logitsTail(Block &block, Value logits, int64_t batch, int64_t seq) {
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

class Emitter {
public:
  explicit Emitter(ModuleOp module) : module(module) {}

  llvm::Expected<CpuModel> run(llvm::StringRef version);

private:
  llvm::Error emitFunction(func::FuncOp f);
  llvm::Error emitBlock(Block &block, CpuModel::Entry &stats, int depth);
  llvm::Error emitOp(Operation *op, CpuModel::Entry &stats, int depth);
  /// The statement of a quantized linear layer (x and the residual given as
  /// C++ expressions, the result named v).
  llvm::Error emitQuantizedLinear(QuantizedLinearOp op, const std::string &x, const std::string &v,
                                  const std::string &residual, CpuModel::Entry &stats, int depth);
  /// `name` says what the constant is (in the manifest's weights table).
  llvm::Expected<int> weightIndex(ElementsAttr attr, llvm::StringRef name);
  /// The weight [N, K] of a linear layer, stored in the kernels' column
  /// panels (runtime/src/model/kernels/Packed.h) as [panels, K, 16].
  llvm::Expected<int> packedWeightIndex(ElementsAttr attr, llvm::StringRef name);
  /// A float constant stored as f32 (f16/bf16 widened exactly).
  llvm::Expected<int> f32WeightIndex(ElementsAttr attr, llvm::StringRef name);
  /// The weight of a quantized linear layer with int8 activations, stored
  /// in the quantized panels of runtime/src/model/kernels/QuantPanels.h as
  /// [panels, panel bytes] (scales and zero points inside); `shape` gets
  /// the layout (f16 scales when every scale is exactly one).
  llvm::Expected<int> quantPanelWeightIndex(QuantizedLinearOp op, ElementsAttr q,
                                            ElementsAttr scales, ElementsAttr zp,
                                            ::llmc::model::kernels::QuantPanelShape &shape);
  /// Where `bytes` lie in weights.bin (equal bytes are stored once, under
  /// the first `name` that stored them).
  size_t storeBlob(llvm::StringRef bytes, llvm::StringRef name);
  llvm::Expected<int> attrIndex(Operation *op);
  int kernelIndex(llvm::StringRef name);
  std::string newName() { return "v" + std::to_string(counter++); }
  std::string indent(int depth) const { return std::string(size_t(2 * depth), ' '); }
  /// A constant's name until something reads it as it is: "\x01<i>" for
  /// lazyConstants[i]. Read, it goes into weights.bin (so a weight only the
  /// packed kernel reads is stored only packed).
  std::string resolve(const std::string &name) {
    if (name.empty() || name[0] != '\x01')
      return name;
    ConstantOp c = lazyConstants[std::stoul(name.substr(1))];
    auto w = weightIndex(cast<ElementsAttr>(c.getValue()), nodeName(c));
    if (!w) {
      if (!deferredError)
        deferredError = w.takeError();
      else
        llvm::consumeError(w.takeError());
      return "m.w[0]";
    }
    return llvm::formatv("m.w[{0}]", *w).str();
  }
  /// "&v3" or "nullptr" for an operand.
  std::string operandPtr(Value v) {
    auto it = names.find(v);
    return it == names.end() || it->second.empty() ? "nullptr" : "&" + resolve(it->second);
  }
  llvm::Expected<std::string> operandRef(Operation *op, Value v) {
    auto it = names.find(v);
    if (it == names.end() || it->second.empty())
      return makeError(nodeName(op) + ": an operand has no value");
    return resolve(it->second);
  }

  /// " = m.place(offset, bytes)" when the memory plan gave `r` a buffer of
  /// its own in the arena (of its bytes with dynamic sizes bounded as the
  /// plan bounds them: a larger run-time result is allocated instead), else
  /// "".
  std::string placed(Value r) {
    auto res = dyn_cast<OpResult>(r);
    auto offsets = res ? res.getOwner()->getAttrOfType<DenseI64ArrayAttr>("llm.arena_offsets")
                       : DenseI64ArrayAttr();
    if (!offsets || int64_t(res.getResultNumber()) >= offsets.size() ||
        offsets[res.getResultNumber()] < 0)
      return "";
    return llvm::formatv(" = m.place({0}, {1})", offsets[res.getResultNumber()],
                         arenaBytesOf(r.getType(), bound))
        .str();
  }

  ModuleOp module;
  CpuModel model;
  std::string body;    // the entry functions
  std::string init;    // Model::init's statements
  llvm::DenseMap<Value, std::string> names;
  llvm::DenseMap<Attribute, int> weights, packedWeights, f32Weights;
  /// Packed quantized weights by (values, scales, zero points, bits, group
  /// size, K): the panels hold all three, so equal values with other
  /// scales are another weight.
  std::map<std::tuple<const void *, const void *, const void *, int64_t, int64_t, int64_t>,
           std::pair<int, ::llmc::model::kernels::QuantPanelShape>>
      quantPanels;
  /// The bytes of panels each constant went into (its values': the panels;
  /// its scales' and zero points': 0, they are inside), and the constants
  /// also stored as they are: what weightBytesRead counts for them.
  llvm::DenseMap<Attribute, int64_t> panelBytes;
  llvm::DenseSet<Attribute> storedPlain;
  std::set<std::string> recordedQuantized; // the layers of CpuModel::quantized
  std::vector<ConstantOp> lazyConstants;
  llvm::Error deferredError = llvm::Error::success();
  llvm::DenseSet<Operation *> folded; // emitted as part of an earlier statement
  // codegen::inPlaceScatters: TensorScatters that write the session's cache,
  // and the cache updates that then have nothing to copy.
  llvm::DenseSet<Operation *> scattersInPlace, updatesInPlace;
  WeightsWriter weightsWriter{model};
  llvm::DenseMap<Attribute, int> attrs;
  std::map<std::string, int> kernels;
  int counter = 0, numWeights = 0, numAttrs = 0;
  int64_t bound = 1; // of dynamic sizes in the current entry's memory plan
  std::optional<LogitsTail> tail; // of the current entry
  int64_t rowsBytes = 0;          // the largest hidden state a tail reads
  bool anyCapacity = true; // every cache passes readsCapacityAtRunTime
};

llvm::Expected<int> Emitter::weightIndex(ElementsAttr attr, llvm::StringRef name) {
  if (auto it = weights.find(attr); it != weights.end())
    return it->second;
  auto t = constantTensor(attr);
  if (!t)
    return t.takeError();
  size_t offset =
      storeBlob(llvm::StringRef(static_cast<const char *>(t->raw()), t->bytes()), name);
  int index = numWeights++;
  init += llvm::formatv("  w[{0}] = weight({1}, {2}, {3});\n", index, dtypeExpr(t->dtype()),
                        shapeExpr(ArrayRef<int64_t>(t->shape().data(), t->shape().size())), offset)
              .str();
  weights[attr] = index;
  storedPlain.insert(attr);
  return index;
}

size_t Emitter::storeBlob(llvm::StringRef bytes, llvm::StringRef name) {
  return weightsWriter.store(bytes, name);
}

llvm::Expected<int> Emitter::packedWeightIndex(ElementsAttr attr, llvm::StringRef name) {
  if (auto it = packedWeights.find(attr); it != packedWeights.end())
    return it->second;
  auto t = constantTensor(attr);
  if (!t)
    return t.takeError();
  if (t->rank() != 2)
    return makeError("a packed linear weight must be 2-D, got " + t->describe());
  int64_t n = t->dim(0), k = t->dim(1), panels = ::llmc::model::kernels::numPanels(n);
  size_t elem = cpu::storageSize(t->dtype());
  std::vector<char> packed(size_t(panels * k * ::llmc::model::kernels::kPanel) * elem);
  ::llmc::model::kernels::packPanels(t->raw(), n, k, elem, packed.data());
  size_t offset = storeBlob(llvm::StringRef(packed.data(), packed.size()), name);
  int index = numWeights++;
  init += llvm::formatv("  w[{0}] = weight({1}, {2}, {3}); // packed [{4}, {5}]\n", index,
                        dtypeExpr(t->dtype()),
                        shapeExpr({panels, k, ::llmc::model::kernels::kPanel}), offset, n, k)
              .str();
  packedWeights[attr] = index;
  return index;
}

llvm::Expected<int> Emitter::f32WeightIndex(ElementsAttr attr, llvm::StringRef name) {
  auto t = constantTensor(attr);
  if (!t)
    return t.takeError();
  if (t->dtype() == cpu::DType::Float)
    return weightIndex(attr, name);
  if (auto it = f32Weights.find(attr); it != f32Weights.end())
    return it->second;
  if (!cpu::isFloat(t->dtype()) || t->dtype() == cpu::DType::Double)
    return makeError("expected an f16/bf16 constant, got " + t->describe());
  std::vector<float> values(size_t(t->numel()));
  for (int64_t i = 0; i < t->numel(); ++i)
    values[size_t(i)] = float(cpu::floatElement(*t, i)); // exact: f16/bf16 fit in f32
  size_t offset = storeBlob(
      llvm::StringRef(reinterpret_cast<const char *>(values.data()), values.size() * 4), name);
  int index = numWeights++;
  init += llvm::formatv("  w[{0}] = weight(DType::Float, {1}, {2}); // widened to f32\n", index,
                        shapeExpr(ArrayRef<int64_t>(t->shape().data(), t->shape().size())), offset)
              .str();
  f32Weights[attr] = index;
  storedPlain.insert(attr);
  return index;
}

llvm::Error Emitter::emitQuantizedLinear(QuantizedLinearOp op, const std::string &x,
                                         const std::string &v, const std::string &residual,
                                         CpuModel::Entry &stats, int depth) {
  std::string in = indent(depth);
  auto constant = [&](Value value) -> ElementsAttr {
    auto c = isNone(value) ? ConstantOp() : outside(value).getDefiningOp<ConstantOp>();
    return c ? dyn_cast<ElementsAttr>(c.getValue()) : ElementsAttr();
  };
  ElementsAttr q = constant(op.getWeight()), scales = constant(op.getScales()),
               zp = constant(op.getZeroPoints());
  if (!q || !scales || (!isNone(op.getZeroPoints()) && !zp))
    return makeError(nodeName(op) + ": the quantized weight, scales and zero points must be "
                                    "constants");
  // With int8 activations: the quantized panels (scales and zero points
  // packed with the values); otherwise the layout as stored.
  ::llmc::model::kernels::QuantPanelShape panels;
  panels.bits = op.getBits(), panels.groupSize = op.getGroupSize();
  if (op.getInt8Activations() && panels.groupSize % ::llmc::model::kernels::kQuantBlock == 0) {
    auto pi = quantPanelWeightIndex(op, q, scales, zp, panels);
    if (!pi)
      return pi.takeError();
    recordQuantizedLayer(op, model, recordedQuantized, panels.bytes());
    body += llvm::formatv("{0}Tensor {1}{5}; // quantized_linear int{2} g{3}{4} (panels, int8 "
                          "activations) -> {6}\n",
                          in, v, op.getBits(), op.getGroupSize(),
                          residual != "nullptr" ? " + residual" : "", placed(op.getResult()),
                          describeType(op.getType()))
                .str();
    body += llvm::formatv("{0}LLMC_TRY(quantPanelLinear(m, {1}, {2}, m.w[{3}], {4}, {5}, {6}, "
                          "{7}, {8}, {9}, {10}, {11}));\n",
                          in, quote(nodeName(op)), x, *pi, panels.n, op.getBits(),
                          op.getGroupSize(), panels.halfScales ? "true" : "false",
                          panels.zeroPoints ? "true" : "false", operandPtr(op.getBias()),
                          residual, v)
                .str();
    stats.kernelCalls += depth == 1;
    return llvm::Error::success();
  }
  auto qi = weightIndex(q, nodeName(op) + " weight");
  if (!qi)
    return qi.takeError();
  auto si = f32WeightIndex(scales, nodeName(op) + " scales");
  if (!si)
    return si.takeError();
  std::string zpRef = "nullptr";
  if (zp) {
    auto zi = weightIndex(zp, nodeName(op) + " zero points");
    if (!zi)
      return zi.takeError();
    zpRef = llvm::formatv("&m.w[{0}]", *zi).str();
  }
  recordQuantizedLayer(op, model, recordedQuantized);
  body += llvm::formatv("{0}Tensor {1}{6}; // quantized_linear int{2} g{3}{4} -> {5}\n", in, v,
                        op.getBits(), op.getGroupSize(), residual != "nullptr" ? " + residual" : "",
                        describeType(op.getType()), placed(op.getResult()))
              .str();
  body += llvm::formatv("{0}LLMC_TRY(quantizedLinear(m, {1}, {2}, m.w[{3}], m.w[{4}], {5}, {6}, "
                        "{7}, {8}, {9}, {10}));\n",
                        in, quote(nodeName(op)), x, *qi, *si, zpRef, op.getBits(),
                        op.getGroupSize(), operandPtr(op.getBias()), residual, v)
              .str();
  stats.kernelCalls += depth == 1;
  return llvm::Error::success();
}

llvm::Expected<int>
Emitter::quantPanelWeightIndex(QuantizedLinearOp op, ElementsAttr q, ElementsAttr scales,
                               ElementsAttr zp, ::llmc::model::kernels::QuantPanelShape &shape) {
  shape.k = cast<RankedTensorType>(op.getX().getType()).getShape().back();
  auto key = std::make_tuple(q.getAsOpaquePointer(), scales.getAsOpaquePointer(),
                             zp ? zp.getAsOpaquePointer() : nullptr, shape.bits, shape.groupSize,
                             shape.k);
  if (auto it = quantPanels.find(key); it != quantPanels.end()) {
    shape = it->second.second;
    return it->second.first;
  }
  auto qt = constantTensor(q);
  if (!qt)
    return qt.takeError();
  auto st = constantTensor(scales);
  if (!st)
    return st.takeError();
  std::optional<cpu::Tensor> zt;
  if (zp) {
    auto z = constantTensor(zp);
    if (!z)
      return z.takeError();
    zt.emplace(std::move(*z));
  }
  shape.n = qt->rank() == 3 ? qt->dim(0) : -1;
  shape.groups = qt->rank() == 3 ? qt->dim(1) : -1;
  shape.zeroPoints = zp != nullptr;
  if (!shape.valid() || qt->numel() != shape.n * shape.groups * shape.groupSize * shape.bits / 8 ||
      st->numel() != shape.n * shape.groups || (zt && zt->numel() != st->numel()))
    return makeError(nodeName(op) + ": cannot pack the quantized weight " + qt->describe() +
                     " (scales " + st->describe() + ") of a layer with K = " +
                     std::to_string(shape.k) + " into panels");
  std::vector<float> sc(size_t(st->numel()));
  for (int64_t i = 0; i < st->numel(); ++i)
    sc[size_t(i)] = float(cpu::floatElement(*st, i));
  shape.halfScales = ::llmc::model::kernels::scalesFitHalf(sc.data(), st->numel());
  std::vector<uint8_t> packed(size_t(shape.bytes()));
  ::llmc::model::kernels::packQuantPanels(
      shape, static_cast<const uint8_t *>(qt->raw()), sc.data(),
      zt ? static_cast<const uint8_t *>(zt->raw()) : nullptr, packed.data());
  size_t offset = storeBlob(
      llvm::StringRef(reinterpret_cast<const char *>(packed.data()), packed.size()),
      nodeName(op) + " weight");
  int index = numWeights++;
  init += llvm::formatv("  w[{0}] = weight(DType::UInt8, {1}, {2}); // quantized panels of "
                        "[{3}, {4}] int{5} g{6}, {7} scales{8}\n",
                        index, shapeExpr({shape.panels(), shape.panelBytes()}), offset, shape.n,
                        shape.k, shape.bits, shape.groupSize, shape.halfScales ? "f16" : "f32",
                        shape.zeroPoints ? ", zero points" : "")
              .str();
  quantPanels[key] = {index, shape};
  panelBytes[q] += shape.bytes();
  panelBytes.try_emplace(scales, 0);
  if (zp)
    panelBytes.try_emplace(zp, 0);
  return index;
}

int Emitter::kernelIndex(llvm::StringRef name) {
  auto [it, inserted] = kernels.try_emplace(name.str(), int(kernels.size()));
  if (inserted)
    init += llvm::formatv("  LLMC_TRY(findKernel({0}, k[{1}]));\n", quote(name), it->second).str();
  return it->second;
}

llvm::Expected<int> Emitter::attrIndex(Operation *op) {
  DictionaryAttr dict = kernelAttributes(op);
  if (dict.empty())
    return -1;
  if (auto it = attrs.find(dict); it != attrs.end())
    return it->second;
  int index = numAttrs++;
  for (NamedAttribute a : dict) {
    auto value = attributeExpr(op, a, [&](ElementsAttr e) -> llvm::Expected<std::string> {
      auto w = weightIndex(e, nodeName(op) + " attribute " + a.getName().str());
      if (!w)
        return w.takeError();
      return llvm::formatv("tensorAttr(w[{0}])", *w).str();
    });
    if (!value)
      return value.takeError();
    init += llvm::formatv("  at[{0}].set({1}, {2});\n", index, quote(a.getName().getValue()),
                          *value)
                .str();
  }
  attrs[dict] = index;
  return index;
}

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
  // range, else a copy of each segment.
  if (name == "onnx.slice") {
    if (std::optional<SliceSegments> seg = sliceSegments(op);
        seg && (seg->count > 1 || !mayChange(op->getOperand(0)))) {
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
    auto list = [](ArrayRef<int64_t> v, int64_t fill) {
      SmallVector<std::string> items;
      for (size_t i = 0; i < StridedMatmul::kStridedBatchDims; ++i)
        items.push_back(std::to_string(i < v.size() ? v[i] : fill));
      return "{" + llvm::join(items, ", ") + "}";
    };
    Value y = op->getResult(0);
    std::string v = newName();
    body += llvm::formatv("{0}Tensor {1}{2}; // onnx.matmul{3} -> {4}\n", in, v, placed(y),
                          s->readsTranspose() ? " (transpose read in place)" : "",
                          describeType(y.getType()))
                .str();
    body += llvm::formatv("{0}LLMC_TRY(stridedMatmul(m, {1}, {2}, {3}, MatmulStrides{{{4}, "
                          "{5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}}, {15}, {16}));\n",
                          in, quote(nodeName(op)), *a, *b, s->m, s->n, s->k, s->aRow, s->aCol,
                          s->bRow, s->bCol, s->dims.size(), list(s->dims, 1),
                          list(s->aBatch, 0), list(s->bBatch, 0),
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
        // An int8 cache's scales, or none.
        std::string scales = args.size() == 6 ? "&" + args[4] + ", &" + args[5]
                                              : std::string("nullptr, nullptr");
        std::string v = newName();
        body += llvm::formatv("{0}Tensor {1}{11}; // fused \"attention\" (decode) -> {2}\n"
                              "{0}LLMC_TRY(decodeAttention(m, m.k[{3}], m.k[{4}], {5}, {6}, {7}, "
                              "{8}, {9}, {12}, {10}, {1}));\n",
                              in, v, describeType(combine.getType()),
                              kernelIndex("decode_attention_partial"),
                              kernelIndex("attention_combine"), quote(nodeName(partial)), args[0],
                              args[1], args[2], args[3],
                              *at < 0 ? std::string("nullptr") : llvm::formatv("&m.at[{0}]", *at).str(),
                              placed(combine.getResult()), scales)
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

llvm::Error Emitter::emitBlock(Block &block, CpuModel::Entry &stats, int depth) {
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
  tail.reset();
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (auto n = f.getResultAttrOfType<StringAttr>(i, "llm.name"); n && n.getValue() == "logits")
      tail = logitsTail(block, block.getTerminator()->getOperand(i), entry.batch, entry.seq);
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
     << "#include \"runtime/src/model/ModelSupport.h\"\n\n"
     << "namespace {\nusing namespace llmc::model;\n\n"
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

} // namespace

llvm::Expected<CpuModel> mlir::llmc::emitCpuModel(ModuleOp module, llvm::StringRef llmcVersion) {
  return Emitter(module).run(llmcVersion);
}
