//===- Passes.td - llmc passes --------------------------------*- tablegen -*-===//
#ifndef LLMC_PASSES_PASSES_TD
#define LLMC_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Utility passes
//===----------------------------------------------------------------------===//

def InferShapesPass : Pass<"llmc-infer-shapes", "::mlir::func::FuncOp"> {
  let summary = "Refine the result types of llm operations by re-running inference";
  let description = [{
    Re-infers, in order, the result types of every operation that implements
    InferTypeOpInterface and keeps the more refined of the current and the
    inferred type (static sizes, dimension names); the function's result types
    follow its return. Use it after specialising a function's argument types
    (shape bucketing does) so static shapes reach every operation. A current
    type that conflicts with inference is an error.

    Before (argument specialised to batch 1, sequence 8):

    ```mlir
    func.func @main(%x: tensor<1x8x64xf32>, %w: tensor<64xf32>) -> tensor<?x?x64xf32> {
      %0 = llm.onnx.mul %x, %w : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
      return %0 : tensor<?x?x64xf32>
    }
    ```

    After:

    ```mlir
    func.func @main(%x: tensor<1x8x64xf32>, %w: tensor<64xf32>) -> tensor<1x8x64xf32> {
      %0 = llm.onnx.mul %x, %w : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
      return %0 : tensor<1x8x64xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::llmc::LLMDialect"];
}

//===----------------------------------------------------------------------===//
// Lowering to the exec level
//===----------------------------------------------------------------------===//

def LowerToExecPass : Pass<"llmc-lower-to-exec", "::mlir::func::FuncOp"> {
  let summary = "Turn every llm operation into a launch of its CPU kernel";
  let description = [{
    Replaces each llm operation (except `llm.constant` and `llm.none`) by an
    `exec.kernel` launch of the reference CPU kernel of the same name (the
    op name without `llm.`), carrying the op's attributes, defaults included,
    as the launch's parameters. Operations without a kernel are all listed in
    one error. The result is what the executor (`llmc exec`) runs.

    Before:

    ```mlir
    %0 = llm.onnx.softmax %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
    ```

    After:

    ```mlir
    %0 = exec.kernel "onnx.softmax"(%x) {axis = -1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::llmc::exec::ExecDialect"];
}

#endif // LLMC_PASSES_PASSES_TD
