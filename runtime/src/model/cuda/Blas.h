//===- Blas.h - cuBLASLt for the prefill linear layers, when it is there --===//
//
// On a GPU, gemm (Gemm.h) hands C = A W^T (+ bias) (+ residual) in half or
// bfloat16 (W, X and Y of one type) to cuBLASLt, whose Hopper kernels run
// near the device's dense rate where llmc's WMMA tiles reach a tenth of it.
// The library is opened at run time (dlopen), not linked: an artifact runs
// where it is absent, on llmc's own kernels, and LLMC_CUDA_CUBLASLT=0 asks
// for those anyway (LLMC_CUDA_CUBLASLT=PATH names the library to open: a
// context cannot be created if it does not open as cuBLASLt).
// The host emulation has no cuBLASLt: its Blas is never ready.
//
// Layouts: row-major C [M, N] is column-major C^T [N, M] = W A^T, so W
// [N, K] row-major is cuBLASLt's A (K x N column-major, transposed), A
// [M, K] its B (K x M, not transposed), and C / D are N x M with ld N. The
// bias is the BIAS epilogue (one value per row of D: per output feature),
// the residual is C with beta 1 (D may be C: in place). f32 accumulation
// and scale.
//
// Only shapes with 16-byte rows and pointers go to cuBLASLt (N and K
// multiples of 8: a model's layers); split-K reductions in f32 only.
// One Blas per context: a handle, a 32 MiB workspace allocated when the
// context is created (nothing allocated while generating; cuBLASLt calls
// with a workspace of their own are graph-capturable), and the plan of each
// (type, M, N, K, bias, residual) chosen once by cuBLASLt's heuristic (at
// its first use: the session's first prefill of that bucket) and reused.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_BLAS_H
#define LLMC_RUNTIME_MODEL_CUDA_BLAS_H

#include "runtime/src/model/cuda/Common.h"

#include <type_traits>

#if defined(__CUDACC__)
#include <cublasLt.h>
#include <dlfcn.h>

#include <cstdint>
#include <map>
#include <tuple>
#endif

namespace llmc::cuda {

#if defined(__CUDACC__)

class Blas {
public:
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  Blas() = default;
  Blas(const Blas &) = delete;
  Blas &operator=(const Blas &) = delete;
  ~Blas() { close(); }

  /// Whether the library would be opened (not LLMC_CUDA_CUBLASLT=0), so the
  /// caller can count the workspace before open.
  static bool wanted() {
    const char *env = std::getenv("LLMC_CUDA_CUBLASLT");
    return !(env && std::string(env) == "0");
  }

  /// Opens cuBLASLt and allocates the workspace. A library that is absent
  /// or fails to start leaves the Blas not ready (llmc's kernels run):
  /// not an error. A failed allocation is.
  std::string open() {
    if (ready() || !wanted())
      return {};
    bool loaded = false;
    if (std::string e = load(&loaded); !e.empty() || !loaded)
      return e;
    if (create_(&handle_) != CUBLAS_STATUS_SUCCESS) {
      handle_ = nullptr;
      unload();
      return {};
    }
    if (std::string e = deviceAlloc(&workspace_, kWorkspaceBytes); !e.empty()) {
      close();
      return "cannot allocate cuBLASLt's workspace (" + std::to_string(kWorkspaceBytes >> 20) +
             " MiB): " + e;
    }
    return {};
  }

  bool ready() const { return workspace_ != nullptr; }

  void close() {
    for (auto &p : plans_)
      p.second.destroy(*this);
    plans_.clear();
    if (workspace_)
      deviceFree(workspace_);
    workspace_ = nullptr;
    if (handle_)
      destroy_(handle_);
    handle_ = nullptr;
    unload();
  }

