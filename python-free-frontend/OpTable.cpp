//===- OpTable.cpp - the one table of importable ONNX operators ----------===//
//
// Most operators map one-to-one onto an llm op whose operands and attributes
// mirror the ONNX ones: `importGeneric<Op>` handles them. Older opsets whose
// inputs were attributes, and operators whose import needs a decision, have
// a named builder below.
//
//===----------------------------------------------------------------------===//
#include "python-free-frontend/OpTable.h"

#include "python-free-frontend/NodeImporter.h"
#include "python-free-frontend/OnnxModel.h"

#include "dialects/LLM/IR/LLMOps.h"

#include "llvm/ADT/STLExtras.h"

#include <onnx/onnx_pb.h>

#include <cfloat>
#include <utility>

using namespace mlir;
using namespace mlir::llmc;
using llvm::StringRef;

namespace {

//===----------------------------------------------------------------------===//
// Generic import
//===----------------------------------------------------------------------===//

template <typename OpTy, size_t... N>
constexpr int nOperands(std::index_sequence<N...>) {
  int result = -1;
  ((OpTy::template hasTrait<OpTrait::NOperands<N + 2>::template Impl>()
        ? (result = int(N + 2))
        : 0),
   ...);
  return result;
}

/// The fixed operand count of OpTy, or -1 when it is variadic. (ODS uses
/// ZeroOperands and OneOperand below two.)
template <typename OpTy>
constexpr int fixedOperandCount() {
  if constexpr (OpTy::template hasTrait<OpTrait::ZeroOperands>())
    return 0;
  else if constexpr (OpTy::template hasTrait<OpTrait::OneOperand>())
    return 1;
  else
    return nOperands<OpTy>(std::make_index_sequence<24>{});
}

/// Operands of a node in ONNX order, padded with none up to the op's arity.
template <typename OpTy>
FailureOr<llvm::SmallVector<Value>> collectOperands(NodeImporter &ni) {
  constexpr int arity = fixedOperandCount<OpTy>();
  llvm::SmallVector<Value> operands;
  if constexpr (arity >= 0) {
    if (ni.numInputs() > unsigned(arity))
      return ni.emitError() << "has " << ni.numInputs() << " inputs; llmc knows "
                            << arity << " for this operator";
    for (int i = 0; i < arity; ++i)
      operands.push_back(ni.input(i));
  } else {
    for (unsigned i = 0; i < ni.numInputs(); ++i) {
      if (!ni.hasInput(i))
        return ni.emitError() << "input #" << i << " is empty";
      operands.push_back(ni.input(i));
    }
  }
  return operands;
}

template <typename OpTy>
LogicalResult buildAndBind(NodeImporter &ni, ValueRange operands, NamedAttrList attrs) {
  FailureOr<OpTy> op = ni.create<OpTy>(operands, std::move(attrs));
  if (failed(op))
    return failure();
  return ni.setOutputs((*op)->getResults());
}

/// ONNX inputs -> operands, ONNX attributes -> attributes of the same names.
template <typename OpTy>
LogicalResult importGeneric(NodeImporter &ni) {
  auto operands = collectOperands<OpTy>(ni);
  if (failed(operands))
    return failure();
  NamedAttrList attrs;
  if (failed(ni.convertAttributes(OpTy::getAttributeNames(), attrs)))
    return failure();
  return buildAndBind<OpTy>(ni, *operands, std::move(attrs));
}

//===----------------------------------------------------------------------===//
// Operators with a decision to make
//===----------------------------------------------------------------------===//

LogicalResult importConstant(NodeImporter &ni) {
  const onnx::NodeProto &node = ni.node();
  if (node.attribute_size() != 1)
    return ni.emitError() << "Constant needs exactly one value attribute, has "
                          << node.attribute_size();
  const onnx::AttributeProto &a = node.attribute(0);
  OpBuilder &b = ni.builder();
  ElementsAttr value;
  if (a.name() == "value") {
    FailureOr<Attribute> t = ni.convertAttr(a);
    if (failed(t))
      return failure();
    value = dyn_cast<ElementsAttr>(*t);
    if (!value)
      return ni.emitError() << "Constant value must be a tensor";
  } else if (a.name() == "value_float") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()), a.f());
  } else if (a.name() == "value_floats") {
    llvm::SmallVector<float> v(a.floats().begin(), a.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(v.size())}, b.getF32Type()), llvm::ArrayRef(v));
  } else if (a.name() == "value_int") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   int64_t(a.i()));
  } else if (a.name() == "value_ints") {
    llvm::SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(v.size())}, b.getI64Type()), llvm::ArrayRef(v));
  } else {
    return ni.emitError() << "Constant attribute '" << a.name()
                          << "' (string or sparse tensor) is not supported";
  }
  auto op = b.create<ConstantOp>(ni.loc(), value.getType(), value);
  return ni.setOutputs(op->getResults());
}

