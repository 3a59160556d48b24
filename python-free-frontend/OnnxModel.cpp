//===- OnnxModel.cpp - a validated, topologically sorted ONNX model ------===//
#include "python-free-frontend/OnnxModel.h"

#include "dialects/LLM/IR/Limits.h"
#include "dialects/LLM/IR/OnnxDataType.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>
#include <onnx/onnx_pb.h>

#include <climits>
#include <cstring>
#include <queue>

using namespace mlir;
using namespace mlir::llmc;
using llvm::StringRef;
using llvm::Twine;

namespace {

// Protobuf's own hard limit for a serialized message.
constexpr uint64_t kMaxProtoBytes = uint64_t(INT_MAX);

void silenceProtobufLogging() {
  static bool done = [] {
    google::protobuf::SetLogHandler(
        [](google::protobuf::LogLevel, const char *, int, const std::string &) {});
    return true;
  }();
  (void)done;
}

/// Collects protobuf text-format parse errors into one message.
class TextErrorCollector : public google::protobuf::io::ErrorCollector {
public:
  void AddError(int line, int column, const std::string &message) override {
    if (text.empty())
      text = "line " + std::to_string(line + 1) + ":" + std::to_string(column + 1) +
             ": " + message;
  }
  std::string text;
};

bool isTextName(StringRef path) {
  return path.ends_with(".textproto") || path.ends_with(".onnxtxt") ||
         path.ends_with(".pbtxt");
}

} // namespace

StringRef mlir::llmc::normalizeDomain(StringRef domain) {
  return domain == "ai.onnx" ? StringRef() : domain;
}

OnnxModel::OnnxModel() : model(std::make_unique<onnx::ModelProto>()) {}
OnnxModel::~OnnxModel() = default;

const onnx::GraphProto &OnnxModel::graph() const { return model->graph(); }

llvm::Error OnnxModel::error(const Twine &message) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 displayName + ": " + message);
}

llvm::Expected<std::unique_ptr<OnnxModel>> OnnxModel::loadFile(StringRef path) {
  auto fail = [&](const Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + m);
  };
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return fail("cannot open: " + ec.message());
  if (status.type() == llvm::sys::fs::file_type::directory_file)
    return fail("is a directory, not an .onnx file");
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return fail("is not a regular file");
  if (status.getSize() > kMaxProtoBytes)
    return fail("is " + Twine(status.getSize()) +
                " bytes; an ONNX protobuf is limited to 2 GiB (weights above that "
                "must be stored as external data)");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("cannot read: " + buffer.getError().message());
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return loadFromBuffer((*buffer)->getBuffer(), dir, path, isTextName(path));
}

llvm::Expected<std::unique_ptr<OnnxModel>>
OnnxModel::loadFromBuffer(StringRef bytes, StringRef modelDir, StringRef displayName,
                          bool textFormat) {
  silenceProtobufLogging();
  std::unique_ptr<OnnxModel> m(new OnnxModel());
  m->displayName = displayName.str();
  m->modelDir = modelDir.str();
  if (bytes.size() > kMaxProtoBytes)
    return m->error("is larger than protobuf's 2 GiB limit");
  if (textFormat) {
    google::protobuf::TextFormat::Parser parser;
    TextErrorCollector errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(std::string(bytes), m->model.get()))
      return m->error("not a valid ONNX model in protobuf text format: " + errors.text);
  } else {
    google::protobuf::io::ArrayInputStream stream(bytes.data(), int(bytes.size()));
    google::protobuf::io::CodedInputStream coded(&stream);
    coded.SetTotalBytesLimit(INT_MAX);
    if (!m->model->ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
      return m->error("not a valid ONNX model (the protobuf does not parse; the file is "
                      "truncated, corrupt or not ONNX)");
  }
  if (llvm::Error e = m->validate())
    return std::move(e);
  return std::move(m);
}

int64_t OnnxModel::opsetVersion(StringRef domain) const {
  auto it = opsets.find(normalizeDomain(domain));
  return it == opsets.end() ? -1 : it->second;
}

size_t OnnxModel::fileIndex(const onnx::NodeProto &node) const {
  auto it = nodeIndex.find(&node);
  return it == nodeIndex.end() ? 0 : it->second;
}

