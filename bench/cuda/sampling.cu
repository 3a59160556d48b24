// Token choice on a GPU (runtime/src/model/cuda/Sampling.h): the time of one launch of the
// argmax and of the sampling kernel over B rows of V f16 logits (the last position of each
// sequence, as a decode step hands them over), for vocabularies of 32000 and 128256 and
// batches 1 and 8, over three kinds of rows:
//   peaked  a trained model's shape: a bell of logits (four uniforms summed, centred,
//           times 4: spread ~2.3) with 0.1% of the tokens 12 above it, so the kernel's
//           2048 sorted candidates hold every cut and draw;
//   random  uniform in [-1, 1) (a random-weight model's logits are this flat): more than
//           2048 tokens lie within e^-1 of the top, so the kernel finds the cuts and the
//           draw in the whole row's order (RowOrder), which until 2026-12-01 went back to
//           the host (a synchronisation, a copy of the row and the host's sampler);
//   equal   every logit the same: the search over a single logit's keys.
// Settings: temperature 1 with top-p 0.95, plain temperature 1, and top-k 40 with top-p 0.9.
// Every draw is checked against the runtime's own sampler (Sampler.cpp) given the same
// uniform (it must be the same token, as CudaSamplingTest holds it on the emulation), and
// the rows the device left to the host are counted (none expected).
//   nvcc -std=c++17 -O3 -arch=sm_90a -I. bench/cuda/sampling.cu runtime/src/Sampler.cpp \
//     -o sampling
//   ./sampling
#include "runtime/src/model/cuda/Sampling.h"

#include "runtime/src/Sampler.h"

#include "bench/cuda/Timing.h"

#include <cmath>
#include <cstdio>
#include <vector>

using namespace llmc::cuda;

namespace {

/// Row r's logits of the given kind, as f32 (the device gets them as f16).
std::vector<float> rows(const char *kind, int batch, int vocab) {
  std::vector<float> x(size_t(batch) * size_t(vocab));
  unsigned s = 12345u;
  auto uniform = [&] { // [0, 1)
    s = s * 1664525u + 1013904223u;
    return float(s >> 8) / 16777216.0f;
  };
  for (size_t i = 0; i < x.size(); ++i) {
    if (kind[0] == 'p') { // sum of 4 uniforms: roughly normal, then a few high ones
      float n = uniform() + uniform() + uniform() + uniform() - 2.0f;
      x[i] = 4.0f * n + (uniform() < 0.001f ? 12.0f : 0.0f);
    } else if (kind[0] == 'r') {
      x[i] = 2.0f * uniform() - 1.0f;
    } else {
      x[i] = 0.5f;
    }
  }
  return x;
}

} // namespace

int main() {
  struct Setting {
    const char *name;
    SampleParams params;
  };
  const Setting settings[] = {{"T 1, top-p 0.95", {1.0f, 0, 0.95f, 0.0f}},
                              {"T 1", {1.0f, 0, 1.0f, 0.0f}},
                              {"top-k 40, top-p 0.9", {1.0f, 40, 0.9f, 0.0f}}};
  std::printf("| vocab | batch | rows | argmax us | setting | sample us | left to host | "
              "not the host's token |\n|---|---|---|---|---|---|---|---|\n");
  for (int vocab : {32000, 128256})
    for (int batch : {1, 8})
      for (const char *kind : {"peaked", "random", "equal"}) {
        std::vector<float> x = rows(kind, batch, vocab);
        std::vector<__half> h(x.size());
        for (size_t i = 0; i < x.size(); ++i)
          h[i] = __float2half(x[i]), x[i] = __half2float(h[i]);
        __half *logits;
        int32_t *ids;
        float *left;
        double *uniforms;
        SampleParams *params;
        check(cudaMalloc(&logits, h.size() * 2), "malloc");
        check(cudaMalloc(&ids, size_t(batch) * 4), "malloc");
        check(cudaMalloc(&left, x.size() * 4), "malloc");
        check(cudaMalloc(&uniforms, size_t(batch) * 8), "malloc");
        check(cudaMalloc(&params, sizeof(SampleParams)), "malloc");
        check(cudaMemcpy(logits, h.data(), h.size() * 2, cudaMemcpyHostToDevice), "copy");
        llmc::SamplerOptions seedOnly;
        seedOnly.seed = 7;
        llmc::Sampler source(seedOnly);
        std::vector<double> u(static_cast<size_t>(batch));
        for (double &v : u)
          v = source.uniform();
        check(cudaMemcpy(uniforms, u.data(), u.size() * 8, cudaMemcpyHostToDevice), "copy");
        const half *in = reinterpret_cast<const half *>(logits);
        float argmaxMs = medianMs(
            [&] {
              std::string e = argmax(in, ids, batch, vocab, size_t(vocab), nullptr);
              if (!e.empty())
                std::fprintf(stderr, "%s\n", e.c_str()), std::exit(1);
            },
            20);
        for (const Setting &s : settings) {
          check(cudaMemcpy(params, &s.params, sizeof s.params, cudaMemcpyHostToDevice), "copy");
          float ms = medianMs(
              [&] {
                std::string e = sample(in, ids, batch, vocab, size_t(vocab), params, uniforms,
                                       left, nullptr);
                if (!e.empty())
                  std::fprintf(stderr, "%s\n", e.c_str()), std::exit(1);
              },
              20);
          std::vector<int32_t> got(static_cast<size_t>(batch));
          check(cudaMemcpy(got.data(), ids, got.size() * 4, cudaMemcpyDeviceToHost), "copy");
          llmc::SamplerOptions o;
          o.temperature = s.params.temperature, o.topK = s.params.topK;
          o.topP = s.params.topP, o.minP = s.params.minP;
          llmc::Sampler host(o);
          int leftRows = 0, differ = 0;
          for (int r = 0; r < batch; ++r) {
            int32_t want = host.sample(x.data() + size_t(r) * size_t(vocab), vocab, {},
                                       u[size_t(r)]);
            leftRows += got[size_t(r)] < 0;
            differ += got[size_t(r)] >= 0 && got[size_t(r)] != want;
          }
          std::printf("| %d | %d | %s | %.1f | %s | %.1f | %d | %d |\n", vocab, batch, kind,
                      argmaxMs * 1e3, s.name, ms * 1e3, leftRows, differ);
        }
        check(cudaFree(logits), "free");
        check(cudaFree(ids), "free");
        check(cudaFree(left), "free");
        check(cudaFree(uniforms), "free");
        check(cudaFree(params), "free");
      }
  return 0;
}