  /// C = A W^T (+ bias) (+ residual) in T (half or bfloat16); *ran false
  /// when cuBLASLt has no kernel for it (the caller runs its own).
  template <class T>
  std::string matmul(const T *a, const T *w, const T *bias, const T *residual, T *c, int m, int n,
                     int k, Stream stream, bool *ran) {
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, bfloat16>);
    *ran = false;
    if (!ready())
      return {};
    // Only 16-byte rows and pointers (a model's layers): on an H200 a
    // 70-column product with a residual came back a unit of half's
    // rounding further from float64 than llmc's kernels; such shapes stay
    // with those.
    if (k % 8 != 0 || n % 8 != 0 || !aligned16(a) || !aligned16(w) || !aligned16(c) ||
        (bias && !aligned16(bias)) || (residual && !aligned16(residual)))
      return {};
    cudaDataType_t type = std::is_same_v<T, half> ? CUDA_R_16F : CUDA_R_16BF;
    Key key{int(type), m, n, k, bias != nullptr, residual != nullptr};
    auto it = plans_.find(key);
    if (it == plans_.end())
      it = plans_.emplace(key, plan(key, type)).first;
    Plan &p = it->second;
    if (!p.found)
      return {};
    if (bias && setDesc(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)) !=
                    CUBLAS_STATUS_SUCCESS)
      return "cuBLASLt: cannot set the bias";
    float one = 1.0f, beta = residual ? 1.0f : 0.0f;
    cublasStatus_t s = matmul_(handle_, p.desc, &one, w, p.w, a, p.a, &beta, residual ? residual : c,
                               p.c, c, p.c, &p.algo, workspace_, kWorkspaceBytes, stream);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED) { // (nothing enqueued: llmc's kernels run it)
      p.found = false;
      return {};
    }
    if (s != CUBLAS_STATUS_SUCCESS)
      return "cuBLASLt matmul failed (status " + std::to_string(int(s)) + ") for M " +
             std::to_string(m) + ", N " + std::to_string(n) + ", K " + std::to_string(k);
    *ran = true;
    return errorOf(cudaGetLastError());
  }

