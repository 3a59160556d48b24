//===- ExecDialect.td - the exec dialect ----------------------*- tablegen -*-===//
#ifndef LLMC_DIALECTS_EXEC_IR_EXECDIALECT_TD
#define LLMC_DIALECTS_EXEC_IR_EXECDIALECT_TD

include "mlir/IR/OpBase.td"

def Exec_Dialect : Dialect {
  let name = "exec";
  let cppNamespace = "::mlir::llmc::exec";
  let summary = "Kernel launches: the level below the llm dialect";
  let description = [{
    The `exec` dialect describes a program as the kernels a runtime launches.
    At this stage (generic execution with run-time shapes) a program is a
    function whose body is `exec.kernel` launches of reference CPU kernels on
    tensor values, plus `llm.constant` weights and `llm.none`; the executor
    allocates every result when its kernel runs and frees it after its last
    use. Later stages add static buffers, fused kernels and device kernels.
  }];
  let usePropertiesForAttributes = 0;
}

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

#endif // LLMC_DIALECTS_EXEC_IR_EXECDIALECT_TD