std::string checkConstant(const onnx::NodeProto &node, const OnnxModel &) {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == "value_string" || a.name() == "value_strings" || a.name() == "sparse_value")
      return "string and sparse constants are not supported";
  return "";
}

/// Softmax/LogSoftmax before opset 13 work on the input flattened to 2-D at
/// `axis` (default 1). Over the last axis that is the opset-13 op; otherwise
/// Flatten, softmax over axis 1, and Reshape back.
template <typename OpTy>
LogicalResult importLegacySoftmax(NodeImporter &ni) {
  NamedAttrList unused;
  if (failed(ni.convertAttributes({"axis"}, unused)))
    return failure();
  Value x = ni.input(0);
  int64_t axis = ni.intAttr("axis").value_or(1);
  Builder b(ni.context());
  auto rankedX = dyn_cast<RankedTensorType>(x.getType());
  if (rankedX && (axis == rankedX.getRank() - 1 || axis == -1)) {
    NamedAttrList attrs;
    attrs.set("axis", b.getI64IntegerAttr(-1));
    return buildAndBind<OpTy>(ni, x, attrs);
  }
  NamedAttrList flattenAttrs;
  flattenAttrs.set("axis", b.getI64IntegerAttr(axis));
  auto flat = ni.create<OnnxFlattenOp>(x, flattenAttrs);
  if (failed(flat))
    return failure();
  NamedAttrList smAttrs;
  smAttrs.set("axis", b.getI64IntegerAttr(1));
  auto sm = ni.create<OpTy>(flat->getResult(), smAttrs);
  auto shape = ni.create<OnnxShapeOp>(x);
  if (failed(sm) || failed(shape))
    return failure();
  return buildAndBind<OnnxReshapeOp>(ni, {sm->getResult(), shape->getResult()}, {});
}

/// Clip opsets 6 to 10: bounds are attributes.
LogicalResult importLegacyClip(NodeImporter &ni) {
  NamedAttrList unused;
  if (failed(ni.convertAttributes({"min", "max"}, unused)))
    return failure();
  Value x = ni.input(0);
  Type elementType = getElementTypeOrSelf(x.getType());
  if (!isa<FloatType>(elementType))
    return ni.emitError() << "Clip before opset 11 takes floating-point input";
  Value lo = ni.constantFloat(ni.floatAttr("min").value_or(-FLT_MAX), elementType);
  Value hi = ni.constantFloat(ni.floatAttr("max").value_or(FLT_MAX), elementType);
  return buildAndBind<OnnxClipOp>(ni, {x, lo, hi}, {});
}

