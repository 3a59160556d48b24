//===- KernelBridge.cpp - llm IR values <-> reference CPU kernel values ---===//
#include "passes/KernelBridge.h"

#include "compiler/Executor/Error.h"
#include "dialects/LLM/IR/LLMDialect.h"
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

llvm::Expected<cpu::Tensor> mlir::llmc::constantTensor(ElementsAttr attr) {
  ShapedType type = attr.getShapedType();
  cpu::DType dtype = cpu::DType(getOnnxCodeForElementType(type.getElementType()));
  if (cpu::storageSize(dtype) == 0)
    return makeError("unsupported constant type " + typeToString(type));
  cpu::Shape shape(type.getShape().begin(), type.getShape().end());
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return makeError("constant blob '" + resource.getRawHandle().getKey() + "' has no data");
    if (blob->getData().size() < size_t(type.getNumElements()) * cpu::storageSize(dtype))
      return makeError("constant blob '" + resource.getRawHandle().getKey() + "' is too small");
    return cpu::Tensor::wrap(dtype, shape, blob->getData().data());
  }
  auto dense = dyn_cast<DenseIntOrFPElementsAttr>(attr);
  if (!dense)
    return makeError("unsupported constant attribute");
  if (!dense.isSplat() && !type.getElementType().isInteger(1))
    return cpu::Tensor::wrap(dtype, shape, dense.getRawData().data());
  cpu::Tensor t;
  if (cpu::Status s = cpu::Tensor::allocate(dtype, shape, t); !s)
    return makeError(s.message());
  char *dst = static_cast<char *>(t.mutableRaw());
  if (type.getElementType().isInteger(1)) {
    int64_t i = 0;
    for (bool b : dense.getValues<bool>())
      dst[i++] = b;
    return t;
  }
  llvm::ArrayRef<char> one = dense.getRawData(); // the splat element
  size_t es = cpu::storageSize(dtype);
  for (int64_t i = 0; i < t.numel(); ++i)
    std::memcpy(dst + size_t(i) * es, one.data(), es);
  return t;
}

std::optional<cpu::Tensor> mlir::llmc::constantOf(Value v) {
  auto c = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!c)
    return std::nullopt;
  auto t = constantTensor(c.getValue());
  if (!t) {
    llvm::consumeError(t.takeError());
    return std::nullopt;
  }
  return std::move(*t);
}

llvm::Expected<cpu::Attributes> mlir::llmc::kernelParams(DictionaryAttr dict) {
  cpu::Attributes out;
  for (NamedAttribute na : dict) {
    // Discardable annotations of llmc's passes (llm.keep_f32) are not the
    // operation's attributes (the C++ emitter leaves them out too).
    if (na.getName().getValue().starts_with("llm."))
      continue;
    cpu::Attribute a;
    Attribute v = na.getValue();
    if (auto b = dyn_cast<BoolAttr>(v)) {
      a.kind = cpu::Attribute::Int;
      a.i = b.getValue();
    } else if (auto i = dyn_cast<IntegerAttr>(v)) {
      a.kind = cpu::Attribute::Int;
      a.i = i.getValue().getSExtValue();
    } else if (auto f = dyn_cast<FloatAttr>(v)) {
      a.kind = cpu::Attribute::Float;
      a.f = f.getValueAsDouble();
    } else if (auto s = dyn_cast<StringAttr>(v)) {
      a.kind = cpu::Attribute::String;
      a.s = s.str();
    } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(v)) {
      a.kind = cpu::Attribute::Ints;
      a.ints.assign(ints.asArrayRef().begin(), ints.asArrayRef().end());
    } else if (auto floats = dyn_cast<DenseF32ArrayAttr>(v)) {
      a.kind = cpu::Attribute::Floats;
      for (float x : floats.asArrayRef())
        a.floats.push_back(x);
    } else if (auto arr = dyn_cast<ArrayAttr>(v)) {
      a.kind = cpu::Attribute::Strings;
      for (Attribute e : arr)
        if (auto s = dyn_cast<StringAttr>(e))
          a.strings.push_back(s.str());
    } else if (auto e = dyn_cast<ElementsAttr>(v)) {
      auto t = constantTensor(e);
      if (!t)
        return t.takeError();
      a.kind = cpu::Attribute::TensorValue;
      a.tensor = *t;
    } else {
      return makeError("unsupported attribute '" + na.getName().str() + "'");
    }
    out.set(na.getName().str(), std::move(a));
  }
  return out;
}

const cpu::KernelEntry *mlir::llmc::kernelFor(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (!name.consume_front("llm."))
    return nullptr;
  return cpu::findKernel(name.str());
}

llvm::Expected<std::vector<cpu::Tensor>>
mlir::llmc::evaluateOp(Operation *op, llvm::ArrayRef<const cpu::Tensor *> inputs) {
  const cpu::KernelEntry *kernel = kernelFor(op);
  if (!kernel)
    return makeError("no CPU kernel for " + op->getName().getStringRef().str());
  auto params = kernelParams(op->getAttrDictionary());
  if (!params)
    return params.takeError();
  cpu::KernelCall call;
  call.inputs.assign(inputs.begin(), inputs.end());
  call.attrs = &*params;
  call.pool = &cpu::ThreadPool::global();
  call.opName = op->getName().getStringRef().str();
  call.outputs.resize(op->getNumResults());
  if (cpu::Status s = kernel->fn(call); !s)
    return makeError(s.message());
  return std::move(call.outputs);
}

ElementsAttr mlir::llmc::denseFromTensor(const cpu::Tensor &t, RankedTensorType type) {
  Type element = type.getElementType();
  if (!type.hasStaticShape() || type.getShape() != ArrayRef<int64_t>(t.shape().data(), t.shape().size()) ||
      !element.isIntOrFloat() ||
      cpu::DType(getOnnxCodeForElementType(element)) != t.dtype())
    return {};
  if (element.isInteger(1)) {
    SmallVector<bool> flags;
    const uint8_t *p = static_cast<const uint8_t *>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i)
      flags.push_back(p[i] != 0);
    return DenseElementsAttr::get(type, flags);
  }
  if (element.getIntOrFloatBitWidth() < 8)
    return {};
  ArrayRef<char> bytes(static_cast<const char *>(t.raw()), t.bytes());
  bool splat = false;
  if (!DenseElementsAttr::isValidRawBuffer(type, bytes, splat))
    return {};
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}
