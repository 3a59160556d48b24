//===- EmitCudaInternal.h - The CUDA emitter's shared state --------*- C++ -*-===//
//
// Internal to compiler/Codegen/CUDA: the emitter class (EmitCuda.cpp drives
// it over the entry points and plans the arena, Templates.cpp emits the
// operations that call runtime/src/model/cuda's kernel templates,
// GeneratedKernels.cpp writes kernels from element-wise operations and
// copies) and the small helpers they share.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_CUDA_EMITCUDAINTERNAL_H
#define LLMC_COMPILER_CODEGEN_CUDA_EMITCUDAINTERNAL_H

#include "compiler/Codegen/CPU/EmitCpp.h"
#include "compiler/Codegen/EmitCommon.h"
#include "compiler/Codegen/Pointwise.h"
#include "dialects/LLM/IR/LLMOps.h"
#include "passes/BuildHelpers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace mlir::llmc::cudagen {

using namespace mlir::llmc::codegen;



/// Where a value lives.
struct Ref {
  enum Kind { None, Arena, Weight, Cache, Tokens, Pos } kind = None;
  int buffer = -1;    // Arena
  int64_t offset = 0; // bytes into the buffer or weights.bin
  int cache = -1;     // Cache
};

/// The C++ storage type of an element type ("" when there is none).
inline std::string cxxType(Type t) { return storageType(t, "bool"); }

inline int64_t elemBytes(Type t) {
  t = getElementTypeOrSelf(t);
  return t.isInteger(1) ? 1 : int64_t(t.getIntOrFloatBitWidth() / 8);
}

/// The llm.gelu of a GELU-gated product `op`, gelu(gate) * up (an onnx.mul
/// whose GELU it alone reads), with its gate and up; null otherwise.
GeluOp geluGate(Operation *op, Value *gate = nullptr, Value *up = nullptr);

class CudaEmitter {
public:
  explicit CudaEmitter(ModuleOp module) : module(module) {}
  llvm::Expected<CpuModel> run(llvm::StringRef version);

private:
  struct Buffer {
    int64_t bytes = 0;
    int first = 0, last = 0;
    int64_t offset = -1;
  };

