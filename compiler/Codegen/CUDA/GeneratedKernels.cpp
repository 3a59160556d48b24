//===- GeneratedKernels.cpp - Kernels written from the operations -----------===//
//
// Kernels whose bodies the compiler writes: element-wise operations (runs
// of them fused into one), broadcasts, casts, gathers, transposes, slices,
// splits, concatenations and run-time asserts, with the static shapes and
// strides built in. Identical bodies share one kernel.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CUDA/EmitCudaInternal.h"

#include "compiler/Executor/Error.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::codegen;
using namespace mlir::llmc::cudagen;

std::string CudaEmitter::generated(llvm::StringRef what, ArrayRef<int64_t> iteration,
                                   ArrayRef<std::pair<Access, std::string>> inputs,
                                   const Access &output, const std::string &outPtr,
                                   const PointwiseExpr &expr) {
  int64_t total = 1;
  for (int64_t d : iteration)
    total *= d;
  std::string k;
  llvm::raw_string_ostream os(k);
  os << "(";
  for (size_t i = 0; i < inputs.size(); ++i)
    os << "const " << inputs[i].first.type << " *__restrict__ in" << i << ", ";
  os << output.type << " *__restrict__ out) {\n"
     << "  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;\n"
     << "  if (i >= " << total << "u)\n    return;\n";
  size_t rank = iteration.size();
  if (rank > 0) {
    os << "  size_t r = i;\n";
    for (size_t d = rank; d-- > 0;) {
      if (d == 0)
        os << "  size_t i0 = r;\n";
      else
        os << "  size_t i" << d << " = r % " << iteration[d] << "u; r /= " << iteration[d]
           << "u;\n";
    }
  }
  SmallVector<Access> accesses;
  for (const auto &in : inputs)
    accesses.push_back(in.first);
  os << pointwiseElement(iteration, accesses, output, expr, "  ") << "}\n";
  std::string name = kernel(what, k);
  std::string args;
  for (const auto &in : inputs)
    args += in.second + ", ";
  return llvm::formatv("launch({0}, dim3({1}), dim3(256), 0, a.stream, {2}{3})", name,
                       (total + 255) / 256, args, outPtr)
      .str();
}

llvm::Error CudaEmitter::emitPointwise(Operation *last, CpuModel::Entry &stats) {
  SmallVector<Operation *> chain = chains.lookup(last);
  if (chain.empty())
    chain.push_back(last);
  Value y = last->getResult(0);
  std::string yt = cxxType(y.getType());
  ArrayRef<int64_t> iteration = shapeOf(y);
  Operation *failed = nullptr;
  std::optional<PointwiseExpr> run = runExpr(chain, cxxType, failed);
  if (!run) {
    unsupported(failed, "operand type");
    return llvm::Error::success();
  }
  for (Value v : run->externals)
    if (!known(v))
      return llvm::Error::success(); // reported where it comes from
  if (yt.empty()) {
    unsupported(last, "result type");
    return llvm::Error::success();
  }
  define(y);
  SmallVector<std::pair<Access, std::string>> ins;
  for (Value v : run->externals)
    ins.push_back({Access{cxxType(v.getType()), broadcastStrides(shapeOf(v), iteration), 0}, ptr(v)});
  statement(generated(run->what, iteration, ins, Access{yt, contiguousStrides(iteration), 0}, ptr(y),
                      *run),
            (chain.size() > 1 ? "fused " : "") + run->what + " -> " + describeType(y.getType()));
  ++stats.kernelCalls;
  return llvm::Error::success();
}