private:
  // (type, M, N, K, bias, residual)
  using Key = std::tuple<int, int, int, int, bool, bool>;
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t w = nullptr, a = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool found = false;
    void destroy(Blas &b) {
      if (desc)
        b.descDestroy_(desc);
      for (cublasLtMatrixLayout_t l : {w, a, c})
        if (l)
          b.layoutDestroy_(l);
    }
  };

  Plan plan(const Key &key, cudaDataType_t type) {
    auto [t, m, n, k, hasBias, hasResidual] = key;
    (void)t, (void)hasResidual;
    Plan p;
    cublasOperation_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
    cublasLtEpilogue_t epilogue = hasBias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    cublasLtMatmulPreference_t pref = nullptr;
    bool ok = descCreate_(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
              setDesc(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transposed, sizeof(transposed)) ==
                  CUBLAS_STATUS_SUCCESS &&
              setDesc(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof(plain)) ==
                  CUBLAS_STATUS_SUCCESS &&
              setDesc(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)) ==
                  CUBLAS_STATUS_SUCCESS &&
              layoutCreate_(&p.w, type, uint64_t(k), uint64_t(n), int64_t(k)) ==
                  CUBLAS_STATUS_SUCCESS &&
              layoutCreate_(&p.a, type, uint64_t(k), uint64_t(m), int64_t(k)) ==
                  CUBLAS_STATUS_SUCCESS &&
              layoutCreate_(&p.c, type, uint64_t(n), uint64_t(m), int64_t(n)) ==
                  CUBLAS_STATUS_SUCCESS &&
              prefCreate_(&pref) == CUBLAS_STATUS_SUCCESS;
    if (ok && hasBias)
      ok = setDesc(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof(type)) ==
           CUBLAS_STATUS_SUCCESS;
    if (ok) {
      // Split-K reductions only in f32 (the compute type), never in the
      // 16-bit output type.
      // Every pointer is 16-byte aligned (matmul checks), and no more: the
      // heuristic assumes 256 bytes unless told.
      size_t bytes = kWorkspaceBytes;
      uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, align = 16;
      ok = prefSet_(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof(bytes)) ==
               CUBLAS_STATUS_SUCCESS &&
           prefSet_(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions,
                    sizeof(reductions)) == CUBLAS_STATUS_SUCCESS;
      for (cublasLtMatmulPreferenceAttributes_t a :
           {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
        ok = ok && prefSet_(pref, a, &align, sizeof(align)) == CUBLAS_STATUS_SUCCESS;
    }
    if (ok) {
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      ok = heuristic_(handle_, p.desc, p.w, p.a, p.c, p.c, pref, 1, &result, &found) ==
               CUBLAS_STATUS_SUCCESS &&
           found > 0;
      if (ok) {
        p.algo = result.algo;
        p.found = true;
      }
    }
    if (pref)
      prefDestroy_(pref);
    return p;
  }

  cublasStatus_t setDesc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                         const void *value, size_t bytes) {
    return descSet_(d, attr, value, bytes);
  }

  /// Opens the library LLMC_CUDA_CUBLASLT names (an error if it does not
  /// open as cuBLASLt), else the toolkit's of this header's major version
  /// (the one its types and enums come from; absent: not an error).
  std::string load(bool *loaded) {
    *loaded = false;
    const char *env = std::getenv("LLMC_CUDA_CUBLASLT");
    bool named = env && *env; // (wanted(): not "0")
    std::string major = std::to_string(CUBLAS_VER_MAJOR);
    std::string names[] = {named ? std::string(env) : "libcublasLt.so." + major,
                           named ? std::string() : "/usr/local/cuda/lib64/libcublasLt.so." + major};
    for (const std::string &name : names)
      if (!name.empty() && (lib_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!lib_) {
      const char *why = dlerror();
      return named ? "LLMC_CUDA_CUBLASLT names " + std::string(env) +
                         ", which does not open: " + (why ? why : "dlopen failed")
                   : std::string();
    }
    bool ok = sym(create_, "cublasLtCreate") && sym(destroy_, "cublasLtDestroy") &&
              sym(descCreate_, "cublasLtMatmulDescCreate") &&
              sym(descDestroy_, "cublasLtMatmulDescDestroy") &&
              sym(descSet_, "cublasLtMatmulDescSetAttribute") &&
              sym(layoutCreate_, "cublasLtMatrixLayoutCreate") &&
              sym(layoutDestroy_, "cublasLtMatrixLayoutDestroy") &&
              sym(prefCreate_, "cublasLtMatmulPreferenceCreate") &&
              sym(prefDestroy_, "cublasLtMatmulPreferenceDestroy") &&
              sym(prefSet_, "cublasLtMatmulPreferenceSetAttribute") &&
              sym(heuristic_, "cublasLtMatmulAlgoGetHeuristic") && sym(matmul_, "cublasLtMatmul");
    if (!ok) {
      unload();
      return named ? "LLMC_CUDA_CUBLASLT names " + std::string(env) +
                         ", which lacks cuBLASLt's functions"
                   : std::string();
    }
    *loaded = true;
    return {};
  }
  template <class F> bool sym(F *&out, const char *name) {
    out = reinterpret_cast<F *>(dlsym(lib_, name));
    return out != nullptr;
  }
  void unload() {
    if (lib_)
      dlclose(lib_);
    lib_ = nullptr;
  }

  void *lib_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  void *workspace_ = nullptr;
  std::map<Key, Plan> plans_;
  decltype(cublasLtCreate) *create_ = nullptr;
  decltype(cublasLtDestroy) *destroy_ = nullptr;
  decltype(cublasLtMatmulDescCreate) *descCreate_ = nullptr;
  decltype(cublasLtMatmulDescDestroy) *descDestroy_ = nullptr;
  decltype(cublasLtMatmulDescSetAttribute) *descSet_ = nullptr;
  decltype(cublasLtMatrixLayoutCreate) *layoutCreate_ = nullptr;
  decltype(cublasLtMatrixLayoutDestroy) *layoutDestroy_ = nullptr;
  decltype(cublasLtMatmulPreferenceCreate) *prefCreate_ = nullptr;
  decltype(cublasLtMatmulPreferenceDestroy) *prefDestroy_ = nullptr;
  decltype(cublasLtMatmulPreferenceSetAttribute) *prefSet_ = nullptr;
  decltype(cublasLtMatmulAlgoGetHeuristic) *heuristic_ = nullptr;
  decltype(cublasLtMatmul) *matmul_ = nullptr;
};

#else // the host emulation: no cuBLASLt

class Blas {
public:
  static constexpr size_t kWorkspaceBytes = 0;
  static bool wanted() { return false; }
  std::string open() { return {}; }
  bool ready() const { return false; }
  void close() {}
  template <class T>
  std::string matmul(const T *, const T *, const T *, const T *, T *, int, int, int, Stream,
                     bool *ran) {
    *ran = false;
    return {};
  }
};

#endif

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_BLAS_H
