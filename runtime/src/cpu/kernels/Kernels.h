//===- Kernels.h - registration of the reference kernel families ----------===//
#ifndef LLMC_RUNTIME_CPU_KERNELS_KERNELS_H
#define LLMC_RUNTIME_CPU_KERNELS_KERNELS_H

#include "runtime/src/cpu/Kernel.h"

#include <vector>

namespace llmc::cpu {

/// Collects kernels at start-up; see Registry.cpp.
class KernelTable {
public:
  void add(const char *name, KernelFn fn) { entries.push_back({name, fn}); }
  std::vector<KernelEntry> entries;
};

// One function per kernel file.
void addElementwiseKernels(KernelTable &table);
void addCastKernels(KernelTable &table);
void addDataMovementKernels(KernelTable &table);
void addIndexingKernels(KernelTable &table);
void addReductionKernels(KernelTable &table);
void addLinalgKernels(KernelTable &table);
void addNormalizationKernels(KernelTable &table);
void addAttentionKernels(KernelTable &table);
void addRotaryKernels(KernelTable &table);
void addKvCacheKernels(KernelTable &table);
void addQuantizedKernels(KernelTable &table);

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_KERNELS_KERNELS_H
