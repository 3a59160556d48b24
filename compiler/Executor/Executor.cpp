//===- Executor.cpp - run an imported graph on the CPU --------------------===//
#include "compiler/Executor/Error.h"
#include "compiler/Executor/Executor.h"

#include "dialects/Exec/IR/ExecDialect.h"
#include "dialects/LLM/IR/LLMOps.h"
#include "passes/KernelBridge.h"
#include "passes/Passes.h"
#include "python-free-frontend/OnnxImporter.h"
#include "python-free-frontend/OnnxModel.h"
#include "runtime/src/cpu/Kernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Parser/Parser.h"

#include <map>

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

/// The node name of an operation's location (the importer's NameLoc).
std::string nodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "operation";
}

ValueSignature signatureOf(Type type, std::string name) {
  ValueSignature s;
  s.name = std::move(name);
  s.dtype = cpu::DType(getOnnxCodeForElementType(getElementTypeOrSelf(type)));
  MaybeShape shape = getShape(type);
  s.ranked = shape.has_value();
  if (shape)
    for (const Dim &d : *shape) {
      s.dims.push_back(d.isStatic() ? d.size : -1);
      s.dimNames.push_back(d.name ? d.name.str() : "");
    }
  return s;
}

} // namespace

std::string ValueSignature::describe() const {
  std::string s = std::string(cpu::dtypeName(dtype));
  if (!ranked)
    return s + "[unranked]";
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + (dims[i] >= 0 ? std::to_string(dims[i])
                                         : dimNames[i].empty() ? "?" : dimNames[i]);
  return s + "]";
}

/// One function of the module, ready to run.
struct ExecFunction {
  std::string name;
  std::vector<ValueSignature> ins, outs;

  struct Step {
    const cpu::KernelEntry *kernel;
    std::string name; // node name, for messages
    std::vector<int> args, results; // slots; -1 for none
    cpu::Attributes params;
    std::vector<ValueSignature> resultTypes;
    std::vector<bool> unused; // per result: nothing reads it
  };
  std::vector<Step> steps;
  std::vector<int> inputSlots, outputSlots;
  std::vector<std::pair<int, cpu::Tensor>> constants;
  std::vector<std::vector<int>> releaseAfter;
  int numSlots = 0;

  llvm::Error build(func::FuncOp func);
  llvm::Error checkInput(const ValueSignature &sig, const cpu::Tensor &t,
                         std::map<std::string, std::pair<int64_t, std::string>> &symbols) const;
  llvm::Expected<std::vector<NamedTensor>> run(llvm::ArrayRef<NamedTensor> inputs,
                                               const Executor::Observer *observer = nullptr) const;
};

struct Executor::Impl {
  std::unique_ptr<OnnxModel> model;
  std::unique_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
  std::vector<ExecFunction> functions; // "main" (or the only one) first

  const ExecFunction *find(llvm::StringRef name) const {
    for (const ExecFunction &f : functions)
      if (f.name == name)
        return &f;
    return nullptr;
  }
  /// Lowers the module (after `pipeline`) and builds every function.
  llvm::Error prepare(llvm::StringRef what, llvm::StringRef pipeline);
};

Executor::Executor(std::unique_ptr<Impl> i) : impl(std::move(i)) {}
Executor::~Executor() = default;

const std::vector<ValueSignature> &Executor::inputs() const { return impl->functions[0].ins; }
const std::vector<ValueSignature> &Executor::outputs() const {
  return impl->functions[0].outs;
}
size_t Executor::numKernels() const { return impl->functions[0].steps.size(); }

size_t Executor::setKernelParam(llvm::StringRef kernel, llvm::StringRef name, int64_t value,
                                llvm::StringRef when) {
  size_t count = 0;
  for (ExecFunction &f : impl->functions)
    for (ExecFunction::Step &step : f.steps) {
      if (step.kernel->name != kernel ||
          (!when.empty() && step.params.getInt(std::string_view(when.data(), when.size()), 0) == 0))
        continue;
      cpu::Attribute a;
      a.kind = cpu::Attribute::Int;
      a.i = value;
      step.params.set(name.str(), std::move(a));
      ++count;
    }
  return count;
}

std::vector<std::string> Executor::functionNames() const {
  std::vector<std::string> names;
  for (const ExecFunction &f : impl->functions)
    names.push_back(f.name);
  return names;
}

const std::vector<ValueSignature> *Executor::inputsOf(llvm::StringRef function) const {
  const ExecFunction *f = impl->find(function);
  return f ? &f->ins : nullptr;
}