/// Slice opsets 1 to 9: starts, ends and axes are attributes.
LogicalResult importLegacySlice(NodeImporter &ni) {
  NamedAttrList unused;
  if (failed(ni.convertAttributes({"starts", "ends", "axes"}, unused)))
    return failure();
  auto starts = ni.intsAttr("starts"), ends = ni.intsAttr("ends");
  if (!starts || !ends)
    return ni.emitError() << "Slice before opset 10 needs starts and ends";
  auto axes = ni.intsAttr("axes");
  Value axesValue = axes ? ni.constantI64(*axes) : ni.none();
  return buildAndBind<OnnxSliceOp>(
      ni, {ni.input(0), ni.constantI64(*starts), ni.constantI64(*ends), axesValue, ni.none()},
      {});
}

/// Squeeze/Unsqueeze before opset 13: axes are an attribute.
template <typename OpTy>
LogicalResult importLegacyAxesAttr(NodeImporter &ni) {
  NamedAttrList unused;
  if (failed(ni.convertAttributes({"axes"}, unused)))
    return failure();
  auto axes = ni.intsAttr("axes");
  Value axesValue = axes ? ni.constantI64(*axes) : ni.none();
  if (!axes && std::is_same_v<OpTy, OnnxUnsqueezeOp>)
    return ni.emitError() << "Unsqueeze needs axes";
  return buildAndBind<OpTy>(ni, {ni.input(0), axesValue}, {});
}

/// Reduce* whose axes are an attribute (before opset 18; ReduceSum before 13).
template <typename OpTy>
LogicalResult importLegacyReduce(NodeImporter &ni) {
  NamedAttrList attrs;
  if (failed(ni.convertAttributes({"keepdims"}, attrs, {"axes"})))
    return failure();
  auto axes = ni.intsAttr("axes");
  Value axesValue = axes && !axes->empty() ? ni.constantI64(*axes) : ni.none();
  return buildAndBind<OpTy>(ni, {ni.input(0), axesValue}, attrs);
}

/// Split: opsets 2 to 12 take `split` as an attribute; before opset 18 a
/// missing split means equal parts, one per output.
LogicalResult importSplit(NodeImporter &ni) {
  NamedAttrList attrs;
  Builder b(ni.context());
  Value split = ni.none();
  if (ni.opset() < 13) {
    if (failed(ni.convertAttributes({"axis"}, attrs, {"split"})))
      return failure();
    if (auto s = ni.intsAttr("split"); s && !s->empty())
      split = ni.constantI64(*s);
  } else {
    if (failed(ni.convertAttributes(OnnxSplitOp::getAttributeNames(), attrs)))
      return failure();
    split = ni.input(1);
  }
  if (isNone(split) && !attrs.get("num_outputs")) {
    if (ni.opset() >= 18)
      return ni.emitError() << "Split at opset 18 needs a split input or num_outputs";
    attrs.set("num_outputs", b.getI64IntegerAttr(ni.numOutputs()));
  }
  return buildAndBind<OnnxSplitOp>(ni, {ni.input(0), split}, attrs);
}

/// TopK before opset 10: k is an attribute.
LogicalResult importLegacyTopK(NodeImporter &ni) {
  NamedAttrList attrs;
  if (failed(ni.convertAttributes({"axis"}, attrs, {"k"})))
    return failure();
  auto k = ni.intAttr("k");
  if (!k)
    return ni.emitError() << "TopK before opset 10 needs k";
  return buildAndBind<OnnxTopKOp>(ni, {ni.input(0), ni.constantI64({*k})}, attrs);
}

/// Dropout is an identity in inference; training mode is refused.
LogicalResult importDropout(NodeImporter &ni) {
  NamedAttrList attrs;
  Value ratio = ni.none(), training = ni.none();
  if (ni.opset() < 12) {
    if (failed(ni.convertAttributes({}, attrs, {"ratio", "is_test"})))
      return failure();
  } else {
    if (failed(ni.convertAttributes(OnnxDropoutOp::getAttributeNames(), attrs)))
      return failure();
    ratio = ni.input(1);
    training = ni.input(2);
    if (!isNone(training)) {
      auto mode = getConstantInts(training);
      if (!mode || mode->size() != 1 || (*mode)[0] != 0)
        return ni.emitError() << "Dropout in training mode is not supported "
                                 "(training_mode must be a constant false)";
    }
  }
  return buildAndBind<OnnxDropoutOp>(ni, {ni.input(0), ratio, training}, attrs);
}