  llvm::Error emitFunction(func::FuncOp f);
  /// prepareBlock, then emitOps.
  llvm::Error emitBlock(Block &block, CpuModel::Entry &stats);
  /// What the block's operations fold into which (folded, chains, pairs,
  /// ...), before any is emitted.
  void prepareBlock(Block &block);
  /// The block's operations that are not folded into others, but `skip`.
  llvm::Error emitOps(Block &block, CpuModel::Entry &stats,
                      const llvm::DenseSet<Operation *> *skip = nullptr);
  /// The logits' tail of a prefill entry (codegen::logitsTail) on only the
  /// positions the caller asks for (a.row0, a.rows): one position a
  /// sequence as a [B, 1] copy of the tail, else chunks of up to
  /// kLogitsChunk positions as a [B, chunk] copy in a loop; each selects
  /// its rows of the hidden state (selectRows) and stores its logits
  /// (storeLogitRows). The hidden state must be stored in the arena.
  llvm::Error emitLogitRows(func::FuncOp f, const LogitsTail &tail, Value logits,
                            CpuModel::Entry &entry);
  /// One such copy of the tail at `rows` positions a sequence from
  /// position `first` (a C++ expression).
  llvm::Error emitTailAt(func::FuncOp f, const LogitsTail &tail, Value logits, int64_t rows,
                         const std::string &first, CpuModel::Entry &stats);
  /// Whether nothing outside the tail was folded into it or it into
  /// something outside (element-wise runs, pairs).
  bool tailApart(const LogitsTail &tail);
  static constexpr int64_t kLogitsChunk = 64;
  llvm::Error emitOp(Operation *op, CpuModel::Entry &stats);
  /// A fused region that is a decode attention (partial, combine, maybe a
  /// cast): its partial op, with `result` the region's value; else null.
  DecodeAttentionPartialOp decodeAttentionOf(FusedOp fused, Value &result);
  bool emitDecodeAttention(FusedOp fused, CpuModel::Entry &stats, llvm::Error &err);
  /// An element-wise operation, or the run of them that ends at `last`,
  /// as one generated kernel.
  llvm::Error emitPointwise(Operation *last, CpuModel::Entry &stats);
  /// onnx.gather (any axis, i32/i64 indices, negative ones counted from the
  /// end) as a generated kernel; an index out of range records
  /// kTokenOutOfRange and reads element 0.
  llvm::Error emitGather(Operation *op, CpuModel::Entry &stats);
  /// onnx.slice (a view when it is one segment of a value that does not
  /// change), onnx.transpose, onnx.split and onnx.concat as copy kernels.
  llvm::Error emitCopy(Operation *op, CpuModel::Entry &stats);
  /// The copy kernels of a transpose, slice, split or concat (codegen::copyParts).
  llvm::Error emitCopyParts(Operation *op, CpuModel::Entry &stats);
  /// A segment of x (a slice's or a split part's) as a view of x's storage:
  /// one contiguous range of a value that does not change, or one column
  /// range of a GEMV's result written range by range (outputSegments).
  std::optional<Ref> segmentView(Value x, const SliceSegments &seg);
  /// llm.linear and llm.quantized_linear: gemv / qgemv for decode-sized
  /// rows (split-K when the columns are few), gemm / qgemm otherwise, with
  /// a following residual add folded in.
  llvm::Error emitLinear(Operation *op, CpuModel::Entry &stats);
  /// Whether `op` is an llm.rms_norm (or an llm.swiglu not ending a run of
  /// element-wise operations, or a GELU-gated product: geluGate) read only
  /// by decode GEMVs over constant weights (at most kGemvMaxRows rows; a
  /// norm's of its weight type; its output within normGemv's shared
  /// memory): then normGemv (swigluGemv, gatedGemv) applies it as each
  /// block reads x, and `op` writes nothing.
  bool foldsIntoGemv(Operation *op);
  /// For an llm.rms_norm whose only reader is an onnx.add right after it
  /// (past constants and views) of a value already stored: that value,
  /// which rmsNorm adds to the norm in its launch (`after`), writing the
  /// add's result. Null otherwise.
  Value normAddedAfter(Operation *op);
  /// Whether `op` is an llm.rms_norm that runs as a launch of its own (not
  /// folded into a GEMV, no add after it): two such in a row are one
  /// launch (rmsNormPair).
  bool pairableNorm(Operation *op);
  /// For a linear's result `y` ([rows, .., n], rows > 1) whose every
  /// reader (through fused regions) is a slice of whole columns along the
  /// last axis, or a split along it, the slices' and parts' column ranges
  /// cutting [0, n) into 2 or 3: their starts after the first (gemv's
  /// segment ends); else none. The GEMV then writes each range as a [rows,
  /// width] block of its own (a prefill's gemm or qgemm: a launch per
  /// range), and the slices and parts become views (segmented).
  SmallVector<int64_t, 2> outputSegments(Value y, int64_t rows, int64_t n);
  /// For an embedding gather read only by an onnx.mul by one constant
  /// element of the gather's type, of the gather's result type: that Mul
  /// (its launch scales each value, embedding's `scale`); else null.
  static Operation *embeddingScale(Operation *gather);
  /// Where an embedding gather writes (defined now): its result, or the
  /// Mul's it takes (embeddingScales), with the launch's last argument
  /// then (", " and the scale's pointer; the constant placed now if it
  /// comes later; else "").
  struct GatherOut {
    Value value;
    std::string scaleArg;
  };
  llvm::Expected<GatherOut> gatherOut(Operation *gather);
  /// Whether rope's operands are what the rope template takes.
  bool ropeSupported(RopeOp r);
  /// A cache update's source: the value read, its S and its strides per
  /// batch, token and head (a folded transpose's input read in place).
  struct CacheSource {
    Value value;
    int64_t s, sb, ss, sh;
  };
  CacheSource cacheUpdateSource(Operation *op);
  /// Whether `second`, the next operation after `first` that is not a view,
  /// can run in one launch with it (ropePair, cacheWritePair, rmsNormPair)
  /// at second's place: the same kind over the same shape, tables and
  /// position (norms: the same types and row length), and nothing reading
  /// first's results before second.
  bool pairable(Operation *first, Operation *second);
  /// Whether the rope pair ending at `ropes` and the cache-write pair ending
  /// at `caches` (the next operations that are not views) are an
  /// attention's queries and keys roped and its keys and values cached,
  /// the keys' write reading the roped keys as [B, S, Hkv, D]: one
  /// ropeCacheWrite launch at `caches`.
  bool ropeCacheFusable(Operation *ropes, Operation *caches);
  /// For such a rope-and-cache-write launch at `caches` (ropeCaches), or a
  /// rope pair at `ropes` followed by two int8 cache writes (llm.quantized_
  /// cache_update) of the keys it ropes and of values: when the next
  /// operation that is not a view is the decode attention over the caches
  /// they write (one token, tables of the queries' type), reading the
  /// roped queries (through views) as nothing else does, and nothing but
  /// the keys' write reads the roped keys, the attention's own launch does
  /// the ropes and writes (decodeAttentionRope): records it in
  /// attentionRopes, and the operations it replaces in intoAttention.
  void ropeIntoAttention(Operation *caches);
  void ropeInt8IntoAttention(Operation *ropes);
  /// The checks both share, given the ropes and the writes (keys', values').
  bool ropesIntoAttention(RopeOp queries, RopeOp keys, Operation *keysWrite,
                          Operation *valuesWrite, Operation *last);
  /// For such an attention: the heads' norms before its ropes
  /// (headNormsBefore), which the attention's launch then takes too
  /// (HeadNorms), recorded in attentionRopes[fused]; they launch nothing.
  void headNormsIntoAttention(Operation *fused);
  /// The RMS norms of the heads the ropes `queries` and `keys` read
  /// (through views), when both are such norms (Qwen 3's and Gemma 3's)
  /// that only their rope reads, over the heads' D channels, of the ropes'
  /// type, and paired with nothing but each other: recorded as folded into
  /// the launch of the ropes (a decode attention's, or ropeCacheWrite's),
  /// which reads their inputs; else none.
  std::pair<RmsNormOp, RmsNormOp> headNormsBefore(RopeOp queries, RopeOp keys);
  /// Such norms as the kernels' HeadNorms<t> argument (weights, epsilons,
  /// weight offsets).
  std::string headNormsArg(const std::string &t, RmsNormOp queries, RmsNormOp keys) {
    return llvm::formatv("HeadNorms<{0}>{{{1}, {2}, {3:e9}f, {4:e9}f, {5:e9}f, {6:e9}f}", t,
                         ptr(queries.getWeight()), ptr(keys.getWeight()),
                         queries.getEpsilon().convertToFloat(), keys.getEpsilon().convertToFloat(),
                         queries.getWeightOffset().convertToFloat(),
                         keys.getWeightOffset().convertToFloat())
        .str();
  }
  /// Whether a rope's positions are [B, S] per sequence (else [1, S],
  /// shared by the batch).
  static bool ropePositionsPerBatch(RopeOp r);
  /// llm.assert_equal: a kernel that records the first mismatch as
  /// kAssertFailed with the message's index; the value passes through.
  llvm::Error emitAssert(AssertEqualOp check, CpuModel::Entry &stats);
  /// onnx.range of a static length: start + i * delta, read on the device.
  llvm::Error emitRange(Operation *op, CpuModel::Entry &stats);
  /// OnnxOps.cpp: onnx.matmul as a strided product (stridedMatmul: floats,
  /// static shapes, at most 4 batch dimensions), reading a transpose that
  /// only it reads in place (isTransposeReadInPlace); onnx.softmax and
  /// onnx.log_softmax; onnx.tensor_scatter (scatterOnDevice) into the
  /// session's cache in place (scattersInPlace) as a generated kernel.
  bool scatterOnDevice(Operation *op);
  llvm::Error emitMatmul(Operation *op, CpuModel::Entry &stats);
  llvm::Error emitSoftmax(Operation *op, CpuModel::Entry &stats);
  llvm::Error emitTensorScatter(Operation *op, CpuModel::Entry &stats);
  // Host steps (HostSteps.cpp, runtime/src/model/cuda/HostSteps.h).
  /// Whether an operand or result of `op` (or of an operation inside it)
  /// has a run-time shape: `op` then runs on the host.
  static bool hasRunTimeShape(Operation *op);
  /// `op` on the device, or, when the device has no kernel for it (it adds
  /// to `missing`), on the host instead: what the device attempt wrote is
  /// taken back first.
  llvm::Error emitOnDeviceOrHost(Operation *op, CpuModel::Entry &stats);
  /// Whether `op` (an onnx.* operation or an element-wise region) reads
  /// values only the host holds and otherwise nothing but the position, the
  /// token ids and constants of at most kHostConstantBytes: it then runs on
  /// the host too, where its inputs are (two copies fewer).
  bool prefersHost(Operation *op);
  static constexpr int64_t kHostConstantBytes = 4096;
  /// `op` on the host, with the operations deferred to it (the run of
  /// element-wise operations it ends, the first of its pair).
  llvm::Error emitHost(Operation *op, CpuModel::Entry &stats);
  llvm::Error emitHostOp(Operation *op, CpuModel::Entry &stats);
  /// The host tensor holding `v`, copied from the device (or wrapping the
  /// host's weights, token ids or position) when it has none yet.
  llvm::Expected<std::string> hostValue(Value v);
  /// `v`, computed on the host, uploaded into an arena buffer of its own;
  /// its pointer expression as T* (see ptr).
  std::string uploadHost(Value v, const std::string &type);
  /// `v`'s host tensor uploaded into a new arena buffer as `shape` (the
  /// static shape the device reads, checked at run time; the logits': the
  /// entry's [batch, seq, vocab] where their positions have a run-time
  /// size), for the statement being written; `what` names it in errors.
  void uploadAs(Value v, ArrayRef<int64_t> shape, const std::string &what);
  /// A declaration of a new host tensor; its name.
  std::string newHostTensor(Value v) {
    std::string name = "h" + std::to_string(hostCounter++);
    body += "  HostTensor " + name + "; // " + describeType(v.getType()) + "\n";
    hostNames[v] = name;
    return name;
  }

