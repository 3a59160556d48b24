//===- LLMOnnxOps.td - ONNX default-domain operators ------*- tablegen -*-===//
//
// One operation per ONNX operator. Semantics are those of the ONNX
// specification (https://onnx.ai/onnx/operators/) at the newest opset named in
// each description; the importer rewrites older opsets into that form.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_IR_LLMONNXOPS_TD
#define LLMC_DIALECTS_LLM_IR_LLMONNXOPS_TD

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

def LLM_OnnxAbsOp : LLM_OnnxUnaryOp<"abs"> { let summary = "ONNX Abs (opset 13)"; }
def LLM_OnnxNegOp : LLM_OnnxUnaryOp<"neg"> { let summary = "ONNX Neg (opset 13)"; }
def LLM_OnnxSignOp : LLM_OnnxUnaryOp<"sign"> { let summary = "ONNX Sign (opset 13)"; }
def LLM_OnnxReluOp : LLM_OnnxUnaryOp<"relu"> { let summary = "ONNX Relu (opset 14)"; }
def LLM_OnnxIdentityOp : LLM_OnnxUnaryOp<"identity", LLM_Tensor> {
  let summary = "ONNX Identity (opset 25, tensors only)";
}
def LLM_OnnxSqrtOp : LLM_OnnxUnaryOp<"sqrt", LLM_FloatTensor> { let summary = "ONNX Sqrt (opset 13)"; }
def LLM_OnnxReciprocalOp : LLM_OnnxUnaryOp<"reciprocal", LLM_FloatTensor> { let summary = "ONNX Reciprocal (opset 13)"; }
def LLM_OnnxExpOp : LLM_OnnxUnaryOp<"exp", LLM_FloatTensor> { let summary = "ONNX Exp (opset 13)"; }
def LLM_OnnxLogOp : LLM_OnnxUnaryOp<"log", LLM_FloatTensor> { let summary = "ONNX Log (opset 13)"; }
def LLM_OnnxTanhOp : LLM_OnnxUnaryOp<"tanh", LLM_FloatTensor> { let summary = "ONNX Tanh (opset 13)"; }
def LLM_OnnxErfOp : LLM_OnnxUnaryOp<"erf", LLM_FloatTensor> { let summary = "ONNX Erf (opset 13)"; }
def LLM_OnnxSigmoidOp : LLM_OnnxUnaryOp<"sigmoid", LLM_FloatTensor> { let summary = "ONNX Sigmoid (opset 13)"; }
def LLM_OnnxCeilOp : LLM_OnnxUnaryOp<"ceil", LLM_FloatTensor> { let summary = "ONNX Ceil (opset 13)"; }
def LLM_OnnxFloorOp : LLM_OnnxUnaryOp<"floor", LLM_FloatTensor> { let summary = "ONNX Floor (opset 13)"; }
def LLM_OnnxRoundOp : LLM_OnnxUnaryOp<"round", LLM_FloatTensor> {
  let summary = "ONNX Round (opset 22): round half to even";
}
def LLM_OnnxSinOp : LLM_OnnxUnaryOp<"sin", LLM_FloatTensor> { let summary = "ONNX Sin (opset 22)"; }
def LLM_OnnxCosOp : LLM_OnnxUnaryOp<"cos", LLM_FloatTensor> { let summary = "ONNX Cos (opset 22)"; }
def LLM_OnnxSoftplusOp : LLM_OnnxUnaryOp<"softplus", LLM_FloatTensor> {
  let summary = "ONNX Softplus (opset 22): log(exp(x) + 1)";
}
def LLM_OnnxHardSwishOp : LLM_OnnxUnaryOp<"hard_swish", LLM_FloatTensor> {
  let summary = "ONNX HardSwish (opset 22): x * max(0, min(1, x/6 + 1/2))";
}
def LLM_OnnxMishOp : LLM_OnnxUnaryOp<"mish", LLM_FloatTensor> {
  let summary = "ONNX Mish (opset 22): x * tanh(softplus(x))";
}
def LLM_OnnxNotOp : LLM_OnnxUnaryOp<"not", LLM_BoolTensor> { let summary = "ONNX Not (opset 1)"; }

