//===- EmitCppPointwise.cpp - loops written from element-wise operations --===//
//
// An element-wise operation with static shapes and a float or boolean
// result, or a run of them (codegen::pointwiseRuns: each result read only
// by the next), becomes one loop the compiler writes: a static function
// over a range of the result's elements, its iteration space collapsed
// (dimensions of size 1 dropped, neighbours that every access walks as one
// merged), the innermost dimension a `#pragma omp simd` loop with its
// strides built in. The statement calls it through GeneratedLoops.h's
// `pointwise` (operands checked, the result placed, the pool splitting the
// range). Identical loops are written once. The shared expressions' libm
// calls expf, tanhf and erff become fastExp, fastTanh and fastErf
// (kernels/Pointwise.h: branch-free, so the loop stays vectorised).
//
// Left to the reference kernels or templates: casts outside a run (the
// cast template), SwiGLU (its template), a residual add a linear layer
// takes into its epilogue, integer results (wrapping arithmetic, division
// by zero) and the logits tail (it runs on the rows a caller asks for, not
// the static shape).
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CPU/EmitCppInternal.h"
#include "compiler/Codegen/Pointwise.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::cpugen;

namespace {

/// The C++ element type of a loop's operand on the CPU target (booleans are
/// bytes of 0 or 1; f16 and bf16 GeneratedLoops.h's half and bfloat16).
std::string loopType(Type t) { return storageType(t, "uint8_t"); }

/// `code` with the shared expressions' libm calls (scalar calls GCC does
/// not vectorise) spelled as kernels/Pointwise.h's vectorisable forms.
std::string vectorMath(std::string code) {
  static const std::pair<llvm::StringRef, llvm::StringRef> calls[] = {
      {"expf(", "fastExp("}, {"tanhf(", "fastTanh("}, {"erff(", "fastErf("}};
  for (auto [from, to] : calls)
    for (size_t at = code.find(from.str()); at != std::string::npos;
         at = code.find(from.str(), at + to.size()))
      code.replace(at, from.size(), to.str());
  return code;
}

/// `iteration` and the accesses' strides with dimensions of size 1 dropped
/// and neighbours merged where every access walks them as one dimension;
/// at least one dimension.
void collapse(SmallVector<int64_t> &iteration, SmallVector<Access> &accesses) {
  SmallVector<int64_t> dims;
  SmallVector<SmallVector<int64_t>> strides(accesses.size());
  for (size_t d = 0; d < iteration.size(); ++d) {
    if (iteration[d] == 1)
      continue;
    bool merges = !dims.empty() && llvm::all_of(llvm::seq<size_t>(0, accesses.size()), [&](size_t a) {
      return strides[a].back() == accesses[a].strides[d] * iteration[d];
    });
    if (merges) {
      dims.back() *= iteration[d];
      for (size_t a = 0; a < accesses.size(); ++a)
        strides[a].back() = accesses[a].strides[d];
      continue;
    }
    dims.push_back(iteration[d]);
    for (size_t a = 0; a < accesses.size(); ++a)
      strides[a].push_back(accesses[a].strides[d]);
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (auto &s : strides)
      s.push_back(0);
  }
  iteration = dims;
  for (size_t a = 0; a < accesses.size(); ++a)
    accesses[a].strides = strides[a];
}

} // namespace

bool Emitter::generatesLoop(Operation *op) {
  if (pointwiseExpr(op).empty() || op->getNumResults() != 1 || isa<SwigluOp>(op))
    return false;
  Type rt = getElementTypeOrSelf(op->getResult(0).getType());
  if (!isStatic(op->getResult(0).getType()) || (!isFloatType(rt) && !rt.isInteger(1)))
    return false;
  for (unsigned i = 0; i < pointwiseArity(op); ++i)
    if (!isStatic(op->getOperand(i).getType()) || loopType(op->getOperand(i).getType()).empty())
      return false;
  // (an add a linear layer takes into its epilogue is computed there)
  for (Value v : op->getOperands())
    if (Operation *def = v.getDefiningOp();
        def && isa<LinearOp, QuantizedLinearOp>(def) && foldedResidualAdd(def) == op)
      return false;
  return !inTail(op);
}

bool Emitter::inTail(Operation *op) {
  if (!tail)
    return false;
  Operation *top = op;
  while (!isa<func::FuncOp>(top->getParentOp()))
    top = top->getParentOp();
  return tail->ops.contains(top);
}

