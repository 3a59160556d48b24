//===- Artifact.cpp - write a model.llmc folder ---------------------------===//
#include "compiler/Artifact/Artifact.h"
#include "compiler/Artifact/HostBuild.h"

#include "compiler/Executor/Error.h"
#include "runtime/include/llmc/model_abi.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::llmc;

namespace {

// Where the model support library and headers are (baked in by CMake).
#ifndef LLMC_SOURCE_DIR
#error "LLMC_SOURCE_DIR must be defined"
#endif

const char *kModelAbiHeader =
#include "compiler/Artifact/ModelAbiHeader.inc"
    ;

llvm::Error writeFile(llvm::StringRef path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError("cannot write " + path.str() + ": " + ec.message());
  os << bytes;
  os.close();
  if (os.has_error())
    return makeError("cannot write " + path.str() + ": " + os.error().message());
  return llvm::Error::success();
}

/// model.h: the ABI declarations and this model's facts.
std::string modelHeader(const CpuModel &m, const ArtifactInfo &info) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "/* model.h - the C interface of this libmodel.so, written by llmc " << info.llmcVersion
     << ".\n *\n * Entry points (an index into llmc_model_abi.entries):\n";
  for (size_t i = 0; i < m.entries.size(); ++i)
    os << " *   " << i << "  " << m.entries[i].name << "  tokens int64[" << m.entries[i].batch
       << ", " << m.entries[i].seq << "]\n";
  os << " */\n" << kModelAbiHeader << "\n#define LLMC_THIS_MODEL_VOCAB " << m.vocab
     << "\n#define LLMC_THIS_MODEL_NUM_CACHES " << m.caches.size() << "\n";
  return s;
}

/// The support libraries and include folders baked in at build time.
struct Toolchain {
  std::string cxx;
  std::vector<std::string> includes, libs, flags;
};

llvm::Expected<Toolchain> toolchain(const ArtifactInfo &info) {
  Toolchain t;
  std::string cxx = info.cxx;
  if (cxx.empty())
    if (const char *env = std::getenv("CXX"))
      cxx = env;
  if (cxx.empty())
    cxx = "c++";
  auto found = llvm::sys::findProgramByName(cxx);
  if (!found || !llvm::sys::fs::can_execute(*found))
    return makeError("no host C++ compiler '" + cxx + "' (set CXX or pass --cxx)");
  t.cxx = *found;
  // An installed llmc (PREFIX/bin/llmc with PREFIX/lib/llmc, or $LLMC_HOME
  // naming PREFIX) builds against its own copy; a build tree against the
  // sources and libraries it was built from.
  std::string prefix;
  if (const char *home = std::getenv("LLMC_HOME"); home && *home) {
    prefix = home;
  } else {
    llvm::SmallString<256> exe(llvm::sys::fs::getMainExecutable(nullptr, nullptr));
    llvm::sys::path::remove_filename(exe); // bin
    llvm::sys::path::remove_filename(exe); // PREFIX
    prefix = std::string(exe);
  }
  llvm::SmallString<256> installed(prefix);
  llvm::sys::path::append(installed, "lib", "llmc");
  llvm::SmallVector<llvm::StringRef> libs;
  std::string installedLibs;
  if (llvm::sys::fs::exists(llvm::Twine(installed) + "/libLLMCModelSupport.a")) {
    t.includes = {(installed + "/include").str()};
    for (const char *lib : {"libLLMCModelSupport.a", "libLLMCCpuKernels.a", "libLLMCOnnxDataType.a"})
      installedLibs += (installed + "/" + lib + "|").str();
    llvm::StringRef(installedLibs).split(libs, '|', -1, false);
  } else {
    t.includes = {LLMC_SOURCE_DIR, std::string(LLMC_SOURCE_DIR) + "/runtime/include"};
    llvm::StringRef(LLMC_SUPPORT_LIBS).split(libs, '|', -1, false);
  }
  for (llvm::StringRef l : libs) {
    if (!llvm::sys::fs::exists(l))
      return makeError("the model support library " + l.str() + " is missing (rebuild llmc)");
    t.libs.push_back(l.str());
  }
  llvm::SmallVector<llvm::StringRef> flags;
  llvm::StringRef(LLMC_MODEL_CXX_FLAGS).split(flags, ' ', -1, false);
  for (llvm::StringRef f : flags)
    t.flags.push_back(f.str());
  return t;
}

