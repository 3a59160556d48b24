//===- OnnxImporter.cpp - ONNX model -> llm dialect -----------------------===//
#include "python-free-frontend/OnnxImporter.h"

#include "python-free-frontend/NodeImporter.h"
#include "python-free-frontend/OpTable.h"

#include "dialects/LLM/IR/LLMDialect.h"
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/OnnxDataType.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"

#include <onnx/onnx_pb.h>

using namespace mlir;
using namespace mlir::llmc;
using llvm::StringRef;

static_assert(llvm::sys::IsLittleEndianHost,
              "llmc reads ONNX little-endian tensor data in place");

void mlir::llmc::registerImportDialects(DialectRegistry &registry) {
  registry.insert<LLMDialect, func::FuncDialect>();
}

//===----------------------------------------------------------------------===//
// ModelImporter
//===----------------------------------------------------------------------===//

namespace mlir::llmc {

/// Imports one model; owns the value map and the function being built.
class ModelImporter {
public:
  ModelImporter(MLIRContext &ctx, const OnnxModel &model, const ImportOptions &options)
      : ctx(ctx), model(model), options(options), builder(&ctx) {}

  llvm::Expected<OwningOpRef<ModuleOp>> run();

  /// The value called `name`: a graph input, a node output, or an
  /// initializer (materialised as llm.constant on first use).
  FailureOr<Value> lookup(StringRef name, Location loc);
  Value none();
  /// An ElementsAttr holding `tensor`; large tensors reference the model's
  /// memory as a dense_resource blob named after `name`.
  FailureOr<ElementsAttr> convertTensor(const onnx::TensorProto &tensor, StringRef name,
                                        Location loc);
  /// Creates an llm.constant among the function's leading constants.
  Value createConstant(ElementsAttr value, Location loc);
  LogicalResult bind(const std::string &name, Value value, Location loc);

  MLIRContext &ctx;
  const OnnxModel &model;
  const ImportOptions &options;
  OpBuilder builder;

private:
  LogicalResult importNode(const onnx::NodeProto &node);
  Location nodeLocation(const onnx::NodeProto &node);
  llvm::Error takeError(const std::string &context);
  /// The message of `error` without the "<model>: " prefix, for contexts
  /// that name the model themselves.
  std::string withoutModelPrefix(llvm::Error error);
  FailureOr<Type> graphValueType(const onnx::ValueInfoProto &value, StringRef what);

  Block *entry = nullptr;
  Operation *lastConstant = nullptr;
  Value noneValue;
  llvm::StringMap<Value> values;
  std::vector<std::string> diagnostics;
};

} // namespace mlir::llmc

std::string ModelImporter::withoutModelPrefix(llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  StringRef m(message);
  if (m.starts_with(model.path()))
    m = m.drop_front(model.path().size()).ltrim(": ");
  return m.str();
}

Location ModelImporter::nodeLocation(const onnx::NodeProto &node) {
  std::string name = !node.name().empty() ? node.name()
                     : node.output_size() > 0 ? node.output(0)
                                              : node.op_type();
  Location file = FileLineColLoc::get(&ctx, model.path(),
                                      unsigned(model.fileIndex(node) + 1), 0);
  return NameLoc::get(StringAttr::get(&ctx, name), file);
}

llvm::Error ModelImporter::takeError(const std::string &context) {
  std::string text = context;
  if (diagnostics.empty())
    text += context.empty() ? "import failed" : ": import failed";
  for (size_t i = 0; i < diagnostics.size(); ++i)
    text += (i || context.empty() ? (i ? "; " : "") : ": ") + diagnostics[i];
  diagnostics.clear();
  return model.error(text);
}

Value ModelImporter::none() {
  if (!noneValue) {
    OpBuilder::InsertionGuard guard(builder);
    if (lastConstant)
      builder.setInsertionPointAfter(lastConstant);
    else
      builder.setInsertionPointToStart(entry);
    auto op = builder.create<NoneOp>(builder.getUnknownLoc());
    lastConstant = op;
    noneValue = op.getResult();
  }
  return noneValue;
}