llvm::Error CudaEmitter::emitGather(Operation *op, CpuModel::Entry &stats) {
  Value data = op->getOperand(0), indices = op->getOperand(1), y = op->getResult(0);
  std::string dt = cxxType(data.getType()), it = cxxType(indices.getType());
  if (dt.empty() || (it != "int64_t" && it != "int32_t")) {
    unsupported(op, "data or index type");
    return llvm::Error::success();
  }
  auto ds = shapeOf(data), is = shapeOf(indices), ys = shapeOf(y);
  int64_t rank = int64_t(ds.size());
  auto axisAttr = op->getAttrOfType<IntegerAttr>("axis");
  int64_t axis = axisAttr ? axisAttr.getInt() : 0;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank) {
    unsupported(op, "axis");
    return llvm::Error::success();
  }
  SmallVector<int64_t> dstr = contiguousStrides(ds), istr = contiguousStrides(is);
  int64_t total = 1;
  for (int64_t d : ys)
    total *= d;
  // Output axes: data's before `axis`, the indices' axes, data's after it.
  std::string k;
  llvm::raw_string_ostream os(k);
  os << "(const " << dt << " *__restrict__ data, const " << it
     << " *__restrict__ indices, " << dt << " *__restrict__ out, unsigned long long *error) {\n"
     << "  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;\n"
     << "  if (i >= " << total << "u)\n    return;\n  size_t r = i;\n";
  for (size_t d = ys.size(); d-- > 0;)
    os << "  size_t o" << d << " = r % " << ys[d] << "u; r /= " << ys[d] << "u;\n";
  std::string idx = "0", dataIdx = "0";
  for (size_t j = 0; j < is.size(); ++j)
    idx += " + o" + std::to_string(size_t(axis) + j) + " * " + std::to_string(istr[j]);
  for (int64_t d = 0; d < axis; ++d)
    dataIdx += " + o" + std::to_string(d) + " * " + std::to_string(dstr[size_t(d)]);
  for (int64_t d = axis + 1; d < rank; ++d)
    dataIdx += " + o" + std::to_string(size_t(d - 1) + is.size()) + " * " +
               std::to_string(dstr[size_t(d)]);
  os << "  (void)r;\n  long long at = (long long)indices[" << idx << "];\n"
     << "  if (at < 0)\n    at += " << ds[size_t(axis)] << ";\n"
     << "  if (at < 0 || at >= " << ds[size_t(axis)] << ") {\n"
     << "    recordError(error, kTokenOutOfRange, (long long)i);\n    at = 0;\n  }\n"
     << "  out[i] = data[" << dataIdx << " + size_t(at) * " << dstr[size_t(axis)] << "];\n}\n";
  std::string name = kernel("onnx.gather", k);
  define(y);
  statement(llvm::formatv("launch({0}, dim3({1}), dim3(256), 0, a.stream, {2}, {3}, {4}, m.error)",
                          name, (total + 255) / 256, ptr(data), ptr(indices), ptr(y))
                .str(),
            "onnx.gather -> " + describeType(y.getType()));
  ++stats.kernelCalls;
  return llvm::Error::success();
}


llvm::Error CudaEmitter::emitCopy(Operation *op, CpuModel::Entry &stats) {
  StringRef name = shortName(op);
  if (name == "onnx.slice") {
    std::optional<SliceSegments> seg = sliceSegments(op);
    if (!seg) {
      unsupported(op, "not a slice of whole segments");
      return llvm::Error::success();
    }
    if (std::optional<Ref> view = segmentView(op->getOperand(0), *seg)) {
      refs[op->getResult(0)] = *view;
      ++stats.views;
      return llvm::Error::success();
    }
    return emitCopyParts(op, stats);
  }
  if (name == "onnx.split") {
    // Every part a view (genai's Qwen 3 splits its q, k and v projection's
    // result), or every part a copy.
    SmallVector<Ref, 3> views;
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      std::optional<SliceSegments> seg = splitSegments(op, i);
      std::optional<Ref> view = seg ? segmentView(op->getOperand(0), *seg) : std::nullopt;
      if (!view)
        return emitCopyParts(op, stats);
      views.push_back(*view);
    }
    for (auto [r, view] : llvm::zip(op->getResults(), views))
      refs[r] = view;
    stats.views += int(views.size());
    return llvm::Error::success();
  }
  if (name == "onnx.transpose") {
    if (folded.contains(op))
      return llvm::Error::success();
    // Read in place by the one product that reads it (OnnxOps.cpp).
    if (isTransposeReadInPlace(op)) {
      ++stats.views;
      return llvm::Error::success();
    }
    return emitCopyParts(op, stats);
  }
  if (name == "onnx.concat")
    return emitCopyParts(op, stats);
  unsupported(op);
  return llvm::Error::success();
}

