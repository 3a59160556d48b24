//===- HostBuild.h - running the host compiler for an artifact -----------===//
//
// What writeArtifact uses to build libmodel.so: running a tool in the
// artifact's build folder, and the model support object.
//
// The support object holds the operation dispatchers of
// runtime/src/model/ModelSupport.h (linear, attention, norms, ...) and the
// kernels they instantiate, compiled with LLMC_MODEL_SUPPORT_SPLIT and
// LLMC_MODEL_SUPPORT_DEFINITIONS. They are the same for every model, and
// most of a model's compile time, so the object is kept in a cache folder
// and reused by every compile with the same compiler, flags and header text:
//
//   key    SHA-256 of the compiler's `--version` output, the compile command
//          and the preprocessed support source (which is what is compiled,
//          so a header edited meanwhile cannot end up under an old key);
//   where  $LLMC_CACHE_DIR, else $XDG_CACHE_HOME/llmc, else
//          $HOME/.cache/llmc; LLMC_CACHE_DIR=off (or no such folder that
//          can be made) builds the object in the artifact's folder each time;
//   entry  support/<key>.o, written to a unique name and renamed into place,
//          so concurrent compiles never read half an object;
//   size   the 64 entries used last (about 300 KB each): storing one removes
//          the ones used least recently beyond that.
//
// The object is compiled from the same text with the same command either
// way, so an artifact is byte-identical whether it came from the cache or
// not (test/e2e/compile-cache.test).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_ARTIFACT_HOSTBUILD_H
#define LLMC_COMPILER_ARTIFACT_HOSTBUILD_H

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

/// The support object for `compile` (the compiler and its flags, without
/// source or output): `path` in dir, copied from the cache or built there
/// (and then stored). `cacheEntry` is the entry it came from, if it did.
struct SupportObject {
  std::string path, cacheEntry;
};
llvm::Expected<SupportObject> buildSupportObject(const std::vector<std::string> &compile,
                                                 llvm::StringRef dir, llvm::raw_ostream *log);

/// Builds the support object again without the cache, replacing the entry
/// `object` came from (a link with a damaged entry's object failed).
llvm::Expected<SupportObject> rebuildSupportObject(const std::vector<std::string> &compile,
                                                   const SupportObject &object,
                                                   llvm::StringRef dir, llvm::raw_ostream *log);

/// Removes the support object's files from dir.
void removeSupportFiles(llvm::StringRef dir);

} // namespace mlir::llmc

#endif // LLMC_COMPILER_ARTIFACT_HOSTBUILD_H
