//===- QuantizeWeights.cpp - weight-only int8/int4 linear layers ----------===//
//
// Rounds the constant weights of llm.linear to 8 or 4 bits (per output
// channel or per group along K, symmetric or with zero points; to nearest,
// or by GPTQ over calibration statistics) and rewrites the layer as
// llm.quantized_linear. See Passes.td; the arithmetic is
// WeightQuantization.h.
//
//===----------------------------------------------------------------------===//
#include "passes/BuildHelpers.h"
#include "passes/Calibration.h"
#include "passes/KernelBridge.h"
#include "passes/Passes.h"
#include "passes/WeightQuantization.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "runtime/src/cpu/Numeric.h"

#include "llvm/ADT/SetVector.h"

#include <map>
#include <memory>
#include <optional>

namespace mlir::llmc {
#define GEN_PASS_DEF_QUANTIZEWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

/// A constant's elements as f32.
std::vector<float> floatValues(const cpu::Tensor &t) {
  std::vector<float> w(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    w[size_t(i)] = float(cpu::floatElement(t, i));
  return w;
}

/// The constants of a weight of `rows` rows quantized in groups of `gs`:
/// values [rows, G, gs * bits / 8] named `valuesName`, scales [rows, G] in
/// `scaleType` (f32 as computed, else rounded to f16 or bf16), zero points
/// [rows, G] (or none when symmetric).
struct QuantizedOperands {
  Value values, scales, zeroPoints;
};

QuantizedOperands materialize(OpBuilder &b, Location loc, const QuantizedWeight &qz, int64_t rows,
                              int64_t gs, int64_t bits, Type scaleType, StringRef valuesName) {
  auto bytes = [](const auto &v) {
    return ArrayRef<char>(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(v[0]));
  };
  auto u8 = IntegerType::get(b.getContext(), 8, IntegerType::Unsigned);
  int64_t G = int64_t(qz.scales.size()) / rows;
  std::vector<uint16_t> half;
  ArrayRef<char> scaleBytes = bytes(qz.scales);
  if (!scaleType.isF32()) {
    for (float v : qz.scales)
      half.push_back(scaleType.isF16() ? cpu::floatToHalf(v) : cpu::floatToBf16(v));
    scaleBytes = bytes(half);
  }
  QuantizedOperands out;
  out.values =
      blobConstant(b, loc, RankedTensorType::get({rows, G, gs * bits / 8}, u8), bytes(qz.q),
                   valuesName);
  out.scales = blobConstant(b, loc, RankedTensorType::get({rows, G}, scaleType), scaleBytes,
                            "quantized_scales");
  out.zeroPoints = qz.zeroPoints.empty()
                       ? b.create<NoneOp>(loc).getResult()
                       : blobConstant(b, loc, RankedTensorType::get({rows, G}, u8),
                                      bytes(qz.zeroPoints), "quantized_zero_points");
  return out;
}

/// Does `op`'s result reach a result of `f` other than a cache (the logits)?
bool feedsLogits(Operation *op, func::FuncOp f) {
  llvm::SetVector<Operation *> seen;
  SmallVector<std::pair<Operation *, int>> work{{op, 0}};
  while (!work.empty()) {
    auto [cur, depth] = work.pop_back_val();
    for (Value r : cur->getResults())
      for (OpOperand &use : r.getUses()) {
        Operation *user = use.getOwner();
        if (isa<func::ReturnOp>(user)) {
          auto name = f.getResultAttrOfType<StringAttr>(use.getOperandNumber(), "llm.name");
          if (!name || !name.getValue().starts_with("cache."))
            return true;
          continue;
        }
        if (depth < 4 && !isa<LinearOp, AttentionOp>(user) && seen.insert(user))
          work.push_back({user, depth + 1});
      }
  }
  return false;
}

std::string locationName(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string all;
    for (Location l : fused.getLocations())
      all += locationName(l) + ";";
    return all;
  }
  return "";
}

struct QuantizeWeightsPass : mlir::llmc::impl::QuantizeWeightsPassBase<QuantizeWeightsPass> {
  using QuantizeWeightsPassBase::QuantizeWeightsPassBase;

