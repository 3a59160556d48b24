//===- EmitCppWeights.cpp - weights.bin and Model::init's tables -----------===//
//
// The tensors a CPU artifact reads from weights.bin: constants as they are
// (equal bytes stored once), linear weights packed in column panels, float
// constants widened to f32, quantized weights in int8-activation panels;
// and the kernel and attribute tables Model::init fills once.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CPU/EmitCppInternal.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::cpugen;

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
