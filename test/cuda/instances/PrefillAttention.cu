//===- PrefillAttention.cu - the flash prefill attention's instances -----===//
//
// One of the translation units test/cuda/fatbin.sh builds for every
// architecture llmc targets (see that script): the prefill attention
// (AttentionTensorCore.h's dispatch: wgmma in sm_90a code, mma.sync on sm_80
// and later, the SIMT form for f32) over f32, f16 and bf16 caches and int8
// ones, at the head sizes of the common model families. The functions are
// never called; naming each launcher makes nvcc build its kernels.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/AttentionTensorCore.h"

using namespace llmc::cuda;

namespace {

template <class T, class K, int D> void attention() {
  flashAttention<T, K, D, D, T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1,
                                1, 1, 1, 1, true, 0, 1.0f, 0.0f, nullptr);
  flashAttention<T, K, D, D, float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                    1, 1, 1, 1, 1, true, 0, 1.0f, 0.0f, nullptr);
}

template <class T> void forType() {
  attention<T, T, 64>();
  attention<T, T, 128>();
  attention<T, T, 256>();
  attention<T, int8_t, 64>();
  attention<T, int8_t, 128>();
  attention<T, int8_t, 256>();
}

} // namespace

void llmcCudaPrefillAttentionInstances() {
  forType<float>();
  forType<half>();
  forType<bfloat16>();
}
