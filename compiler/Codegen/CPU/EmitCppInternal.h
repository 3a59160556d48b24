//===- EmitCppInternal.h - the CPU emitter's shared state ----------*- C++ -*-===//
//
// Internal to compiler/Codegen/CPU: the emitter class, which EmitCpp.cpp
// drives over the entry points (and the logits tail, and the generated file
// around them), EmitCppOps.cpp turns operations into statements with,
// EmitCppPointwise.cpp writes loops for element-wise operations with, and
// EmitCppWeights.cpp fills weights.bin and Model::init's tables for.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_CPU_EMITCPPINTERNAL_H
#define LLMC_COMPILER_CODEGEN_CPU_EMITCPPINTERNAL_H

#include "compiler/Codegen/CPU/EmitCpp.h"
#include "compiler/Codegen/EmitCommon.h"
#include "compiler/Codegen/Pointwise.h"

#include "compiler/Executor/Error.h"
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"
#include "passes/BuildHelpers.h"
#include "passes/KernelBridge.h"
#include "runtime/src/cpu/StridedMatmul.h"
#include "runtime/src/model/kernels/Packed.h"
#include "runtime/src/model/kernels/QuantPanels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace mlir::llmc::cpugen {

using namespace mlir::llmc::codegen;
namespace cpu = ::llmc::cpu;


class Emitter {
public:
  explicit Emitter(ModuleOp module) : module(module) {}

  llvm::Expected<CpuModel> run(llvm::StringRef version);

private:
  llvm::Error emitFunction(func::FuncOp f);
  llvm::Error emitBlock(Block &block, CpuModel::Entry &stats, int depth);
  llvm::Error emitOp(Operation *op, CpuModel::Entry &stats, int depth);
  // Generated loops (EmitCppPointwise.cpp).
  /// Whether `op` becomes a generated loop (alone or as part of a run).
  bool generatesLoop(Operation *op);
  /// Records the runs of `block` that become one loop each (in `runs`, the
  /// earlier operations in `folded`).
  void findRuns(Block &block);
  /// The loop over the run that `last` ends (or `last` alone).
  llvm::Error emitPointwise(Operation *last, CpuModel::Entry &stats, int depth);
  /// Whether `op` (a transpose, split or concat of static shapes) becomes
  /// generated copy loops.
  bool generatesCopy(Operation *op);
  /// Its loops (codegen::copyParts): one per result of a split, a
  /// concat's parts in one call that writes the result once.
  llvm::Error emitCopy(Operation *op, CpuModel::Entry &stats, int depth);
  /// Whether `op` computes the logits' tail (the rows a caller asks for).
  bool inTail(Operation *op);
  /// The name of the loop function with this iteration space, accesses and
  /// expression, written into `loops` the first time.
  std::string loopFunction(llvm::StringRef what, ArrayRef<int64_t> iteration,
                           ArrayRef<Access> inputs, const Access &output,
                           const PointwiseExpr &expr);
  /// The statement of a quantized linear layer (x and the residual given as
  /// C++ expressions, the result named v).
  llvm::Error emitQuantizedLinear(QuantizedLinearOp op, const std::string &x, const std::string &v,
                                  const std::string &residual, CpuModel::Entry &stats, int depth);
  /// `name` says what the constant is (in the manifest's weights table).
  llvm::Expected<int> weightIndex(ElementsAttr attr, llvm::StringRef name);
  /// The weight [N, K] of a linear layer, stored in the kernels' column
  /// panels (runtime/src/model/kernels/Packed.h) as [panels, K, 16].
  llvm::Expected<int> packedWeightIndex(ElementsAttr attr, llvm::StringRef name);
  /// A float constant stored as f32 (f16/bf16 widened exactly).
  llvm::Expected<int> f32WeightIndex(ElementsAttr attr, llvm::StringRef name);
  /// The weight of a quantized linear layer with int8 activations, stored
  /// in the quantized panels of runtime/src/model/kernels/QuantPanels.h as
  /// [panels, panel bytes] (scales and zero points inside); `shape` gets
  /// the layout (f16 scales when every scale is exactly one).
  llvm::Expected<int> quantPanelWeightIndex(QuantizedLinearOp op, ElementsAttr q,
                                            ElementsAttr scales, ElementsAttr zp,
                                            ::llmc::model::kernels::QuantPanelShape &shape);
  /// Where `bytes` lie in weights.bin (equal bytes are stored once, under
  /// the first `name` that stored them).
  size_t storeBlob(llvm::StringRef bytes, llvm::StringRef name);
  llvm::Expected<int> attrIndex(Operation *op);
  int kernelIndex(llvm::StringRef name);
  std::string newName() { return "v" + std::to_string(counter++); }
  std::string indent(int depth) const { return std::string(size_t(2 * depth), ' '); }
  /// A constant's name until something reads it as it is: "\x01<i>" for
  /// lazyConstants[i]. Read, it goes into weights.bin (so a weight only the
  /// packed kernel reads is stored only packed).
  std::string resolve(const std::string &name) {
    if (name.empty() || name[0] != '\x01')
      return name;
    ConstantOp c = lazyConstants[std::stoul(name.substr(1))];
    auto w = weightIndex(cast<ElementsAttr>(c.getValue()), nodeName(c));
    if (!w) {
      if (!deferredError)
        deferredError = w.takeError();
      else
        llvm::consumeError(w.takeError());
      return "m.w[0]";
    }
    return llvm::formatv("m.w[{0}]", *w).str();
  }
  /// "&v3" or "nullptr" for an operand.
  std::string operandPtr(Value v) {
    auto it = names.find(v);
    return it == names.end() || it->second.empty() ? "nullptr" : "&" + resolve(it->second);
  }
  llvm::Expected<std::string> operandRef(Operation *op, Value v) {
    auto it = names.find(v);
    if (it == names.end() || it->second.empty())
      return makeError(nodeName(op) + ": an operand has no value");
    return resolve(it->second);
  }

