//===- HostBuild.cpp - running the host compiler for an artifact ---------===//
#include "compiler/Artifact/HostBuild.h"

#include "compiler/Executor/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>

using namespace mlir;
using namespace mlir::llmc;

llvm::Error mlir::llmc::runBuild(const std::vector<std::string> &args, llvm::StringRef dir,
                                 llvm::StringRef output, llvm::StringRef stdoutFile) {
  llvm::SmallVector<llvm::StringRef> refs(args.begin(), args.end());
  llvm::SmallString<256> errFile(dir), outFile(dir);
  llvm::sys::path::append(errFile, "compiler.log");
  llvm::sys::path::append(outFile, stdoutFile);
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, stdoutFile.empty() ? llvm::StringRef(errFile) : llvm::StringRef(outFile),
      llvm::StringRef(errFile)};
  std::string errMsg;
  // The compiler runs in the build folder so the paths it records are
  // relative.
  llvm::SmallString<256> cwd;
  llvm::sys::fs::current_path(cwd);
  if (std::error_code ec = llvm::sys::fs::set_current_path(dir))
    return makeError("cannot enter " + dir.str() + ": " + ec.message());
  int rc = llvm::sys::ExecuteAndWait(args[0], refs, std::nullopt, redirects, 0, 0, &errMsg);
  (void)llvm::sys::fs::set_current_path(cwd);
  if (rc != 0) {
    std::string out;
    if (auto buf = llvm::MemoryBuffer::getFile(errFile))
      out = (*buf)->getBuffer().take_back(4000).str();
    return makeError("building " + output.str() + " failed (" +
                     (errMsg.empty() ? "exit " + std::to_string(rc) : errMsg) + "):\n" + out);
  }
  llvm::sys::fs::remove(errFile);
  return llvm::Error::success();
}

