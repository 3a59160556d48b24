//===- EmitCommon.h - what the CPU and CUDA code generators share ----------===//
//
// Facts about the compiled entry points that both emitters read (where a
// cache update chain starts, which slices are segments of their input, the
// weights a call reads), the spelling helpers of the emitted source, and
// weights.bin's writer (equal bytes stored once).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_EMITCOMMON_H
#define LLMC_COMPILER_CODEGEN_EMITCOMMON_H

#include "compiler/Codegen/CPU/EmitCpp.h"
#include "passes/StorageFacts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlir::llmc::codegen {

/// "{1, 8, 256}".
std::string shapeExpr(llvm::ArrayRef<int64_t> dims);
/// The batch of a strided product as both targets' layout structs take it:
/// "rank, {dims}, {A's strides}, {B's strides}", each list padded to
/// StridedMatmul::kStridedBatchDims (dims with 1, strides with 0).
std::string stridedBatchFields(const StridedMatmul &s);
/// "f32[1, 8, 256]" for comments.
std::string describeType(Type type);
/// A C++ string literal.
std::string quote(llvm::StringRef s);
/// The emitted spelling of an element type ("DType::Float", or
/// "DType(<ONNX code>)" for the rarer ones); of a tensor type's elements.
std::string dtypeExpr(::llmc::cpu::DType t);
std::string dtypeExpr(Type t);
/// "node (op)" for messages.
std::string nodeName(Operation *op);
/// The attributes a reference kernel reads from `op` (all but llmc's own,
/// "llm.*"), by name.
DictionaryAttr kernelAttributes(Operation *op);
/// The C++ expression of one attribute's value for a reference kernel
/// (runtime/src/model/Attributes.h: intAttr(2), stringsAttr({...}), ...);
/// a tensor value is `tensor(value)`'s expression, an error from it is
/// returned.
llvm::Expected<std::string>
attributeExpr(Operation *op, NamedAttribute a,
              llvm::function_ref<llvm::Expected<std::string>(ElementsAttr)> tensor);
/// Bytes of a static tensor type (0 otherwise).
int64_t bytesOf(Type t);
/// Adds the layer of `quantized` (an llm.quantized_linear or
/// llm.quantized_embedding) to model.quantized (its scheme and bytes, for
/// the manifest) unless `recorded` holds it already (each entry point has
/// its own equal constants: one record per layer). `storedBytes`: what
/// its values, scales and zero points take in weights.bin when the target
/// stores them in another form (-1: as their types say).
void recordQuantizedLayer(Operation *quantized, CpuModel &model,
                          std::set<std::string> &recorded, int64_t storedBytes = -1);
/// The bytes of weights one call of `f` reads (every constant it uses, but
/// only the rows an embedding gathers); `stored` gives the bytes of the
/// constants a target stores in another form than their type (packed).
int64_t weightBytesRead(func::FuncOp f,
                        const llvm::DenseMap<Attribute, int64_t> *stored = nullptr);

/// Whether everything that reads the cache `v` takes its capacity from the
/// tensor at run time (see model_abi.h's any_capacity).
bool readsCapacityAtRunTime(Value v);
bool isStatic(Type t);

/// A static export's cache write: an onnx.tensor_scatter (static shapes,
/// linear mode, i64 write_indices) over a cache argument of the entry
/// point, whose result llm.cache_update then writes whole into that same
/// cache at row 0 (the present output llmc keeps in the session's cache),
/// where nothing else reads the cache as it was. The scatter may then
/// write the cache in place, and the update has nothing to copy. The
/// (scatter, update) pairs of `block`.
llvm::SmallVector<std::pair<Operation *, Operation *>> inPlaceScatters(Block &block);

/// The module's functions in the order the artifact lists them: prefill
/// buckets by batch and length, then decode by batch.
llvm::SmallVector<func::FuncOp> entryFunctionsInOrder(ModuleOp module);

/// An entry point's signature: (tokens [batch, seq], start_pos, caches...),
/// every cache a static [batch, heads, capacity, head_dim].
struct EntrySignature {
  CpuModel::Entry entry; // name, decode, batch, seq
  std::vector<CpuModel::Cache> caches;
  bool tokens32 = false; // the model takes i32 ids
};
/// Reads `f`'s signature (i32 tokens are an error unless `allowI32Tokens`).
llvm::Expected<EntrySignature> entrySignature(func::FuncOp f, bool allowI32Tokens);
/// The first entry's caches become the model's; a later entry's must equal
/// them.
llvm::Error takeCaches(CpuModel &model, const std::vector<CpuModel::Cache> &caches,
                       llvm::StringRef fname);
/// The operations at the end of an entry that make the logits from the
/// hidden state position by position (the final norm, lm_head, a softcap, a
/// cast): with them known, an entry computes the logits of only the
/// positions its caller asks for (model ABI run_rows), a bucket's padding
/// and a prompt's earlier positions skipped.
struct LogitsTail {
  Value input;                     // the hidden state [B, S, H] they read
  llvm::DenseSet<Operation *> ops; // top-level operations of the entry
};
/// The tail that makes entry `f`'s logits (f's [batch, seq] entry), or
/// nothing when they do not end in one with a linear layer.
std::optional<LogitsTail> logitsTail(func::FuncOp f, int64_t batch, int64_t seq);

/// The comment at the top of a generated file listing the entry points.
void writeEntryComment(llvm::raw_ostream &os, const CpuModel &model);
/// struct Model's tables for the ABI: kNumEntries, kEntries, kFns (entry
/// functions returning `fnResult`), kNumCaches, kCaches, kWeightsBytes,
/// kVocab.
void writeAbiTables(llvm::raw_ostream &os, const CpuModel &model, llvm::StringRef fnResult);

/// Pads weights.bin to 64 bytes and records its sha256.
void finishWeights(CpuModel &model);

/// weights.bin as it is written: blobs at 64-byte offsets, equal bytes
/// stored once (every entry's fusion builds its own, equal, merged weights).
class WeightsWriter {
public:
  explicit WeightsWriter(CpuModel &model) : model(model) {}
  /// Where `bytes` lie in weights.bin (under the first `name` that stored them).
  size_t store(llvm::StringRef bytes, llvm::StringRef name);

private:
  CpuModel &model;
  llvm::DenseMap<uint64_t, llvm::SmallVector<size_t, 1>> byHash;
};

} // namespace mlir::llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_EMITCOMMON_H