  /// " = m.place(offset, bytes)" when the memory plan gave `r` a buffer of
  /// its own in the arena (of its bytes with dynamic sizes bounded as the
  /// plan bounds them: a larger run-time result is allocated instead), else
  /// "".
  std::string placed(Value r) {
    auto res = dyn_cast<OpResult>(r);
    auto offsets = res ? res.getOwner()->getAttrOfType<DenseI64ArrayAttr>("llm.arena_offsets")
                       : DenseI64ArrayAttr();
    if (!offsets || int64_t(res.getResultNumber()) >= offsets.size() ||
        offsets[res.getResultNumber()] < 0)
      return "";
    return llvm::formatv(" = m.place({0}, {1})", offsets[res.getResultNumber()],
                         arenaBytesOf(r.getType(), bound))
        .str();
  }

  ModuleOp module;
  CpuModel model;
  std::string body;    // the entry functions
  std::string init;    // Model::init's statements
  llvm::DenseMap<Value, std::string> names;
  llvm::DenseMap<Attribute, int> weights, packedWeights, f32Weights;
  /// Packed quantized weights by (values, scales, zero points, bits, group
  /// size, K): the panels hold all three, so equal values with other
  /// scales are another weight.
  std::map<std::tuple<const void *, const void *, const void *, int64_t, int64_t, int64_t>,
           std::pair<int, ::llmc::model::kernels::QuantPanelShape>>
      quantPanels;
  /// The bytes of panels each constant went into (its values': the panels;
  /// its scales' and zero points': 0, they are inside), and the constants
  /// also stored as they are: what weightBytesRead counts for them.
  llvm::DenseMap<Attribute, int64_t> panelBytes;
  llvm::DenseSet<Attribute> storedPlain;
  std::set<std::string> recordedQuantized; // the layers of CpuModel::quantized
  std::vector<ConstantOp> lazyConstants;
  llvm::Error deferredError = llvm::Error::success();
  llvm::DenseSet<Operation *> folded; // emitted as part of an earlier statement
  llvm::DenseMap<Operation *, SmallVector<Operation *>> runs; // by their last operation
  std::string loops;                                          // the loop functions
  std::map<std::string, std::string> loopNames;               // by text
  // codegen::inPlaceScatters: TensorScatters that write the session's cache,
  // and the cache updates that then have nothing to copy.
  llvm::DenseSet<Operation *> scattersInPlace, updatesInPlace;
  WeightsWriter weightsWriter{model};
  llvm::DenseMap<Attribute, int> attrs;
  std::map<std::string, int> kernels;
  int counter = 0, numWeights = 0, numAttrs = 0;
  int64_t bound = 1; // of dynamic sizes in the current entry's memory plan
  std::optional<LogitsTail> tail; // of the current entry
  int64_t rowsBytes = 0;          // the largest hidden state a tail reads
  bool anyCapacity = true; // every cache passes readsCapacityAtRunTime
};

} // namespace mlir::llmc::cpugen

#endif // LLMC_COMPILER_CODEGEN_CPU_EMITCPPINTERNAL_H
