//===- Quant.cu - the 4- and 8-bit weights' kernel instances -------------===//
//
// One of the translation units test/cuda/fatbin.sh builds for every
// architecture llmc targets (see that script): the quantized decode GEMVs
// (plain, RMS-norm and SwiGLU forms), the prefill's dequantized copy
// (dequantRows, then gemm) and the tiles that dequantize as they stage, and
// the quantized embedding gather (i64 and i32 ids), for f32, f16 and bf16
// activations. The functions are never called; naming each
// launcher makes nvcc build its kernels.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/QuantGemv.h"

using namespace llmc::cuda;

namespace {

template <class T> void forType() {
  qgemv<T, T, float, T, 4>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                           nullptr, 1, 1, 1, 32, 1, nullptr);
  qgemv<T, T, float, T, 8>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                           nullptr, 1, 1, 1, 32, 1, nullptr);
  qnormGemv<T, T, float, T, 4>(nullptr, nullptr, 1e-5f, 0.0f, nullptr, nullptr, nullptr, nullptr,
                               nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 32, 1, nullptr);
  qswigluGemv<T, T, float, T, 4>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                 nullptr, nullptr, nullptr, 1, 1, 1, 32, 1, nullptr);
  qgemm<T, T, float, T, 4>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1,
                           32, nullptr, nullptr);
  qgemm<T, T, float, T, 8>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1,
                           32, nullptr, nullptr);
  qgemm<T, T, T, T, 4>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 32,
                       nullptr, nullptr);
  const int64_t *ids = nullptr;
  const int32_t *ids32 = nullptr; // (models whose token ids are i32)
  quantEmbedding<float, T, 4>(nullptr, nullptr, nullptr, ids, nullptr, 1, 1, 32, 1, nullptr,
                              nullptr);
  quantEmbedding<T, T, 4>(nullptr, nullptr, nullptr, ids, nullptr, 1, 1, 32, 1, nullptr, nullptr);
  quantEmbedding<T, T, 4>(nullptr, nullptr, nullptr, ids32, nullptr, 1, 1, 32, 1, nullptr,
                          nullptr);
}

} // namespace

void llmcCudaQuantInstances() {
  forType<float>();
  forType<half>();
  forType<bfloat16>();
}
