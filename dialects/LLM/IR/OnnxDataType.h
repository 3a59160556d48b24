//===- OnnxDataType.h - the table of ONNX tensor element types -----------===//
//
// The one place that knows ONNX TensorProto.DataType codes, their names and
// storage sizes. Plain C++ (no MLIR) so that the protobuf reader and its
// fuzzer can use it; the MLIR type mapping is in LLMDialect.h.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_IR_ONNXDATATYPE_H
#define LLMC_DIALECTS_LLM_IR_ONNXDATATYPE_H

#include <cstdint>

namespace mlir::llmc {

/// ONNX TensorProto.DataType codes (onnx.proto, up to IR version 12).
enum class OnnxDataType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  UInt2 = 25,
  Int2 = 26,
};

/// How the elements of a data type are stored in TensorProto.
enum class OnnxStorageField {
  None,        // not a supported tensor type
  FloatData,   // float_data
  Int32Data,   // int32_data holds the bit pattern (or packed sub-byte pairs)
  Int64Data,   // int64_data
  Uint64Data,  // uint64_data
  DoubleData,  // double_data
};

struct OnnxDataTypeInfo {
  OnnxDataType type;
  const char *name;       // the ONNX spelling, e.g. "FLOAT16"
  const char *shortName;  // the llmc report spelling, e.g. "f16"
  unsigned bits;          // bits per element as stored in raw_data (4 for int4)
  bool supported;         // llmc imports tensors of this type
  OnnxStorageField field; // typed field used when raw_data is absent
};

/// Returns the table entry for `code`, or nullptr for an unknown code.
const OnnxDataTypeInfo *lookupOnnxDataType(int32_t code);

/// The ONNX name of `code`, "UNKNOWN(<code>)" style names are not produced:
/// unknown codes give "unknown".
const char *onnxDataTypeName(int32_t code);

/// Bytes of raw_data for `numElements` elements of `info` (sub-byte types are
/// packed, rounding up). Returns false on overflow.
bool onnxRawByteSize(const OnnxDataTypeInfo &info, uint64_t numElements,
                     uint64_t &bytes);

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLM_IR_ONNXDATATYPE_H
