//===- QuantizeWeights.cpp - weight-only int8/int4 linear layers ----------===//
//
// Rounds the constant weights of llm.linear to 8 or 4 bits (nearest, per
// output channel or per group along K, symmetric or with zero points) and
// rewrites the layer as llm.quantized_linear. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "passes/BuildHelpers.h"
#include "passes/KernelBridge.h"
#include "passes/Passes.h"

#include "dialects/LLM/IR/LLMOps.h"

#include "llvm/ADT/SetVector.h"

#include <cmath>

namespace mlir::llmc {
#define GEN_PASS_DEF_QUANTIZEWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

/// One weight [N, K] quantized: q [N, G, gs * bits / 8], scales [N, G],
/// zero points [N, G] (empty when symmetric).
struct Quantized {
  std::vector<uint8_t> q, zeroPoints;
  std::vector<float> scales;
};

Quantized quantize(const std::vector<float> &w, int64_t N, int64_t K, int64_t bits, int64_t gs,
                   bool asymmetric) {
  int64_t G = K / gs, levels = int64_t(1) << bits, half = levels / 2;
  Quantized out;
  out.q.assign(size_t(N * K * bits / 8), 0);
  out.scales.assign(size_t(N * G), 0.f);
  if (asymmetric)
    out.zeroPoints.assign(size_t(N * G), 0);
  std::vector<int64_t> values(static_cast<size_t>(gs));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      const float *v = w.data() + n * K + g * gs;
      float scale = 0;
      int64_t zero = half;
      if (asymmetric) {
        // [min, max] widened to hold 0, so zeros (and padding) stay exact.
        float lo = 0, hi = 0;
        for (int64_t i = 0; i < gs; ++i)
          lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
        scale = (hi - lo) / float(levels - 1);
        zero = scale > 0 ? std::clamp<int64_t>(int64_t(std::nearbyint(-lo / scale)), 0, levels - 1)
                         : 0;
        out.zeroPoints[size_t(n * G + g)] = uint8_t(zero);
      } else {
        // The value of largest magnitude maps to -2^(bits-1) (the whole
        // signed range used).
        float peak = 0;
        for (int64_t i = 0; i < gs; ++i)
          if (std::fabs(v[i]) > std::fabs(peak))
            peak = v[i];
        scale = peak / float(-half);
      }
      float inv = scale != 0 ? 1.f / scale : 0.f;
      for (int64_t i = 0; i < gs; ++i) {
        int64_t r = int64_t(std::nearbyint(v[i] * inv)) + zero;
        values[size_t(i)] = std::clamp<int64_t>(r, 0, levels - 1);
      }
      out.scales[size_t(n * G + g)] = scale;
      uint8_t *dst = out.q.data() + (n * K + g * gs) * bits / 8;
      for (int64_t i = 0; i < gs; ++i) {
        if (bits == 8)
          dst[i] = uint8_t(values[size_t(i)]);
        else
          dst[i / 2] |= uint8_t(values[size_t(i)] << ((i % 2) * 4));
      }
    }
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

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (bits != 4 && bits != 8) {
      f.emitError("llmc-quantize-weights: bits must be 4 or 8, got ") << bits;
      return signalPassFailure();
    }
    if (groupSize < 0 || (bits == 4 && groupSize % 2 != 0)) {
      f.emitError("llmc-quantize-weights: group-size must be 0 (per channel) or a positive ")
          << (bits == 4 ? "even " : "") << "number, got " << groupSize;
      return signalPassFailure();
    }
    SmallVector<LinearOp> linears;
    f.walk([&](LinearOp l) { linears.push_back(l); });
    for (LinearOp l : linears) {
      auto c = l.getWeight().getDefiningOp<ConstantOp>();
      if (!c || skipped(l, f))
        continue;
      auto type = cast<RankedTensorType>(c.getType());
      Type element = type.getElementType();
      if (!element.isF32() && !element.isF16() && !element.isBF16()) {
        l.emitError("llmc-quantize-weights: weights of ")
            << element << " cannot be quantized (f32, f16 or bf16)";
        return signalPassFailure();
      }
      int64_t N = type.getDimSize(0), K = type.getDimSize(1);
      int64_t gs = groupSize == 0 ? K : groupSize;
      if (K % gs != 0) {
        l.emitError("llmc-quantize-weights: group size ")
            << gs << " does not divide K = " << K << " of the weight " << type
            << " (choose a group size that divides every layer's input features)";
        return signalPassFailure();
      }
      if (bits == 4 && gs % 2 != 0) {
        l.emitError("llmc-quantize-weights: 4-bit groups must hold an even number of values, "
                    "K = ")
            << K;
        return signalPassFailure();
      }
      auto t = constantTensor(c.getValue());
      if (!t) {
        l.emitError("llmc-quantize-weights: ") << llvm::toString(t.takeError());
        return signalPassFailure();
      }
      std::vector<float> w(size_t(N * K));
      for (int64_t i = 0; i < N * K; ++i)
        w[size_t(i)] = float(cpu::floatElement(*t, i));
      Quantized qz = quantize(w, N, K, bits, gs, asymmetric);
      OpBuilder b(l);
      Location loc = l.getLoc();
      auto u8 = IntegerType::get(b.getContext(), 8, IntegerType::Unsigned);
      int64_t G = K / gs;
      auto bytes = [](const auto &v) {
        return ArrayRef<char>(reinterpret_cast<const char *>(v.data()),
                              v.size() * sizeof(v[0]));
      };
      Value q = blobConstant(b, loc, RankedTensorType::get({N, G, gs * bits / 8}, u8), bytes(qz.q),
                             "quantized_weight");
      Value scales = blobConstant(b, loc, RankedTensorType::get({N, G}, b.getF32Type()),
                                  bytes(qz.scales), "quantized_scales");
      Value zp = asymmetric ? blobConstant(b, loc, RankedTensorType::get({N, G}, u8),
                                           bytes(qz.zeroPoints), "quantized_zero_points")
                            : b.create<NoneOp>(loc).getResult();
      Value y = createOp<QuantizedLinearOp>(
          b, loc, {l.getX(), q, scales, zp, l.getBias()},
          {b.getNamedAttr("bits", b.getI64IntegerAttr(bits)),
           b.getNamedAttr("group_size", b.getI64IntegerAttr(gs)),
           b.getNamedAttr("int8_activations", b.getBoolAttr(int8Activations))});
      l.getResult().replaceAllUsesWith(y);
      l.erase();
      if (c->use_empty())
        c.erase();
    }
  }

  bool skipped(LinearOp l, func::FuncOp f) {
    std::string where = locationName(l.getLoc());
    for (const std::string &s : skip) {
      if (s == "lm_head" ? feedsLogits(l, f) : where.find(s) != std::string::npos)
        return true;
    }
    return false;
  }
};

} // namespace
