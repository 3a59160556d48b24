//===- TensorIO.cpp - ONNX TensorProto files <-> runtime tensors ----------===//
#include "compiler/Executor/Error.h"
#include "compiler/Executor/TensorIO.h"

#include "python-free-frontend/OnnxModel.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include <climits>
#include <cstring>
#include <deque>
#include <fstream>

using namespace mlir;
using namespace mlir::llmc;
using ::llmc::cpu::DType;
using ::llmc::cpu::Tensor;


llvm::Expected<Tensor> mlir::llmc::tensorFromOnnxData(const OnnxTensorData &data) {
  DType type = DType(data.dataType);
  ::llmc::cpu::Shape shape(data.dims.begin(), data.dims.end());
  Tensor t;
  if (::llmc::cpu::Status s = Tensor::allocate(type, shape, t); !s)
    return makeError(s.message());
  char *dst = static_cast<char *>(t.mutableRaw());
  unsigned bits = lookupOnnxDataType(data.dataType)->bits;
  if (bits < 8) { // packed low bits first; one byte per element in memory
    unsigned perByte = 8 / bits, mask = (1u << bits) - 1;
    bool signExtend = type == DType::Int4 || type == DType::Int2;
    for (uint64_t i = 0; i < data.numElements; ++i) {
      unsigned v = (uint8_t(data.bytes[i / perByte]) >> ((i % perByte) * bits)) & mask;
      dst[i] = char(signExtend && (v >> (bits - 1)) ? v | ~mask : v);
    }
  } else if (type == DType::Bool) {
    for (uint64_t i = 0; i < data.numElements; ++i)
      dst[i] = data.bytes[i] != 0;
  } else {
    std::memcpy(dst, data.bytes.data(), t.bytes());
  }
  return t;
}

llvm::Expected<NamedTensor> mlir::llmc::readTensorFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(path + ": cannot read: " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() > size_t(INT_MAX))
    return makeError(path + ": larger than protobuf's 2 GiB limit");
  onnx::TensorProto proto;
  google::protobuf::io::ArrayInputStream stream(bytes.data(), int(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return makeError(path + ": not a valid TensorProto file");
  std::deque<std::vector<char>> storage;
  auto data = decodeStandaloneTensor(proto, path, storage);
  if (!data)
    return data.takeError();
  auto tensor = tensorFromOnnxData(*data);
  if (!tensor)
    return tensor.takeError();
  return NamedTensor{proto.name(), std::move(*tensor)};
}

llvm::Error mlir::llmc::writeTensorFile(llvm::StringRef path, const NamedTensor &named) {
  const Tensor &t = named.tensor;
  onnx::TensorProto proto;
  proto.set_name(named.name);
  proto.set_data_type(int32_t(t.dtype()));
  for (int64_t d : t.shape())
    proto.add_dims(d);
  const char *src = static_cast<const char *>(t.raw());
  unsigned bits = lookupOnnxDataType(int32_t(t.dtype()))->bits;
  if (bits < 8) {
    unsigned perByte = 8 / bits, mask = (1u << bits) - 1;
    std::string packed(size_t((t.numel() + perByte - 1) / perByte), '\0');
    for (int64_t i = 0; i < t.numel(); ++i)
      packed[size_t(i / perByte)] |= char((uint8_t(src[i]) & mask) << ((i % perByte) * bits));
    proto.set_raw_data(packed);
  } else {
    proto.set_raw_data(std::string(src, t.bytes()));
  }
  std::ofstream out(path.str(), std::ios::binary | std::ios::trunc);
  if (!out || !proto.SerializeToOstream(&out))
    return makeError(path + ": cannot write");
  return llvm::Error::success();
}
