//===- Kernel.h - the reference CPU kernels' interface and registry ------===//
//
// Every operation the executor runs is a kernel: a function over input
// tensors and attributes that produces output tensors, looked up by name
// ("onnx.add", "ms.multi_head_attention": the llm op name without "llm.").
// Kernels compute output shapes from the run-time input shapes, check what
// the op's semantics require of its inputs (index ranges, sizes) and report
// violations as a Status, never by crashing. Plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_KERNEL_H
#define LLMC_RUNTIME_CPU_KERNEL_H

#include "runtime/src/cpu/Status.h"
#include "runtime/src/cpu/Tensor.h"
#include "runtime/src/cpu/ThreadPool.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmc::cpu {

/// One attribute of a kernel call (converted from the op's MLIR attribute).
struct Attribute {
  enum Kind { Int, Float, String, Ints, Floats, Strings, TensorValue } kind = Int;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  Tensor tensor;
};

class Attributes {
public:
  void set(std::string name, Attribute value) {
    entries.emplace_back(std::move(name), std::move(value));
  }
  const Attribute *get(std::string_view name) const {
    for (const auto &[n, v] : entries)
      if (n == name)
        return &v;
    return nullptr;
  }
  std::optional<int64_t> optInt(std::string_view name) const {
    const Attribute *a = get(name);
    if (a && a->kind == Attribute::Int)
      return a->i;
    return std::nullopt;
  }
  int64_t getInt(std::string_view name, int64_t dflt) const { return optInt(name).value_or(dflt); }
  std::optional<double> optFloat(std::string_view name) const {
    const Attribute *a = get(name);
    if (a && a->kind == Attribute::Float)
      return a->f;
    return std::nullopt;
  }
  double getFloat(std::string_view name, double dflt) const {
    return optFloat(name).value_or(dflt);
  }
  std::string getString(std::string_view name, std::string dflt) const {
    const Attribute *a = get(name);
    return a && a->kind == Attribute::String ? a->s : dflt;
  }
  const std::vector<int64_t> *getInts(std::string_view name) const {
    const Attribute *a = get(name);
    return a && a->kind == Attribute::Ints ? &a->ints : nullptr;
  }
  const std::vector<double> *getFloats(std::string_view name) const {
    const Attribute *a = get(name);
    return a && a->kind == Attribute::Floats ? &a->floats : nullptr;
  }
  const Tensor *getTensor(std::string_view name) const {
    const Attribute *a = get(name);
    return a && a->kind == Attribute::TensorValue ? &a->tensor : nullptr;
  }

private:
  std::vector<std::pair<std::string, Attribute>> entries;
};

/// What a kernel sees of one call. `inputs` follow the op's operands (null
/// for a missing optional input); `outputs` has one tensor per op result,
/// which the kernel fills: default-constructed, or a place (Tensor::place)
/// that Tensor::allocate then fills without allocating. `unwanted[r]` marks
/// a result nothing reads: the kernel may leave it undefined (an optional
/// output the model does not name, or one that is not defined for these
/// attributes). Short lists are kept inline (no allocation per call).
struct KernelCall {
  InlineVector<const Tensor *, 8> inputs;
  const Attributes *attrs = nullptr;
  InlineVector<Tensor, 4> outputs;
  InlineVector<bool, 8> unwanted;
  ThreadPool *pool = nullptr;
  std::string opName;          // for messages
  const char *label = nullptr; // used instead of opName when set

  const Tensor *input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  bool has(size_t i) const { return input(i) != nullptr; }
  /// Whether some reader needs result `r`.
  bool wants(size_t r) const { return r < outputs.size() && !(r < unwanted.size() && unwanted[r]); }
  /// Status::error("<opName>: <message>")
  Status fail(const std::string &message) const {
    return Status::error((label ? std::string(label) : opName) + ": " + message);
  }
};

using KernelFn = Status (*)(KernelCall &call);

/// The `sinks` attribute of llmc's attention operations (one logit per
/// query head) in `sinks`, or null without one; an error naming `who` when
/// it does not have one logit per head. (The reference kernels and the
/// compiled CPU dispatchers both read them through this; it allocates
/// nothing but an error's message: a decode step calls it.)
inline Status attentionSinks(const Attributes *attrs, int64_t heads, const char *who,
                             const double *&sinks) {
  const std::vector<double> *s = attrs ? attrs->getFloats("sinks") : nullptr;
  sinks = s ? s->data() : nullptr;
  if (s && int64_t(s->size()) != heads)
    return Status::error(std::string(who) + ": sinks has " + std::to_string(s->size()) +
                         " logits for " + std::to_string(heads) + " query heads");
  return Status::ok();
}

struct KernelEntry {
  const char *name;
  KernelFn fn;
};

/// The kernel called `name`, or nullptr.
const KernelEntry *findKernel(std::string_view name);
/// Every registered kernel, sorted by name.
std::vector<const KernelEntry *> allKernels();

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_KERNEL_H