const std::vector<ValueSignature> *Executor::outputsOf(llvm::StringRef function) const {
  const ExecFunction *f = impl->find(function);
  return f ? &f->outs : nullptr;
}

llvm::Error ExecFunction::build(func::FuncOp func) {
  name = func.getSymName().str();
  llvm::DenseMap<Value, int> slot;
  auto slotOf = [&](Value v) { return slot.lookup(v); };
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "llm.name");
    ins.push_back(signatureOf(arg.getType(), name ? name.str() : "arg" + std::to_string(arg.getArgNumber())));
    slot[arg] = numSlots;
    inputSlots.push_back(numSlots++);
  }
  for (Operation &op : body) {
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto t = constantTensor(c.getValue());
      if (!t)
        return t.takeError();
      slot[c.getResult()] = numSlots;
      constants.push_back({numSlots++, std::move(*t)});
    } else if (auto n = dyn_cast<NoneOp>(op)) {
      slot[n.getResult()] = -1;
    } else if (auto k = dyn_cast<exec::KernelOp>(op)) {
      Step step;
      step.kernel = cpu::findKernel(k.getKernel().str());
      if (!step.kernel)
        return makeError("no CPU kernel '" + k.getKernel().str() + "'");
      step.name = nodeName(k.getLoc());
      for (Value v : k.getArgs())
        step.args.push_back(slotOf(v));
      for (Value r : k.getResults()) {
        slot[r] = numSlots;
        step.results.push_back(numSlots++);
        step.resultTypes.push_back(signatureOf(r.getType(), ""));
        step.unused.push_back(r.use_empty());
      }
      auto params = kernelParams(k.getParams());
      if (!params)
        return params.takeError();
      step.params = std::move(*params);
      steps.push_back(std::move(step));
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        outputSlots.push_back(slotOf(v));
        auto name = func.getResultAttrOfType<StringAttr>(i, "llm.name");
        outs.push_back(signatureOf(v.getType(), name ? name.str() : "output" + std::to_string(i)));
      }
    } else {
      return makeError("the executor cannot run '" + op.getName().getStringRef().str() + "'");
    }
  }
  // Free each intermediate after its last reader.
  std::vector<int> lastUse(size_t(numSlots), -1);
  for (auto [i, step] : llvm::enumerate(steps))
    for (int s : step.args)
      if (s >= 0)
        lastUse[size_t(s)] = int(i);
  std::vector<bool> keep(size_t(numSlots), false);
  for (int s : inputSlots)
    keep[size_t(s)] = true;
  for (int s : outputSlots)
    if (s >= 0)
      keep[size_t(s)] = true;
  for (auto &[s, t] : constants)
    keep[size_t(s)] = true;
  releaseAfter.assign(steps.size(), {});
  for (int s = 0; s < numSlots; ++s)
    if (!keep[size_t(s)] && lastUse[size_t(s)] >= 0)
      releaseAfter[size_t(lastUse[size_t(s)])].push_back(s);
  return llvm::Error::success();
}

namespace {
/// Adds `pipeline` to the module pass manager `pm`: each element that is a
/// function pass (llmc-canonicalize) goes into a nested func.func pass
/// manager, consecutive ones into the same; the others (module passes and
/// pipelines such as llmc-insert-kv-cache, llmc-pipeline) into `pm`. The
/// error is the parser's first line.
llvm::Error parsePipeline(llvm::StringRef pipeline, OpPassManager &pm) {
  static const bool registered = (registerLLMCPasses(), registerLLMCPipeline(), true);
  (void)registered;
  auto fail = [&](const std::string &error) {
    llvm::StringRef first = llvm::StringRef(error).split('\n').first;
    first.consume_front("MLIR Textual PassPipeline Parser:1:1: error: ");
    return makeError("pass pipeline '" + pipeline + "': " + first);
  };
  // Top-level elements: split at commas outside (...) and {...}.
  SmallVector<llvm::StringRef> elements;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= pipeline.size(); ++i) {
    char c = i < pipeline.size() ? pipeline[i] : ',';
    depth += (c == '(' || c == '{') - (c == ')' || c == '}');
    if (c == ',' && depth == 0) {
      elements.push_back(pipeline.slice(begin, i).trim());
      begin = i + 1;
    }
  }
  OpPassManager *nested = nullptr;
  for (llvm::StringRef element : elements) {
    // A module pass or pipeline (llmc-insert-kv-cache, llmc-pipeline) parses
    // at module level; a function pass is refused there (an error, not a
    // crash) and goes into the nested function pass manager.
    std::string error;
    llvm::raw_string_ostream errors(error);
    OpPassManager probe(ModuleOp::getOperationName());
    if (succeeded(parsePassPipeline(element, probe, errors))) {
      nested = nullptr;
      if (failed(parsePassPipeline(element, pm, errors)))
        return fail(error);
      continue;
    }
    if (!llvm::StringRef(error).contains("did you intend to nest"))
      return fail(error);
    error.clear();
    if (!nested)
      nested = &pm.nest<func::FuncOp>();
    if (failed(parsePassPipeline(element, *nested, errors)))
      return fail(error);
  }
  return llvm::Error::success();
}