Value ModelImporter::createConstant(ElementsAttr value, Location loc) {
  OpBuilder::InsertionGuard guard(builder);
  if (lastConstant)
    builder.setInsertionPointAfter(lastConstant);
  else
    builder.setInsertionPointToStart(entry);
  auto op = builder.create<ConstantOp>(loc, value.getType(), value);
  lastConstant = op;
  return op.getResult();
}

namespace {
/// A resource key the MLIR parser reads back: a bare identifier
/// ([A-Za-z_][A-Za-z0-9_$.]*); ONNX names like "onnx::MatMul_7" or
/// "/model/embed/Gather_output_0" are mapped onto one. The blob manager
/// makes keys unique.
std::string resourceKey(StringRef name) {
  std::string key;
  for (char c : name)
    key.push_back(llvm::isAlnum(c) || c == '_' || c == '$' || c == '.' ? c : '_');
  if (key.empty() || !(llvm::isAlpha(key[0]) || key[0] == '_'))
    key.insert(key.begin(), '_');
  return key;
}
} // namespace

FailureOr<ElementsAttr> ModelImporter::convertTensor(const onnx::TensorProto &tensor,
                                                     StringRef name, Location loc) {
  std::string resourceName = resourceKey(name);
  auto data = model.tensorData(tensor);
  if (!data)
    return emitError(loc) << withoutModelPrefix(data.takeError());
  Type elementType = getElementTypeForOnnx(&ctx, data->dataType);
  if (!elementType)
    return emitError(loc) << "tensor '" << tensor.name() << "' has unsupported data type "
                          << onnxDataTypeName(data->dataType);
  auto type = RankedTensorType::get(data->dims, elementType);
  unsigned bits = lookupOnnxDataType(data->dataType)->bits;
  // Types without an MLIR builtin (!llm.f4e2m1, !llm.f8e8m0) are always blobs.
  bool builtin = elementType.isIntOrFloat();
  int64_t n = int64_t(data->numElements);
  llvm::ArrayRef<char> bytes = data->bytes;

  if (elementType.isInteger(1)) {
    llvm::SmallVector<bool> flags;
    flags.reserve(n);
    for (char c : bytes)
      flags.push_back(c != 0);
    return ElementsAttr(DenseElementsAttr::get(type, flags));
  }
  if (bits < 8) {
    // Unpack (low bits first) into one byte per element, sign-extending
    // signed integers, which is how llm constants store sub-byte elements.
    bool signExtend = elementType.isSignlessInteger();
    unsigned perByte = 8 / bits, mask = (1u << bits) - 1;
    std::vector<char> unpacked(n);
    for (int64_t i = 0; i < n; ++i) {
      unsigned v = (uint8_t(bytes[i / perByte]) >> ((i % perByte) * bits)) & mask;
      if (signExtend && (v >> (bits - 1)))
        v |= ~mask;
      unpacked[i] = char(v);
    }
    if (builtin && n <= options.inlineElementLimit) {
      llvm::SmallVector<llvm::APInt> ints;
      for (char c : unpacked)
        ints.push_back(llvm::APInt(bits, uint64_t(uint8_t(c)) & mask));
      return ElementsAttr(DenseElementsAttr::get(type, ints));
    }
    return ElementsAttr(DenseResourceElementsAttr::get(
        type, resourceName,
        HeapAsmResourceBlob::allocateAndCopyWithAlign(unpacked, alignof(int8_t))));
  }
  if (builtin && n <= options.inlineElementLimit) {
    bool detectedSplat = false;
    if (!DenseElementsAttr::isValidRawBuffer(type, bytes, detectedSplat))
      return emitError(loc) << "tensor '" << tensor.name() << "' has a malformed buffer";
    return ElementsAttr(DenseElementsAttr::getFromRawBuffer(type, bytes));
  }
  // Reference the data where it lies (mmapped file or the parsed protobuf).
  size_t elementBytes = bits / 8;
  size_t align = 1;
  uintptr_t address = reinterpret_cast<uintptr_t>(bytes.data());
  while (align < elementBytes && address % (align * 2) == 0)
    align *= 2;
  return ElementsAttr(DenseResourceElementsAttr::get(
      type, resourceName, UnmanagedAsmResourceBlob::allocateWithAlign(bytes, align)));
}

