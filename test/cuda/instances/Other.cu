//===- Other.cu - the remaining kernels' instances -----------------------===//
//
// One of the translation units test/cuda/fatbin.sh builds for every
// architecture llmc targets (see that script): the prefill GEMM tiles, the
// norms, ropes, embedding gathers, row selections and cache writes, the fallback's ONNX
// matmul and softmax, and the argmax and sampling kernels, for f32, f16 and
// bf16. The functions are never called; naming each launcher makes nvcc
// build its kernels.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/Gemm.h"
#include "runtime/src/model/cuda/Norm.h"
#include "runtime/src/model/cuda/Onnx.h"
#include "runtime/src/model/cuda/Rope.h"
#include "runtime/src/model/cuda/Sampling.h"

using namespace llmc::cuda;

namespace {

template <class T> void forType() {
  gemm<T, float, float>(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, nullptr);
  gemm<T, T, T>(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, nullptr);
  const int64_t *ids = nullptr;
  const int32_t *ids32 = nullptr; // (models whose token ids are i32)
  layerNorm<float, T, float>(nullptr, nullptr, nullptr, nullptr, 1, 1, 0, nullptr);
  layerNorm<T, T, T>(nullptr, nullptr, nullptr, nullptr, 1, 1, 0, nullptr);
  rmsNorm<float, T, float>(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 0, 0, nullptr);
  rmsNorm<T, T, T>(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 0, 0, nullptr);
  rmsNormPair<float, T, float>(nullptr, nullptr, nullptr, 1, 0, 0, nullptr, nullptr, nullptr, 1, 0,
                               0, 1, nullptr);
  rmsNormPair<T, T, T>(nullptr, nullptr, nullptr, 1, 0, 0, nullptr, nullptr, nullptr, 1, 0, 0, 1,
                       nullptr);
  rope<T, T>(nullptr, nullptr, nullptr, nullptr, nullptr, false, 1, 1, 1, 2, 0, 1, false, nullptr,
             nullptr);
  rope<float, T>(nullptr, nullptr, nullptr, nullptr, nullptr, false, 1, 1, 1, 2, 0, 1, false,
                 nullptr, nullptr);
  embedding<T>(nullptr, ids, nullptr, 1, 1, 1, nullptr, nullptr);
  embedding<T>(nullptr, ids32, nullptr, 1, 1, 1, nullptr, nullptr);
  selectRows<T>(nullptr, nullptr, 1, 1, 1, nullptr, 0, 1, nullptr);
  matmul<T>(nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 1, 1, MatmulBatch{}, nullptr);
  softmax<T, T>(nullptr, nullptr, 1, 1, 1, false, nullptr);
  cacheWrite<T, T>(nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 0, 0, 0, nullptr, nullptr);
  cacheWrite<T, float>(nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 0, 0, 0, nullptr, nullptr);
  ropeCacheWrite<T, T>(nullptr, nullptr, 1, nullptr, nullptr, 1, nullptr, nullptr, nullptr, 0, 0,
                       0, nullptr, nullptr, nullptr, false, nullptr, 1, 1, 2, 0, 1, false, 1,
                       nullptr, nullptr);
  ropeCacheWrite<float, T>(nullptr, nullptr, 1, nullptr, nullptr, 1, nullptr, nullptr, nullptr, 0,
                           0, 0, nullptr, nullptr, nullptr, false, nullptr, 1, 1, 2, 0, 1, false,
                           1, nullptr, nullptr);
  cacheWriteInt8<T>(nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 0, 0, 0, nullptr, nullptr);
  argmax<T>(nullptr, nullptr, 1, 1, 1, nullptr);
  sample<T>(nullptr, nullptr, 1, 1, 1, nullptr, nullptr, nullptr, nullptr);
}

} // namespace

void llmcCudaOtherInstances() {
  forType<float>();
  forType<half>();
  forType<bfloat16>();
}
