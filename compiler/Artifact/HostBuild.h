//===- HostBuild.h - running the host compiler for an artifact -----------===//
//
// What writeArtifact uses to build libmodel.so (and libmodel-emulated.so):
// running a tool in the artifact's build folder, and the objects it links,
// each kept in a cache folder and reused by every compile with the same
// compiler, flags and text:
//
//   model    the model's own code (model.cpp, or model.cu for the CUDA
//            emulation): the same for every compile of one model with the
//            same options and llmc, so compiling a model again (a CI job
//            packaging it, a test suite) skips the host compiler;
//   support  the operation dispatchers of runtime/src/model/ModelSupport.h
//            (linear, attention, norms, ...) and the kernels they
//            instantiate, compiled with LLMC_MODEL_SUPPORT_SPLIT and
//            LLMC_MODEL_SUPPORT_DEFINITIONS: the same for every model, and
//            most of a small model's compile time (CPU target).
//
//   gpu      the model's code as nvcc compiles it for libmodel.so (SASS and
//            PTX for the artifact's architectures: most of a CUDA compile);
//
//   key    SHA-256 of the compiler's `--version` output, the compile command
//          and the preprocessed source (which is what is compiled, so a
//          header edited meanwhile cannot end up under an old key), with the
//          paths of the folders it includes from (-I) replaced by a mark, so
//          that another checkout of the same llmc (a CI clone) finds the
//          objects; an object that records one of those paths (an assert's
//          __FILE__) is stored under the key of the paths as they are;
//          nvcc preprocesses a source once per pass (host, and each
//          architecture's device code), so a gpu object's key reads, in the
//          preprocessed text's place, the path and contents of every file
//          `nvcc -M` lists and of every file beside llmc's headers among
//          them (a device pass may include one the listing misses), with
//          the version of the host compiler nvcc runs; since nvcc reads the
//          files after they were hashed, the key is taken again after the
//          compile and the object stored only if it is the same (a file
//          edited meanwhile); no key (an unreadable file, a listing without
//          the source) compiles the object without the cache;
//   where  $LLMC_CACHE_DIR, else $XDG_CACHE_HOME/llmc, else
//          $HOME/.cache/llmc, in support/, model/ and gpu/;
//          LLMC_CACHE_DIR=off (or no such folder that can be made) builds
//          the objects in the artifact's folder each time;
//   entry  <key>.o, written to a unique name and renamed into place, so
//          concurrent compiles never read half an object;
//   size   the 64 support objects (about 300 KB each), 512 model objects
//          (0.1-1 MB each) and 64 gpu objects (1-5 MB each) used last:
//          storing one removes the ones used least recently beyond that.
//
// An object is compiled from the same text with the same command either
// way, so an artifact is byte-identical whether it came from the cache or
// not (test/e2e/compile-cache.test). (Not libmodel.so's gpu object: nvcc
// writes the name of a temporary file of its own, numbered by its process,
// into every object, so two compiles of one source differ there anyway;
// from the cache they are the same.) The link always runs; one that fails
// with a cached object builds the cached objects again and relinks (a
// damaged entry must not fail every compile after it).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_ARTIFACT_HOSTBUILD_H
#define LLMC_COMPILER_ARTIFACT_HOSTBUILD_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::llmc {

/// Runs `args` (args[0] the program) in `dir` to build `output`, its
/// standard output to `stdoutFile` (in dir) when one is named. The error
/// carries the end of what it printed.
llvm::Error runBuild(const std::vector<std::string> &args, llvm::StringRef dir,
                     llvm::StringRef output, llvm::StringRef stdoutFile = "");

/// The objects of a library: the model's source in the build folder,
/// compiled with `modelCompile` (the compiler and its flags, without source
/// or output; `modelLanguage` its -x, or "" for its name's), and, when
/// `supportCompile` is not empty, the support object compiled with it.
/// `modelNvcc`: modelCompile is nvcc's (the GPU library), keyed by what it
/// reads instead of by preprocessed text (see gpu above).
struct LinkedObjects {
  std::vector<std::string> modelCompile;
  std::string modelSource, modelLanguage;
  std::vector<std::string> supportCompile;
  bool modelNvcc = false;
};

/// Builds (or takes from the cache) the objects in dir, then runs `link`
/// with their file names (the model's first); see above for a failed link.
/// The objects and their intermediate files are removed afterwards.
llvm::Error linkWithCachedObjects(
    const LinkedObjects &objects, llvm::StringRef dir, llvm::raw_ostream *log,
    llvm::function_ref<llvm::Error(llvm::ArrayRef<std::string>)> link);

} // namespace mlir::llmc

#endif // LLMC_COMPILER_ARTIFACT_HOSTBUILD_H