std::optional<Ref> CudaEmitter::segmentView(Value x, const SliceSegments &seg) {
  int64_t eb = elemBytes(x.getType());
  if (seg.count == 1 && !mayChange(x) && refs.count(x)) {
    Ref r = refs[x];
    r.offset += seg.base * eb;
    return r;
  }
  // One column range of a GEMV's result written range by range
  // (outputSegments): a [rows, width] block at rows * start.
  if (auto it = refs.find(x); it != refs.end() && it->second.kind == Ref::Arena &&
                              it->second.offset == 0) {
    auto sg = segmented.find(it->second.buffer);
    if (sg != segmented.end() && seg.count == sg->second.rows && seg.stride == sg->second.n) {
      const SmallVector<int64_t, 3> &starts = sg->second.starts;
      for (size_t i = 0; i < starts.size(); ++i) {
        int64_t end = i + 1 < starts.size() ? starts[i + 1] : sg->second.n;
        if (starts[i] == seg.base && end - starts[i] == seg.len) {
          Ref r = it->second;
          r.offset = sg->second.rows * seg.base * eb;
          return r;
        }
      }
    }
  }
  return std::nullopt;
}

llvm::Error CudaEmitter::emitCopyParts(Operation *op, CpuModel::Entry &stats) {
  // A copy kernel per part (codegen::copyParts): the result defined first,
  // where a concat's parts all write it.
  StringRef name = shortName(op);
  bool concat = name == "onnx.concat";
  if (concat)
    define(op->getResult(0));
  for (const CopyPart &part : copyParts(op, [&](Type t) { return cxxType(t); })) {
    if (!concat)
      define(part.to);
    statement(generated(name.drop_front(5), part.iteration, {{part.in, ptr(part.from)}},
                        part.out, ptr(part.to), "x0"),
              name.str() + " -> " + describeType((concat ? part.from : part.to).getType()));
    ++stats.kernelCalls;
  }
  return llvm::Error::success();
}

llvm::Error CudaEmitter::emitAssert(AssertEqualOp check, CpuModel::Entry &stats) {
  // The value passes through; a kernel compares lhs and rhs (one of them
  // may be a single element) and records the first mismatch.
  Value lhs = check.getLhs(), rhs = check.getRhs();
  std::string lt = cxxType(lhs.getType()), rt = cxxType(rhs.getType());
  Ref same = refs[check.getValue()]; // a copy: refs[...] may grow the map
  refs[check.getResult()] = same;
  int64_t n = std::max(numel(lhs), numel(rhs));
  size_t index = assertMessages.size();
  assertMessages.push_back(check.getMessage().str());
  std::string k = llvm::formatv("(const {0} *__restrict__ lhs, const {1} *__restrict__ rhs, "
                                "unsigned long long *error) {{\n"
                                "  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;\n"
                                "  if (i < {2}u && (long long)lhs[{3}] != (long long)rhs[{4}])\n"
                                "    recordError(error, kAssertFailed, {5});\n}\n",
                                lt, rt, n, numel(lhs) == 1 ? "0" : "i",
                                numel(rhs) == 1 ? "0" : "i", index)
                      .str();
  std::string name = kernel("assert_equal", k);
  statement(llvm::formatv("launch({0}, dim3({1}), dim3(256), 0, a.stream, {2}, {3}, m.error)",
                          name, (n + 255) / 256, ptr(lhs), ptr(rhs))
                .str(),
            "assert_equal: " + check.getMessage().str());
  ++stats.kernelCalls;
  return llvm::Error::success();
}

llvm::Error CudaEmitter::emitRange(Operation *op, CpuModel::Entry &stats) {
  Value start = op->getOperand(0), delta = op->getOperand(2), y = op->getResult(0);
  std::string t = cxxType(y.getType());
  if (t != "int64_t" && t != "int32_t" && t != "float") {
    unsupported(op, "element type");
    return llvm::Error::success();
  }
  int64_t n = numel(y);
  std::string k = llvm::formatv("(const {0} *__restrict__ start, const {0} *__restrict__ delta, "
                                "{0} *__restrict__ out) {{\n"
                                "  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;\n"
                                "  if (i < {1}u)\n"
                                "    out[i] = {0}(start[0] + {0}(i) * delta[0]);\n}\n",
                                t, n)
                      .str();
  std::string name = kernel("onnx.range", k);
  define(y);
  statement(llvm::formatv("launch({0}, dim3({1}), dim3(256), 0, a.stream, {2}, {3}, {4})", name,
                          std::max<int64_t>((n + 255) / 256, 1), ptr(start), ptr(delta), ptr(y))
                .str(),
            "onnx.range -> " + describeType(y.getType()));
  ++stats.kernelCalls;
  return llvm::Error::success();
}