FailureOr<Value> ModelImporter::lookup(StringRef name, Location loc) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  const onnx::TensorProto *init = model.findInitializer(name);
  if (!init)
    return emitError(loc) << "value '" << name << "' is not defined";
  FailureOr<ElementsAttr> attr = convertTensor(*init, name, loc);
  if (failed(attr))
    return failure();
  Location constLoc = NameLoc::get(StringAttr::get(&ctx, name),
                                   FileLineColLoc::get(&ctx, model.path(), 0, 0));
  Value v = createConstant(*attr, constLoc);
  values[name] = v;
  return v;
}

LogicalResult ModelImporter::bind(const std::string &name, Value value, Location loc) {
  if (!values.try_emplace(name, value).second)
    return emitError(loc) << "value '" << name << "' is defined twice";
  return success();
}

FailureOr<Type> ModelImporter::graphValueType(const onnx::ValueInfoProto &value,
                                              StringRef what) {
  if (what == "graph output" && (!value.has_type() ||
                                 (value.type().has_tensor_type() &&
                                  value.type().tensor_type().elem_type() == 0 &&
                                  !value.type().tensor_type().has_shape())))
    return Type(); // an untyped output takes the computed type
  auto vt = model.valueType(value, what);
  if (!vt) {
    diagnostics.push_back(withoutModelPrefix(vt.takeError()));
    return failure();
  }
  Type elementType = getElementTypeForOnnx(&ctx, vt->elemType);
  if (!vt->hasShape)
    return Type(UnrankedTensorType::get(elementType));
  Shape shape;
  for (auto [size, name] : llvm::zip(vt->dims, vt->dimNames)) {
    if (size >= 0)
      shape.push_back(Dim::fixed(size));
    else
      shape.push_back(Dim::dynamic(name.empty() ? StringAttr() : StringAttr::get(&ctx, name)));
  }
  return makeTensorType(shape, elementType);
}

LogicalResult ModelImporter::importNode(const onnx::NodeProto &node) {
  StringRef domain = normalizeDomain(node.domain());
  int64_t opset = model.opsetVersion(domain);
  const OpTableEntry *entry = lookupOnnxOp(domain, node.op_type(), opset);
  Location loc = nodeLocation(node);
  if (!entry)
    return emitError(loc) << "no importer for this operator at opset " << opset;
  NodeImporter ni(*this, node, opset, loc);
  size_t errorsBefore = diagnostics.size();
  // An error reported on the way (say, an optional input whose initializer
  // cannot be read and became `none`) fails the node even if the op built.
  if (failed(entry->import(ni)) || diagnostics.size() != errorsBefore)
    return failure();
  return success();
}

