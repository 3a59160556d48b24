//===- Registry.cpp - the table of reference CPU kernels -------------------===//
#include "runtime/src/cpu/kernels/Kernels.h"

#include <algorithm>
#include <string_view>

namespace llmc::cpu {

namespace {
const std::vector<KernelEntry> &table() {
  static const std::vector<KernelEntry> entries = [] {
    KernelTable t;
    addElementwiseKernels(t);
    addCastKernels(t);
    addDataMovementKernels(t);
    addIndexingKernels(t);
    addReductionKernels(t);
    addLinalgKernels(t);
    addNormalizationKernels(t);
    addAttentionKernels(t);
    addRotaryKernels(t);
    addKvCacheKernels(t);
    addQuantizedKernels(t);
    std::sort(t.entries.begin(), t.entries.end(), [](const KernelEntry &a, const KernelEntry &b) {
      return std::string_view(a.name) < std::string_view(b.name);
    });
    return t.entries;
  }();
  return entries;
}
} // namespace

const KernelEntry *findKernel(std::string_view name) {
  const auto &t = table();
  auto it = std::lower_bound(t.begin(), t.end(), name, [](const KernelEntry &e, std::string_view n) {
    return std::string_view(e.name) < n;
  });
  return it != t.end() && it->name == name ? &*it : nullptr;
}

std::vector<const KernelEntry *> allKernels() {
  std::vector<const KernelEntry *> out;
  for (const KernelEntry &e : table())
    out.push_back(&e);
  return out;
}

} // namespace llmc::cpu