def LLM_OnnxGeluOp : LLM_OnnxUnaryOp<"gelu", LLM_FloatTensor> {
  let summary = "ONNX Gelu (opset 20)";
  let description = [{
    `approximate = "none"`: y = 0.5 x (1 + erf(x / sqrt(2))).
    `approximate = "tanh"`: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  }];
  let arguments = (ins LLM_FloatTensor:$X,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$approximate);
  let hasVerifier = 1;
}
def LLM_OnnxLeakyReluOp : LLM_OnnxUnaryOp<"leaky_relu", LLM_FloatTensor> {
  let summary = "ONNX LeakyRelu (opset 16): x < 0 ? alpha x : x";
  let arguments = (ins LLM_FloatTensor:$X, DefaultValuedAttr<F32Attr, "0.01">:$alpha);
}
def LLM_OnnxEluOp : LLM_OnnxUnaryOp<"elu", LLM_FloatTensor> {
  let summary = "ONNX Elu (opset 22): x < 0 ? alpha (exp(x) - 1) : x";
  let arguments = (ins LLM_FloatTensor:$X, DefaultValuedAttr<F32Attr, "1.0">:$alpha);
}
def LLM_OnnxHardSigmoidOp : LLM_OnnxUnaryOp<"hard_sigmoid", LLM_FloatTensor> {
  let summary = "ONNX HardSigmoid (opset 22): max(0, min(1, alpha x + beta))";
  let arguments = (ins LLM_FloatTensor:$X,
                   DefaultValuedAttr<F32Attr, "0.2">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.5">:$beta);
}
def LLM_OnnxSwishOp : LLM_OnnxUnaryOp<"swish", LLM_FloatTensor> {
  let summary = "ONNX Swish (opset 24): x * sigmoid(alpha x)";
  let arguments = (ins LLM_FloatTensor:$X, DefaultValuedAttr<F32Attr, "1.0">:$alpha);
}

def LLM_OnnxIsNaNOp : LLM_OnnxOp<"is_nan"> {
  let summary = "ONNX IsNaN (opset 20)";
  let arguments = (ins LLM_FloatTensor:$X);
  let results = (outs LLM_BoolTensor:$Y);
  let inferImpl = [{
      return ::mlir::llmc::inferSameShape(loc, adaptor.getX(),
          ::mlir::IntegerType::get(ctx, 1), types);
  }];
}
def LLM_OnnxIsInfOp : LLM_OnnxOp<"is_inf"> {
  let summary = "ONNX IsInf (opset 20)";
  let arguments = (ins LLM_FloatTensor:$X,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$detect_negative,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$detect_positive);
  let results = (outs LLM_BoolTensor:$Y);
  let inferImpl = [{
      return ::mlir::llmc::inferSameShape(loc, adaptor.getX(),
          ::mlir::IntegerType::get(ctx, 1), types);
  }];
}

def LLM_OnnxClipOp : LLM_OnnxOp<"clip"> {
  let summary = "ONNX Clip (opset 13)";
  let description = [{
    Clamps to [min, max]; a `none` bound is unbounded. `min` and `max` are
    scalars (rank 0 or a single element) of the input's element type. Opset
    6 (bounds as attributes) is imported as constants.
  }];
  let arguments = (ins LLM_NumericTensor:$input, LLM_OptTensor:$min,
                   LLM_OptTensor:$max);
  let results = (outs LLM_NumericTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

def LLM_OnnxCastOp : LLM_OnnxOp<"cast"> {
  let summary = "ONNX Cast (opset 25)";
  let description = [{
    Converts to the ONNX data type `to` (a TensorProto.DataType code). Float to
    integer truncates toward zero; `saturate` applies to float8 targets only;
    `round_mode` to float8 E8M0 targets only.
  }];
  let arguments = (ins LLM_Tensor:$input, LLM_I64Attr:$to,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$saturate,
                   DefaultValuedAttr<StrAttr, "\"up\"">:$round_mode);
  let results = (outs LLM_Tensor:$output);
}

def LLM_OnnxCastLikeOp : LLM_OnnxOp<"cast_like"> {
  let summary = "ONNX CastLike (opset 25): Cast to the element type of target_type";
  let arguments = (ins LLM_Tensor:$input, LLM_Tensor:$target_type,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$saturate,
                   DefaultValuedAttr<StrAttr, "\"up\"">:$round_mode);
  let results = (outs LLM_Tensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameShape(loc, adaptor.getInput(),
          ::mlir::getElementTypeOrSelf(adaptor.getTargetType().getType()), types);
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise binary and variadic, with broadcasting
//===----------------------------------------------------------------------===//

def LLM_OnnxAddOp : LLM_OnnxBinaryOp<"add"> { let summary = "ONNX Add (opset 14)"; }
def LLM_OnnxSubOp : LLM_OnnxBinaryOp<"sub"> { let summary = "ONNX Sub (opset 14)"; }
def LLM_OnnxMulOp : LLM_OnnxBinaryOp<"mul"> { let summary = "ONNX Mul (opset 14)"; }
def LLM_OnnxDivOp : LLM_OnnxBinaryOp<"div"> {
  let summary = "ONNX Div (opset 14); integer division truncates toward zero";
}
def LLM_OnnxAndOp : LLM_OnnxBinaryOp<"and", LLM_BoolTensor> { let summary = "ONNX And (opset 7)"; }
def LLM_OnnxOrOp : LLM_OnnxBinaryOp<"or", LLM_BoolTensor> { let summary = "ONNX Or (opset 7)"; }
def LLM_OnnxXorOp : LLM_OnnxBinaryOp<"xor", LLM_BoolTensor> { let summary = "ONNX Xor (opset 7)"; }
def LLM_OnnxEqualOp : LLM_OnnxBinaryOp<"equal", LLM_NumericTensor, 1> { let summary = "ONNX Equal (opset 19)"; }
def LLM_OnnxLessOp : LLM_OnnxBinaryOp<"less", LLM_NumericTensor, 1> { let summary = "ONNX Less (opset 13)"; }
def LLM_OnnxLessOrEqualOp : LLM_OnnxBinaryOp<"less_or_equal", LLM_NumericTensor, 1> {
  let summary = "ONNX LessOrEqual (opset 16)";
}
def LLM_OnnxGreaterOp : LLM_OnnxBinaryOp<"greater", LLM_NumericTensor, 1> { let summary = "ONNX Greater (opset 13)"; }
def LLM_OnnxGreaterOrEqualOp : LLM_OnnxBinaryOp<"greater_or_equal", LLM_NumericTensor, 1> {
  let summary = "ONNX GreaterOrEqual (opset 16)";
}

def LLM_OnnxModOp : LLM_OnnxBinaryOp<"mod"> {
  let summary = "ONNX Mod (opset 13)";
  let description = [{
    `fmod = 0`: integer modulus with the sign of the divisor (Python `%`).
    `fmod = 1`: C `fmod`, the sign of the dividend; required for floats.
  }];
  let arguments = (ins LLM_NumericTensor:$A, LLM_NumericTensor:$B,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$fmod);
  let hasVerifier = 1;
}

def LLM_OnnxPowOp : LLM_OnnxOp<"pow"> {
  let summary = "ONNX Pow (opset 15): X ^ Y, result of X's element type";
  let arguments = (ins LLM_NumericTensor:$X, LLM_NumericTensor:$Y);
  let results = (outs LLM_NumericTensor:$Z);
  let inferImpl = [{
      return ::mlir::llmc::inferBroadcast(loc, adaptor.getOperands(),
          /*resultBool=*/false, /*sameElementType=*/false, types);
  }];
}

def LLM_OnnxMinOp : LLM_OnnxVariadicOp<"min"> { let summary = "ONNX Min (opset 13)"; }
def LLM_OnnxMaxOp : LLM_OnnxVariadicOp<"max"> { let summary = "ONNX Max (opset 13)"; }
def LLM_OnnxSumOp : LLM_OnnxVariadicOp<"sum"> { let summary = "ONNX Sum (opset 13)"; }
def LLM_OnnxMeanOp : LLM_OnnxVariadicOp<"mean"> { let summary = "ONNX Mean (opset 13)"; }

def LLM_OnnxWhereOp : LLM_OnnxOp<"where"> {
  let summary = "ONNX Where (opset 16): condition ? X : Y, broadcast";
  let arguments = (ins LLM_BoolTensor:$condition, LLM_Tensor:$X, LLM_Tensor:$Y);
  let results = (outs LLM_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Normalisation and softmax
//===----------------------------------------------------------------------===//

def LLM_OnnxSoftmaxOp : LLM_OnnxOp<"softmax"> {
  let summary = "ONNX Softmax (opset 13) along one axis";
  let description = [{
    Opsets 1 and 11 (which flatten to 2-D at `axis`) are imported as
    Flatten + Softmax(axis = 1) + Reshape.
  }];
  let arguments = (ins LLM_FloatTensor:$input, DefaultValuedAttr<LLM_I64Attr, "-1">:$axis);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperandWithAxis(loc, adaptor.getOperands(), 0,
          adaptor.getAxis(), types);
  }];
}

def LLM_OnnxLogSoftmaxOp : LLM_OnnxOp<"log_softmax"> {
  let summary = "ONNX LogSoftmax (opset 13) along one axis";
  let arguments = (ins LLM_FloatTensor:$input, DefaultValuedAttr<LLM_I64Attr, "-1">:$axis);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperandWithAxis(loc, adaptor.getOperands(), 0,
          adaptor.getAxis(), types);
  }];
}

def LLM_OnnxLayerNormalizationOp : LLM_OnnxOp<"layer_normalization"> {
  let summary = "ONNX LayerNormalization (opset 17)";
  let description = [{
    Normalises over the dimensions [axis, rank): Y = (X - mean) / sqrt(var +
    epsilon) * Scale + B, with the statistics computed in the type given by
    `stash_type` (1 = f32). `Mean` and `InvStdDev` have shape
    X.shape[:axis] + [1] * (rank - axis).
  }];
  let arguments = (ins LLM_FloatTensor:$X, LLM_FloatTensor:$Scale, LLM_OptFloatTensor:$B,
                   DefaultValuedAttr<LLM_I64Attr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$stash_type);
  let results = (outs LLM_FloatTensor:$Y, LLM_FloatTensor:$Mean,
                 LLM_FloatTensor:$InvStdDev);
}

def LLM_OnnxRMSNormalizationOp : LLM_OnnxOp<"rms_normalization"> {
  let summary = "ONNX RMSNormalization (opset 23)";
  let description = [{
    Y = X / sqrt(mean(X^2 over [axis, rank)) + epsilon) * scale, computed in
    the type given by `stash_type`; Y has scale's element type.
  }];
  let arguments = (ins LLM_FloatTensor:$X, LLM_FloatTensor:$scale,
                   DefaultValuedAttr<LLM_I64Attr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$stash_type);
  let results = (outs LLM_FloatTensor:$Y);
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def LLM_OnnxMatMulOp : LLM_OnnxOp<"matmul"> {
  let summary = "ONNX MatMul (opset 13), numpy.matmul semantics";
  let arguments = (ins LLM_NumericTensor:$A, LLM_NumericTensor:$B);
  let results = (outs LLM_NumericTensor:$Y);
}

def LLM_OnnxGemmOp : LLM_OnnxOp<"gemm"> {
  let summary = "ONNX Gemm (opset 13): alpha * A' B' + beta * C";
  let arguments = (ins LLM_NumericTensor:$A, LLM_NumericTensor:$B, LLM_OptTensor:$C,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                   DefaultValuedAttr<F32Attr, "1.0">:$beta,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$transA,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$transB);
  let results = (outs LLM_NumericTensor:$Y);
}

def LLM_OnnxEinsumOp : LLM_OnnxOp<"einsum"> {
  let summary = "ONNX Einsum (opset 12)";
  let description = [{
    Explicit (`ab,bc->ac`) and implicit (`ab,bc`) equations, with `...`
    broadcasting. Repeated indices in one operand take the diagonal.
  }];
  let arguments = (ins Variadic<LLM_NumericTensor>:$Inputs, StrAttr:$equation);
  let results = (outs LLM_NumericTensor:$Output);
}

//===----------------------------------------------------------------------===//
// Data movement and indexing
//===----------------------------------------------------------------------===//

def LLM_OnnxGatherOp : LLM_OnnxOp<"gather"> {
  let summary = "ONNX Gather (opset 13)";
  let description = [{
    output = data[:axis] x indices x data[axis+1:]. Negative indices count from
    the end; an index outside [-d, d) is an error at run time.
  }];
  let arguments = (ins LLM_Tensor:$data, LLM_IndexTensor:$indices,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$axis);
  let results = (outs LLM_Tensor:$output);
}

def LLM_OnnxGatherElementsOp : LLM_OnnxOp<"gather_elements"> {
  let summary = "ONNX GatherElements (opset 13)";
  let arguments = (ins LLM_Tensor:$data, LLM_IndexTensor:$indices,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$axis);
  let results = (outs LLM_Tensor:$output);
}

def LLM_OnnxGatherNDOp : LLM_OnnxOp<"gather_nd"> {
  let summary = "ONNX GatherND (opset 13)";
  let arguments = (ins LLM_Tensor:$data, LLM_I64Tensor:$indices,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$batch_dims);
  let results = (outs LLM_Tensor:$output);
}

def LLM_OnnxScatterNDOp : LLM_OnnxOp<"scatter_nd"> {
  let summary = "ONNX ScatterND (opset 18)";
  let description = [{`reduction` is one of none, add, mul, max, min.}];
  let arguments = (ins LLM_Tensor:$data, LLM_I64Tensor:$indices, LLM_Tensor:$updates,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs LLM_Tensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

def LLM_OnnxScatterElementsOp : LLM_OnnxOp<"scatter_elements"> {
  let summary = "ONNX ScatterElements (opset 18)";
  let arguments = (ins LLM_Tensor:$data, LLM_IndexTensor:$indices, LLM_Tensor:$updates,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$axis,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs LLM_Tensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperandWithAxis(loc, adaptor.getOperands(), 0,
          adaptor.getAxis(), types);
  }];
  let hasVerifier = 1;
}

def LLM_OnnxReshapeOp : LLM_OnnxOp<"reshape"> {
  let summary = "ONNX Reshape (opset 25)";
  let description = [{
    `shape` is a 1-D i64 tensor; 0 copies the input dimension (unless
    `allowzero = 1`) and one -1 is inferred from the element count.
  }];
  let arguments = (ins LLM_Tensor:$data, LLM_I64Tensor:$shape,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$allowzero);
  let results = (outs LLM_Tensor:$reshaped);
}

def LLM_OnnxFlattenOp : LLM_OnnxOp<"flatten"> {
  let summary = "ONNX Flatten (opset 25): to 2-D [prod(d[:axis]), prod(d[axis:])]";
  let arguments = (ins LLM_Tensor:$input, DefaultValuedAttr<LLM_I64Attr, "1">:$axis);
  let results = (outs LLM_Tensor:$output);
}

def LLM_OnnxTransposeOp : LLM_OnnxOp<"transpose"> {
  let summary = "ONNX Transpose (opset 25); no perm reverses the dimensions";
  let arguments = (ins LLM_Tensor:$data, OptionalAttr<DenseI64ArrayAttr>:$perm);
  let results = (outs LLM_Tensor:$transposed);
}

def LLM_OnnxConcatOp : LLM_OnnxOp<"concat"> {
  let summary = "ONNX Concat (opset 13)";
  let arguments = (ins Variadic<LLM_Tensor>:$inputs, LLM_I64Attr:$axis);
  let results = (outs LLM_Tensor:$concat_result);
}

def LLM_OnnxSplitOp : LLM_OnnxOp<"split"> {
  let summary = "ONNX Split (opset 18)";
  let description = [{
    Splits along `axis` into the sizes given by `split`, or into `num_outputs`
    parts of ceil(d / num_outputs) (the last one smaller). The importer sets
    `num_outputs` from the node's output count where older opsets leave it
    implicit.
  }];
  let arguments = (ins LLM_Tensor:$input, LLM_OptI64Tensor:$split,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$axis,
                   OptionalAttr<LLM_I64Attr>:$num_outputs);
  let results = (outs Variadic<LLM_Tensor>:$outputs);
}

def LLM_OnnxSliceOp : LLM_OnnxOp<"slice"> {
  let summary = "ONNX Slice (opset 13)";
  let description = [{
    Inputs `starts`, `ends`, `axes`, `steps` are 1-D i32/i64 tensors; a
    missing `axes` is [0, n) and a missing `steps` is all ones. Opset 1
    (attributes) is imported as constants.
  }];
  let arguments = (ins LLM_Tensor:$data, LLM_IndexTensor:$starts,
                   LLM_IndexTensor:$ends, LLM_OptIndexTensor:$axes,
                   LLM_OptIndexTensor:$steps);
  let results = (outs LLM_Tensor:$output);
}

def LLM_OnnxSqueezeOp : LLM_OnnxOp<"squeeze"> {
  let summary = "ONNX Squeeze (opset 25); no axes removes every size-1 dimension";
  let arguments = (ins LLM_Tensor:$data, LLM_OptI64Tensor:$axes);
  let results = (outs LLM_Tensor:$squeezed);
}

def LLM_OnnxUnsqueezeOp : LLM_OnnxOp<"unsqueeze"> {
  let summary = "ONNX Unsqueeze (opset 25); axes index the output";
  let arguments = (ins LLM_Tensor:$data, LLM_I64Tensor:$axes);
  let results = (outs LLM_Tensor:$expanded);
}

def LLM_OnnxExpandOp : LLM_OnnxOp<"expand"> {
  let summary = "ONNX Expand (opset 13): broadcast input with shape";
  let arguments = (ins LLM_Tensor:$input, LLM_I64Tensor:$shape);
  let results = (outs LLM_Tensor:$output);
}

def LLM_OnnxTileOp : LLM_OnnxOp<"tile"> {
  let summary = "ONNX Tile (opset 13)";
  let arguments = (ins LLM_Tensor:$input, LLM_I64Tensor:$repeats);
  let results = (outs LLM_Tensor:$output);
}

def LLM_OnnxTriluOp : LLM_OnnxOp<"trilu"> {
  let summary = "ONNX Trilu (opset 14)";
  let description = [{
    Keeps the upper (`upper = 1`) or lower triangle of the last two
    dimensions, offset by the scalar `k` (default 0); zeroes the rest.
  }];
  let arguments = (ins LLM_Tensor:$input, LLM_OptI64Tensor:$k,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$upper);
  let results = (outs LLM_Tensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
}

def LLM_OnnxCumSumOp : LLM_OnnxOp<"cum_sum"> {
  let summary = "ONNX CumSum (opset 14) along the scalar axis";
  let arguments = (ins LLM_NumericTensor:$x, LLM_IndexTensor:$axis,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$exclusive,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$reverse);
  let results = (outs LLM_NumericTensor:$y);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
}

def LLM_OnnxTopKOp : LLM_OnnxOp<"top_k"> {
  let summary = "ONNX TopK (opset 24)";
  let description = [{
    The `K` largest (`largest = 1`) or smallest elements along `axis`, with
    their int64 indices; ties go to the lower index.
  }];
  let arguments = (ins LLM_NumericTensor:$X, LLM_I64Tensor:$K,
                   DefaultValuedAttr<LLM_I64Attr, "-1">:$axis,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$largest,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$sorted);
  let results = (outs LLM_NumericTensor:$Values, LLM_I64Tensor:$Indices);
}

def LLM_OnnxArgMaxOp : LLM_OnnxOp<"arg_max"> {
  let summary = "ONNX ArgMax (opset 13), int64 result";
  let arguments = (ins LLM_NumericTensor:$data,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$axis,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$keepdims,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$select_last_index);
  let results = (outs LLM_I64Tensor:$reduced);
}

def LLM_OnnxArgMinOp : LLM_OnnxOp<"arg_min"> {
  let summary = "ONNX ArgMin (opset 13), int64 result";
  let arguments = (ins LLM_NumericTensor:$data,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$axis,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$keepdims,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$select_last_index);
  let results = (outs LLM_I64Tensor:$reduced);
}

//===----------------------------------------------------------------------===//
// Reductions (opset 18 form: axes as an optional input)
//===----------------------------------------------------------------------===//

class LLM_OnnxReduceOp<string mnemonic, string onnxName>
    : LLM_OnnxOp<mnemonic> {
  let summary = "ONNX " # onnxName # " (opset 18)";
  let description = [{
    Reduces over `axes` (a 1-D i64 input). Missing or empty axes reduce every
    dimension, unless `noop_with_empty_axes = 1` which makes the op an
    identity. Earlier opsets, whose axes are an attribute, are imported with
    the axes as a constant input.
  }];
  let arguments = (ins LLM_NumericTensor:$data, LLM_OptI64Tensor:$axes,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$keepdims,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$noop_with_empty_axes);
  let results = (outs LLM_NumericTensor:$reduced);
  let inferImpl = [{
      return ::mlir::llmc::inferReduce(loc, adaptor.getData(), adaptor.getAxes(),
          adaptor.getKeepdims() != 0, adaptor.getNoopWithEmptyAxes() != 0, types);
  }];
}

def LLM_OnnxReduceMeanOp : LLM_OnnxReduceOp<"reduce_mean", "ReduceMean">;
def LLM_OnnxReduceSumOp : LLM_OnnxReduceOp<"reduce_sum", "ReduceSum">;
def LLM_OnnxReduceMaxOp : LLM_OnnxReduceOp<"reduce_max", "ReduceMax">;
def LLM_OnnxReduceMinOp : LLM_OnnxReduceOp<"reduce_min", "ReduceMin">;
def LLM_OnnxReduceProdOp : LLM_OnnxReduceOp<"reduce_prod", "ReduceProd">;
def LLM_OnnxReduceL2Op : LLM_OnnxReduceOp<"reduce_l2", "ReduceL2">;
def LLM_OnnxReduceSumSquareOp : LLM_OnnxReduceOp<"reduce_sum_square", "ReduceSumSquare">;

//===----------------------------------------------------------------------===//
// Shape and constants
//===----------------------------------------------------------------------===//

def LLM_OnnxShapeOp : LLM_OnnxOp<"shape"> {
  let summary = "ONNX Shape (opset 25): dims [start, end) as a 1-D i64 tensor";
  let arguments = (ins LLM_Tensor:$data,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$start,
                   OptionalAttr<LLM_I64Attr>:$end);
  let results = (outs LLM_I64Tensor:$shape);
}

def LLM_OnnxSizeOp : LLM_OnnxOp<"size"> {
  let summary = "ONNX Size (opset 25): the element count as an i64 scalar";
  let arguments = (ins LLM_Tensor:$data);
  let results = (outs LLM_I64Tensor:$size);
  let inferImpl = [{
      types.push_back(::mlir::RankedTensorType::get({}, ::mlir::IntegerType::get(ctx, 64)));
      return ::mlir::success();
  }];
}

def LLM_OnnxConstantOfShapeOp : LLM_OnnxOp<"constant_of_shape"> {
  let summary = "ONNX ConstantOfShape (opset 25)";
  let description = [{
    A tensor of the given shape filled with the single element of `value`
    (default: f32 zero).
  }];
  let arguments = (ins LLM_I64Tensor:$input, OptionalAttr<ElementsAttr>:$value);
  let results = (outs LLM_Tensor:$output);
  let hasVerifier = 1;
}

def LLM_OnnxRangeOp : LLM_OnnxOp<"range"> {
  let summary = "ONNX Range (opset 27): start, start + delta, ... below limit";
  let description = [{
    `stash_type` (opset 27) is the ONNX type f16/bf16 inputs are computed in;
    without it (opsets 11 to 26) the computation is in the input type.
  }];
  let arguments = (ins LLM_NumericTensor:$start, LLM_NumericTensor:$limit,
                   LLM_NumericTensor:$delta, OptionalAttr<LLM_I64Attr>:$stash_type);
  let results = (outs LLM_NumericTensor:$output);
}

def LLM_OnnxDropoutOp : LLM_OnnxOp<"dropout"> {
  let summary = "ONNX Dropout (opset 22), inference only";
  let description = [{
    llmc compiles inference graphs: the output is the input and the mask is
    all true. A `training_mode` that is not a constant false is rejected by
    the importer.
  }];
  let arguments = (ins LLM_FloatTensor:$data, LLM_OptFloatTensor:$ratio,
                   AnyTypeOf<[LLM_BoolTensor, NoneType]>:$training_mode,
                   OptionalAttr<LLM_I64Attr>:$seed);
  let results = (outs LLM_FloatTensor:$output, LLM_BoolTensor:$mask);
}

//===----------------------------------------------------------------------===//
// Attention building blocks (opsets 23 and 24)
//===----------------------------------------------------------------------===//

def LLM_OnnxAttentionOp : LLM_OnnxOp<"attention"> {
  let summary = "ONNX Attention (opsets 23 to 25)";
  let description = [{
    Scaled dot-product attention with MHA/GQA/MQA heads, boolean or additive
    `attn_mask`, bottom-right aligned causal masking (`is_causal`), softcap,
    optional past/present key and value (concatenated along the sequence) and
    `nonpad_kv_seqlen` for an external cache.

    Q is [B, Hq, Sq, D] or [B, Sq, Hq*D] (then `q_num_heads` is required); K and
    V likewise with `kv_num_heads`. Y has Q's form with V's head size; present
    K/V are [B, Hkv, past + Skv, D]; `qk_matmul_output` is [B, Hq, Sq, total].
    `left_window_size` / `right_window_size` (opset 25, -1 = unbounded) limit
    the keys around each query's absolute position.
  }];
  let arguments = (ins LLM_FloatTensor:$Q, LLM_FloatTensor:$K, LLM_FloatTensor:$V,
                   LLM_OptTensor:$attn_mask, LLM_OptFloatTensor:$past_key,
                   LLM_OptFloatTensor:$past_value, LLM_OptI64Tensor:$nonpad_kv_seqlen,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$is_causal,
                   OptionalAttr<LLM_I64Attr>:$kv_num_heads,
                   OptionalAttr<LLM_I64Attr>:$q_num_heads,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$qk_matmul_output_mode,
                   OptionalAttr<F32Attr>:$scale,
                   DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                   OptionalAttr<LLM_I64Attr>:$softmax_precision,
                   DefaultValuedAttr<LLM_I64Attr, "-1">:$left_window_size,
                   DefaultValuedAttr<LLM_I64Attr, "-1">:$right_window_size);
  let results = (outs LLM_FloatTensor:$Y, LLM_FloatTensor:$present_key,
                 LLM_FloatTensor:$present_value, LLM_FloatTensor:$qk_matmul_output);
  let hasVerifier = 1;
}

def LLM_OnnxRotaryEmbeddingOp : LLM_OnnxOp<"rotary_embedding"> {
  let summary = "ONNX RotaryEmbedding (opset 23)";
  let description = [{
    X is [B, H, S, D] or [B, S, H*D] (then `num_heads` is required). With
    `position_ids` ([B, S]) the caches are [max_pos, R/2] tables; without,
    they are [B, S, R/2]. R is `rotary_embedding_dim` (0: the head size).
  }];
  let arguments = (ins LLM_FloatTensor:$X, LLM_FloatTensor:$cos_cache,
                   LLM_FloatTensor:$sin_cache, LLM_OptIndexTensor:$position_ids,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$interleaved,
                   OptionalAttr<LLM_I64Attr>:$num_heads,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$rotary_embedding_dim);
  let results = (outs LLM_FloatTensor:$Y);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

def LLM_OnnxTensorScatterOp : LLM_OnnxOp<"tensor_scatter"> {
  let summary = "ONNX TensorScatter (opset 24)";
  let description = [{
    Writes `update` into a copy of `past_cache` along `axis`, at
    `write_indices[b]` (default 0) for each batch entry b; `mode = "circular"`
    wraps the positions modulo the cache length.
  }];
  let arguments = (ins LLM_Tensor:$past_cache, LLM_Tensor:$update,
                   LLM_OptI64Tensor:$write_indices,
                   DefaultValuedAttr<LLM_I64Attr, "-2">:$axis,
                   DefaultValuedAttr<StrAttr, "\"linear\"">:$mode);
  let results = (outs LLM_Tensor:$present_cache);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

#endif // LLMC_DIALECTS_LLM_IR_LLMONNXOPS_TD