const onnx::TensorProto *OnnxModel::findInitializer(StringRef name) const {
  auto it = initializers.find(name);
  return it == initializers.end() ? nullptr : it->second;
}

std::string OnnxModel::describe(const onnx::NodeProto &node) const {
  std::string op = node.domain().empty() || node.domain() == "ai.onnx"
                       ? node.op_type()
                       : node.domain() + ":" + node.op_type();
  if (!node.name().empty())
    return "node '" + node.name() + "' (" + op + ")";
  std::string s = "node #" + std::to_string(fileIndex(node)) + " (" + op;
  if (node.output_size() > 0 && !node.output(0).empty())
    s += ", output '" + node.output(0) + "'";
  return s + ")";
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

llvm::Error OnnxModel::validate() {
  if (!model->has_ir_version() || model->ir_version() <= 0)
    return error("missing ir_version (not an ONNX model?)");
  if (model->ir_version() < 3)
    return error("IR version " + Twine(model->ir_version()) +
                 " predates opset imports (IR 3); re-export with a newer exporter");
  if (!model->has_graph())
    return error("the model has no graph");
  for (const onnx::OperatorSetIdProto &opset : model->opset_import()) {
    StringRef domain = normalizeDomain(opset.domain());
    if (opset.version() <= 0)
      return error("opset_import for domain '" + domain + "' has invalid version " +
                   Twine(opset.version()));
    if (!opsets.try_emplace(domain, opset.version()).second)
      return error("opset_import lists domain '" + domain + "' twice");
  }
  if (!opsets.count(""))
    return error("the model does not import the default ONNX domain");

  const onnx::GraphProto &g = model->graph();
  // Every value is defined once: by a graph input, an initializer or a node.
  llvm::StringMap<int> defined; // name -> producing node index, -1 for graph-level
  for (const onnx::TensorProto &t : g.initializer()) {
    if (t.name().empty())
      return error("an initializer has no name");
    if (!initializers.try_emplace(t.name(), &t).second)
      return error("initializer '" + t.name() + "' is defined twice");
    if (llvm::Error e = checkTensor(t, "initializer '" + t.name() + "'"))
      return e;
    defined[t.name()] = -1;
  }
  if (g.sparse_initializer_size() > 0)
    return error("sparse initializers are not supported");
  llvm::StringSet<> inputNames;
  for (const onnx::ValueInfoProto &in : g.input()) {
    if (in.name().empty())
      return error("a graph input has no name");
    if (!inputNames.insert(in.name()).second)
      return error("graph input '" + in.name() + "' is listed twice");
    defined.try_emplace(in.name(), -1);
    if (!initializers.count(in.name()))
      inputs.push_back(&in);
  }
  for (auto [i, node] : llvm::enumerate(g.node())) {
    nodeIndex[&node] = i;
    for (const std::string &out : node.output()) {
      if (out.empty())
        continue;
      auto [it, inserted] = defined.try_emplace(out, int(i));
      if (!inserted)
        return error(describe(node) + ": output '" + out +
                     "' is already defined by " +
                     (it->second < 0 ? std::string("a graph input or initializer")
                                     : describe(g.node(it->second))));
    }
  }
  for (const onnx::NodeProto &node : g.node())
    for (const std::string &in : node.input())
      if (!in.empty() && !defined.count(in))
        return error(describe(node) + ": input '" + in +
                     "' is not produced by any node, initializer or graph input");
  for (const onnx::ValueInfoProto &out : g.output()) {
    if (!defined.count(out.name()))
      return error("graph output '" + out.name() + "' is not produced by the graph");
  }
  return sortNodes();
}

llvm::Error OnnxModel::sortNodes() {
  const onnx::GraphProto &g = model->graph();
  size_t n = g.node_size();
  llvm::StringMap<size_t> producer;
  for (size_t i = 0; i < n; ++i)
    for (const std::string &out : g.node(i).output())
      if (!out.empty())
        producer[out] = i;
  // Kahn's algorithm; a min-heap on the file index keeps the file's order
  // whenever it is already valid.
  std::vector<llvm::SmallVector<size_t, 2>> users(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (const std::string &in : g.node(i).input()) {
      auto it = producer.find(in);
      if (in.empty() || it == producer.end())
        continue;
      users[it->second].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0)
      ready.push(i);
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(&g.node(i));
    for (size_t u : users[i])
      if (--pending[u] == 0)
        ready.push(u);
  }
  if (order.size() != n) {
    std::string names;
    int listed = 0;
    for (size_t i = 0; i < n && listed < 5; ++i)
      if (pending[i] != 0) {
        names += (listed++ ? ", " : "") + describe(g.node(i));
      }
    return error("the graph has a cycle; nodes that wait on it include " + names);
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

namespace {
/// Number of entries a typed field must hold for `numElements` elements.
uint64_t typedFieldCount(const OnnxDataTypeInfo &info, uint64_t numElements) {
  if (info.bits < 8) // sub-byte types: one packed byte per entry
    return (numElements * info.bits + 7) / 8;
  return numElements;
}

int typedFieldSize(const onnx::TensorProto &t, OnnxStorageField field) {
  switch (field) {
  case OnnxStorageField::FloatData: return t.float_data_size();
  case OnnxStorageField::Int32Data: return t.int32_data_size();
  case OnnxStorageField::Int64Data: return t.int64_data_size();
  case OnnxStorageField::Uint64Data: return t.uint64_data_size();
  case OnnxStorageField::DoubleData: return t.double_data_size();
  case OnnxStorageField::None: return 0;
  }
  return 0;
}

bool hasAnyTypedData(const onnx::TensorProto &t) {
  return t.float_data_size() || t.int32_data_size() || t.int64_data_size() ||
         t.uint64_data_size() || t.double_data_size() || t.string_data_size();
}
} // namespace

llvm::Expected<llvm::ArrayRef<char>>
OnnxModel::externalBytes(const onnx::TensorProto &t, uint64_t expectedBytes,
                         StringRef what) const {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const onnx::StringStringEntryProto &kv : t.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      uint64_t v;
      if (StringRef(kv.value()).getAsInteger(10, v))
        return error(what + ": external data " + kv.key() + " '" + kv.value() +
                     "' is not a non-negative integer");
      if (kv.key() == "offset")
        offset = v;
      else
        length = v;
    }
  }
  if (location.empty())
    return error(what + ": external data has no location");
  // The data must live inside the model's folder: no absolute paths, no
  // '..', and no symbolic link that leads out.
  if (llvm::sys::path::is_absolute(location) || StringRef(location).starts_with("/") ||
      StringRef(location).starts_with("\\"))
    return error(what + ": external data location '" + location +
                 "' is an absolute path; it must be relative to the model's folder");
  for (auto it = llvm::sys::path::begin(location), e = llvm::sys::path::end(location);
       it != e; ++it)
    if (*it == "..")
      return error(what + ": external data location '" + location +
                   "' leaves the model's folder ('..')");
  if (StringRef(location).contains('\0'))
    return error(what + ": external data location contains a NUL byte");
  if (length && *length != expectedBytes)
    return error(what + ": external data length " + Twine(*length) +
                 " does not match the " + Twine(expectedBytes) +
                 " bytes its type and shape need");

  auto cached = externalFiles.find(location);
  if (cached == externalFiles.end()) {
    llvm::SmallString<256> full(modelDir);
    llvm::sys::path::append(full, location);
    llvm::SmallString<256> realDir, realFile;
    if (llvm::sys::fs::real_path(modelDir, realDir))
      return error("cannot resolve the model's folder '" + modelDir + "'");
    if (std::error_code ec = llvm::sys::fs::real_path(full, realFile))
      return error(what + ": external data file '" + location + "' not found (" +
                   ec.message() + ")");
    if (realFile == realDir)
      return error(what + ": external data '" + location + "' is not a regular file");
    if (!StringRef(realFile).starts_with(realDir.str().str() + "/"))
      return error(what + ": external data location '" + location +
                   "' resolves outside the model's folder");
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(realFile, status) ||
        status.type() != llvm::sys::fs::file_type::regular_file)
      return error(what + ": external data '" + location + "' is not a regular file");
    auto buffer = llvm::MemoryBuffer::getFile(realFile, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false,
                                              /*IsVolatile=*/false);
    if (!buffer)
      return error(what + ": cannot map external data '" + location +
                   "': " + buffer.getError().message());
    cached = externalFiles.try_emplace(location, std::move(*buffer)).first;
  }
  StringRef file = cached->second->getBuffer();
  uint64_t end;
  if (__builtin_add_overflow(offset, expectedBytes, &end) || end > file.size())
    return error(what + ": external data [" + Twine(offset) + ", +" + Twine(expectedBytes) +
                 ") lies beyond the end of '" + location + "' (" + Twine(file.size()) +
                 " bytes)");
  return llvm::ArrayRef<char>(file.data() + offset, expectedBytes);
}

