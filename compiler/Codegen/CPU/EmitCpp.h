//===- EmitCpp.h - C++ for the CPU from the compiled entry points ---------===//
//
// Turns the module llmc-pipeline leaves (prefill_b<B>_s<S> and decode_b<B>
// functions over static shapes, fused regions, cache updates) into one C++
// source that implements llmc_model_abi (runtime/include/llmc/model_abi.h)
// on top of runtime/src/model/ModelSupport.h, plus the weights.bin bytes it
// reads. Every constant goes to weights.bin (64-byte aligned, deduplicated,
// in first-use order, so the same module gives the same bytes).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_CPU_EMITCPP_H
#define LLMC_COMPILER_CODEGEN_CPU_EMITCPP_H

#include "runtime/src/cpu/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace mlir::llmc {

struct CpuModel {
  struct Entry {
    std::string name;
    bool decode = false;
    int64_t batch = 0, seq = 0;
    // What its code does, for --stats and the manifest.
    int64_t kernelCalls = 0;   // reference-kernel calls
    int64_t views = 0;         // reshapes that move no data
    int64_t cacheUpdates = 0;  // in place
    int64_t fusedRegions = 0;  // llm.fused regions (one kernel each in the plan)
    // Bytes of weights one call reads: every weight it uses, but only the
    // rows an embedding gathers.
    int64_t weightBytesRead = 0;
    // Bytes of its activations (the arena of its memory plan) as the
    // runtime allocates them.
    int64_t arenaBytes = 0;
    // Its final norm and lm_head run on only the positions whose logits the
    // caller asks for (model ABI run_rows); else every position's logits
    // are computed and the asked rows copied.
    bool logitsRows = false;
    // Floating-point operations of its linear layers (2 x M x N x K each): of
    // those outside the logits' tail at the entry's rows, and of the tail's
    // per row asked for (0 without a tail: lm_head is then in the first).
    int64_t linearFlops = 0, logitsFlopsPerRow = 0;
  };
  struct Cache {
    std::string name;
    int64_t heads = 0, capacity = 0, headDim = 0;
    int32_t dtype = 0; // ONNX element type code
    /// Bytes per element (f32, f16/bf16, int8 of llmc-quantize-kv-cache).
    int64_t elementBytes() const {
      return int64_t(::llmc::cpu::storageSize(::llmc::cpu::DType(dtype)));
    }
    /// Bytes of one sequence's cache at the compiled capacity.
    int64_t bytes() const { return heads * capacity * headDim * elementBytes(); }
  };
  // A stored tensor of weights.bin: `name` is the constant it holds (the
  // initializer, or the fused weight built from several).
  struct Blob {
    std::string name;
    int64_t offset = 0, bytes = 0;
  };
  // A quantized linear layer's weight (once, whatever entries use it).
  struct QuantizedTensor {
    std::string name;             // the layer
    int64_t rows = 0, cols = 0;   // N, K
    int64_t bits = 0, groupSize = 0;
    bool zeroPoints = false, int8Activations = false;
    bool embedding = false;       // a token embedding table (rows: the vocabulary)
    int64_t bytes = 0;            // stored: values, scales and zero points
    int64_t floatBytes = 0;       // the same weight at the layer's float type
  };
  std::string target = "cpu"; // or "cuda" (source is then model.cu)
  std::string source;         // model.cpp
  std::vector<char> weights;  // weights.bin
  std::vector<Blob> blobs;    // in offset order
  std::vector<QuantizedTensor> quantized;
  std::string weightsSha256;  // hex
  std::vector<Entry> entries;
  std::vector<Cache> caches;
  int64_t vocab = 0;
  int64_t numWeights = 0;
  // Every entry reads the caches' capacity at run time (see model_abi.h's
  // any_capacity): sessions may allocate fewer positions.
  bool anyCapacity = false;
  // The CUDA target's operations that run on the host (runtime/src/model/
  // cuda/HostSteps.h), by kind: libmodel.so then links the CPU kernels.
  std::set<std::string> hostOperations;
};

/// Emits the model; an error names the first operation or signature it
/// cannot compile.
llvm::Expected<CpuModel> emitCpuModel(ModuleOp module, llvm::StringRef llmcVersion);

} // namespace mlir::llmc

#endif // LLMC_COMPILER_CODEGEN_CPU_EMITCPP_H
