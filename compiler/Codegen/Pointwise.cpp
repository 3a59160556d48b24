//===- Pointwise.cpp - element-wise code both targets generate -------------===//
#include "compiler/Codegen/Pointwise.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "passes/BuildHelpers.h"
#include "passes/ElementwiseRuns.h"
#include "passes/StorageFacts.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::llmc;

namespace mlir::llmc::codegen {

std::string storageType(Type t, llvm::StringRef boolType) {
  t = getElementTypeOrSelf(t);
  if (t.isF32())
    return "float";
  if (t.isF16())
    return "half";
  if (t.isBF16())
    return "bfloat16";
  if (t.isInteger(64))
    return "int64_t";
  if (t.isInteger(32))
    return "int32_t";
  if (t.isInteger(8))
    return t.isUnsignedInteger() ? "uint8_t" : "int8_t";
  if (t.isInteger(1))
    return boolType.str();
  return "";
}

SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  SmallVector<int64_t> s(out.size(), 0), own = contiguousStrides(in);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    s[lead + i] = in[i] == 1 && out[lead + i] != 1 ? 0 : own[i];
  return s;
}

std::string substitute(llvm::StringRef expr, ArrayRef<std::string> args) {
  std::string out;
  for (size_t i = 0; i < expr.size(); ++i) {
    if (expr[i] == '$' && i + 1 < expr.size() && expr[i + 1] >= '0' && expr[i + 1] <= '9') {
      out += args[size_t(expr[i + 1] - '0')];
      ++i;
    } else {
      out += expr[i];
    }
  }
  return out;
}

SmallVector<SmallVector<Operation *>> pointwiseRuns(Block &block,
                                                    llvm::function_ref<bool(Operation *)> eligible) {
  SmallVector<SmallVector<Operation *>> runs;
  llvm::DenseSet<Operation *> taken;
  auto joins = [&](Operation *op) { return !taken.contains(op) && runsInFloat(op) && eligible(op); };
  for (Operation &op : block.without_terminator()) {
    if (!joins(&op))
      continue;
    SmallVector<Operation *> run = {&op};
    for (Operation *user = runsInto(&op); user && joins(user); user = runsInto(user))
      run.push_back(user);
    if (run.size() < 2)
      continue;
    taken.insert(run.begin(), run.end());
    runs.push_back(std::move(run));
  }
  return runs;
}

std::optional<PointwiseExpr> runExpr(ArrayRef<Operation *> run,
                                     llvm::function_ref<std::string(Type)> typeName,
                                     Operation *&failed) {
  PointwiseExpr out;
  llvm::DenseMap<Value, std::string> exprOf; // results inside the run
  llvm::DenseMap<Value, unsigned> externalIndex;
  for (Operation *op : run) {
    SmallVector<std::string> args;
    for (unsigned i = 0; i < pointwiseArity(op); ++i) {
      Value v = op->getOperand(i);
      if (auto it = exprOf.find(v); it != exprOf.end()) {
        args.push_back(it->second);
        continue;
      }
      if (typeName(v.getType()).empty()) {
        failed = op;
        return std::nullopt;
      }
      auto [it, inserted] = externalIndex.try_emplace(v, unsigned(out.externals.size()));
      if (inserted)
        out.externals.push_back(v);
      args.push_back("x" + std::to_string(it->second));
    }
    std::string e = substitute(pointwiseExpr(op), args);
    // A result inside the run stored as f16/bf16 would be rounded: so is it here.
    std::string rt = typeName(op->getResult(0).getType());
    if (op != run.back() && (rt == "half" || rt == "bfloat16"))
      e = "toFloat(fromFloat<" + rt + ">(" + e + "))";
    out.what += (out.what.empty() ? "" : ", ") + shortName(op).str();
    if (op == run.back()) {
      out.expr = e;
      break;
    }
    std::string t = "t" + std::to_string(out.temps.size());
    out.temps.push_back("float " + t + " = " + e + ";");
    exprOf[op->getResult(0)] = t;
  }
  return out;
}