  /// Each distinct weight is quantized once for all the functions (buckets)
  /// that hold it: the buckets' constants share one (uniqued) attribute,
  /// which also fixes the shape and element type.
  std::map<const void *, std::shared_ptr<const QuantizedWeight>> done, doneEmbeddings;
  std::optional<CalibrationStats> stats;
  std::map<int64_t, HessianFactor> factors; // per calibration input

  void runOnOperation() override {
    ModuleOp m = getOperation();
    if (bits != 4 && bits != 8) {
      m.emitError("llmc-quantize-weights: bits must be 4 or 8, got ") << bits;
      return signalPassFailure();
    }
    if (groupSize < 0 || (bits == 4 && groupSize % 2 != 0)) {
      m.emitError("llmc-quantize-weights: group-size must be 0 (per channel) or a positive ")
          << (bits == 4 ? "even " : "") << "number, got " << groupSize;
      return signalPassFailure();
    }
    if (!(damp > 0 && damp < 1)) {
      m.emitError("llmc-quantize-weights: damp must be in (0, 1), got ") << damp;
      return signalPassFailure();
    }
    done.clear(), doneEmbeddings.clear(), factors.clear(), stats.reset();
    if (!calibration.empty()) {
      auto s = CalibrationStats::read(calibration);
      if (!s) {
        m.emitError("llmc-quantize-weights: ") << llvm::toString(s.takeError());
        return signalPassFailure();
      }
      stats = std::move(*s);
    }
    bool ok = true;
    for (auto f : m.getOps<func::FuncOp>())
      if (failed(quantizeFunction(f)) || (embeddings && failed(quantizeEmbeddings(f)))) {
        ok = false;
        break;
      }
    // The later passes need none of it.
    done.clear(), doneEmbeddings.clear(), factors.clear(), stats.reset();
    if (!ok)
      signalPassFailure();
  }

  /// Token embedding tables, rounded to nearest (GPTQ has no Hessian for a
  /// gather): llm.embedding becomes llm.quantized_embedding, its scales in
  /// the table's element type (the result's).
  LogicalResult quantizeEmbeddings(func::FuncOp f) {
    SmallVector<EmbeddingOp> ops;
    f.walk([&](EmbeddingOp e) { ops.push_back(e); });
    for (EmbeddingOp e : ops) {
      auto c = e.getTable().getDefiningOp<ConstantOp>();
      if (!c || skippedName(locationName(e.getLoc()), /*embedding=*/true))
        continue;
      auto type = cast<RankedTensorType>(c.getType());
      Type element = type.getElementType();
      if (type.getRank() != 2 || !type.hasStaticShape())
        continue;
      if (!element.isF32() && !element.isF16() && !element.isBF16())
        return e.emitError("llmc-quantize-weights: an embedding table of ")
               << element << " cannot be quantized (f32, f16 or bf16)";
      int64_t V = type.getDimSize(0), H = type.getDimSize(1);
      int64_t gs = groupSize == 0 ? H : groupSize;
      if (H % gs != 0)
        return e.emitError("llmc-quantize-weights: group size ")
               << gs << " does not divide the hidden size " << H << " of the embedding table "
               << type << " (choose a group size that divides it, or --quant-skip embedding)";
      if (bits == 4 && gs % 2 != 0)
        return e.emitError("llmc-quantize-weights: 4-bit groups must hold an even number of "
                           "values, hidden size ")
               << H << " of the embedding table " << type;
      auto t = constantTensor(c.getValue());
      if (!t)
        return e.emitError("llmc-quantize-weights: ") << llvm::toString(t.takeError());
      auto &qz = doneEmbeddings[c.getValue().getAsOpaquePointer()];
      if (!qz)
        qz = std::make_shared<QuantizedWeight>(
            quantizeNearest(floatValues(*t), V, H, QuantScheme{bits, gs, asymmetric}));
      OpBuilder b(e);
      QuantizedOperands o =
          materialize(b, e.getLoc(), *qz, V, gs, bits, element, "quantized_table");
      Value y = createOp<QuantizedEmbeddingOp>(
          b, e.getLoc(), {o.values, o.scales, o.zeroPoints, e.getIds()},
          {b.getNamedAttr("bits", b.getI64IntegerAttr(bits)),
           b.getNamedAttr("group_size", b.getI64IntegerAttr(gs))});
      e.getResult().replaceAllUsesWith(y);
      e.erase();
      if (c->use_empty())
        c.erase();
    }
    return success();
  }

