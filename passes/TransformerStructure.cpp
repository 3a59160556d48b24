//===- TransformerStructure.cpp - read a raised function as a decoder -----===//
#include "passes/TransformerStructure.h"

#include "passes/BuildHelpers.h"
#include "passes/Raise.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// Operations that only move, reshape or convert data, or compute sizes,
/// positions and masks: the glue between recognised blocks.
bool isGlue(Operation *op) {
  static const llvm::StringSet<> kGlue = {
      "constant",       "none",          "onnx.reshape",  "onnx.transpose", "onnx.squeeze",
      "onnx.unsqueeze", "onnx.concat",   "onnx.slice",    "onnx.split",     "onnx.expand",
      "onnx.flatten",   "onnx.identity", "onnx.shape",    "onnx.size",      "onnx.cast",
      "onnx.gather",    "onnx.tensor_scatter"};
  if (kGlue.contains(shortName(op)))
    return true;
  // Integer and boolean computations: sizes, positions, masks.
  return llvm::all_of(op->getResultTypes(), [](Type t) {
    return !isa<FloatType>(getElementTypeOrSelf(t));
  });
}

bool isScalarConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto type = c ? dyn_cast<RankedTensorType>(c.getType()) : RankedTensorType();
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

/// A residual add (two computed tensors of one shape) or a scaling by a
/// scalar constant (Gemma's embedding scale).
bool isResidualOrScale(Operation *op) {
  StringRef n = shortName(op);
  if (op->getNumOperands() != 2)
    return false;
  Value a = op->getOperand(0), b = op->getOperand(1);
  if (n == "onnx.add")
    return !a.getDefiningOp<ConstantOp>() && !b.getDefiningOp<ConstantOp>() &&
           getShape(a.getType()) == getShape(b.getType());
  if (n == "onnx.mul")
    return isScalarConstant(a) || isScalarConstant(b);
  if (n == "onnx.div")
    return isScalarConstant(b);
  return false;
}

/// A constant [N] bias added to a projection the raise left separate (an
/// int4 MatMulNBits).
bool isProjectionBias(Operation *op) {
  if (shortName(op) != "onnx.add")
    return false;
  for (int side = 0; side < 2; ++side) {
    Operation *d = op->getOperand(side).getDefiningOp();
    auto c = op->getOperand(1 - side).getDefiningOp<ConstantOp>();
    auto type = c ? dyn_cast<RankedTensorType>(c.getType()) : RankedTensorType();
    if (d && (isa<LinearOp, QuantizedLinearOp>(d) || shortName(d) == "ms.matmul_nbits") && type &&
        type.getRank() == 1)
      return true;
  }
  return false;
}

/// act(gate) * up of a gated MLP whose activation has no fused llm op.
bool isGate(Operation *op) {
  if (shortName(op) != "onnx.mul")
    return false;
  return llvm::any_of(op->getOperands(), [](Value v) {
    Operation *d = v.getDefiningOp();
    return d && isa<GeluOp, SiluOp, ReluOp>(d) && v.hasOneUse();
  });
}

/// The llm.rope `v` comes from through layout changes, if any.
RopeOp ropeOf(Value v) {
  for (int step = 0; step < 6 && v; ++step) {
    Operation *d = v.getDefiningOp();
    if (!d)
      return {};
    if (auto r = dyn_cast<RopeOp>(d))
      return r;
    StringRef n = shortName(d);
    if (n != "onnx.transpose" && n != "onnx.reshape" && n != "onnx.cast")
      return {};
    v = d->getOperand(0);
  }
  return {};
}

std::string fmt(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s;
}

std::string describeAttention(AttentionOp a) {
  int64_t hq = a.getNumHeads(), hkv = a.getNumKvHeads();
  std::string s = "attention(";
  if (hq == hkv)
    s += "MHA " + std::to_string(hq);
  else if (hkv == 1)
    s += "MQA " + std::to_string(hq) + "/1";
  else
    s += "GQA " + std::to_string(hq) + "/" + std::to_string(hkv);
  if (RopeOp r = ropeOf(a.getQ())) {
    s += ", rope";
    if (r.getInterleaved())
      s += " interleaved";
    if (r.getRotaryDim())
      s += " " + std::to_string(r.getRotaryDim());
  }
  if (a.getCausal())
    s += ", causal";
  else if (!isNone(a.getMask()))
    s += ", masked";
  if (a.getWindow() > 0)
    s += ", window " + std::to_string(a.getWindow());
  if (a.getSoftcap().convertToDouble() > 0)
    s += ", softcap " + fmt(a.getSoftcap().convertToDouble());
  if (a.getSinks())
    s += ", sinks";
  return s + ")";
}