namespace {
using ErrorFn = llvm::function_ref<llvm::Error(const Twine &)>;
using ExternalFn = llvm::function_ref<llvm::Expected<llvm::ArrayRef<char>>(
    const onnx::TensorProto &, uint64_t, StringRef)>;

llvm::Error checkTensorImpl(const onnx::TensorProto &t, StringRef what, ErrorFn error,
                            ExternalFn externalBytes) {
  const OnnxDataTypeInfo *info = lookupOnnxDataType(t.data_type());
  if (!info || t.data_type() == 0)
    return error(what + " has invalid data type " + Twine(t.data_type()));
  if (t.dims_size() > kMaxRank)
    return error(what + " has rank " + Twine(t.dims_size()) + ", beyond llmc's limit of " +
                 Twine(kMaxRank));
  uint64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > kMaxDimSize)
      return error(what + " has invalid dimension " + Twine(d));
    if (__builtin_mul_overflow(count, uint64_t(d), &count) || count > uint64_t(kMaxDimSize))
      return error(what + " has an element count that overflows");
  }
  if (t.has_segment())
    return error(what + " is a segmented tensor, which is not supported");
  if (!info->supported)
    return llvm::Error::success(); // reported when the tensor is used
  uint64_t bytes;
  if (!onnxRawByteSize(*info, count, bytes))
    return error(what + " is too large");
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    if (t.has_raw_data() || hasAnyTypedData(t))
      return error(what + " is external but also has inline data");
    if (!externalBytes)
      return error(what + " refers to external data, which a standalone tensor cannot");
    return externalBytes(t, bytes, what).takeError();
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      return error(what + " has " + Twine(t.raw_data().size()) +
                   " bytes of raw_data; its type and shape need " + Twine(bytes));
    return llvm::Error::success();
  }
  uint64_t entries = typedFieldSize(t, info->field);
  if (entries != typedFieldCount(*info, count))
    return error(what + " has " + Twine(entries) + " values; its shape needs " +
                 Twine(typedFieldCount(*info, count)));
  return llvm::Error::success();
}

