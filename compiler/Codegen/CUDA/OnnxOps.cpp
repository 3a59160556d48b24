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

namespace {

/// The batch dimensions Onnx.h's matmul takes (kMatmulBatchDims), and the
/// most batches (a grid's y dimension).
constexpr size_t kBatchDims = 4;
constexpr int64_t kMaxBatches = 65535;

} // namespace

bool CudaEmitter::matmulOnDevice(Operation *op) {
  if (shortName(op) != "onnx.matmul" || hasRunTimeShape(op))
    return false;
  Value a = op->getOperand(0), b = op->getOperand(1), y = op->getResult(0);
  if (!isFloatType(y.getType()) || cxxType(a.getType()) != cxxType(y.getType()) ||
      cxxType(b.getType()) != cxxType(y.getType()))
    return false;
  // The output's batch dimensions: all but its last two (or one, where an
  // operand is a vector), those of size 1 dropped.
  size_t ra = shapeOf(a).size(), rb = shapeOf(b).size();
  ArrayRef<int64_t> ys = shapeOf(y);
  size_t matrixDims = (ra > 1) + (rb > 1);
  if (ra == 0 || rb == 0 || ys.size() < matrixDims)
    return false;
  size_t batchDims = 0;
  int64_t batches = 1;
  for (int64_t d : ys.drop_back(matrixDims))
    if (d != 1) {
      ++batchDims;
      batches *= d;
    }
  int64_t m = ra > 1 ? shapeOf(a)[ra - 2] : 1, n = rb > 1 ? shapeOf(b).back() : 1;
  return batchDims <= kBatchDims && batches >= 1 && batches <= kMaxBatches && m >= 1 && n >= 1;
}

llvm::Error CudaEmitter::emitMatmul(Operation *op, CpuModel::Entry &stats) {
  if (!matmulOnDevice(op)) {
    unsupported(op, "types or shape");
    return llvm::Error::success();
  }
  Value y = op->getResult(0);
  // Each operand as it is read: a folded transpose's input with the
  // transpose's strides, else the value itself, contiguous.
  struct Operand {
    Value v;
    SmallVector<int64_t> shape, strides;
  };
  auto operand = [&](Value v) {
    Operand o{v, SmallVector<int64_t>(shapeOf(v)), contiguousStrides(shapeOf(v))};
    if (Operation *t = matmulTransposes.lookup(v)) {
      o.v = t->getOperand(0);
      SmallVector<int64_t> in = contiguousStrides(shapeOf(o.v));
      auto perm = t->getAttrOfType<DenseI64ArrayAttr>("perm");
      for (size_t d = 0; d < o.strides.size(); ++d)
        o.strides[d] = in[size_t(perm ? perm[d] : int64_t(in.size() - 1 - d))];
    }
    return o;
  };
  Operand a = operand(op->getOperand(0)), b = operand(op->getOperand(1));
  // A vector A is one row [1, K]; a vector B one column [K, 1].
  if (a.shape.size() == 1) {
    a.shape.insert(a.shape.begin(), 1);
    a.strides.insert(a.strides.begin(), 0);
  }
  if (b.shape.size() == 1) {
    b.shape.push_back(1);
    b.strides.push_back(0);
  }
  int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  int64_t am = a.strides[a.strides.size() - 2], ak = a.strides.back();
  int64_t bk = b.strides[b.strides.size() - 2], bn = b.strides.back();
  // Batch dimensions, aligned from the right; size-1 ones dropped (an
  // operand broadcast along one reads stride 0 there).
  size_t rank = std::max(a.shape.size(), b.shape.size()) - 2;
  SmallVector<int64_t> dims, as, bs;
  for (size_t d = 0; d < rank; ++d) {
    auto at = [&](const Operand &o) -> std::pair<int64_t, int64_t> {
      size_t own = o.shape.size() - 2;
      if (d + own < rank)
        return {1, 0};
      size_t i = d + own - rank;
      return {o.shape[i], o.shape[i] == 1 ? 0 : o.strides[i]};
    };
    auto [da, sa] = at(a);
    auto [db, sb] = at(b);
    int64_t size = std::max(da, db);
    if (size == 1)
      continue;
    dims.push_back(size);
    as.push_back(da == 1 ? 0 : sa);
    bs.push_back(db == 1 ? 0 : sb);
  }
  auto list = [](ArrayRef<int64_t> v, int64_t fill) {
    std::string s = "{";
    for (size_t i = 0; i < kBatchDims; ++i)
      s += (i ? ", " : "") + std::to_string(i < v.size() ? v[i] : fill);
    return s + "}";
  };
  std::string t = cxxType(y.getType());
  std::string pa = ptr(a.v), pb = ptr(b.v);
  define(y);
  statement(llvm::formatv("matmul<{0}>({1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, "
                          "MatmulBatch{{{11}, {12}, {13}, {14}}, a.stream)",
                          t, pa, pb, ptr(y), m, n, k, am, ak, bk, bn, dims.size(),
                          list(dims, 1), list(as, 0), list(bs, 0))
                .str(),
            std::string("onnx.matmul") +
                (a.v != op->getOperand(0) || b.v != op->getOperand(1) ? " (transpose read in place)"
                                                                       : "") +
                " -> " + describeType(y.getType()));
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
