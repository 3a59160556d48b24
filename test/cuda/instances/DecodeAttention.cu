//===- DecodeAttention.cu - the split-KV decode attention's instances ----===//
//
// One of the translation units test/cuda/fatbin.sh builds for every
// architecture llmc targets (see that script): the decode attention over f32,
// f16 and bf16 caches and int8 ones with their scales, at the head sizes of
// the common model families, and its instance that takes Qwen 3's and
// Gemma 3's head norms. The functions are never called; naming each launcher
// makes nvcc build its kernels.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/AttentionDecode.h"

using namespace llmc::cuda;

namespace {

template <class T, class K, int D> void attention() {
  decodeAttention<T, K, D, D, float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                     nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 0, 1.0f, 0.0f,
                                     nullptr);
  decodeAttention<T, K, D, D, T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                 nullptr, nullptr, nullptr, 1, 1, 1, 1, 1, 0, 1.0f, 0.0f, nullptr);
}

/// The instance that takes the query and key heads' norms (Qwen 3's and
/// Gemma 3's head sizes).
template <class T, class K, int D> void headNorms() {
  decodeAttentionRope<T, K, D, D, T, true>(nullptr, nullptr, nullptr, 0, 0, nullptr, nullptr,
                                           nullptr, nullptr, nullptr, nullptr, nullptr, false, 0,
                                           1, false, nullptr, nullptr, nullptr, nullptr, nullptr,
                                           1, 1, 1, 1, 1, 0, 1.0f, 0.0f, nullptr, nullptr);
}

template <class T> void forType() {
  attention<T, T, 64>();
  attention<T, T, 128>();
  attention<T, T, 256>();
  attention<T, int8_t, 64>();
  attention<T, int8_t, 128>();
  attention<T, int8_t, 256>();
  headNorms<T, T, 128>();
  headNorms<T, T, 256>();
  headNorms<T, int8_t, 128>();
  headNorms<T, int8_t, 256>();
}

} // namespace

void llmcCudaDecodeAttentionInstances() {
  forType<float>();
  forType<half>();
  forType<bfloat16>();
}