std::string pointwiseElement(ArrayRef<int64_t> iteration, ArrayRef<Access> inputs,
                             const Access &output, const PointwiseExpr &e,
                             llvm::StringRef indent) {
  auto index = [&](const Access &a) {
    std::string s = std::to_string(a.base);
    for (size_t d = 0; d < iteration.size(); ++d)
      if (a.strides[d] != 0 && iteration[d] != 1)
        s += " + i" + std::to_string(d) + " * " + std::to_string(a.strides[d]);
    return s;
  };
  auto isFloat = [](const std::string &t) {
    return t == "float" || t == "half" || t == "bfloat16";
  };
  bool floatOut = isFloat(output.type);
  std::string s;
  llvm::raw_string_ostream os(s);
  if (inputs.size() == 1 && e.temps.empty() && e.expr == "x0" && inputs[0].type == output.type) {
    os << indent << "out[" << index(output) << "] = in0[" << index(inputs[0]) << "];\n";
    return s;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Access &a = inputs[i];
    if (isFloat(a.type))
      os << indent << "float x" << i << " = toFloat(in" << i << "[" << index(a) << "]);\n";
    else
      os << indent << (floatOut ? "float" : "int64_t") << " x" << i << " = "
         << (floatOut ? "float" : "int64_t") << "(in" << i << "[" << index(a) << "]);\n";
  }
  for (const std::string &t : e.temps)
    os << indent << t << "\n";
  os << indent << "out[" << index(output) << "] = ";
  if (floatOut)
    os << "fromFloat<" << output.type << ">(" << e.expr << ");\n";
  else
    os << output.type << "(" << e.expr << ");\n";
  return s;
}

SmallVector<CopyPart, 2> copyParts(Operation *op, llvm::function_ref<std::string(Type)> typeName) {
  StringRef name = shortName(op);
  SmallVector<CopyPart, 2> parts;
  if (name == "onnx.transpose") {
    Value x = op->getOperand(0), y = op->getResult(0);
    auto perm = op->getAttrOfType<DenseI64ArrayAttr>("perm");
    auto in = shapeOf(x);
    SmallVector<int64_t> inStrides = contiguousStrides(in), strides;
    for (size_t d = 0; d < in.size(); ++d)
      strides.push_back(inStrides[size_t(perm ? perm[d] : int64_t(in.size() - 1 - d))]);
    std::string t = typeName(x.getType());
    parts.push_back({x, y, SmallVector<int64_t>(shapeOf(y)), Access{t, strides, 0},
                     Access{t, contiguousStrides(shapeOf(y)), 0}});
  } else if (name == "onnx.slice") {
    std::optional<SliceSegments> seg = sliceSegments(op);
    if (!seg)
      return parts;
    Value x = op->getOperand(0), y = op->getResult(0);
    std::string t = typeName(x.getType());
    parts.push_back({x, y, {seg->count, seg->len}, Access{t, {seg->stride, 1}, seg->base},
                     Access{t, {seg->len, 1}, 0}});
  } else if (name == "onnx.split" || name == "onnx.concat") {
    // Slices of the input along one axis (split), or the inputs written
    // into slices of the output (concat).
    bool split = name == "onnx.split";
    auto axisAttr = op->getAttrOfType<IntegerAttr>("axis");
    Value whole = split ? op->getOperand(0) : op->getResult(0);
    auto wshape = shapeOf(whole);
    int64_t axis = axisAttr ? axisAttr.getInt() : 0;
    if (axis < 0)
      axis += int64_t(wshape.size());
    SmallVector<int64_t> wstrides = contiguousStrides(wshape);
    std::string t = typeName(whole.getType());
    int64_t at = 0;
    for (Value part : split ? ValueRange(op->getResults()) : ValueRange(op->getOperands())) {
      auto pshape = shapeOf(part);
      Access wa{t, wstrides, at * wstrides[size_t(axis)]};
      Access pa{t, contiguousStrides(pshape), 0};
      if (split)
        parts.push_back({whole, part, SmallVector<int64_t>(pshape), wa, pa});
      else
        parts.push_back({part, whole, SmallVector<int64_t>(pshape), pa, wa});
      at += pshape[size_t(axis)];
    }
  }
  return parts;
}

} // namespace mlir::llmc::codegen