std::string checkDropout(const onnx::NodeProto &node, const OnnxModel &model) {
  if (node.input_size() < 3 || node.input(2).empty())
    return "";
  const onnx::TensorProto *t = model.findInitializer(node.input(2));
  if (t) {
    auto data = model.tensorData(*t);
    if (!data) {
      llvm::consumeError(data.takeError());
    } else if (data->bytes.size() == 1 && data->bytes[0] == 0) {
      return "";
    }
  }
  return "training mode (training_mode must be a constant false)";
}

/// Range at opset 27 computes f16/bf16 in `stash_type` (default float).
LogicalResult importRange(NodeImporter &ni) {
  NamedAttrList attrs;
  if (ni.opset() >= 27) {
    if (failed(ni.convertAttributes({"stash_type"}, attrs)))
      return failure();
    if (!attrs.get("stash_type"))
      attrs.set("stash_type", Builder(ni.context()).getI64IntegerAttr(1));
  } else if (failed(ni.convertAttributes({}, attrs))) {
    return failure();
  }
  return buildAndBind<OnnxRangeOp>(ni, {ni.input(0), ni.input(1), ni.input(2)}, attrs);
}

//===----------------------------------------------------------------------===//
// Feature checks for com.microsoft operators
//===----------------------------------------------------------------------===//

bool hasInput(const onnx::NodeProto &node, int i) {
  return node.input_size() > i && !node.input(i).empty();
}