std::unique_ptr<MLIRContext> makeExecContext() {
  DialectRegistry registry;
  registerImportDialects(registry);
  registry.insert<exec::ExecDialect>();
  auto ctx = std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  ctx->loadAllAvailableDialects();
  return ctx;
}
} // namespace

llvm::Error Executor::checkPipeline(llvm::StringRef pipeline) {
  OpPassManager pm(ModuleOp::getOperationName());
  return parsePipeline(pipeline, pm);
}

llvm::Error Executor::Impl::prepare(llvm::StringRef what, llvm::StringRef pipeline) {
  std::string diagnostics;
  {
    ScopedDiagnosticHandler handler(ctx.get(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error)
        diagnostics += (diagnostics.empty() ? "" : "; ") + d.str();
      return success();
    });
    PassManager pm(ctx.get(), ModuleOp::getOperationName());
    if (!pipeline.empty())
      if (llvm::Error e = parsePipeline(pipeline, pm))
        return e;
    pm.nest<func::FuncOp>().addPass(createLowerToExecPass());
    if (failed(pm.run(*module)))
      return makeError(what + ": " + (diagnostics.empty() ? "lowering failed" : diagnostics));
  }
  SmallVector<func::FuncOp> funcs;
  for (auto f : module->getOps<func::FuncOp>())
    if (!f.isDeclaration())
      funcs.push_back(f);
  // "main" first: the function run() without a name runs.
  std::stable_partition(funcs.begin(), funcs.end(),
                        [](func::FuncOp f) { return f.getSymName() == "main"; });
  if (funcs.empty())
    return makeError(what + ": no function to run");
  for (func::FuncOp f : funcs) {
    ExecFunction fn;
    if (llvm::Error e = fn.build(f))
      return makeError(what + ": " + f.getSymName() + ": " + llvm::toString(std::move(e)));
    functions.push_back(std::move(fn));
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Executor>> Executor::fromOnnxFile(llvm::StringRef path,
                                                                 llvm::StringRef pipeline) {
  auto impl = std::make_unique<Impl>();
  auto model = OnnxModel::loadFile(path);
  if (!model)
    return model.takeError();
  impl->model = std::move(*model);
  impl->ctx = makeExecContext();
  auto module = importOnnxModel(*impl->ctx, *impl->model);
  if (!module)
    return module.takeError();
  impl->module = std::move(*module);
  if (llvm::Error e = impl->prepare(path, pipeline))
    return std::move(e);
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

llvm::Expected<std::unique_ptr<Executor>> Executor::fromMlirFile(llvm::StringRef path,
                                                                 llvm::StringRef pipeline) {
  auto impl = std::make_unique<Impl>();
  impl->ctx = makeExecContext();
  std::string diagnostics;
  {
    ScopedDiagnosticHandler handler(impl->ctx.get(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && diagnostics.empty())
        diagnostics = d.str();
      return success();
    });
    impl->module = parseSourceFile<ModuleOp>(path, impl->ctx.get());
  }
  if (!impl->module)
    return makeError(path + ": " + (diagnostics.empty() ? "cannot parse" : diagnostics));
  if (llvm::Error e = impl->prepare(path, pipeline))
    return std::move(e);
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

llvm::Error ExecFunction::checkInput(
    const ValueSignature &sig, const cpu::Tensor &t,
    std::map<std::string, std::pair<int64_t, std::string>> &symbols) const {
  auto mismatch = [&](const std::string &why) {
    return makeError("input '" + sig.name + "' is " + t.describe() + "; the model expects " +
                sig.describe() + " (" + why + ")");
  };
  if (t.dtype() != sig.dtype)
    return mismatch("element type");
  if (!sig.ranked)
    return llvm::Error::success();
  if (t.rank() != int64_t(sig.dims.size()))
    return mismatch("rank");
  for (size_t d = 0; d < sig.dims.size(); ++d) {
    int64_t size = t.dim(int64_t(d));
    if (sig.dims[d] >= 0 && sig.dims[d] != size)
      return mismatch("dimension " + std::to_string(d));
    if (!sig.dimNames[d].empty()) {
      auto [it, fresh] = symbols.try_emplace(sig.dimNames[d], size, sig.name);
      if (!fresh && it->second.first != size)
        return makeError("input '" + sig.name + "' has " + sig.dimNames[d] + " = " +
                    std::to_string(size) + " but input '" + it->second.second + "' has " +
                    sig.dimNames[d] + " = " + std::to_string(it->second.first));
    }
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<NamedTensor>>
Executor::run(llvm::ArrayRef<NamedTensor> inputs) const {
  return impl->functions[0].run(inputs);
}

llvm::Expected<std::vector<NamedTensor>>
Executor::run(llvm::StringRef function, llvm::ArrayRef<NamedTensor> inputs) const {
  return run(function, inputs, Observer());
}

llvm::Expected<std::vector<NamedTensor>>
Executor::run(llvm::StringRef function, llvm::ArrayRef<NamedTensor> inputs,
              const Observer &observer) const {
  const ExecFunction *f = impl->find(function);
  if (!f)
    return makeError("the program has no function '" + function.str() + "'");
  return f->run(inputs, observer ? &observer : nullptr);
}

llvm::Expected<std::vector<NamedTensor>>
ExecFunction::run(llvm::ArrayRef<NamedTensor> inputs, const Executor::Observer *observer) const {
  const ExecFunction &m = *this;
  std::vector<cpu::Tensor> slots(size_t(m.numSlots));
  for (auto &[s, t] : m.constants)
    slots[size_t(s)] = t;
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  std::vector<bool> given(m.ins.size(), false);
  for (const NamedTensor &in : inputs) {
    auto it = std::find_if(m.ins.begin(), m.ins.end(),
                           [&](const ValueSignature &s) { return s.name == in.name; });
    if (it == m.ins.end())
      return makeError("the model has no input '" + in.name + "'");
    size_t i = size_t(it - m.ins.begin());
    if (given[i])
      return makeError("input '" + in.name + "' is given twice");
    if (llvm::Error e = m.checkInput(*it, in.tensor, symbols))
      return std::move(e);
    given[i] = true;
    slots[size_t(m.inputSlots[i])] = in.tensor;
  }
  for (size_t i = 0; i < given.size(); ++i)
    if (!given[i])
      return makeError("missing input '" + m.ins[i].name + "' (" + m.ins[i].describe() + ")");

  cpu::ThreadPool &pool = cpu::ThreadPool::global();
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const ExecFunction::Step &step = m.steps[i];
    cpu::KernelCall call;
    call.pool = &pool;
    call.attrs = &step.params;
    call.opName = step.name + " (" + step.kernel->name + ")";
    for (int s : step.args)
      call.inputs.push_back(s >= 0 ? &slots[size_t(s)] : nullptr);
    call.outputs.resize(step.results.size());
    call.unwanted = step.unused;
    if (cpu::Status st = step.kernel->fn(call); !st)
      return makeError(llvm::StringRef(st.message()).starts_with(call.opName)
                      ? st.message()
                      : call.opName + ": " + st.message());
    for (size_t r = 0; r < step.results.size(); ++r) {
      const cpu::Tensor &t = call.outputs[r];
      const ValueSignature &want = step.resultTypes[r];
      if (step.unused[r] && !t.defined())
        continue;
      bool ok = t.defined() && t.dtype() == want.dtype &&
                (!want.ranked || t.rank() == int64_t(want.dims.size()));
      for (size_t d = 0; ok && want.ranked && d < want.dims.size(); ++d)
        ok = want.dims[d] < 0 || want.dims[d] == t.dim(int64_t(d));
      if (!ok)
        return makeError(call.opName + ": result " + std::to_string(r) + " is " +
                    (t.defined() ? t.describe() : std::string("missing")) +
                    " but the compiler inferred " + want.describe() +
                    " (an llmc bug: please report it)");
    }
    if (observer)
      (*observer)(step.kernel->name, step.name,
                  ArrayRef<const cpu::Tensor *>(call.inputs.data(), call.inputs.size()),
                  ArrayRef<cpu::Tensor>(call.outputs.data(), call.outputs.size()));
    for (size_t r = 0; r < step.results.size(); ++r)
      slots[size_t(step.results[r])] = std::move(call.outputs[r]);
    for (int s : m.releaseAfter[i])
      slots[size_t(s)] = cpu::Tensor();
  }
  std::vector<NamedTensor> out;
  for (size_t i = 0; i < m.outputSlots.size(); ++i) {
    int s = m.outputSlots[i];
    if (s < 0)
      return makeError("output '" + m.outs[i].name + "' is not computed");
    out.push_back({m.outs[i].name, slots[size_t(s)]});
  }
  return out;
}