llvm::Error buildLibrary(const ArtifactInfo &info, llvm::StringRef dir, llvm::raw_ostream *log) {
  auto tc = toolchain(info);
  if (!tc)
    return tc.takeError();
  // -fno-trapping-math: no FP exception is ever enabled, and without it GCC
  // does not if-convert the compares of a loop (fastExp's clamp) into
  // selects for AVX2, leaving SwiGLU and softmax scalar. Values are unchanged.
  std::vector<std::string> compile = {tc->cxx, "-std=c++17", "-O2", "-fopenmp-simd",
                                      "-fno-trapping-math", "-fPIC", "-fvisibility=hidden",
                                      "-march=" + info.cpu, "-DLLMC_MODEL_SUPPORT_SPLIT"};
  for (const std::string &i : tc->includes)
    compile.push_back("-I" + i);
  for (const std::string &f : tc->flags)
    compile.push_back(f);
  // The model's code and the dispatchers every model shares, each compiled
  // or taken from the cache (HostBuild.h), then linked.
  LinkedObjects objects{compile, "model.cpp", "", compile};
  return linkWithCachedObjects(objects, dir, log, [&](llvm::ArrayRef<std::string> files) {
    if (log)
      *log << "  building libmodel.so with " << tc->cxx << " -march=" << info.cpu << "\n";
    std::vector<std::string> args = compile;
    args.push_back("-shared");
    args.insert(args.end(), files.begin(), files.end());
    args.insert(args.end(), {"-o", "libmodel.so"});
    args.insert(args.end(), tc->libs.begin(), tc->libs.end());
    args.insert(args.end(), {"-lpthread", "-Wl,--build-id=sha1"});
    return runBuild(args, dir, "libmodel.so");
  });
}

/// The CUDA model's two builds: libmodel-emulated.so (host compiler, the
/// emulation; header-only, so no support library), and libmodel.so (nvcc,
/// SASS for info.cudaArchs and PTX for the last) when archs are given.
llvm::Error buildCudaLibraries(const ArtifactInfo &info, llvm::StringRef dir, bool hostSteps,
                               llvm::raw_ostream *log) {
  auto tc = toolchain(info);
  if (!tc)
    return tc.takeError();
  std::vector<std::string> compile = {tc->cxx, "-std=c++17", "-O2", "-fPIC",
                                      "-fvisibility=hidden"};
  for (const std::string &i : tc->includes)
    compile.push_back("-I" + i);
  // Host steps (runtime/src/model/cuda/HostSteps.h) call the CPU kernels.
  // (nvcc takes them as -L/-l, which its -x cu does not reach.)
  std::vector<std::string> hostLibs;
  if (hostSteps)
    for (const std::string &l : tc->libs) {
      llvm::StringRef name = llvm::sys::path::stem(l);
      hostLibs.push_back("-L" + llvm::sys::path::parent_path(l).str());
      hostLibs.push_back("-l" + name.drop_front(name.starts_with("lib") ? 3 : 0).str());
    }
  // The emulation's object compiled or taken from the cache (HostBuild.h),
  // then linked.
  LinkedObjects objects{compile, "model.cu", "c++", {}};
  if (llvm::Error e =
          linkWithCachedObjects(objects, dir, log, [&](llvm::ArrayRef<std::string> files) {
            if (log)
              *log << "  building libmodel-emulated.so (the CUDA emulation) with " << tc->cxx
                   << "\n";
            std::vector<std::string> args = {tc->cxx, "-shared"};
            args.insert(args.end(), files.begin(), files.end());
            args.insert(args.end(), {"-o", "libmodel-emulated.so"});
            if (hostSteps)
              args.insert(args.end(), tc->libs.begin(), tc->libs.end());
            args.insert(args.end(), {"-lpthread", "-Wl,--build-id=sha1"});
            return runBuild(args, dir, "libmodel-emulated.so");
          }))
    return e;
  if (info.cudaArchs.empty())
    return llvm::Error::success();
  std::string nvcc = info.nvcc;
  if (nvcc.empty())
    if (const char *env = std::getenv("NVCC"))
      nvcc = env;
  if (nvcc.empty()) {
    if (auto found = llvm::sys::findProgramByName("nvcc"))
      nvcc = *found;
    else if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/nvcc"))
      nvcc = "/usr/local/cuda/bin/nvcc";
  }
  if (nvcc.empty() || !llvm::sys::fs::can_execute(nvcc))
    return makeError("no nvcc to build the GPU library (install the CUDA toolkit, set NVCC, or "
                     "pass --cuda-arch none for an artifact that runs only on the emulation)");
  std::vector<std::string> nv = {nvcc, "-std=c++17", "-O3", "-Xcompiler",
                                 "-fPIC,-fvisibility=hidden", "-diag-suppress", "177"};
  for (const std::string &arch : info.cudaArchs) {
    std::string num = llvm::StringRef(arch).drop_front(3).str(); // sm_90 -> 90, sm_90a -> 90a
    nv.insert(nv.end(), {"-gencode", "arch=compute_" + num + ",code=sm_" + num});
  }
  // PTX for the last architecture, without its specific features (sm_90a's
  // PTX would load on no other GPU): what later GPUs compile.
  std::string last = llvm::StringRef(info.cudaArchs.back()).drop_front(3).rtrim('a').str();
  nv.insert(nv.end(), {"-gencode", "arch=compute_" + last + ",code=compute_" + last});
  for (const std::string &i : tc->includes)
    nv.push_back("-I" + i);
  // The GPU object (most of the compile's time) compiled or taken from the
  // cache (HostBuild.h), then linked by nvcc (its CUDA runtime).
  LinkedObjects gpu{nv, "model.cu", "cu", {}, /*modelNvcc=*/true};
  return linkWithCachedObjects(gpu, dir, log, [&](llvm::ArrayRef<std::string> files) {
    if (log)
      *log << "  building libmodel.so with nvcc for " << llvm::join(info.cudaArchs, ", ") << "\n";
    std::vector<std::string> args = {nvcc, "-shared"};
    args.insert(args.end(), files.begin(), files.end());
    args.insert(args.end(), {"-o", "libmodel.so"});
    args.insert(args.end(), hostLibs.begin(), hostLibs.end());
    args.insert(args.end(), {"-lpthread", "-Xlinker", "--build-id=sha1"});
    return runBuild(args, dir, "libmodel.so");
  });
}

} // namespace