llvm::Expected<OnnxTensorData>
tensorDataImpl(const onnx::TensorProto &t, ErrorFn error, ExternalFn externalBytes,
               llvm::DenseMap<const onnx::TensorProto *, llvm::ArrayRef<char>> &converted,
               std::deque<std::vector<char>> &ownedBuffers) {
  std::string what = t.name().empty() ? std::string("a tensor")
                                      : "tensor '" + t.name() + "'";
  if (llvm::Error e = checkTensorImpl(t, what, error, externalBytes))
    return std::move(e);
  const OnnxDataTypeInfo *info = lookupOnnxDataType(t.data_type());
  if (!info->supported)
    return error(what + " has data type " + info->name + ", which llmc does not support");
  OnnxTensorData data;
  data.dataType = t.data_type();
  data.dims.assign(t.dims().begin(), t.dims().end());
  data.numElements = 1;
  for (int64_t d : data.dims)
    data.numElements *= uint64_t(d); // checked by checkTensor
  uint64_t bytes;
  onnxRawByteSize(*info, data.numElements, bytes);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    auto ext = externalBytes(t, bytes, what); // present: checkTensorImpl passed
    if (!ext)
      return ext.takeError();
    data.bytes = *ext;
    data.external = true;
    return data;
  }
  if (t.has_raw_data() || bytes == 0) {
    data.bytes = llvm::ArrayRef<char>(t.raw_data().data(), t.raw_data().size());
    return data;
  }
  // Typed fields: convert once into the raw layout.
  auto it = converted.find(&t);
  if (it != converted.end()) {
    data.bytes = it->second;
    return data;
  }
  std::vector<char> &out = ownedBuffers.emplace_back(bytes);
  char *p = out.data();
  unsigned width = info->bits / 8;
  switch (info->field) {
  case OnnxStorageField::FloatData:
    std::memcpy(p, t.float_data().data(), bytes);
    break;
  case OnnxStorageField::DoubleData:
    std::memcpy(p, t.double_data().data(), bytes);
    break;
  case OnnxStorageField::Int64Data:
    std::memcpy(p, t.int64_data().data(), bytes);
    break;
  case OnnxStorageField::Uint64Data:
    for (int i = 0; i < t.uint64_data_size(); ++i) {
      uint64_t v = t.uint64_data(i);
      std::memcpy(p + uint64_t(i) * width, &v, width); // little-endian low bytes
    }
    break;
  case OnnxStorageField::Int32Data:
    if (info->bits < 8) {
      for (int i = 0; i < t.int32_data_size(); ++i)
        p[i] = char(t.int32_data(i) & 0xff);
    } else {
      for (int i = 0; i < t.int32_data_size(); ++i) {
        int32_t v = t.int32_data(i);
        if (data.dataType == int32_t(OnnxDataType::Bool))
          v = v != 0;
        std::memcpy(p + uint64_t(i) * width, &v, width);
      }
    }
    break;
  case OnnxStorageField::None:
    return error(what + " has no supported storage");
  }
  converted[&t] = llvm::ArrayRef<char>(out.data(), out.size());
  data.bytes = converted[&t];
  return data;
}

} // namespace