/// The MLP an activation belongs to: "swiglu mlp", "gelu mlp", a gated
/// "gelu_tanh gated mlp" when multiplied by another projection.
std::string describeActivation(Operation *op) {
  if (isa<SwigluOp>(op))
    return "swiglu mlp";
  std::string name = isa<SiluOp>(op)    ? "silu"
                     : isa<ReluOp>(op) ? (cast<ReluOp>(op).getSquared() ? "relu2" : "relu")
                     : cast<GeluOp>(op).getApproximateTanh() ? "gelu_tanh"
                                                             : "gelu";
  Value y = op->getResult(0);
  bool gated = y.hasOneUse() && shortName(*y.getUsers().begin()) == "onnx.mul" &&
               !isResidualOrScale(*y.getUsers().begin());
  return name + (gated ? " gated mlp" : " mlp");
}

/// What `v` is computed by, through layout changes and a projection's
/// separate bias add.
Operation *producerOf(Value v) {
  for (int step = 0; step < 6 && v; ++step) {
    Operation *d = v.getDefiningOp();
    if (!d)
      return nullptr;
    StringRef n = shortName(d);
    if (n == "onnx.transpose" || n == "onnx.reshape" || n == "onnx.cast")
      v = d->getOperand(0);
    else if (isProjectionBias(d))
      v = d->getOperand(d->getOperand(0).getDefiningOp<ConstantOp>() ? 1 : 0);
    else
      return d;
  }
  return nullptr;
}

/// Whether a norm reads an MLP's output (Gemma 2's and 3's norm after the
/// MLP, which belongs to the layer before the next attention's norms): a
/// projection of an activation or of a gated product.
bool readsMlpOutput(Operation *norm) {
  Operation *proj = producerOf(norm->getOperand(0));
  if (!proj || !(isa<LinearOp, QuantizedLinearOp>(proj) || shortName(proj) == "ms.matmul_nbits"))
    return false;
  Operation *in = producerOf(proj->getOperand(0));
  return in && (isa<SwigluOp, GeluOp, SiluOp, ReluOp>(in) || isGate(in));
}

struct Event {
  enum Kind { Embedding, Norm, Attention, Mlp } kind;
  std::string text;
  bool afterMlp = false; // a norm of the MLP's output
};

} // namespace

std::string TransformerStructure::summary() const {
  std::vector<std::string> parts(prologue);
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j < layers.size() && layers[j] == layers[i])
      ++j;
    std::string layer = "[";
    for (size_t k = 0; k < layers[i].size(); ++k)
      layer += (k ? ", " : "") + layers[i][k];
    layer += "]";
    parts.push_back(j - i > 1 ? std::to_string(j - i) + " x " + layer : layer);
    i = j;
  }
  parts.insert(parts.end(), epilogue.begin(), epilogue.end());
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i)
    s += (i ? ", " : "") + parts[i];
  return s.empty() ? "(nothing recognised)" : s;
}

std::vector<std::string> mlir::llmc::ownCacheInputs(ModuleOp module) {
  std::vector<std::string> names;
  for (auto f : module.getOps<func::FuncOp>()) {
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (auto n = f.getArgAttrOfType<StringAttr>(i, "llm.name");
          n && n.getValue().starts_with("cache.io."))
        names.push_back(n.getValue().drop_front(strlen("cache.io.")).str());
    if (!names.empty())
      break;
  }
  return names;
}

