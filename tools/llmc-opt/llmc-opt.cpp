//===- llmc-opt.cpp - MlirOptMain with the llmc dialects and passes ------===//
#include "dialects/LLM/IR/LLMDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::llmc::registerLLMCPasses();
  mlir::llmc::registerLLMCPipeline();

  mlir::DialectRegistry registry;
  registry.insert<mlir::llmc::LLMDialect, mlir::llmc::exec::ExecDialect,
                  mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "llmc optimizer driver\n", registry));
}
