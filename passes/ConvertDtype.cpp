//===- ConvertDtype.cpp - a function's f32 computation in f16/bf16 --------===//
#include "passes/KernelBridge.h"
#include "passes/Passes.h"
#include "runtime/src/cpu/Numeric.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

#include "mlir/IR/DialectResourceBlobManager.h"

namespace mlir::llmc {
#define GEN_PASS_DEF_CONVERTDTYPEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

struct ConvertDtypePass : mlir::llmc::impl::ConvertDtypePassBase<ConvertDtypePass> {
  using ConvertDtypePassBase::ConvertDtypePassBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    MLIRContext *ctx = f.getContext();
    Type target;
    int64_t code = 0; // ONNX element type code, for casts
    if (dtype == "f32")
      return;
    if (dtype == "f16")
      target = Float16Type::get(ctx), code = 10;
    else if (dtype == "bf16")
      target = BFloat16Type::get(ctx), code = 16;
    else {
      f.emitError("llmc-convert-dtype: dtype must be f32, f16 or bf16, not '") << dtype << "'";
      return signalPassFailure();
    }
    auto convertType = [&](Type t) -> Type {
      auto r = dyn_cast<RankedTensorType>(t);
      if (!r || !r.getElementType().isF32())
        return t;
      return RankedTensorType::get(r.getShape(), target, r.getEncoding());
    };
    Block &body = f.getBody().front();
    // Results other than caches (the logits) keep f32: cast back at return.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<bool> castBack;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      auto name = f.getResultAttrOfType<StringAttr>(i, "llm.name");
      castBack.push_back(getElementTypeOrSelf(ret.getOperand(i).getType()).isF32() &&
                         !(name && name.getValue().starts_with("cache.")));
    }
    // What llmc-insert-kv-cache marks llm.keep_f32 (the token history of
    // the stateless fallback: ids in f32) keeps its type.
    for (BlockArgument a : body.getArguments())
      if (!f.getArgAttr(a.getArgNumber(), "llm.keep_f32"))
        a.setType(convertType(a.getType()));
    SmallVector<Operation *> ops;
    f.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      if (auto c = dyn_cast<ConstantOp>(op)) {
        if (!getElementTypeOrSelf(c.getType()).isF32())
          continue;
        // The scales of quantized weights stay f32 (the kernels read f32).
        if (!c->use_empty() && llvm::all_of(c->getUses(), [](OpOperand &u) {
              return isa<QuantizedLinearOp>(u.getOwner()) && u.getOperandNumber() == 2;
            }))
          continue;
        auto t = constantTensor(c.getValue());
        if (!t) {
          c.emitError("llmc-convert-dtype: ") << llvm::toString(t.takeError());
          return signalPassFailure();
        }
        std::vector<uint16_t> bits(size_t(t->numel()));
        for (size_t i = 0; i < bits.size(); ++i) {
          float v = t->data<float>()[i];
          bits[i] = code == 10 ? cpu::floatToHalf(v) : cpu::floatToBf16(v);
        }
        auto type = cast<RankedTensorType>(convertType(c.getType()));
        OpBuilder b(c);
        ArrayRef<char> raw(reinterpret_cast<const char *>(bits.data()), bits.size() * 2);
        ElementsAttr attr = DenseResourceElementsAttr::get(
            type, "converted", HeapAsmResourceBlob::allocateAndCopyWithAlign(raw, 64));
        c.getResult().replaceAllUsesWith(b.create<ConstantOp>(c.getLoc(), attr).getResult());
        c.erase();
        continue;
      }
      if (op->hasAttr("llm.keep_f32"))
        continue;
      if (op->getName().getStringRef() == "llm.onnx.cast")
        if (auto to = op->getAttrOfType<IntegerAttr>("to"); to && to.getInt() == 1)
          op->setAttr("to", IntegerAttr::get(to.getType(), code));
      for (Value r : op->getResults())
        r.setType(convertType(r.getType()));
    }
    OpBuilder rb(ret);
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      if (castBack[i]) {
        Value v = ret.getOperand(i);
        auto t = cast<RankedTensorType>(v.getType());
        Value back = rb.create<OnnxCastOp>(
                           ret.getLoc(), TypeRange{RankedTensorType::get(t.getShape(), rb.getF32Type(), t.getEncoding())},
                           ValueRange{v},
                           ArrayRef<NamedAttribute>{rb.getNamedAttr("to", rb.getI64IntegerAttr(1)),
                                                    rb.getNamedAttr("saturate", rb.getI64IntegerAttr(1)),
                                                    rb.getNamedAttr("round_mode", rb.getStringAttr("up"))})
                         .getResult();
        ret.setOperand(i, back);
      }
    f.setFunctionType(FunctionType::get(ctx, body.getArgumentTypes(), ret.getOperandTypes()));
    if (failed(refineResultTypes(f)))
      signalPassFailure();
  }
};

} // namespace
