//===- ModelSummary.cpp - facts about an ONNX model for `llmc check` ------===//
#include "python-free-frontend/ModelSummary.h"

#include "dialects/LLM/IR/OnnxDataType.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <set>

using namespace mlir;
using namespace mlir::llmc;
using llvm::StringRef;

namespace {

ModelSummary::ValueSummary summarizeValue(const OnnxValueType &t, StringRef name) {
  ModelSummary::ValueSummary v;
  v.name = name.str();
  const OnnxDataTypeInfo *info = lookupOnnxDataType(t.elemType);
  v.dtype = info ? info->shortName : "unknown";
  v.ranked = t.hasShape;
  for (auto [size, dimName] : llvm::zip(t.dims, t.dimNames))
    v.dims.push_back(size >= 0 ? std::to_string(size) : dimName.empty() ? "?" : dimName);
  return v;
}

/// The value at `path` (dotted keys) of a JSON file beside the model.
std::optional<llvm::json::Value> readJsonField(StringRef dir, StringRef file,
                                               llvm::ArrayRef<StringRef> path) {
  llvm::SmallString<256> full(dir);
  llvm::sys::path::append(full, file);
  auto buffer = llvm::MemoryBuffer::getFile(full, /*IsText=*/true);
  if (!buffer)
    return std::nullopt;
  auto json = llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    llvm::consumeError(json.takeError());
    return std::nullopt;
  }
  const llvm::json::Value *v = &*json;
  for (StringRef key : path) {
    const llvm::json::Object *o = v->getAsObject();
    if (!o || !(v = o->get(key)))
      return std::nullopt;
  }
  return *v;
}

/// Indices N that appear as "<prefix>N." in `name` for the usual per-layer
/// prefixes of HF and exporter names.
void collectLayerIndices(StringRef name, std::set<int64_t> &out) {
  for (StringRef prefix : {"layers.", "h.", "layer.", "blocks.", "layers/", "h/"}) {
    size_t pos = 0;
    while ((pos = name.find(prefix, pos)) != StringRef::npos) {
      // The prefix must start a name component.
      bool boundary = pos == 0 || StringRef("./_").contains(name[pos - 1]);
      pos += prefix.size();
      size_t end = pos;
      while (end < name.size() && llvm::isDigit(name[end]))
        ++end;
      int64_t n;
      if (boundary && end > pos && !name.substr(pos, end - pos).getAsInteger(10, n))
        out.insert(n);
    }
  }
}

bool mentionsAttention(StringRef name) {
  return name.contains("attn") || name.contains("attention");
}

} // namespace