llvm::Error OnnxModel::checkTensor(const onnx::TensorProto &t, StringRef what) const {
  return checkTensorImpl(
      t, what, [&](const Twine &m) { return error(m); },
      [&](const onnx::TensorProto &x, uint64_t n, StringRef w) { return externalBytes(x, n, w); });
}

llvm::Expected<OnnxTensorData> OnnxModel::tensorData(const onnx::TensorProto &t) const {
  return tensorDataImpl(
      t, [&](const Twine &m) { return error(m); },
      [&](const onnx::TensorProto &x, uint64_t n, StringRef w) { return externalBytes(x, n, w); },
      converted, ownedBuffers);
}

llvm::Expected<OnnxTensorData>
mlir::llmc::decodeStandaloneTensor(const onnx::TensorProto &t, const Twine &source,
                                   std::deque<std::vector<char>> &storage) {
  llvm::DenseMap<const onnx::TensorProto *, llvm::ArrayRef<char>> converted;
  std::string prefix = source.str();
  return tensorDataImpl(
      t,
      [&](const Twine &m) {
        return llvm::createStringError(llvm::inconvertibleErrorCode(), prefix + ": " + m);
      },
      nullptr, converted, storage);
}

llvm::Expected<OnnxValueType> OnnxModel::valueType(const onnx::ValueInfoProto &value,
                                                   StringRef what) const {
  if (!value.has_type() || !value.type().has_tensor_type())
    return error(what + " '" + value.name() +
                 "' is not a tensor (sequence, map and optional values are not supported)");
  const onnx::TypeProto::Tensor &tt = value.type().tensor_type();
  OnnxValueType out;
  out.elemType = tt.elem_type();
  const OnnxDataTypeInfo *info = lookupOnnxDataType(out.elemType);
  if (!info || !info->supported || out.elemType == 0)
    return error(what + " '" + value.name() + "' has unsupported element type " +
                 onnxDataTypeName(out.elemType));
  out.hasShape = tt.has_shape();
  if (tt.shape().dim_size() > kMaxRank)
    return error(what + " '" + value.name() + "' has rank " + Twine(tt.shape().dim_size()) +
                 ", beyond llmc's limit of " + Twine(kMaxRank));
  for (const onnx::TensorShapeProto::Dimension &d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0 || d.dim_value() > kMaxDimSize)
        return error(what + " '" + value.name() + "' has invalid dimension " +
                     Twine(d.dim_value()));
      out.dims.push_back(d.dim_value());
      out.dimNames.push_back("");
    } else {
      out.dims.push_back(-1);
      out.dimNames.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
  }
  return out;
}