bool Emitter::generatesCopy(Operation *op) {
  StringRef name = shortName(op);
  if (name != "onnx.transpose" && name != "onnx.split" && name != "onnx.concat" &&
      !(name == "onnx.slice" && sliceSegments(op)))
    return false;
  // (an empty part would be a loop over nothing: the reference kernel's)
  auto usable = [](Value v) {
    return isStatic(v.getType()) && !loopType(v.getType()).empty() && numel(v) > 0;
  };
  Value data = name == "onnx.concat" ? Value() : op->getOperand(0);
  return (data ? usable(data) : llvm::all_of(op->getOperands(), usable)) &&
         llvm::all_of(op->getResults(), usable) && !inTail(op);
}

void Emitter::findRuns(Block &block) {
  for (SmallVector<Operation *> &run : pointwiseRuns(block, [&](Operation *op) {
         return !folded.contains(op) && generatesLoop(op);
       })) {
    for (Operation *o : ArrayRef(run).drop_back())
      folded.insert(o);
    runs[run.back()] = std::move(run);
  }
}

std::string Emitter::loopFunction(llvm::StringRef what, ArrayRef<int64_t> iteration,
                                  ArrayRef<Access> inputs, const Access &output,
                                  const PointwiseExpr &expr) {
  std::string k;
  llvm::raw_string_ostream os(k);
  os << "(";
  for (size_t i = 0; i < inputs.size(); ++i)
    os << "const " << inputs[i].type << " *__restrict in" << i << ", ";
  size_t inner = iteration.size() - 1;
  int64_t n = iteration[inner];
  os << output.type << " *__restrict out, int64_t b, int64_t e) {\n"
     << "  for (int64_t o = b / " << n << ", j0 = b % " << n << "; b < e; ++o, j0 = 0) {\n";
  if (inner == 0) {
    os << "    (void)o;\n";
  } else {
    os << "    int64_t r = o;\n";
    for (size_t d = inner; d-- > 0;) {
      if (d == 0)
        os << "    int64_t i0 = r;\n";
      else
        os << "    int64_t i" << d << " = r % " << iteration[d] << "; r /= " << iteration[d]
           << ";\n";
    }
  }
  os << "    int64_t j1 = std::min<int64_t>(" << n << ", j0 + (e - b));\n"
     << "    b += j1 - j0;\n"
     << "#pragma omp simd\n"
     << "    for (int64_t i" << inner << " = j0; i" << inner << " < j1; ++i" << inner << ") {\n"
     << pointwiseElement(iteration, inputs, output, expr, "      ") << "    }\n  }\n}\n";
  auto [it, inserted] = loopNames.try_emplace(k, "loop" + std::to_string(loopNames.size()));
  if (inserted)
    loops += "// " + what.str() + "\nvoid " + it->second + k + "\n";
  return it->second;
}

llvm::Error Emitter::emitPointwise(Operation *last, CpuModel::Entry &stats, int depth) {
  SmallVector<Operation *> run = runs.lookup(last);
  if (run.empty())
    run.push_back(last);
  Operation *failed = nullptr;
  std::optional<PointwiseExpr> e = runExpr(run, loopType, failed);
  if (!e) // (generatesLoop checked every operand's type)
    return makeError(nodeName(failed) + ": an operand has no element type a loop reads");
  for (std::string &t : e->temps)
    t = vectorMath(t);
  e->expr = vectorMath(e->expr);
  Value y = last->getResult(0);
  SmallVector<int64_t> iteration(shapeOf(y));
  SmallVector<Access> accesses;
  for (Value v : e->externals)
    accesses.push_back(Access{loopType(v.getType()), broadcastStrides(shapeOf(v), iteration), 0});
  accesses.push_back(Access{loopType(y.getType()), contiguousStrides(iteration), 0});
  collapse(iteration, accesses);
  Access output = accesses.pop_back_val();
  std::string fn = loopFunction(e->what, iteration, accesses, output, *e);

  std::vector<std::string> checks, pointers;
  for (auto [v, a] : llvm::zip(e->externals, accesses)) {
    auto ref = operandRef(last, v);
    if (!ref)
      return ref.takeError();
    checks.push_back(llvm::formatv("{{&{0}, {1}, {2}}", *ref, dtypeExpr(v.getType()), numel(v)));
    pointers.push_back(llvm::formatv("{0}.data<{1}>()", *ref, a.type));
  }
  std::string in = indent(depth), v = newName();
  names[y] = v;
  body += llvm::formatv("{0}Tensor {1}{2}; // {3}{4} -> {5}\n", in, v, placed(y),
                        run.size() > 1 ? "fused " : "", e->what, describeType(y.getType()))
              .str();
  body += llvm::formatv("{0}LLMC_TRY(pointwise(m, {1}, {2}, {{{3}}, {4}, {5}, {6},\n"
                        "{0}                   [&](int64_t b, int64_t e) {{ {7}({8}{6}.mutableData<{9}>(), b, e); }));\n",
                        in, quote("loop " + e->what), quote(nodeName(last)), llvm::join(checks, ", "),
                        dtypeExpr(y.getType()), shapeExpr(shapeOf(y)), v, fn,
                        pointers.empty() ? std::string() : llvm::join(pointers, ", ") + ", ",
                        output.type)
              .str();
  stats.kernelCalls += depth == 1;
  return llvm::Error::success();
}