llvm::Expected<ModelSummary> mlir::llmc::summarizeModel(const OnnxModel &model) {
  ModelSummary s;
  const onnx::ModelProto &proto = model.proto();
  const onnx::GraphProto &graph = model.graph();
  s.producer = proto.producer_name();
  if (!proto.producer_version().empty())
    s.producer += " " + proto.producer_version();
  s.irVersion = proto.ir_version();
  s.graphName = graph.name();
  for (const onnx::OperatorSetIdProto &o : proto.opset_import()) {
    StringRef d = normalizeDomain(o.domain());
    s.opsets.push_back({d.empty() ? "ai.onnx" : d.str(), o.version()});
  }

  std::map<std::string, int64_t> histogram;
  llvm::StringSet<> opTypes;
  for (const onnx::NodeProto *node : model.sortedNodes()) {
    StringRef domain = normalizeDomain(node->domain());
    std::string key = (domain.empty() ? "" : domain.str() + ":") + node->op_type();
    ++histogram[key];
    opTypes.insert(key);
  }
  s.numNodes = graph.node_size();
  s.opHistogram.assign(histogram.begin(), histogram.end());
  std::stable_sort(s.opHistogram.begin(), s.opHistogram.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });

  for (const onnx::ValueInfoProto *in : model.realInputs()) {
    auto t = model.valueType(*in, "graph input");
    if (!t)
      return t.takeError();
    s.inputs.push_back(summarizeValue(*t, in->name()));
  }
  for (const onnx::ValueInfoProto &out : graph.output()) {
    auto t = model.valueType(out, "graph output");
    if (!t)
      return t.takeError();
    s.outputs.push_back(summarizeValue(*t, out.name()));
  }

  std::set<int64_t> layers;
  llvm::StringSet<> weightNames;
  for (const onnx::TensorProto &t : graph.initializer()) {
    const OnnxDataTypeInfo *info = lookupOnnxDataType(t.data_type());
    uint64_t n = 1;
    for (int64_t d : t.dims())
      n *= uint64_t(d); // bounded by OnnxModel::checkTensor
    uint64_t bytes = 0;
    if (info)
      onnxRawByteSize(*info, n, bytes);
    ModelSummary::DTypeTotals &totals = s.parameters[info ? info->shortName : "unknown"];
    totals.elements += n;
    totals.bytes += bytes;
    totals.tensors += 1;
    s.parameterCount += n;
    s.parameterBytes += bytes;
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      s.externalBytes += bytes;
    weightNames.insert(t.name());
    if (mentionsAttention(t.name()))
      collectLayerIndices(t.name(), layers);
  }
  for (const onnx::NodeProto &node : graph.node())
    if (mentionsAttention(node.name()))
      collectLayerIndices(node.name(), layers);
  if (!layers.empty())
    s.numLayers = int64_t(layers.size());

  // Features visible in the graph.
  auto has = [&](StringRef op) { return opTypes.contains(op); };
  bool cosTable = llvm::any_of(weightNames, [](const auto &e) {
    return e.getKey().contains("cos_cache");
  });
  if (has("com.microsoft:RotaryEmbedding") || has("RotaryEmbedding") || cosTable)
    s.features.push_back("rotary");
  if (has("SimplifiedLayerNormalization") || has("com.microsoft:SimplifiedLayerNormalization") ||
      has("com.microsoft:SkipSimplifiedLayerNormalization") || has("RMSNormalization"))
    s.features.push_back("rms_norm");
  if (has("LayerNormalization") || has("com.microsoft:SkipLayerNormalization") ||
      has("com.microsoft:EmbedLayerNormalization"))
    s.features.push_back("layer_norm");
  if (has("com.microsoft:GroupQueryAttention"))
    s.features.push_back("gqa");
  if (has("com.microsoft:MultiHeadAttention") || has("com.microsoft:Attention") ||
      has("com.microsoft:GroupQueryAttention") || has("Attention"))
    s.features.push_back("fused_attention");
  if (has("com.microsoft:MatMulNBits"))
    s.features.push_back("block_quantized_weights");
  if (has("com.microsoft:FastGelu") || has("com.microsoft:BiasGelu") || has("Gelu"))
    s.features.push_back("gelu");
  bool pastIO = llvm::any_of(s.inputs, [](const ModelSummary::ValueSummary &v) {
    return StringRef(v.name).contains("past");
  });
  if (pastIO)
    s.features.push_back("past_present_io");

  // Family: what the export's own config says, else what the weights say.
  StringRef dir = model.directory();
  if (auto t = readJsonField(dir, "genai_config.json", {"model", "type"}); t && t->getAsString()) {
    s.family = t->getAsString()->str();
    s.familySource = "genai_config.json";
  } else if (auto t = readJsonField(dir, "config.json", {"model_type"}); t && t->getAsString()) {
    s.family = t->getAsString()->str();
    s.familySource = "config.json";
  } else {
    auto anyName = [&](StringRef needle) {
      for (const auto &e : weightNames)
        if (e.getKey().contains(needle))
          return true;
      for (const onnx::NodeProto &node : graph.node())
        if (StringRef(node.name()).contains(needle))
          return true;
      return false;
    };
    if (anyName("c_attn") || has("com.microsoft:EmbedLayerNormalization"))
      s.family = "gpt2";
    else if (anyName("qkv_proj") && anyName("gate_up_proj"))
      s.family = "phi3";
    else if (anyName("q_proj.bias"))
      s.family = "qwen2";
    else if (anyName("pre_feedforward_layernorm"))
      s.family = "gemma2";
    else if (anyName("q_proj") && (anyName("gate_proj") || anyName("gate_up_proj")))
      s.family = "llama";
    if (!s.family.empty())
      s.familySource = "graph";
  }
  for (StringRef key : {"num_hidden_layers", "n_layer"}) {
    std::optional<llvm::json::Value> v =
        key == "num_hidden_layers"
            ? readJsonField(dir, "genai_config.json", {"model", "decoder", key})
            : readJsonField(dir, "config.json", {key});
    if (!v)
      v = readJsonField(dir, "config.json", {key});
    if (v && v->getAsInteger()) {
      s.numLayers = *v->getAsInteger();
      break;
    }
  }
  return s;
}