  /// The name of the generated kernel with parameter list and body `k`
  /// ("(...) {\n...}", written into `kernels` under the comment `what` the
  /// first time, LLMC_KERNEL_BEGIN() first as in every kernel).
  std::string kernel(llvm::StringRef what, const std::string &k) {
    auto [it, inserted] = kernelNames.try_emplace(k, "g" + std::to_string(kernelNames.size()));
    if (inserted) {
      size_t open = k.find("{\n") + 2;
      kernels += "// " + what.str() + "\nLLMC_GLOBAL void " + it->second + k.substr(0, open) +
                 "  LLMC_KERNEL_BEGIN();\n" + k.substr(open) + "\n";
    }
    return it->second;
  }
  /// A generated kernel over `iteration` reading `inputs` and writing
  /// `output` as `expr` of x0, x1, ... (after its temporaries); returns
  /// the launch statement.
  std::string generated(llvm::StringRef what, ArrayRef<int64_t> iteration,
                        ArrayRef<std::pair<Access, std::string>> inputs, const Access &output,
                        const std::string &outPtr, const PointwiseExpr &expr);
  /// The same with `expr` alone (a copy's "x0").
  std::string generated(llvm::StringRef what, ArrayRef<int64_t> iteration,
                        ArrayRef<std::pair<Access, std::string>> inputs, const Access &output,
                        const std::string &outPtr, const std::string &expr) {
    PointwiseExpr e;
    e.expr = expr;
    return generated(what, iteration, inputs, output, outPtr, e);
  }