namespace {

const char *kSupportSource = "support.cpp";
const char *kSupportText = "support.ii";
const char *kSupportObject = "support.o";
const char *kCompilerVersion = "compiler-version.txt";

std::string inDir(llvm::StringRef dir, llvm::StringRef name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

/// The cache folder (see HostBuild.h), or "" for none.
std::string cacheDir() {
  auto env = [](const char *name) -> std::string {
    const char *v = std::getenv(name);
    return v ? v : "";
  };
  std::string dir = env("LLMC_CACHE_DIR");
  if (dir == "off")
    return "";
  if (dir.empty() && !env("XDG_CACHE_HOME").empty())
    dir = env("XDG_CACHE_HOME") + "/llmc";
  if (dir.empty() && !env("HOME").empty())
    dir = env("HOME") + "/.cache/llmc";
  if (dir.empty())
    return "";
  dir += "/support";
  if (llvm::sys::fs::create_directories(dir))
    return "";
  return dir;
}

/// Copies `from` to `to` through a unique name beside `to` and a rename, so
/// a reader of `to` sees all of it or nothing.
bool publish(llvm::StringRef from, llvm::StringRef to) {
  llvm::SmallString<256> tmp;
  int fd;
  if (llvm::sys::fs::createUniqueFile(to + ".%%%%%%%%.tmp", fd, tmp))
    return false;
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  if (llvm::sys::fs::copy_file(from, tmp) || llvm::sys::fs::rename(tmp, to)) {
    llvm::sys::fs::remove(tmp);
    return false;
  }
  return true;
}

/// The source, preprocessed into dir, and its cache key.
llvm::Expected<std::string> preprocess(const std::vector<std::string> &compile,
                                       llvm::StringRef dir) {
  if (llvm::Error e = [&]() -> llvm::Error {
        int fd;
        if (std::error_code ec = llvm::sys::fs::openFileForWrite(inDir(dir, kSupportSource), fd))
          return makeError("cannot write " + inDir(dir, kSupportSource) + ": " + ec.message());
        llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
        os << "#define LLMC_MODEL_SUPPORT_DEFINITIONS\n"
              "#include \"runtime/src/model/ModelSupport.h\"\n";
        return llvm::Error::success();
      }())
    return std::move(e);
  std::vector<std::string> args = compile;
  args.insert(args.end(), {"-E", kSupportSource, "-o", kSupportText});
  if (llvm::Error e = runBuild(args, dir, "the model support object"))
    return std::move(e);
  if (llvm::Error e = runBuild({compile[0], "--version"}, dir, "the model support object",
                               kCompilerVersion))
    return std::move(e);
  llvm::SHA256 hash;
  for (const std::string &a : compile) {
    hash.update(a);
    hash.update(llvm::StringRef("\0", 1));
  }
  for (const char *file : {kCompilerVersion, kSupportText}) {
    auto buf = llvm::MemoryBuffer::getFile(inDir(dir, file));
    if (!buf)
      return makeError("cannot read " + inDir(dir, file) + ": " + buf.getError().message());
    hash.update((*buf)->getBuffer());
    hash.update(llvm::StringRef("\0", 1));
  }
  auto digest = hash.final();
  return llvm::toHex(llvm::ArrayRef<uint8_t>(digest.data(), digest.size()), /*LowerCase=*/true);
}

/// Keeps the cache folder to its newest kCacheEntries entries (by last use:
/// a hit touches its entry), so header edits and flag changes do not grow
/// it without end.
constexpr size_t kCacheEntries = 64;
void prune(llvm::StringRef cache) {
  std::vector<std::pair<llvm::sys::TimePoint<>, std::string>> entries;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(cache, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::sys::fs::file_status st;
    if (llvm::StringRef(it->path()).ends_with(".o") && !llvm::sys::fs::status(it->path(), st))
      entries.emplace_back(st.getLastModificationTime(), it->path());
  }
  if (entries.size() <= kCacheEntries)
    return;
  std::sort(entries.begin(), entries.end());
  for (size_t i = 0; i + kCacheEntries < entries.size(); ++i)
    llvm::sys::fs::remove(entries[i].second);
}

/// Compiles the preprocessed source in dir into the object, and stores it
/// as `entry` when there is one.
llvm::Expected<SupportObject> compileSupport(const std::vector<std::string> &compile,
                                             llvm::StringRef dir, const std::string &entry,
                                             llvm::raw_ostream *log) {
  if (log)
    *log << "  building the model support object with " << compile[0] << "\n";
  std::vector<std::string> args = compile;
  args.insert(args.end(), {"-c", kSupportText, "-o", kSupportObject});
  if (llvm::Error e = runBuild(args, dir, "the model support object"))
    return std::move(e);
  SupportObject object{inDir(dir, kSupportObject), ""};
  // (A cache that cannot be written only costs the next compile this one.)
  if (!entry.empty() && publish(object.path, entry))
    prune(llvm::sys::path::parent_path(entry));
  return object;
}

} // namespace

llvm::Expected<SupportObject> mlir::llmc::buildSupportObject(const std::vector<std::string> &compile,
                                                             llvm::StringRef dir,
                                                             llvm::raw_ostream *log) {
  auto key = preprocess(compile, dir);
  if (!key)
    return key.takeError();
  std::string cache = cacheDir();
  std::string entry = cache.empty() ? "" : cache + "/" + *key + ".o";
  if (!entry.empty() && llvm::sys::fs::exists(entry) &&
      !llvm::sys::fs::copy_file(entry, inDir(dir, kSupportObject))) {
    if (log)
      *log << "  the model support object from " << entry << "\n";
    // Its last use, for prune().
    int fd;
    if (!llvm::sys::fs::openFileForWrite(entry, fd, llvm::sys::fs::CD_OpenExisting,
                                         llvm::sys::fs::OF_Append)) {
      (void)llvm::sys::fs::setLastAccessAndModificationTime(fd, std::chrono::system_clock::now());
      llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    }
    return SupportObject{inDir(dir, kSupportObject), entry};
  }
  return compileSupport(compile, dir, entry, log);
}

llvm::Expected<SupportObject>
mlir::llmc::rebuildSupportObject(const std::vector<std::string> &compile,
                                 const SupportObject &object, llvm::StringRef dir,
                                 llvm::raw_ostream *log) {
  if (log)
    *log << "  the cached " << object.cacheEntry << " did not link: building it again\n";
  llvm::sys::fs::remove(object.cacheEntry);
  return compileSupport(compile, dir, object.cacheEntry, log);
}

void mlir::llmc::removeSupportFiles(llvm::StringRef dir) {
  for (const char *file : {kSupportSource, kSupportText, kSupportObject, kCompilerVersion})
    llvm::sys::fs::remove(inDir(dir, file));
}