llvm::Error Emitter::emitCopy(Operation *op, CpuModel::Entry &stats, int depth) {
  StringRef name = shortName(op);
  bool concat = name == "onnx.concat";
  std::string in = indent(depth), kind = quote("loop " + name.str()), node = quote(nodeName(op));
  PointwiseExpr copy{{}, "x0", name.str(), {}};
  Value whole = op->getResult(0);
  std::string out = concat ? newName() : std::string();
  std::vector<std::string> checks, parts;
  int64_t at = 0;
  for (const CopyPart &part : copyParts(op, loopType)) {
    SmallVector<int64_t> iteration(part.iteration);
    SmallVector<Access> accesses{part.in, part.out};
    collapse(iteration, accesses);
    std::string fn = loopFunction(name, iteration, {accesses[0]}, accesses[1], copy);
    auto from = operandRef(op, part.from);
    if (!from)
      return from.takeError();
    std::string check = llvm::formatv("{{&{0}, {1}, {2}}", *from, dtypeExpr(part.from.getType()),
                                      numel(part.from));
    if (concat) {
      checks.push_back(check);
      parts.push_back(llvm::formatv("partOf(b, e, {0}, {1}, [&](int64_t pb, int64_t pe) {{ "
                                    "{2}({3}.data<{4}>(), {5}.mutableData<{4}>(), pb, pe); });",
                                    at, at + numel(part.from), fn, *from, part.in.type, out));
      at += numel(part.from);
      continue;
    }
    std::string v = newName();
    names[part.to] = v;
    body += llvm::formatv("{0}Tensor {1}{2}; // {3} -> {4}\n", in, v, placed(part.to), name,
                          describeType(part.to.getType()))
                .str();
    body += llvm::formatv("{0}LLMC_TRY(pointwise(m, {1}, {2}, {{{3}}, {4}, {5}, {6},\n"
                          "{0}                   [&](int64_t b, int64_t e) {{ {7}({8}.data<{9}>(), "
                          "{6}.mutableData<{9}>(), b, e); }));\n",
                          in, kind, node, check, dtypeExpr(part.to.getType()),
                          shapeExpr(shapeOf(part.to)), v, fn, *from, part.in.type)
                .str();
    stats.kernelCalls += depth == 1;
  }
  if (!concat)
    return llvm::Error::success();
  // One call: every input checked, the result placed once, and the pool's
  // ranges of its elements cut into the parts they cover.
  names[whole] = out;
  body += llvm::formatv("{0}Tensor {1}{2}; // {3} -> {4}\n", in, out, placed(whole), name,
                        describeType(whole.getType()))
              .str();
  body += llvm::formatv("{0}LLMC_TRY(pointwise(m, {1}, {2}, {{{3}}, {4}, {5}, {6},\n"
                        "{0}                   [&](int64_t b, int64_t e) {{\n",
                        in, kind, node, llvm::join(checks, ", "), dtypeExpr(whole.getType()),
                        shapeExpr(shapeOf(whole)), out)
              .str();
  for (const std::string &p : parts)
    body += in + "                     " + p + "\n";
  body += in + "                   }));\n";
  stats.kernelCalls += depth == 1;
  return llvm::Error::success();
}