llvm::Expected<OwningOpRef<ModuleOp>> ModelImporter::run() {
  std::vector<UnsupportedNode> unsupported;
  for (UnsupportedNode &u : findUnsupportedNodes(model))
    if (u.kind != UnsupportedNode::UnsupportedFeature)
      unsupported.push_back(std::move(u));
  if (!unsupported.empty())
    return model.error("cannot import " + std::to_string(unsupported.size()) +
                       " node(s) with unsupported operators:\n" +
                       formatUnsupported(unsupported));

  bool printOp = ctx.shouldPrintOpOnDiagnostic();
  ctx.printOpOnDiagnostic(false);
  auto restore = llvm::make_scope_exit([&] { ctx.printOpOnDiagnostic(printOp); });
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() != DiagnosticSeverity::Error)
      return success();
    std::string text = d.str();
    for (Diagnostic &note : d.getNotes())
      text += " (" + note.str() + ")";
    diagnostics.push_back(std::move(text));
    return success();
  });

  const onnx::ModelProto &proto = model.proto();
  const onnx::GraphProto &graph = model.graph();
  Location moduleLoc = FileLineColLoc::get(&ctx, model.path(), 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(moduleLoc);
  Builder b(&ctx);
  llvm::SmallVector<NamedAttribute> opsets;
  for (const onnx::OperatorSetIdProto &o : proto.opset_import()) {
    StringRef d = normalizeDomain(o.domain());
    opsets.push_back(b.getNamedAttr(d.empty() ? "ai.onnx" : d, b.getI64IntegerAttr(o.version())));
  }
  (*module)->setAttr("llm.onnx.opsets", b.getDictionaryAttr(opsets));
  (*module)->setAttr("llm.onnx.ir_version", b.getI64IntegerAttr(proto.ir_version()));
  std::string producer = proto.producer_name();
  if (!proto.producer_version().empty())
    producer += " " + proto.producer_version();
  (*module)->setAttr("llm.onnx.producer", b.getStringAttr(producer));

  // Signature: graph inputs that are not initializers.
  llvm::SmallVector<Type> argTypes;
  llvm::SmallVector<DictionaryAttr> argAttrs;
  for (const onnx::ValueInfoProto *in : model.realInputs()) {
    FailureOr<Type> t = graphValueType(*in, "graph input");
    if (failed(t))
      return takeError("");
    argTypes.push_back(*t);
    argAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("llm.name", b.getStringAttr(in->name()))}));
  }
  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(moduleLoc, options.functionName,
                                           builder.getFunctionType(argTypes, {}));
  if (!graph.name().empty())
    func->setAttr("llm.onnx.graph_name", b.getStringAttr(graph.name()));
  entry = func.addEntryBlock();
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    func.setArgAttrs(i, attrs);
  for (auto [i, in] : llvm::enumerate(model.realInputs()))
    values[in->name()] = entry->getArgument(i);

  builder.setInsertionPointToEnd(entry);
  for (const onnx::NodeProto *node : model.sortedNodes()) {
    if (failed(importNode(*node)))
      return takeError(model.describe(*node));
  }

  // Results: graph outputs, refined by their declared types.
  llvm::SmallVector<Value> results;
  llvm::SmallVector<DictionaryAttr> resultAttrs;
  for (const onnx::ValueInfoProto &out : graph.output()) {
    FailureOr<Value> v = lookup(out.name(), moduleLoc);
    if (failed(v))
      return takeError("graph output '" + out.name() + "'");
    FailureOr<Type> declared = graphValueType(out, "graph output");
    if (failed(declared))
      return takeError("");
    Type actual = v->getType();
    if (!*declared) {
      results.push_back(*v);
      resultAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("llm.name", b.getStringAttr(out.name()))}));
      continue;
    }
    if (getElementTypeOrSelf(*declared) != getElementTypeOrSelf(actual) ||
        !areCompatibleReturnTypes(*declared, actual))
      return model.error("graph output '" + out.name() + "' is declared as " +
                         typeToString(*declared) + " but the graph computes " +
                         typeToString(actual));
    MaybeShape have = getShape(actual), want = getShape(*declared);
    if (have && want && !isa<BlockArgument>(*v)) {
      Shape refined = *have;
      for (auto [r, w] : llvm::zip(refined, *want)) {
        if (!r.isStatic() && w.isStatic())
          r = w;
        else if (!r.isStatic() && !r.name && w.name)
          r.name = w.name;
      }
      Type refinedType = makeTensorType(refined, getElementTypeOrSelf(actual));
      if (refinedType != actual)
        v->setType(refinedType);
    }
    results.push_back(*v);
    resultAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("llm.name", b.getStringAttr(out.name()))}));
  }
  builder.create<func::ReturnOp>(moduleLoc, results);
  func.setType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, attrs] : llvm::enumerate(resultAttrs))
    func.setResultAttrs(i, attrs);

  if (failed(verify(*module)))
    return takeError("the imported module does not verify");
  return std::move(module);
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::llmc::importOnnxModel(MLIRContext &ctx, const OnnxModel &model,
                            const ImportOptions &options) {
  ctx.getOrLoadDialect<LLMDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  ModelImporter importer(ctx, model, options);
  return importer.run();
}

//===----------------------------------------------------------------------===//
// NodeImporter
//===----------------------------------------------------------------------===//

NodeImporter::NodeImporter(ModelImporter &model, const onnx::NodeProto &node,
                           int64_t opset, Location loc)
    : parent(model), onnxNode(node), opsetVersion(opset), location(loc) {}

