//===- Gemv.cu - the decode GEMVs' instances over float weights ----------===//
//
// One of the translation units test/cuda/fatbin.sh builds for every
// architecture llmc targets (see that script): the decode GEMV (SIMT and
// tensor-core forms) with f32 or the activations' type in and out, and its
// RMS-norm and SwiGLU forms, for f32, f16 and bf16. The functions are never
// called; naming each launcher makes nvcc build its kernels.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/Gemv.h"

using namespace llmc::cuda;

namespace {

template <class T> void forType() {
  gemv<T, float, float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 1,
                        nullptr);
  gemv<T, T, T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 1, nullptr);
  normGemv<T, T, T>(nullptr, nullptr, 1e-5f, 0.0f, nullptr, nullptr, nullptr, nullptr, nullptr,
                    nullptr, 1, 1, 1, 1, nullptr);
  swigluGemv<T, T, T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1,
                      1, 1, 1, nullptr);
}

} // namespace

void llmcCudaGemvInstances() {
  forType<float>();
  forType<half>();
  forType<bfloat16>();
}
