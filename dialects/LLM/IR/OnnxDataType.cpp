//===- OnnxDataType.cpp - the table of ONNX tensor element types ---------===//
#include "dialects/LLM/IR/OnnxDataType.h"

namespace mlir::llmc {

namespace {
using F = OnnxStorageField;
using T = OnnxDataType;
constexpr OnnxDataTypeInfo kTable[] = {
    {T::Undefined, "UNDEFINED", "undefined", 0, false, F::None},
    {T::Float, "FLOAT", "f32", 32, true, F::FloatData},
    {T::UInt8, "UINT8", "u8", 8, true, F::Int32Data},
    {T::Int8, "INT8", "i8", 8, true, F::Int32Data},
    {T::UInt16, "UINT16", "u16", 16, true, F::Int32Data},
    {T::Int16, "INT16", "i16", 16, true, F::Int32Data},
    {T::Int32, "INT32", "i32", 32, true, F::Int32Data},
    {T::Int64, "INT64", "i64", 64, true, F::Int64Data},
    {T::String, "STRING", "string", 0, false, F::None},
    {T::Bool, "BOOL", "bool", 8, true, F::Int32Data},
    {T::Float16, "FLOAT16", "f16", 16, true, F::Int32Data},
    {T::Double, "DOUBLE", "f64", 64, true, F::DoubleData},
    {T::UInt32, "UINT32", "u32", 32, true, F::Uint64Data},
    {T::UInt64, "UINT64", "u64", 64, true, F::Uint64Data},
    {T::Complex64, "COMPLEX64", "c64", 64, false, F::None},
    {T::Complex128, "COMPLEX128", "c128", 128, false, F::None},
    {T::BFloat16, "BFLOAT16", "bf16", 16, true, F::Int32Data},
    {T::Float8E4M3FN, "FLOAT8E4M3FN", "f8e4m3fn", 8, true, F::Int32Data},
    {T::Float8E4M3FNUZ, "FLOAT8E4M3FNUZ", "f8e4m3fnuz", 8, true, F::Int32Data},
    {T::Float8E5M2, "FLOAT8E5M2", "f8e5m2", 8, true, F::Int32Data},
    {T::Float8E5M2FNUZ, "FLOAT8E5M2FNUZ", "f8e5m2fnuz", 8, true, F::Int32Data},
    {T::UInt4, "UINT4", "u4", 4, true, F::Int32Data},
    {T::Int4, "INT4", "i4", 4, true, F::Int32Data},
    {T::Float4E2M1, "FLOAT4E2M1", "f4e2m1", 4, true, F::Int32Data},
    {T::Float8E8M0, "FLOAT8E8M0", "f8e8m0", 8, true, F::Int32Data},
    {T::UInt2, "UINT2", "u2", 2, true, F::Int32Data},
    {T::Int2, "INT2", "i2", 2, true, F::Int32Data},
};
} // namespace

const OnnxDataTypeInfo *lookupOnnxDataType(int32_t code) {
  if (code < 0 || code >= int32_t(sizeof(kTable) / sizeof(kTable[0])))
    return nullptr;
  return &kTable[code];
}

const char *onnxDataTypeName(int32_t code) {
  const OnnxDataTypeInfo *info = lookupOnnxDataType(code);
  return info ? info->name : "unknown";
}

bool onnxRawByteSize(const OnnxDataTypeInfo &info, uint64_t numElements,
                     uint64_t &bytes) {
  uint64_t bits;
  if (__builtin_mul_overflow(numElements, uint64_t(info.bits), &bits))
    return false;
  bytes = bits / 8 + (bits % 8 != 0);
  return true;
}

} // namespace mlir::llmc