OpBuilder &NodeImporter::builder() { return parent.builder; }
MLIRContext *NodeImporter::context() { return &parent.ctx; }

bool NodeImporter::hasInput(unsigned i) const {
  return int(i) < onnxNode.input_size() && !onnxNode.input(i).empty();
}

Value NodeImporter::input(unsigned i) {
  if (!hasInput(i))
    return none();
  FailureOr<Value> v = parent.lookup(onnxNode.input(i), location);
  // Names were checked when the model was loaded, so only a bad initializer
  // fails here; its error is already reported and `none` makes the op fail.
  return succeeded(v) ? *v : none();
}

Value NodeImporter::none() { return parent.none(); }

InFlightDiagnostic NodeImporter::emitError() { return mlir::emitError(location); }

const onnx::AttributeProto *NodeImporter::findAttr(StringRef name) const {
  for (const onnx::AttributeProto &a : onnxNode.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

std::optional<int64_t> NodeImporter::intAttr(StringRef name) const {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a || !a->has_i())
    return std::nullopt;
  return a->i();
}

std::optional<float> NodeImporter::floatAttr(StringRef name) const {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a || !a->has_f())
    return std::nullopt;
  return a->f();
}

std::optional<llvm::SmallVector<int64_t>> NodeImporter::intsAttr(StringRef name) const {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a)
    return std::nullopt;
  return llvm::SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

FailureOr<Attribute> NodeImporter::convertAttr(const onnx::AttributeProto &a) {
  Builder b(context());
  if (!a.ref_attr_name().empty())
    return emitError() << "attribute '" << a.name()
                       << "' refers to a function attribute, which is not supported";
  auto type = a.type();
  if (type == onnx::AttributeProto::UNDEFINED) {
    // IR < 2 leaves the type out: take it from the field that is set.
    if (a.has_f()) type = onnx::AttributeProto::FLOAT;
    else if (a.has_i()) type = onnx::AttributeProto::INT;
    else if (a.has_s()) type = onnx::AttributeProto::STRING;
    else if (a.has_t()) type = onnx::AttributeProto::TENSOR;
    else if (a.floats_size()) type = onnx::AttributeProto::FLOATS;
    else if (a.ints_size()) type = onnx::AttributeProto::INTS;
    else if (a.strings_size()) type = onnx::AttributeProto::STRINGS;
  }
  switch (type) {
  case onnx::AttributeProto::FLOAT:
    return Attribute(b.getF32FloatAttr(a.f()));
  case onnx::AttributeProto::INT:
    return Attribute(b.getI64IntegerAttr(a.i()));
  case onnx::AttributeProto::STRING:
    return Attribute(b.getStringAttr(a.s()));
  case onnx::AttributeProto::INTS:
    return Attribute(b.getDenseI64ArrayAttr(
        llvm::SmallVector<int64_t>(a.ints().begin(), a.ints().end())));
  case onnx::AttributeProto::FLOATS:
    return Attribute(b.getDenseF32ArrayAttr(
        llvm::SmallVector<float>(a.floats().begin(), a.floats().end())));
  case onnx::AttributeProto::STRINGS: {
    llvm::SmallVector<StringRef> strings(a.strings().begin(), a.strings().end());
    return Attribute(b.getStrArrayAttr(strings));
  }
  case onnx::AttributeProto::TENSOR: {
    std::string name = a.t().name().empty() ? onnxNode.name() + "." + a.name() : a.t().name();
    FailureOr<ElementsAttr> t = parent.convertTensor(a.t(), name, location);
    if (failed(t))
      return failure();
    return Attribute(*t);
  }
  default:
    return emitError() << "attribute '" << a.name() << "' has kind "
                       << onnx::AttributeProto::AttributeType_Name(type)
                       << ", which llmc does not support";
  }
}