llvm::Expected<std::string> mlir::llmc::sha256File(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return makeError("cannot read " + path.str() + ": " + buf.getError().message());
  llvm::StringRef bytes = (*buf)->getBuffer();
  auto digest = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
  return llvm::toHex(digest, /*LowerCase=*/true);
}

llvm::Error mlir::llmc::writeArtifact(const CpuModel &model, const ArtifactInfo &info,
                                      llvm::StringRef outDir, llvm::raw_ostream *log) {
  // Build beside the destination, then rename into place.
  // (Absolute: createUniqueDirectory puts relative names in the system's
  // temporary folder, which may be another file system.)
  llvm::SmallString<256> parent(outDir);
  llvm::sys::fs::make_absolute(parent);
  llvm::sys::path::remove_filename(parent);
  if (std::error_code ec = llvm::sys::fs::create_directories(parent))
    return makeError("cannot create " + parent.str().str() + ": " + ec.message());
  llvm::SmallString<256> tmp;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(
          llvm::Twine(parent) + "/." + llvm::sys::path::filename(outDir) + ".tmp", tmp))
    return makeError("cannot create a folder beside " + outDir.str() + ": " + ec.message());
  auto cleanup = llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(tmp); });
  auto path = [&](llvm::StringRef name) {
    llvm::SmallString<256> p(tmp);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  if (log)
    *log << "  writing weights.bin (" << model.weights.size() << " bytes)\n";
  if (llvm::Error e = writeFile(path("weights.bin"),
                                llvm::StringRef(model.weights.data(), model.weights.size())))
    return e;
  if (llvm::Error e = writeFile(path("model.h"), modelHeader(model, info)))
    return e;
  bool cuda = model.target == "cuda";
  std::string sourceFile = cuda ? "model.cu" : "model.cpp";
  if (llvm::Error e = writeFile(path(sourceFile), model.source))
    return e;
  bool hostSteps = !model.hostOperations.empty();
  if (llvm::Error e =
          cuda ? buildCudaLibraries(info, tmp, hostSteps, log) : buildLibrary(info, tmp, log))
    return e;
  llvm::json::Value tokenizer = nullptr;
  if (!info.tokenizerJson.empty()) {
    if (llvm::Error e = writeFile(path("tokenizer.json"), info.tokenizerJson))
      return e;
    auto digest = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>(info.tokenizerJson.data()), info.tokenizerJson.size()));
    llvm::json::Object t(info.tokenizerInfo);
    t["file"] = "tokenizer.json";
    t["sha256"] = llvm::toHex(digest, /*LowerCase=*/true);
    tokenizer = std::move(t);
  }
  // The libraries and their hashes (a cuda artifact without nvcc has only
  // the emulation's build).
  llvm::json::Value library = nullptr, emulatedLibrary = nullptr;
  for (auto [file, out] : {std::pair<const char *, llvm::json::Value *>{"libmodel.so", &library},
                           {"libmodel-emulated.so", &emulatedLibrary}}) {
    if (!llvm::sys::fs::exists(path(file)))
      continue;
    auto sha = sha256File(path(file));
    if (!sha)
      return sha.takeError();
    *out = llvm::json::Object{{"file", file}, {"sha256", *sha}};
  }
  if (info.emitSource) {
    if (std::error_code ec = llvm::sys::fs::create_directory(path("src")))
      return makeError("cannot create src/: " + ec.message());
    if (std::error_code ec = llvm::sys::fs::rename(path(sourceFile), path("src/" + sourceFile)))
      return makeError("cannot move " + sourceFile + ": " + ec.message());
  } else {
    llvm::sys::fs::remove(path(sourceFile));
  }

  // manifest.json
  llvm::json::Array entries, caches;
  for (const CpuModel::Entry &e : model.entries)
    entries.push_back(llvm::json::Object{
        {"name", e.name},
        {"kind", e.decode ? "decode" : "prefill"},
        {"batch", e.batch},
        {"seq", e.seq},
        {"weight_bytes_read", e.weightBytesRead},
        {"linear_flops", e.linearFlops},
        {"logits_flops_per_row", e.logitsFlopsPerRow},
        {"code", llvm::json::Object{{"kernel_calls", e.kernelCalls},
                                    {"logits_rows", e.logitsRows},
                                    {"fused_regions", e.fusedRegions},
                                    {"views", e.views},
                                    {"cache_updates", e.cacheUpdates}}}});
  int64_t cacheBytesPerSequence = 0;
  for (const CpuModel::Cache &c : model.caches) {
    cacheBytesPerSequence += c.bytes();
    caches.push_back(llvm::json::Object{{"name", c.name},
                                        {"heads", c.heads},
                                        {"capacity", c.capacity},
                                        {"head_dim", c.headDim},
                                        {"dtype", c.dtype == 1    ? "f32"
                                                  : c.dtype == 10 ? "f16"
                                                  : c.dtype == 16 ? "bf16"
                                                  : c.dtype == 3  ? "int8"
                                                                  : "other"}});
  }
  // Checksums of weights.bin, a range per stored tensor: each runs from its
  // offset to the next one's (or the end), so together they cover every
  // byte, padding included, and a changed byte names its tensor.
  llvm::json::Array table;
  for (size_t i = 0; i < model.blobs.size(); ++i) {
    int64_t begin = i == 0 ? 0 : model.blobs[i].offset;
    int64_t end = i + 1 < model.blobs.size() ? model.blobs[i + 1].offset
                                              : int64_t(model.weights.size());
    uint64_t digest = llvm::xxHash64(llvm::StringRef(model.weights.data() + begin, size_t(end - begin)));
    table.push_back(llvm::json::Object{{"name", model.blobs[i].name},
                                       {"offset", begin},
                                       {"bytes", end - begin},
                                       {"xxh64", llvm::utohexstr(digest, /*LowerCase=*/true, 16)}});
  }
  // Quantized linear layers: each one's scheme, and the bytes they save.
  llvm::json::Object quantization;
  if (!model.quantized.empty()) {
    llvm::json::Array layers;
    int64_t stored = 0, asFloat = 0;
    for (const CpuModel::QuantizedTensor &t : model.quantized) {
      layers.push_back(llvm::json::Object{{"name", t.name},
                                          {"kind", t.embedding ? "embedding" : "linear"},
                                          {"shape", llvm::json::Array{t.rows, t.cols}},
                                          {"bits", t.bits},
                                          {"group_size", t.groupSize},
                                          {"zero_points", t.zeroPoints},
                                          {"int8_activations", t.int8Activations},
                                          {"bytes", t.bytes},
                                          {"float_bytes", t.floatBytes}});
      stored += t.bytes, asFloat += t.floatBytes;
    }
    quantization = llvm::json::Object{{"layers", std::move(layers)},
                                      {"bytes", stored},
                                      {"float_bytes", asFloat},
                                      {"saved_bytes", asFloat - stored}};
  }
  // (--eval of an int8 KV cache alone reports on a model without quantized
  // layers.)
  if (!info.quantEval.empty())
    quantization["eval"] = llvm::json::Object(info.quantEval);
  llvm::json::Object memory = llvm::json::Object(info.memory);
  // The arenas as the code allocates them: per entry, and per session (the
  // largest: entries run one at a time).
  int64_t sessionArena = 0;
  llvm::json::Object *planned = memory.getObject("entries");
  for (const CpuModel::Entry &e : model.entries) {
    sessionArena = std::max(sessionArena, e.arenaBytes);
    if (llvm::json::Object *o = planned ? planned->getObject(e.name) : nullptr)
      (*o)["arena_bytes"] = e.arenaBytes;
  }
  memory["arena_bytes"] = sessionArena;
  memory["kv_cache_bytes_per_sequence"] = cacheBytesPerSequence;
  // Whether a session may ask for fewer positions (llmc_session_options).
  memory["kv_cache_capacity_flexible"] = model.anyCapacity;
  // int8 caches (--kv-dtype int8) come with f32 scale caches beside them.
  if (llvm::any_of(model.caches, [](const CpuModel::Cache &c) { return c.dtype == 3; }))
    memory["kv_cache_dtype"] = "int8";
  llvm::json::Object manifest{
      {"format_version", kArtifactFormatVersion},
      {"llmc_version", info.llmcVersion},
      {"abi_version", LLMC_MODEL_ABI_VERSION},
      {"target", cuda ? llvm::json::Object{{"kind", "cuda"},
                                           {"arch", "x86-64"},
                                           {"march", "x86-64"},
                                           {"cuda_archs", llvm::json::Array(info.cudaArchs)}}
                      : llvm::json::Object{{"kind", "cpu"}, {"arch", "x86-64"}, {"march", info.cpu}}},
      {"source", llvm::json::Object{{"file", info.sourceName}, {"sha256", info.sourceSha256}}},
      {"options", llvm::json::Object(info.options)},
      {"architecture", llvm::json::Object(info.architecture)},
      {"vocab", model.vocab},
      {"entries", std::move(entries)},
      {"caches", std::move(caches)},
      {"memory", std::move(memory)},
      {"weights", llvm::json::Object{{"file", "weights.bin"},
                                     {"bytes", int64_t(model.weights.size())},
                                     {"tensors", model.numWeights},
                                     {"alignment", 64},
                                     {"sha256", model.weightsSha256},
                                     {"table", std::move(table)}}},
      {"quantization", std::move(quantization)},
      {"library", std::move(library)},
      {"emulated_library", std::move(emulatedLibrary)},
      {"tokenizer", std::move(tokenizer)},
      {"stop_tokens", llvm::json::Array(info.stopTokens)},
  };
  std::string json = llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))).str() + "\n";
  if (llvm::Error e = writeFile(path("manifest.json"), json))
    return e;

  // Into place: the old artifact goes only once the new one is complete.
  llvm::SmallString<256> old;
  if (llvm::sys::fs::exists(outDir)) {
    if (!llvm::sys::fs::exists(llvm::Twine(outDir) + "/manifest.json") &&
        !llvm::sys::fs::is_directory(outDir))
      return makeError(outDir.str() + " exists and is not an artifact folder");
    if (llvm::sys::fs::is_directory(outDir) &&
        !llvm::sys::fs::exists(llvm::Twine(outDir) + "/manifest.json")) {
      std::error_code ec;
      llvm::sys::fs::directory_iterator it(outDir, ec);
      if (!ec && it != llvm::sys::fs::directory_iterator())
        return makeError(outDir.str() +
                         " is a folder that is not an llmc artifact and not empty; not replacing it");
    }
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(
            llvm::Twine(parent) + "/." + llvm::sys::path::filename(outDir) + ".old", old))
      return makeError("cannot replace " + outDir.str() + ": " + ec.message());
    llvm::sys::fs::remove(old);
    if (std::error_code ec = llvm::sys::fs::rename(outDir, old))
      return makeError("cannot replace " + outDir.str() + ": " + ec.message());
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, outDir)) {
    if (!old.empty())
      (void)llvm::sys::fs::rename(old, outDir);
    return makeError("cannot create " + outDir.str() + ": " + ec.message());
  }
  if (!old.empty())
    llvm::sys::fs::remove_directories(old);
  return llvm::Error::success();
}
