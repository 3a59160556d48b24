//===- LLMDialect.cpp - the llm dialect and its attributes ---------------===//
#include "dialects/LLM/IR/LLMDialect.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/OnnxDataType.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::llmc;

#include "dialects/LLM/IR/LLMDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/LLM/IR/LLMAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/LLM/IR/LLMTypes.cpp.inc"

void LLMDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/LLM/IR/LLMOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
}

void LLMDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/LLM/IR/LLMTypes.cpp.inc"
      >();
}

void LLMDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/LLM/IR/LLMAttrs.cpp.inc"
      >();
}

Operation *LLMDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  if (isa<UnitAttr>(value) && isa<NoneType>(type))
    return builder.create<NoneOp>(loc);
  if (auto elements = dyn_cast<ElementsAttr>(value))
    if (elements.getType() == type)
      return builder.create<ConstantOp>(loc, elements);
  return nullptr;
}

//===----------------------------------------------------------------------===//
// #llm.dims
//===----------------------------------------------------------------------===//

// #llm.dims<"batch", ?, "seq">
Attribute DimsAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> names;
  MLIRContext *ctx = parser.getContext();
  if (parser.parseLess())
    return {};
  auto parseOne = [&]() -> ParseResult {
    if (succeeded(parser.parseOptionalQuestion())) {
      names.push_back(StringAttr::get(ctx, ""));
      return success();
    }
    std::string name;
    if (parser.parseString(&name))
      return failure();
    if (name.empty())
      return parser.emitError(parser.getCurrentLocation(),
                              "a dimension name must not be empty; use ? for none");
    names.push_back(StringAttr::get(ctx, name));
    return success();
  };
  if (parser.parseCommaSeparatedList(parseOne) || parser.parseGreater())
    return {};
  return DimsAttr::getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                              ctx, names);
}

void DimsAttr::print(AsmPrinter &printer) const {
  printer << "<";
  llvm::interleaveComma(getNames(), printer, [&](StringAttr name) {
    if (!name || name.getValue().empty())
      printer << "?";
    else
      printer << "\"" << name.getValue() << "\"";
  });
  printer << ">";
}

LogicalResult DimsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> names) {
  if (names.empty())
    return emitError() << "#llm.dims needs one entry per dimension";
  for (StringAttr name : names)
    if (!name)
      return emitError() << "#llm.dims entries must be strings or ?";
  return success();
}

LogicalResult
DimsAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                         function_ref<InFlightDiagnostic()> emitError) const {
  if (getNames().size() != shape.size())
    return emitError() << "#llm.dims has " << getNames().size()
                       << " entries for a tensor of rank " << shape.size();
  for (auto [size, name] : llvm::zip(shape, getNames()))
    if (!ShapedType::isDynamic(size) && !name.getValue().empty())
      return emitError() << "#llm.dims names static dimension of size " << size
                         << " ('" << name.getValue() << "'); only dynamic ones have names";
  return success();
}

//===----------------------------------------------------------------------===//
// ONNX data types
//===----------------------------------------------------------------------===//

Type mlir::llmc::getElementTypeForOnnx(MLIRContext *ctx, int32_t code) {
  Builder b(ctx);
  switch (OnnxDataType(code)) {
  case OnnxDataType::Float: return b.getF32Type();
  case OnnxDataType::UInt8: return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case OnnxDataType::Int8: return b.getIntegerType(8);
  case OnnxDataType::UInt16: return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case OnnxDataType::Int16: return b.getIntegerType(16);
  case OnnxDataType::Int32: return b.getIntegerType(32);
  case OnnxDataType::Int64: return b.getIntegerType(64);
  case OnnxDataType::Bool: return b.getI1Type();
  case OnnxDataType::Float16: return b.getF16Type();
  case OnnxDataType::Double: return b.getF64Type();
  case OnnxDataType::UInt32: return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case OnnxDataType::UInt64: return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case OnnxDataType::BFloat16: return b.getBF16Type();
  case OnnxDataType::Float8E4M3FN: return b.getFloat8E4M3FNType();
  case OnnxDataType::Float8E4M3FNUZ: return b.getFloat8E4M3FNUZType();
  case OnnxDataType::Float8E5M2: return b.getFloat8E5M2Type();
  case OnnxDataType::Float8E5M2FNUZ: return b.getFloat8E5M2FNUZType();
  case OnnxDataType::UInt4: return IntegerType::get(ctx, 4, IntegerType::Unsigned);
  case OnnxDataType::Int4: return b.getIntegerType(4);
  case OnnxDataType::Float4E2M1:
    ctx->getOrLoadDialect<LLMDialect>();
    return Float4E2M1Type::get(ctx);
  case OnnxDataType::Float8E8M0:
    ctx->getOrLoadDialect<LLMDialect>();
    return Float8E8M0Type::get(ctx);
  case OnnxDataType::UInt2: return IntegerType::get(ctx, 2, IntegerType::Unsigned);
  case OnnxDataType::Int2: return b.getIntegerType(2);
  default: return {};
  }
}

int32_t mlir::llmc::getOnnxCodeForElementType(Type type) {
  for (int32_t code = 1;; ++code) {
    const OnnxDataTypeInfo *info = lookupOnnxDataType(code);
    if (!info)
      return 0;
    if (info->supported && getElementTypeForOnnx(type.getContext(), code) == type)
      return code;
  }
}