const onnx::AttributeProto *attr(const onnx::NodeProto &node, StringRef name) {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t intAttrOr(const onnx::NodeProto &node, StringRef name, int64_t dflt) {
  const onnx::AttributeProto *a = attr(node, name);
  return a ? a->i() : dflt;
}

std::string checkGroupQueryAttention(const onnx::NodeProto &node, const OnnxModel &) {
  for (StringRef q : {"k_quant_type", "v_quant_type"})
    if (const onnx::AttributeProto *a = attr(node, q); a && a->s() != "NONE")
      return "quantized KV cache (" + q.str() + " = " + a->s() + ")";
  if (intAttrOr(node, "sliding_window_cache", 0) != 0 && intAttrOr(node, "local_window_size", -1) <= 0)
    return "a window-sized KV cache (sliding_window_cache = 1) without local_window_size";
  if (hasInput(node, 14) || hasInput(node, 15))
    return "per-head Q/K RMS norm (q_norm_weight / k_norm_weight)";
  if (hasInput(node, 16))
    return "right-padded query chunks (query_seqlens)";
  if (intAttrOr(node, "qk_output", 0) != 0)
    return "QK output (qk_output != 0)";
  return "";
}

std::string checkMultiHeadAttention(const onnx::NodeProto &node, const OnnxModel &) {
  if (hasInput(node, 9))
    return "beam search cache indirection (cache_indirection)";
  if (hasInput(node, 8))
    return "shared past/present buffers (past_sequence_length)";
  return "";
}

std::string checkMsAttention(const onnx::NodeProto &node, const OnnxModel &) {
  if (intAttrOr(node, "do_rotary", 0) != 0)
    return "rotary embedding inside Attention (do_rotary = 1)";
  if (intAttrOr(node, "past_present_share_buffer", 0) != 0 || hasInput(node, 6))
    return "shared past/present buffers (past_present_share_buffer)";
  return "";
}

std::string checkMsRotaryEmbedding(const onnx::NodeProto &node, const OnnxModel &) {
  if (intAttrOr(node, "is_packed_batching", 0) != 0)
    return "packed (ragged) batching";
  return "";
}

std::string checkMatMulNBits(const onnx::NodeProto &node, const OnnxModel &) {
  if (intAttrOr(node, "weight_prepacked", 0) != 0)
    return "prepacked weights (weight_prepacked != 0)";
  if (hasInput(node, 4))
    return "act-order quantization (g_idx)";
  int64_t bits = intAttrOr(node, "bits", 4);
  if (bits != 4 && bits != 8)
    return std::to_string(bits) + "-bit weights (llmc supports 4 and 8)";
  return "";
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

constexpr int64_t kLast = kNewestKnownOpset;
constexpr int64_t kMsLast = 1;

#define ONNX(name, first, Op) {"", name, first, kLast, importGeneric<Op>, nullptr, Op::getOperationName()}
#define ONNX_RANGE(name, first, last, fn, Op) {"", name, first, last, fn, nullptr, Op::getOperationName()}
#define MS(name, Op, check) {"com.microsoft", name, 1, kMsLast, importGeneric<Op>, check, Op::getOperationName()}

const OpTableEntry kTable[] = {
    // --- default domain, by op type -------------------------------------
    ONNX("Abs", 6, OnnxAbsOp),
    ONNX("Add", 7, OnnxAddOp),
    ONNX("And", 7, OnnxAndOp),
    ONNX("ArgMax", 1, OnnxArgMaxOp),
    ONNX("ArgMin", 1, OnnxArgMinOp),
    ONNX("Attention", 23, OnnxAttentionOp),
    ONNX("Cast", 6, OnnxCastOp),
    ONNX("CastLike", 15, OnnxCastLikeOp),
    ONNX("Ceil", 6, OnnxCeilOp),
    ONNX_RANGE("Clip", 6, 10, importLegacyClip, OnnxClipOp),
    ONNX("Clip", 11, OnnxClipOp),
    ONNX("Concat", 4, OnnxConcatOp),
    {"", "Constant", 1, kLast, importConstant, checkConstant, ConstantOp::getOperationName()},
    ONNX("ConstantOfShape", 9, OnnxConstantOfShapeOp),
    ONNX("Cos", 7, OnnxCosOp),
    ONNX("CumSum", 11, OnnxCumSumOp),
    ONNX("Div", 7, OnnxDivOp),
    {"", "Dropout", 7, kLast, importDropout, checkDropout, OnnxDropoutOp::getOperationName()},
    ONNX("Einsum", 12, OnnxEinsumOp),
    ONNX("Elu", 6, OnnxEluOp),
    ONNX("Equal", 7, OnnxEqualOp),
    ONNX("Erf", 9, OnnxErfOp),
    ONNX("Exp", 6, OnnxExpOp),
    ONNX("Expand", 8, OnnxExpandOp),
    ONNX("Flatten", 1, OnnxFlattenOp),
    ONNX("Floor", 6, OnnxFloorOp),
    ONNX("Gather", 1, OnnxGatherOp),
    ONNX("GatherElements", 11, OnnxGatherElementsOp),
    ONNX("GatherND", 11, OnnxGatherNDOp),
    ONNX("Gelu", 20, OnnxGeluOp),
    ONNX("Gemm", 7, OnnxGemmOp),
    ONNX("Greater", 7, OnnxGreaterOp),
    ONNX("GreaterOrEqual", 12, OnnxGreaterOrEqualOp),
    ONNX("HardSigmoid", 6, OnnxHardSigmoidOp),
    ONNX("HardSwish", 14, OnnxHardSwishOp),
    ONNX("Identity", 1, OnnxIdentityOp),
    ONNX("IsInf", 10, OnnxIsInfOp),
    ONNX("IsNaN", 9, OnnxIsNaNOp),
    ONNX("LayerNormalization", 17, OnnxLayerNormalizationOp),
    ONNX("LeakyRelu", 6, OnnxLeakyReluOp),
    ONNX("Less", 7, OnnxLessOp),
    ONNX("LessOrEqual", 12, OnnxLessOrEqualOp),
    ONNX("Log", 6, OnnxLogOp),
    ONNX_RANGE("LogSoftmax", 1, 12, importLegacySoftmax<OnnxLogSoftmaxOp>, OnnxLogSoftmaxOp),
    ONNX("LogSoftmax", 13, OnnxLogSoftmaxOp),
    ONNX("MatMul", 1, OnnxMatMulOp),
    ONNX("Max", 8, OnnxMaxOp),
    ONNX("Mean", 8, OnnxMeanOp),
    ONNX("Min", 8, OnnxMinOp),
    ONNX("Mish", 18, OnnxMishOp),
    ONNX("Mod", 10, OnnxModOp),
    ONNX("Mul", 7, OnnxMulOp),
    ONNX("Neg", 6, OnnxNegOp),
    ONNX("Not", 1, OnnxNotOp),
    ONNX("Or", 7, OnnxOrOp),
    ONNX("Pow", 7, OnnxPowOp),
    ONNX("RMSNormalization", 23, OnnxRMSNormalizationOp),
    {"", "Range", 11, kLast, importRange, nullptr, OnnxRangeOp::getOperationName()},
    ONNX("Reciprocal", 6, OnnxReciprocalOp),
    ONNX_RANGE("ReduceL2", 1, 17, importLegacyReduce<OnnxReduceL2Op>, OnnxReduceL2Op),
    ONNX("ReduceL2", 18, OnnxReduceL2Op),
    ONNX_RANGE("ReduceMax", 1, 17, importLegacyReduce<OnnxReduceMaxOp>, OnnxReduceMaxOp),
    ONNX("ReduceMax", 18, OnnxReduceMaxOp),
    ONNX_RANGE("ReduceMean", 1, 17, importLegacyReduce<OnnxReduceMeanOp>, OnnxReduceMeanOp),
    ONNX("ReduceMean", 18, OnnxReduceMeanOp),
    ONNX_RANGE("ReduceMin", 1, 17, importLegacyReduce<OnnxReduceMinOp>, OnnxReduceMinOp),
    ONNX("ReduceMin", 18, OnnxReduceMinOp),
    ONNX_RANGE("ReduceProd", 1, 17, importLegacyReduce<OnnxReduceProdOp>, OnnxReduceProdOp),
    ONNX("ReduceProd", 18, OnnxReduceProdOp),
    ONNX_RANGE("ReduceSum", 1, 12, importLegacyReduce<OnnxReduceSumOp>, OnnxReduceSumOp),
    ONNX("ReduceSum", 13, OnnxReduceSumOp),
    ONNX_RANGE("ReduceSumSquare", 1, 17, importLegacyReduce<OnnxReduceSumSquareOp>,
               OnnxReduceSumSquareOp),
    ONNX("ReduceSumSquare", 18, OnnxReduceSumSquareOp),
    ONNX("Relu", 6, OnnxReluOp),
    ONNX("Reshape", 5, OnnxReshapeOp),
    ONNX("RotaryEmbedding", 23, OnnxRotaryEmbeddingOp),
    ONNX("Round", 11, OnnxRoundOp),
    ONNX("ScatterElements", 11, OnnxScatterElementsOp),
    ONNX("ScatterND", 11, OnnxScatterNDOp),
    ONNX("Shape", 1, OnnxShapeOp),
    ONNX("Sigmoid", 6, OnnxSigmoidOp),
    ONNX("Sign", 9, OnnxSignOp),
    {"", "SimplifiedLayerNormalization", 1, kLast,
     importGeneric<MsSimplifiedLayerNormalizationOp>, nullptr,
     MsSimplifiedLayerNormalizationOp::getOperationName()},
    ONNX("Sin", 7, OnnxSinOp),
    ONNX("Size", 1, OnnxSizeOp),
    ONNX_RANGE("Slice", 1, 9, importLegacySlice, OnnxSliceOp),
    ONNX("Slice", 10, OnnxSliceOp),
    ONNX_RANGE("Softmax", 1, 12, importLegacySoftmax<OnnxSoftmaxOp>, OnnxSoftmaxOp),
    ONNX("Softmax", 13, OnnxSoftmaxOp),
    ONNX("Softplus", 1, OnnxSoftplusOp),
    {"", "Split", 2, kLast, importSplit, nullptr, OnnxSplitOp::getOperationName()},
    ONNX("Sqrt", 6, OnnxSqrtOp),
    ONNX_RANGE("Squeeze", 1, 12, importLegacyAxesAttr<OnnxSqueezeOp>, OnnxSqueezeOp),
    ONNX("Squeeze", 13, OnnxSqueezeOp),
    ONNX("Sub", 7, OnnxSubOp),
    ONNX("Sum", 8, OnnxSumOp),
    ONNX("Swish", 24, OnnxSwishOp),
    ONNX("Tanh", 6, OnnxTanhOp),
    ONNX("TensorScatter", 24, OnnxTensorScatterOp),
    ONNX("Tile", 6, OnnxTileOp),
    ONNX_RANGE("TopK", 1, 9, importLegacyTopK, OnnxTopKOp),
    ONNX("TopK", 10, OnnxTopKOp),
    ONNX("Transpose", 1, OnnxTransposeOp),
    ONNX("Trilu", 14, OnnxTriluOp),
    ONNX_RANGE("Unsqueeze", 1, 12, importLegacyAxesAttr<OnnxUnsqueezeOp>, OnnxUnsqueezeOp),
    ONNX("Unsqueeze", 13, OnnxUnsqueezeOp),
    ONNX("Where", 9, OnnxWhereOp),
    ONNX("Xor", 7, OnnxXorOp),

    // --- com.microsoft ---------------------------------------------------
    MS("Attention", MsAttentionOp, checkMsAttention),
    MS("BiasGelu", MsBiasGeluOp, nullptr),
    MS("EmbedLayerNormalization", MsEmbedLayerNormalizationOp, nullptr),
    MS("FastGelu", MsFastGeluOp, nullptr),
    MS("GatherBlockQuantized", MsGatherBlockQuantizedOp, nullptr),
    MS("GroupQueryAttention", MsGroupQueryAttentionOp, checkGroupQueryAttention),
    MS("MatMulNBits", MsMatMulNBitsOp, checkMatMulNBits),
    MS("MultiHeadAttention", MsMultiHeadAttentionOp, checkMultiHeadAttention),
    MS("QuickGelu", MsQuickGeluOp, nullptr),
    MS("RotaryEmbedding", MsRotaryEmbeddingOp, checkMsRotaryEmbedding),
    MS("SimplifiedLayerNormalization", MsSimplifiedLayerNormalizationOp, nullptr),
    MS("SkipLayerNormalization", MsSkipLayerNormalizationOp, nullptr),
    MS("SkipSimplifiedLayerNormalization", MsSkipSimplifiedLayerNormalizationOp, nullptr),
};

#undef ONNX
#undef ONNX_RANGE
#undef MS

} // namespace

llvm::ArrayRef<OpTableEntry> mlir::llmc::onnxOpTable() { return kTable; }

const OpTableEntry *mlir::llmc::lookupOnnxOp(StringRef domain, StringRef opType,
                                             int64_t opset) {
  domain = normalizeDomain(domain);
  for (const OpTableEntry &e : kTable)
    if (e.domain == domain && e.opType == opType && e.firstOpset <= opset &&
        opset <= e.lastOpset)
      return &e;
  return nullptr;
}

bool mlir::llmc::isKnownOnnxOp(StringRef domain, StringRef opType) {
  domain = normalizeDomain(domain);
  return llvm::any_of(kTable, [&](const OpTableEntry &e) {
    return e.domain == domain && e.opType == opType;
  });
}