  /// A new arena buffer for `v` (its whole size), made at this statement.
  Ref define(Value v) {
    buffers.push_back({std::max<int64_t>(bytesOf(v.getType()), 1), step, step, -1});
    Ref r;
    r.kind = Ref::Arena;
    r.buffer = int(buffers.size() - 1);
    refs[v] = r;
    return r;
  }
  /// The C++ pointer expression of `v` as T* ("nullptr" for none); marks
  /// its buffer used at this statement.
  std::string ptr(Value v, const std::string &type = "") {
    if (!v || isNone(v))
      return "nullptr";
    auto it = refs.find(v);
    if (it == refs.end())
      return hostNames.count(v) ? uploadHost(v, type) : "/*missing*/nullptr";
    const Ref &r = it->second;
    std::string t = type.empty() ? cxxType(v.getType()) : type;
    switch (r.kind) {
    case Ref::Arena:
      buffers[size_t(r.buffer)].last = std::max(buffers[size_t(r.buffer)].last, step);
      return llvm::formatv("m.at<{0}>(@@B{1}@@ + {2})", t, r.buffer, r.offset).str();
    case Ref::Weight:
      return llvm::formatv("m.weight<{0}>({1})", t, r.offset).str();
    case Ref::Cache:
      return llvm::formatv("static_cast<{0} *>(a.caches[{1}])", t, r.cache).str();
    case Ref::Tokens:
      return "a.tokens";
    case Ref::Pos:
      return "a.pos";
    case Ref::None:
      break;
    }
    return "nullptr";
  }
  /// `v`'s storage: constants go into weights.bin when first read.
  bool known(Value v) { return !v || isNone(v) || refs.count(v) || hostNames.count(v); }
  llvm::Error placeConstant(ConstantOp c);
  std::string sinksPtr(Operation *op);
  void statement(const std::string &text, const std::string &comment) {
    body += "  // " + comment + "\n  LLMC_CUDA_TRY(" + text + ");\n";
    ++step;
  }
  void unsupported(Operation *op, const std::string &why = "") {
    missing.insert(shortName(op).str() + (why.empty() ? "" : " (" + why + ")") + " at " +
                   nodeName(op));
  }
  /// Resolves the arena placeholders of `text` and returns the entry's
  /// arena size.
  int64_t planArena(std::string &text);

