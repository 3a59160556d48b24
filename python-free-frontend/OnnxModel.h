//===- OnnxModel.h - a validated, topologically sorted ONNX model --------===//
//
// Reads an ONNX ModelProto (binary, or protobuf text for tests) and checks
// everything the importer relies on before any MLIR is built: opsets, value
// names, a topological order (the file's nodes need not be sorted), tensor
// sizes, and external data (memory-mapped, never outside the model's folder).
// Bad input gives an llvm::Error naming the file, node or tensor at fault;
// nothing here aborts, and no allocation is sized by an unchecked field.
//
// This library has no MLIR dependency so that it can be fuzzed on its own.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PYTHON_FREE_FRONTEND_ONNXMODEL_H
#define LLMC_PYTHON_FREE_FRONTEND_ONNXMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class GraphProto;
class NodeProto;
class TensorProto;
class ValueInfoProto;
} // namespace onnx

namespace mlir::llmc {

/// The data of one tensor, as ONNX stores it in raw_data: little-endian,
/// row-major, sub-byte types packed two per byte (low nibble first). The
/// bytes stay valid while the OnnxModel lives; external data is mmapped.
struct OnnxTensorData {
  int32_t dataType = 0;
  llvm::SmallVector<int64_t, 4> dims;
  uint64_t numElements = 0;
  llvm::ArrayRef<char> bytes;
  bool external = false;
};

/// Shape of a graph input/output: rank, and per dim a size or a name.
struct OnnxValueType {
  int32_t elemType = 0;
  bool hasShape = false;
  llvm::SmallVector<int64_t, 4> dims;           // -1 when dynamic
  llvm::SmallVector<std::string, 4> dimNames;   // dim_param, "" when none
};

class OnnxModel {
public:
  ~OnnxModel();
  OnnxModel(const OnnxModel &) = delete;
  OnnxModel &operator=(const OnnxModel &) = delete;

  /// Loads a binary .onnx file (or protobuf text when the name ends in
  /// .textproto / .onnxtxt / .pbtxt).
  static llvm::Expected<std::unique_ptr<OnnxModel>> loadFile(llvm::StringRef path);
  /// Parses `bytes` as a binary ModelProto; external data resolves against
  /// `modelDir`. `displayName` names the model in errors.
  static llvm::Expected<std::unique_ptr<OnnxModel>>
  loadFromBuffer(llvm::StringRef bytes, llvm::StringRef modelDir,
                 llvm::StringRef displayName, bool textFormat = false);

  const onnx::ModelProto &proto() const { return *model; }
  const onnx::GraphProto &graph() const;
  /// The path as given (for messages) and its folder.
  llvm::StringRef path() const { return displayName; }
  llvm::StringRef directory() const { return modelDir; }

  /// Opset version imported for `domain` ("" and "ai.onnx" are the same),
  /// or -1 when the model does not import it.
  int64_t opsetVersion(llvm::StringRef domain) const;
  /// Nodes of the main graph in a topological order that keeps the file's
  /// order where the file's order is valid.
  llvm::ArrayRef<const onnx::NodeProto *> sortedNodes() const { return order; }
  /// Index of `node` in the file's node list.
  size_t fileIndex(const onnx::NodeProto &node) const;

  /// The initializer called `name`, or nullptr.
  const onnx::TensorProto *findInitializer(llvm::StringRef name) const;
  /// Graph inputs that are not initializers (the model's real inputs).
  llvm::ArrayRef<const onnx::ValueInfoProto *> realInputs() const { return inputs; }

  /// Data of a tensor of this model (initializer or attribute). Typed-field
  /// storage is converted to the raw layout once and cached.
  llvm::Expected<OnnxTensorData> tensorData(const onnx::TensorProto &tensor) const;
  /// Checks a tensor's metadata without touching its data pages.
  llvm::Error checkTensor(const onnx::TensorProto &tensor, llvm::StringRef what) const;

  /// Element type and shape of a graph input or output.
  llvm::Expected<OnnxValueType> valueType(const onnx::ValueInfoProto &value,
                                          llvm::StringRef what) const;

  /// "node 'name' (com.microsoft:Attention)", falling back to the first
  /// output name and the node's index for unnamed nodes.
  std::string describe(const onnx::NodeProto &node) const;

  /// An error "<model>: <message>".
  llvm::Error error(const llvm::Twine &message) const;

private:
  OnnxModel();
  llvm::Error validate();
  llvm::Error sortNodes();
  llvm::Expected<llvm::ArrayRef<char>> externalBytes(const onnx::TensorProto &tensor,
                                                     uint64_t expectedBytes,
                                                     llvm::StringRef what) const;

  std::unique_ptr<onnx::ModelProto> model;
  std::string displayName;
  std::string modelDir;
  llvm::StringMap<int64_t> opsets;
  std::vector<const onnx::NodeProto *> order;
  llvm::DenseMap<const onnx::NodeProto *, size_t> nodeIndex;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  std::vector<const onnx::ValueInfoProto *> inputs;
  // Lazily created; mutable because reading data is logically const.
  mutable llvm::StringMap<std::unique_ptr<llvm::MemoryBuffer>> externalFiles;
  mutable llvm::DenseMap<const onnx::TensorProto *, llvm::ArrayRef<char>> converted;
  mutable std::deque<std::vector<char>> ownedBuffers;
};

/// Decodes a TensorProto that stands alone (a test_data_set .pb file) with
/// the same checks as model tensors; external data is refused. Converted
/// typed-field data lives in `storage`. Errors start with `source`.
llvm::Expected<OnnxTensorData>
decodeStandaloneTensor(const onnx::TensorProto &tensor, const llvm::Twine &source,
                       std::deque<std::vector<char>> &storage);

/// Normalises an ONNX domain: "ai.onnx" is the default domain "".
llvm::StringRef normalizeDomain(llvm::StringRef domain);

} // namespace mlir::llmc

#endif // LLMC_PYTHON_FREE_FRONTEND_ONNXMODEL_H
