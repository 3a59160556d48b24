//===- ExecOps.td - exec dialect operations -------------------*- tablegen -*-===//
#ifndef LLMC_DIALECTS_EXEC_IR_EXECOPS_TD
#define LLMC_DIALECTS_EXEC_IR_EXECOPS_TD

include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/Exec/IR/ExecDialect.td"

def Exec_KernelOp : Exec_Op<"kernel", [Pure]> {
  let summary = "launch one kernel on tensors";
  let description = [{
    Runs the kernel called `kernel` (a name of the CPU runtime's kernel
    registry, `runtime/src/cpu/Kernel.h`) on `args` with `params`, producing
    `results`. Operands that are `none` are missing optional inputs. The
    result types are those of the operation the launch was lowered from; the
    kernel computes the run-time shapes.

    ```mlir
    %0 = exec.kernel "onnx.softmax"(%x) {axis = -1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kernel, DictionaryAttr:$params,
                   Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $kernel `(` $args `)` $params attr-dict `:` functional-type($args, results)
  }];
  let hasVerifier = 1;
}

#endif // LLMC_DIALECTS_EXEC_IR_EXECOPS_TD