bool mlir::llmc::keepsTokenHistory(ModuleOp module) {
  for (auto f : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (auto n = f.getArgAttrOfType<StringAttr>(i, "llm.name"); n && n.getValue() == "cache.tokens")
        return true;
  return false;
}

TransformerStructure mlir::llmc::describeTransformer(func::FuncOp func) {
  TransformerStructure out;
  std::vector<Event> events;
  // The lm_head: a projection whose result the function returns, perhaps
  // through a softcap of the logits, c * tanh(x / c) (Gemma 2's).
  llvm::DenseSet<Operation *> returned, logitSoftcap;
  std::optional<double> softcap;
  func.walk([&](func::ReturnOp ret) {
    for (Value v : ret.getOperands())
      for (int step = 0; step < 6 && v; ++step) {
        Operation *d = v.getDefiningOp();
        if (!d)
          break;
        returned.insert(d);
        StringRef n = shortName(d);
        if (std::optional<raise::Softcap> capped = raise::softcapOf(v)) {
          logitSoftcap.insert(capped->tanh);
          softcap = capped->cap;
          v = capped->x;
          continue;
        }
        v = (n == "onnx.reshape" || n == "onnx.cast" || n == "onnx.slice" ||
             n == "onnx.gather") ? d->getOperand(0) : Value();
      }
  });
  bool lmHead = false;
  func.walk([&](Operation *op) {
    if (op == func.getOperation() || isa<func::ReturnOp>(op))
      return;
    StringRef n = shortName(op);
    if (isa<EmbeddingOp, QuantizedEmbeddingOp>(op) || n == "ms.gather_block_quantized") {
      std::string what = "embedding";
      if (auto q = dyn_cast<QuantizedEmbeddingOp>(op))
        what += "(int" + std::to_string(q.getBits()) + ")";
      else if (n != "embedding")
        what += "(int4)";
      events.push_back({Event::Embedding, what});
    } else if (isa<RmsNormOp, LayerNormOp>(op)) {
      events.push_back({Event::Norm, n.str(), readsMlpOutput(op)});
    } else if (auto a = dyn_cast<AttentionOp>(op)) {
      events.push_back({Event::Attention, describeAttention(a)});
    } else if (isa<SwigluOp, GeluOp, SiluOp, ReluOp>(op)) {
      events.push_back({Event::Mlp, describeActivation(op)});
    } else if (isa<LinearOp, QuantizedLinearOp>(op) || n == "ms.matmul_nbits") {
      if (returned.contains(op))
        lmHead = true;
    } else if (isa<RopeOp>(op) || isGlue(op) || isResidualOrScale(op) || isGate(op) ||
               logitSoftcap.contains(op) ||
               isProjectionBias(op) ||
               // a raised GroupQueryAttention kept for its window-sized
               // cache's present outputs (cache plumbing)
               (n == "ms.group_query_attention" && op->getResult(0).use_empty())) {
      // part of a recognised block
    } else {
      std::string node;
      if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
        node = loc.getName().str();
      out.unrecognized.push_back({n.str(), node});
      // Contrib attention still delimits a layer.
      if (n == "ms.group_query_attention" || n == "ms.multi_head_attention" ||
          n == "ms.attention" || n == "onnx.attention")
        events.push_back({Event::Attention, n.str() + " (not raised)"});
    }
  });
  // Layers: each attention with the norms before it (after the previous
  // layer's MLP and its norm, if any) and what follows up to the next
  // layer's norms.
  std::vector<size_t> attns;
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].kind == Event::Attention)
      attns.push_back(i);
  size_t cursor = 0;
  for (size_t k = 0; k < attns.size(); ++k) {
    size_t a = attns[k], start = a;
    while (start > cursor && events[start - 1].kind == Event::Norm && !events[start - 1].afterMlp)
      --start;
    for (size_t i = cursor; i < start; ++i) // before the first layer
      (k == 0 ? out.prologue : out.layers.back()).push_back(events[i].text);
    // The end: the last MLP before the next attention's norms.
    size_t limit = k + 1 < attns.size() ? attns[k + 1] : events.size(), end = a + 1;
    for (size_t i = a + 1; i < limit; ++i)
      if (events[i].kind == Event::Mlp)
        end = i + 1;
    if (k + 1 < attns.size())
      while (end < limit && (events[end].kind != Event::Norm || events[end].afterMlp))
        ++end;
    else
      while (end < limit && events[end].kind == Event::Norm && events[end].afterMlp)
        ++end;
    std::vector<std::string> layer;
    for (size_t i = start; i < end; ++i)
      layer.push_back(events[i].text);
    out.layers.push_back(std::move(layer));
    cursor = end;
  }
  for (size_t i = cursor; i < events.size(); ++i)
    (attns.empty() ? out.prologue : out.epilogue).push_back(events[i].text);
  if (lmHead)
    out.epilogue.push_back(softcap ? "lm_head (logit softcap " + fmt(*softcap) + ")" : "lm_head");
  return out;
}
