//===- TensorIO.h - ONNX TensorProto files <-> runtime tensors ------------===//
//
// The .pb files of the ONNX test data layout (test_data_set_N/input_K.pb):
// one serialized TensorProto each, checked like model tensors.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EXECUTOR_TENSORIO_H
#define LLMC_COMPILER_EXECUTOR_TENSORIO_H

#include "runtime/src/cpu/Tensor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::llmc {

struct NamedTensor {
  std::string name;
  ::llmc::cpu::Tensor tensor;
};

/// Reads one TensorProto file.
llvm::Expected<NamedTensor> readTensorFile(llvm::StringRef path);
/// Writes one TensorProto file (raw_data, sub-byte types packed).
llvm::Error writeTensorFile(llvm::StringRef path, const NamedTensor &tensor);

/// A runtime tensor from decoded ONNX tensor data (copied; sub-byte types
/// unpacked to one element per byte).
struct OnnxTensorData;
llvm::Expected<::llmc::cpu::Tensor> tensorFromOnnxData(const OnnxTensorData &data);

} // namespace mlir::llmc

#endif // LLMC_COMPILER_EXECUTOR_TENSORIO_H
