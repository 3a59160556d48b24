//===- OnnxOps.cpp - The fallback's ONNX operations on the device ----------===//
//
// An attention llmc does not recognise stays as the model wrote it: plain
// products of the queries and the keys, a mask, a softmax, a product with
// the values, and (in a static-cache export) TensorScatter writing the
// step's rows into the cache. Where their shapes are static, these run on
// the device: onnx.matmul and onnx.softmax / onnx.log_softmax through
// runtime/src/model/cuda/Onnx.h's templates, onnx.tensor_scatter as a
// generated kernel that writes the step's rows into the session's cache
// where it is (the cache the export's present output goes back to: emitBlock
// pairs them). A transpose whose only reader is such a product is read in
// place through the product's strides, not copied.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CUDA/EmitCudaInternal.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::codegen;
using namespace mlir::llmc::cudagen;

llvm::Error CudaEmitter::emitMatmul(Operation *op, CpuModel::Entry &stats) {
  std::optional<StridedMatmul> s = stridedMatmul(op);
  if (!s) {
    unsupported(op, "types or shape");
    return llvm::Error::success();
  }
  static_assert(StridedMatmul::kStridedBatchDims == 4, "Onnx.h's MatmulBatch holds 4");
  Value y = op->getResult(0);
  std::string t = cxxType(y.getType());
  std::string pa = ptr(s->a), pb = ptr(s->b);
  define(y);
  statement(llvm::formatv("matmul<{0}>({1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, "
                          "MatmulBatch{{{11}}, a.stream)",
                          t, pa, pb, ptr(y), s->m, s->n, s->k, s->aRow, s->aCol, s->bRow,
                          s->bCol, stridedBatchFields(*s))
                .str(),
            std::string("onnx.matmul") +
                (s->readsTranspose() ? " (transpose read in place)" : "") + " -> " +
                describeType(y.getType()));
  ++stats.kernelCalls;
  return llvm::Error::success();
}

llvm::Error CudaEmitter::emitSoftmax(Operation *op, CpuModel::Entry &stats) {
  Value x = op->getOperand(0), y = op->getResult(0);
  ArrayRef<int64_t> shape = shapeOf(x);
  auto axisAttr = op->getAttrOfType<IntegerAttr>("axis");
  int64_t rank = int64_t(shape.size()), axis = axisAttr ? axisAttr.getInt() : -1;
  if (axis < 0)
    axis += rank;
  if (!isFloatType(x.getType()) || !isFloatType(y.getType()) || axis < 0 || axis >= rank) {
    unsupported(op, "types or axis");
    return llvm::Error::success();
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[size_t(d)];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= shape[size_t(d)];
  if (numel(x) == 0) {
    unsupported(op, "no elements");
    return llvm::Error::success();
  }
  bool log = shortName(op) == "onnx.log_softmax";
  std::string px = ptr(x);
  define(y);
  statement(llvm::formatv("softmax<{0}, {1}>({2}, {3}, {4}, {5}, {6}, {7}, a.stream)",
                          cxxType(x.getType()), cxxType(y.getType()), px, ptr(y), outer,
                          shape[size_t(axis)], inner, log ? "true" : "false")
                .str(),
            shortName(op).str() + " -> " + describeType(y.getType()));
  ++stats.kernelCalls;
  return llvm::Error::success();
}

bool CudaEmitter::scatterOnDevice(Operation *op) {
  // (codegen::inPlaceScatters has the shapes static, the mode linear and
  // the write indices i64.)
  Value cache = op->getOperand(0), update = op->getOperand(1);
  int64_t rank = int64_t(shapeOf(cache).size());
  auto axisAttr = op->getAttrOfType<IntegerAttr>("axis");
  int64_t axis = axisAttr ? axisAttr.getInt() : -2;
  if (axis < 0)
    axis += rank;
  std::string t = cxxType(cache.getType());
  return !t.empty() && cxxType(update.getType()) == t && axis >= 1 && axis < rank &&
         numel(cache) > 0;
}

llvm::Error CudaEmitter::emitTensorScatter(Operation *op, CpuModel::Entry &stats) {
  // Only in place (scattersInPlace: the session's cache, which its present
  // output goes back to); a copy of the whole cache elsewhere runs on the
  // host.
  if (!scattersInPlace.contains(op)) {
    unsupported(op, "not written back into the session's cache");
    return llvm::Error::success();
  }
  Value cache = op->getOperand(0), update = op->getOperand(1), indices = op->getOperand(2);
  Value y = op->getResult(0);
  ArrayRef<int64_t> shape = shapeOf(cache);
  int64_t rank = int64_t(shape.size());
  auto axisAttr = op->getAttrOfType<IntegerAttr>("axis");
  int64_t axis = axisAttr ? axisAttr.getInt() : -2;
  if (axis < 0)
    axis += rank;
  int64_t mid = 1, inner = 1, len = shape[size_t(axis)], n = shapeOf(update)[size_t(axis)];
  for (int64_t d = 1; d < axis; ++d)
    mid *= shape[size_t(d)];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= shape[size_t(d)];
  std::string t = cxxType(cache.getType());
  int64_t total = numel(update);
  // cache[b, mid, start_b + k, inner] = update[b, mid, k, inner]; a start
  // outside [0, len - n] records kCacheOverflow and writes nothing.
  std::string k;
  llvm::raw_string_ostream os(k);
  os << "(" << t << " *__restrict__ cache, const " << t << " *__restrict__ update, "
     << "const int64_t *__restrict__ starts, unsigned long long *error) {\n"
     << "  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;\n"
     << "  if (i >= " << total << "u)\n    return;\n"
     << "  long long in = (long long)(i % " << inner << "u), r = (long long)(i / " << inner
     << "u);\n"
     << "  long long k = r % " << n << ", row = r / " << n << "; // row: b * mid + m\n"
     << "  long long start = starts[row / " << mid << "];\n"
     << "  if (start < 0 || start + " << n << " > " << len << ") {\n"
     << "    recordError(error, kCacheOverflow, start);\n    return;\n  }\n"
     << "  cache[(row * " << len << " + start + k) * " << inner << " + in] = update[i];\n}\n";
  std::string name = kernel("onnx.tensor_scatter, in place", k);
  Ref same = refs[cache]; // a copy: refs[y] may grow the map
  refs[y] = same;
  statement(llvm::formatv("launch({0}, dim3({1}), dim3(256), 0, a.stream, {2}, {3}, {4}, m.error)",
                          name, std::max<int64_t>((total + 255) / 256, 1), ptr(cache),
                          ptr(update), ptr(indices))
                .str(),
            "onnx.tensor_scatter -> " + describeType(y.getType()) +
                ", in place (the session's cache)");
  ++stats.kernelCalls;
  return llvm::Error::success();
}