LogicalResult NodeImporter::convertAttributes(llvm::ArrayRef<StringRef> known,
                                              NamedAttrList &out,
                                              llvm::ArrayRef<StringRef> ignored) {
  for (const onnx::AttributeProto &a : onnxNode.attribute()) {
    if (llvm::is_contained(ignored, a.name()))
      continue;
    if (!llvm::is_contained(known, a.name()))
      return emitError() << "unknown attribute '" << a.name() << "' for "
                         << onnxNode.op_type() << " at opset " << opsetVersion;
    FailureOr<Attribute> attr = convertAttr(a);
    if (failed(attr))
      return failure();
    if (out.get(a.name()))
      return emitError() << "attribute '" << a.name() << "' is given twice";
    out.set(a.name(), *attr);
  }
  return success();
}

Value NodeImporter::constantI64(llvm::ArrayRef<int64_t> values, bool scalar) {
  auto type = scalar ? RankedTensorType::get({}, builder().getI64Type())
                     : RankedTensorType::get({int64_t(values.size())}, builder().getI64Type());
  return parent.createConstant(DenseIntElementsAttr::get(type, values), location);
}

Value NodeImporter::constantFloat(double value, Type elementType) {
  auto type = RankedTensorType::get({}, elementType);
  auto ft = cast<FloatType>(elementType);
  llvm::APFloat f(value);
  bool losesInfo;
  f.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return parent.createConstant(DenseElementsAttr::get(type, f), location);
}

LogicalResult NodeImporter::setOutputs(ValueRange results) {
  if (unsigned(onnxNode.output_size()) > results.size())
    return emitError() << "has " << onnxNode.output_size() << " outputs; the operation has "
                       << results.size();
  for (auto [i, name] : llvm::enumerate(onnxNode.output()))
    if (!name.empty() && failed(parent.bind(name, results[i], location)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Support report
//===----------------------------------------------------------------------===//

std::vector<UnsupportedNode> mlir::llmc::findUnsupportedNodes(const OnnxModel &model) {
  std::vector<UnsupportedNode> out;
  for (const onnx::NodeProto *node : model.sortedNodes()) {
    StringRef domain = normalizeDomain(node->domain());
    int64_t opset = model.opsetVersion(domain);
    UnsupportedNode u;
    u.domain = domain.str();
    u.opType = node->op_type();
    u.opset = opset;
    u.node = model.describe(*node);
    if (opset < 0) {
      u.kind = UnsupportedNode::UnsupportedOpset;
      u.reason = "the model does not import domain '" + u.domain + "'";
      out.push_back(std::move(u));
      continue;
    }
    const OpTableEntry *entry = lookupOnnxOp(domain, node->op_type(), opset);
    if (!entry) {
      bool known = isKnownOnnxOp(domain, node->op_type());
      u.kind = known ? UnsupportedNode::UnsupportedOpset : UnsupportedNode::UnknownOp;
      u.reason = known ? "llmc supports this operator at other opset versions"
                       : "no importer for this operator";
      out.push_back(std::move(u));
      continue;
    }
    if (entry->check) {
      std::string reason = entry->check(*node, model);
      if (!reason.empty()) {
        u.kind = UnsupportedNode::UnsupportedFeature;
        u.reason = std::move(reason);
        out.push_back(std::move(u));
      }
    }
  }
  return out;
}

std::string mlir::llmc::formatUnsupported(const std::vector<UnsupportedNode> &nodes) {
  // Group by operator and reason, keeping first-seen order.
  std::vector<std::pair<std::string, std::vector<const UnsupportedNode *>>> groups;
  llvm::StringMap<size_t> index;
  for (const UnsupportedNode &u : nodes) {
    std::string key = (u.domain.empty() ? "" : u.domain + ":") + u.opType +
                      " (opset " + std::to_string(u.opset) + "): " + u.reason;
    auto [it, inserted] = index.try_emplace(key, groups.size());
    if (inserted)
      groups.push_back({key, {}});
    groups[it->second].second.push_back(&u);
  }
  std::string text;
  for (auto &[key, list] : groups) {
    text += "  " + key + "; " + std::to_string(list.size()) + " node(s): ";
    for (size_t i = 0; i < list.size(); ++i)
      text += (i ? ", " : "") + list[i]->node;
    text += "\n";
  }
  if (!text.empty())
    text.pop_back();
  return text;
}
