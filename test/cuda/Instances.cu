//===- Instances.cu - the CUDA kernels in the forms models use, for nvcc ---===//
//
// test/cuda/fatbin.sh builds this file into a fatbin for every architecture
// llmc targets and fails if ptxas spills registers in any kernel. The
// function is never called; naming each launcher makes nvcc build its
// kernels: the decode and prefill kernels for f32, f16 and bf16 caches (and
// int8 ones with their scales) and weights (and 4- and 8-bit weights at every chunk width) at the head sizes
// of the common model families.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/AttentionDecode.h"
#include "runtime/src/model/cuda/AttentionTensorCore.h"
#include "runtime/src/model/cuda/Gemm.h"
#include "runtime/src/model/cuda/Gemv.h"
#include "runtime/src/model/cuda/Norm.h"
#include "runtime/src/model/cuda/Onnx.h"
#include "runtime/src/model/cuda/QuantGemv.h"
#include "runtime/src/model/cuda/Rope.h"
#include "runtime/src/model/cuda/Sampling.h"

using namespace llmc::cuda;

namespace {

template <class T, class K, int D> void attention() {
  decodeAttention<T, K, D, D, float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                     nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 0, 1.0f, 0.0f,
                                     nullptr);
  decodeAttention<T, K, D, D, T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                 nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 0, 1.0f, 0.0f, nullptr);
  flashAttention<T, K, D, D, T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1,
                                1, 1, 1, 1, true, 0, 1.0f, 0.0f, nullptr);
  flashAttention<T, K, D, D, float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                    1, 1, 1, 1, 1, true, 0, 1.0f, 0.0f, nullptr);
}

/// The decode attention's instance that takes the query and key heads'
/// norms (Qwen 3's and Gemma 3's head sizes).
template <class T, class K, int D> void headNorms() {
  decodeAttentionRope<T, K, D, D, T, true>(nullptr, nullptr, nullptr, 0, 0, nullptr, nullptr,
                                           nullptr, nullptr, nullptr, nullptr, nullptr, false, 0,
                                           1, false, nullptr, nullptr, nullptr, nullptr, nullptr,
                                           1, 1, 1, 1, 1, 0, 1.0f, 0.0f, nullptr, nullptr);
}

template <class T> void forType() {
  gemv<T, float, float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 1,
                        nullptr);
  gemv<T, T, T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 1, nullptr);
  normGemv<T, T, T>(nullptr, nullptr, 1e-5f, 0.0f, nullptr, nullptr, nullptr, nullptr, nullptr,
                    nullptr, 1, 1, 1, 1, nullptr);
  swigluGemv<T, T, T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1,
                      1, 1, 1, nullptr);
  gemm<T, float, float>(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, nullptr);
  gemm<T, T, T>(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, nullptr);
  qgemv<T, T, float, T, 4>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                           nullptr, 1, 1, 1, 32, 1, nullptr);
  qgemv<T, T, float, T, 8>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                           nullptr, 1, 1, 1, 32, 1, nullptr);
  qnormGemv<T, T, float, T, 4>(nullptr, nullptr, 1e-5f, 0.0f, nullptr, nullptr, nullptr, nullptr,
                               nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 32, 1, nullptr);
  qswigluGemv<T, T, float, T, 4>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                 nullptr, nullptr, nullptr, 1, 1, 1, 32, 1, nullptr);
  qgemm<T, T, float, T, 4>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1,
                           32, nullptr);
  qgemm<T, T, float, T, 8>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1,
                           32, nullptr);
  qgemm<T, T, T, T, 4>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 32,
                       nullptr);
  const int64_t *ids = nullptr;
  const int32_t *ids32 = nullptr; // (models whose token ids are i32)
  quantEmbedding<float, T, 4>(nullptr, nullptr, nullptr, ids, nullptr, 1, 1, 32, 1, nullptr,
                              nullptr);
  quantEmbedding<T, T, 4>(nullptr, nullptr, nullptr, ids, nullptr, 1, 1, 32, 1, nullptr, nullptr);
  quantEmbedding<T, T, 4>(nullptr, nullptr, nullptr, ids32, nullptr, 1, 1, 32, 1, nullptr,
                          nullptr);
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
  matmul<T>(nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 1, 1, MatmulBatch{}, nullptr);
  softmax<T, T>(nullptr, nullptr, 1, 1, 1, false, nullptr);
  cacheWrite<T, T>(nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 0, 0, 0, nullptr, nullptr);
  cacheWrite<T, float>(nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 0, 0, 0, nullptr, nullptr);
  cacheWriteInt8<T>(nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 0, 0, 0, nullptr, nullptr);
  argmax<T>(nullptr, nullptr, 1, 1, 1, nullptr);
  sample<T>(nullptr, nullptr, 1, 1, 1, nullptr, nullptr, nullptr, nullptr);
  attention<T, T, 64>();
  attention<T, T, 128>();
  attention<T, T, 256>();
  // int8 caches (--kv-dtype int8) with their scales.
  attention<T, int8_t, 64>();
  attention<T, int8_t, 128>();
  attention<T, int8_t, 256>();
  headNorms<T, T, 128>();
  headNorms<T, T, 256>();
  headNorms<T, int8_t, 128>();
  headNorms<T, int8_t, 256>();
}

} // namespace

void llmcCudaInstances() {
  forType<float>();
  forType<half>();
  forType<bfloat16>();
}