  LogicalResult quantizeFunction(func::FuncOp f) {
    SmallVector<LinearOp> linears;
    f.walk([&](LinearOp l) { linears.push_back(l); });
    for (LinearOp l : linears) {
      auto c = l.getWeight().getDefiningOp<ConstantOp>();
      if (!c || skipped(l, f))
        continue;
      auto type = cast<RankedTensorType>(c.getType());
      Type element = type.getElementType();
      if (!element.isF32() && !element.isF16() && !element.isBF16())
        return l.emitError("llmc-quantize-weights: weights of ")
               << element << " cannot be quantized (f32, f16 or bf16)";
      int64_t N = type.getDimSize(0), K = type.getDimSize(1);
      int64_t gs = groupSize == 0 ? K : groupSize;
      if (K % gs != 0)
        return l.emitError("llmc-quantize-weights: group size ")
               << gs << " does not divide K = " << K << " of the weight " << type
               << " (choose a group size that divides every layer's input features)";
      if (bits == 4 && gs % 2 != 0)
        return l.emitError("llmc-quantize-weights: 4-bit groups must hold an even number of "
                           "values, K = ")
               << K;
      auto t = constantTensor(c.getValue());
      if (!t)
        return l.emitError("llmc-quantize-weights: ") << llvm::toString(t.takeError());
      auto &qz = done[c.getValue().getAsOpaquePointer()];
      if (!qz) {
        std::vector<float> w = floatValues(*t);
        QuantScheme scheme{bits, gs, asymmetric, /*halfScales=*/bits == 4};
        if (!stats) {
          qz = std::make_shared<QuantizedWeight>(quantizeNearest(w, N, K, scheme));
        } else {
          const CalibrationStats::Layer *layer =
              stats->find(weightFingerprint(storedBytes(*t)), N, K);
          if (!layer)
            return l.emitError("llmc-quantize-weights: the calibration statistics have no "
                               "entry for this layer's weight ")
                   << type << " (were they collected from another model?)";
          auto [it, unfactored] = factors.try_emplace(layer->input);
          if (unfactored) {
            std::vector<double> &gram = stats->inputs[size_t(layer->input)].gram;
            std::string why = factorHessian(gram, K, damp, it->second);
            if (!why.empty())
              return l.emitError("llmc-quantize-weights: ") << why;
            std::vector<double>().swap(gram); // the factor replaces it
          }
          qz = std::make_shared<QuantizedWeight>(quantizeGptq(w, N, K, scheme, it->second));
        }
      }
      OpBuilder b(l);
      QuantizedOperands o =
          materialize(b, l.getLoc(), *qz, N, gs, bits, b.getF32Type(), "quantized_weight");
      Value y = createOp<QuantizedLinearOp>(
          b, l.getLoc(), {l.getX(), o.values, o.scales, o.zeroPoints, l.getBias()},
          {b.getNamedAttr("bits", b.getI64IntegerAttr(bits)),
           b.getNamedAttr("group_size", b.getI64IntegerAttr(gs)),
           b.getNamedAttr("int8_activations", b.getBoolAttr(int8Activations))});
      l.getResult().replaceAllUsesWith(y);
      l.erase();
      if (c->use_empty())
        c.erase();
    }
    return success();
  }

  bool skipped(LinearOp l, func::FuncOp f) {
    for (const std::string &s : skip)
      if (s == "lm_head" && feedsLogits(l, f))
        return true;
    return skippedName(locationName(l.getLoc()));
  }

  /// Whether a --quant-skip substring (not the lm_head rule) names `where`;
  /// "embedding" names every embedding table.
  bool skippedName(const std::string &where, bool embedding = false) {
    for (const std::string &s : skip)
      if ((s != "lm_head" && where.find(s) != std::string::npos) ||
          (embedding && s == "embedding"))
        return true;
    return false;
  }
};

} // namespace