  ModuleOp module;
  CpuModel model;
  std::set<std::string> recordedQuantized; // the layers of model.quantized
  WeightsWriter weightsWriter{model};
  std::string body, kernels;
  llvm::DenseMap<Value, Ref> refs;
  std::vector<Buffer> buffers;
  int step = 0;
  llvm::DenseMap<Attribute, int64_t> constantOffsets;
  std::map<std::string, std::string> kernelNames; // body -> name
  llvm::DenseSet<Operation *> folded;
  /// RMS norms applied by the GEMVs that read them
  /// (foldsIntoGemv), by their results.
  llvm::DenseMap<Value, Operation *> foldedInputs;
  /// Arena buffers a GEMV wrote in column ranges (outputSegments): their
  /// rows, columns and range starts, by buffer.
  struct Segmented {
    int64_t rows, n;
    SmallVector<int64_t, 3> starts;
  };
  std::map<int, Segmented> segmented;
  /// The last operation of a run of element-wise ones -> the run, in order.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> chains;
  /// The second of a pair of ropes or cache writes -> the first, deferred to
  /// it (pairable).
  llvm::DenseMap<Operation *, Operation *> pairs;
  /// An attention's ropes and cache writes in one launch (ropeCacheFusable):
  /// its queries' and keys' ropes, and which write caches the roped keys.
  struct RopeCache {
    RopeOp queries, keys;
    Operation *keysWrite;
    /// The query and key heads' norms before the ropes, taken in the same
    /// launch when no decode attention takes the ropes (headNormsBefore),
    /// or null.
    RmsNormOp queriesNorm = {}, keysNorm = {};
  };
  /// The second cache write of such a pair -> what joins it there.
  llvm::DenseMap<Operation *, RopeCache> ropeCaches;
  /// A decode attention's fused region -> the ropes and cache writes its
  /// launch does (ropeIntoAttention); the operations that then launch
  /// nothing (the cache writes still name the caches' results).
  struct AttentionRopes {
    RopeOp queries, keys;
    Operation *keysWrite, *valuesWrite;
    /// The query and key heads' norms before the ropes, taken in the same
    /// launch (headNormsIntoAttention), or null.
    RmsNormOp queriesNorm, keysNorm;
  };
  llvm::DenseMap<Operation *, AttentionRopes> attentionRopes;
  /// An embedding gather (float or quantized) -> the Mul by one constant
  /// element of its type that only it feeds (Gemma's sqrt(hidden)), which
  /// its launch takes (embeddingScale).
  llvm::DenseMap<Operation *, Operation *> embeddingScales;
  llvm::DenseSet<Operation *> intoAttention;
  /// Values with no storage by design: the roped queries and keys such an
  /// attention reads before their rope, and views and region results of
  /// them (an operand with no value that is not one of these is a bug).
  llvm::DenseSet<Value> unstored;
  /// A static export's TensorScatter that writes the session's cache where
  /// it is, and the llm.cache_update that then copies its result whole
  /// into that same cache, which does nothing (emitBlock finds the pairs).
  llvm::DenseSet<Operation *> scattersInPlace, inPlaceUpdates;
  /// cache_update -> the [B, S, H, D] value its transposed update came from.
  llvm::DenseMap<Operation *, Value> transposedUpdates;
  std::set<std::string> missing;
  std::vector<std::string> assertMessages; // llm.assert_equal's, by index
  /// Host tensors by value (host steps), their count, the attribute sets
  /// written so far (by dictionary: the name of the static that holds it),
  /// and whether some entry runs a host step.
  llvm::DenseMap<Value, std::string> hostNames;
  int hostCounter = 0;
  llvm::DenseMap<Attribute, std::string> hostAttributes;
  std::string hostAttributeText; // their definitions, at namespace scope
  bool anyCapacity = true;
  std::string entries; // the entry functions' text
  int64_t arenaBytes = 0, maxTokens = 1;
  /// The most f32 logits one step stores (DeviceModel.h's kLogitsFloats).
  int64_t logitsFloats = 1;
  /// Per entry: whether its logits tail runs apart (emitLogitRows), the
  /// one-position copy reading the position on the device (kLogitRows).
  std::vector<bool> logitRowsOnDevice;
  /// The logits tails' copies at fewer positions (emitTailAt), kept while
  /// the maps above may name their operations.
  std::vector<OwningOpRef<func::FuncOp>> tailCopies;
};

} // namespace mlir::llmc::cudagen

#endif // LLMC_COMPILER_CODEGEN_CUDA_EMITCUDAINTERNAL_H
