//===- HostBuild.cpp - running the host compiler for an artifact ---------===//
#include "compiler/Artifact/HostBuild.h"

#include "compiler/Executor/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
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
#include <set>

using namespace mlir;
using namespace mlir::llmc;

llvm::Error mlir::llmc::runBuild(const std::vector<std::string> &args, llvm::StringRef dir,
                                 llvm::StringRef output, llvm::StringRef stdoutFile) {
  llvm::SmallVector<llvm::StringRef> refs(args.begin(), args.end());
  llvm::SmallString<256> errFile(dir), outFile(dir);
  llvm::sys::path::append(errFile, "compiler.log");
  llvm::sys::path::append(outFile, stdoutFile);
  // (A redirect writes over a file without truncating it: a shorter output
  // would keep the end of the longer one before it.)
  if (!stdoutFile.empty())
    llvm::sys::fs::remove(outFile);
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
const char *kCompilerVersion = "compiler-version.txt";

/// What an object is built from and into, in the build folder.
struct ObjectBuild {
  std::vector<std::string> compile; // the compiler and its flags
  std::string source;               // in dir
  std::string language;             // -x for the source ("" by its name)
  std::string what;                 // for messages
  std::string kind;                 // the cache's subfolder
  size_t keep;                      // its entries kept (prune)
  /// nvcc: keyed by the files `nvcc -M` lists (dependencyKeys) and
  /// compiled from the source itself (its host and device passes each
  /// preprocess it their own way); else keyed by and compiled from the
  /// host compiler's preprocessed text.
  bool byDependencies = false;
  std::string text() const { return llvm::sys::path::stem(source).str() + ".ii"; }
  std::string depfile() const { return llvm::sys::path::stem(source).str() + ".d"; }
  std::string object() const { return llvm::sys::path::stem(source).str() + ".o"; }
};

ObjectBuild supportBuild(const std::vector<std::string> &compile) {
  return {compile, kSupportSource, "", "the model support object", "support", 64};
}
ObjectBuild modelBuild(const LinkedObjects &o) {
  if (o.modelNvcc)
    return {o.modelCompile, o.modelSource, o.modelLanguage, "the model's GPU code", "gpu", 64,
            true};
  return {o.modelCompile, o.modelSource, o.modelLanguage, "the model's code", "model", 512};
}

std::string inDir(llvm::StringRef dir, llvm::StringRef name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

/// b's compiler and flags run on `input` (its language given) with `mode`
/// ("-E", "-M", "-c") into `output`.
std::vector<std::string> sourceCommand(const ObjectBuild &b, llvm::StringRef mode,
                                       llvm::StringRef input, llvm::StringRef output) {
  std::vector<std::string> args = b.compile;
  if (!b.language.empty() && input == b.source)
    args.insert(args.end(), {"-x", b.language});
  args.insert(args.end(), {mode.str(), input.str(), "-o", output.str()});
  return args;
}

/// The cache folder for `kind` (see HostBuild.h), or "" for none.
std::string cacheDir(llvm::StringRef kind) {
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
  dir += "/" + kind.str();
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

/// The folders the compile command includes from (its -I flags): where
/// llmc's headers are, which differs between two checkouts of one llmc.
std::vector<std::string> includeDirs(const std::vector<std::string> &compile) {
  std::vector<std::string> dirs;
  for (const std::string &a : compile)
    if (llvm::StringRef(a).starts_with("-I") && a.size() > 3)
      dirs.push_back(a.substr(2));
  // (the longest first: one may hold another)
  std::sort(dirs.begin(), dirs.end(),
            [](const std::string &x, const std::string &y) { return x.size() > y.size(); });
  return dirs;
}

/// `text` with every include folder's path replaced by a mark, for the key:
/// the same llmc checked out elsewhere (a CI clone) finds the objects it
/// built. (An object that records such a path goes under the exact key.)
std::string relocated(llvm::StringRef text, const std::vector<std::string> &dirs) {
  std::string out = text.str();
  for (size_t i = 0; i < dirs.size(); ++i) {
    std::string mark = "<include " + std::to_string(i) + ">";
    for (size_t at = out.find(dirs[i]); at != std::string::npos;
         at = out.find(dirs[i], at + mark.size()))
      out.replace(at, dirs[i].size(), mark);
  }
  return out;
}

/// An object's two cache keys: with the include folders' paths marked
/// (for an object that records none of them) and as they are.
struct Keys {
  std::string relocatable, exact;
};

/// An object in the build folder, the cache entry it came from (if it did)
/// and its keys.
struct CachedObject {
  std::string path, cacheEntry;
  Keys keys;
};

/// The cache entry of `key` in `cache`.
std::string entryOf(llvm::StringRef cache, llvm::StringRef key) {
  return (cache + "/" + key + ".o").str();
}

/// The two keys' hashes, fed the same pieces: the relocatable one with the
/// include folders' paths marked.
struct KeyHash {
  std::vector<std::string> dirs;
  llvm::SHA256 relocatable, exact;
  explicit KeyHash(const std::vector<std::string> &compile) : dirs(includeDirs(compile)) {
    for (const std::string &a : compile)
      add(a);
  }
  void add(llvm::StringRef text) {
    relocatable.update(relocated(text, dirs));
    exact.update(text);
    relocatable.update(llvm::StringRef("\0", 1));
    exact.update(llvm::StringRef("\0", 1));
  }
  llvm::Error addFile(llvm::StringRef path) {
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf)
      return makeError("cannot read " + path.str() + ": " + buf.getError().message());
    add((*buf)->getBuffer());
    return llvm::Error::success();
  }
  Keys final() {
    // (the exact key marked, so that it never equals a relocatable one)
    exact.update("exact");
    auto hex = [](llvm::SHA256 &h) {
      auto digest = h.final();
      return llvm::toHex(llvm::ArrayRef<uint8_t>(digest.data(), digest.size()),
                         /*LowerCase=*/true);
    };
    return Keys{hex(relocatable), hex(exact)};
  }
};

/// The source, preprocessed into dir, and its cache keys.
llvm::Expected<Keys> preprocess(const ObjectBuild &b, llvm::StringRef dir) {
  if (llvm::Error e = runBuild(sourceCommand(b, "-E", b.source, b.text()), dir, b.what))
    return std::move(e);
  if (llvm::Error e = runBuild({b.compile[0], "--version"}, dir, b.what, kCompilerVersion))
    return std::move(e);
  KeyHash h(b.compile);
  for (const std::string &file : {std::string(kCompilerVersion), b.text()})
    if (llvm::Error e = h.addFile(inDir(dir, file)))
      return std::move(e);
  return h.final();
}

/// The files a make rule (`nvcc -M`'s output) lists after its colon.
std::vector<std::string> ruleDependencies(llvm::StringRef rule) {
  std::vector<std::string> files;
  size_t colon = rule.find(": ");
  std::string current;
  auto flush = [&] {
    if (!current.empty())
      files.push_back(current);
    current.clear();
  };
  for (size_t i = colon == llvm::StringRef::npos ? rule.size() : colon + 1; i < rule.size(); ++i) {
    char c = rule[i];
    if (c == '\\' && i + 1 < rule.size() && (rule[i + 1] == ' ' || rule[i + 1] == '#')) {
      current += rule[++i]; // an escaped space or '#' in a name
    } else if (c == '$' && i + 1 < rule.size() && rule[i + 1] == '$') {
      current += rule[++i]; // make's escaped '$'
    } else if (c == '\\' && i + 1 < rule.size() && (rule[i + 1] == '\n' || rule[i + 1] == '\r')) {
      flush(); // a continued line
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      flush();
    } else {
      current += c;
    }
  }
  flush();
  return files;
}

/// The host compiler nvcc runs for `compile`: -ccbin (--compiler-bindir),
/// else NVCC_CCBIN, else gcc; a folder names its gcc.
std::string nvccHostCompiler(const std::vector<std::string> &compile) {
  std::string host = "gcc";
  if (const char *v = std::getenv("NVCC_CCBIN"); v && *v)
    host = v;
  for (size_t i = 0; i < compile.size(); ++i) {
    llvm::StringRef a(compile[i]);
    for (llvm::StringRef flag : {"-ccbin", "--compiler-bindir"}) {
      if (a == flag && i + 1 < compile.size())
        host = compile[i + 1];
      else if (a.starts_with((flag + "=").str()))
        host = a.drop_front(flag.size() + 1).str();
    }
  }
  if (llvm::sys::fs::is_directory(host))
    host += "/gcc";
  return host;
}

/// An nvcc object's cache keys, from what its compile reads: nvcc's
/// version, the host compiler nvcc runs (its --version; NVCC_CCBIN and the
/// NVCC_*_FLAGS it reads from the environment), the command, and the path
/// and contents of every file `nvcc -M` lists. Its device pass may include
/// a file the listing (one pass) misses, under a test of __CUDA_ARCH__:
/// so every file of a listed file's folder below the include folders (the
/// kernel templates beside each other) is read too, but not the build
/// folder's (the weights); the toolkit's own headers are its version's.
/// A listing without the source is an error (no key: compiled uncached).
llvm::Expected<Keys> dependencyKeys(const ObjectBuild &b, llvm::StringRef dir) {
  if (llvm::Error e = runBuild(sourceCommand(b, "-M", b.source, b.depfile()), dir, b.what))
    return std::move(e);
  KeyHash h(b.compile);
  if (llvm::Error e = runBuild({b.compile[0], "--version"}, dir, b.what, kCompilerVersion))
    return std::move(e);
  if (llvm::Error e = h.addFile(inDir(dir, kCompilerVersion)))
    return std::move(e);
  for (const char *name : {"NVCC_CCBIN", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"}) {
    const char *v = std::getenv(name);
    h.add(std::string(name) + "=" + (v ? v : ""));
  }
  std::string host = nvccHostCompiler(b.compile);
  auto program = llvm::sys::findProgramByName(host);
  if (!program)
    return makeError("no host compiler " + host + " for nvcc");
  if (llvm::Error e = runBuild({*program, "--version"}, dir, b.what, kCompilerVersion))
    return std::move(e);
  if (llvm::Error e = h.addFile(inDir(dir, kCompilerVersion)))
    return std::move(e);
  auto rule = llvm::MemoryBuffer::getFile(inDir(dir, b.depfile()));
  if (!rule)
    return makeError("cannot read " + inDir(dir, b.depfile()) + ": " +
                     rule.getError().message());
  std::string inBuild = dir.str() + "/";
  std::set<std::string> files;
  for (const std::string &f : ruleDependencies((*rule)->getBuffer())) {
    std::string path = llvm::sys::path::is_absolute(f) ? f : inDir(dir, f);
    files.insert(path);
    llvm::StringRef folder = llvm::sys::path::parent_path(path);
    if (llvm::StringRef(path).starts_with(inBuild) || llvm::none_of(h.dirs, [&](const std::string &d) {
          return folder.starts_with(d + "/");
        }))
      continue;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(folder, ec), end; it != end && !ec;
         it.increment(ec))
      if (llvm::sys::fs::is_regular_file(it->path()))
        files.insert(it->path());
  }
  if (!files.count(inDir(dir, b.source)))
    return makeError("nvcc -M did not list " + b.source);
  for (const std::string &f : files) {
    // (the build folder's own files by name: it is new each compile)
    llvm::StringRef name(f);
    h.add(name.starts_with(inBuild) ? name.drop_front(inBuild.size()) : name);
    if (llvm::Error e = h.addFile(f))
      return std::move(e);
  }
  return h.final();
}

/// Keeps a cache folder to its `keep` newest entries (by last use: a hit
/// touches its entry), so header edits, flag changes and models do not grow
/// it without end (ObjectBuild::keep: 64 support objects of about 300 KB,
/// 512 model objects of 0.1-1 MB, 64 gpu objects of 1-5 MB).
void prune(llvm::StringRef cache, size_t keep) {
  std::vector<std::pair<llvm::sys::TimePoint<>, std::string>> entries;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(cache, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::sys::fs::file_status st;
    if (llvm::StringRef(it->path()).ends_with(".o") && !llvm::sys::fs::status(it->path(), st))
      entries.emplace_back(st.getLastModificationTime(), it->path());
  }
  if (entries.size() <= keep)
    return;
  std::sort(entries.begin(), entries.end());
  for (size_t i = 0; i + keep < entries.size(); ++i)
    llvm::sys::fs::remove(entries[i].second);
}

/// Compiles the preprocessed source in dir into the object, and stores it
/// in `cache` when there is one: under its relocatable key, or its exact one
/// if it records where the headers are (an assert's __FILE__: not the
/// object another checkout builds).
llvm::Expected<CachedObject> compileObject(const ObjectBuild &b, llvm::StringRef dir,
                                           llvm::StringRef cache, const Keys &keys,
                                           llvm::raw_ostream *log) {
  if (log)
    *log << "  building " << b.what << " with " << b.compile[0] << "\n";
  if (llvm::Error e = runBuild(
          sourceCommand(b, "-c", b.byDependencies ? b.source : b.text(), b.object()), dir,
          b.what))
    return std::move(e);
  CachedObject object{inDir(dir, b.object()), "", keys};
  if (cache.empty())
    return object;
  // nvcc read the files after they were hashed: a file changed meanwhile
  // (an edit, a checkout) would leave this object under the old key.
  if (b.byDependencies) {
    auto after = dependencyKeys(b, dir);
    if (!after || after->relocatable != keys.relocatable || after->exact != keys.exact) {
      llvm::consumeError(after.takeError());
      return object;
    }
  }
  auto bytes = llvm::MemoryBuffer::getFile(object.path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!bytes)
    return object;
  bool recordsPaths = llvm::any_of(includeDirs(b.compile), [&](const std::string &d) {
    return (*bytes)->getBuffer().contains(d);
  });
  // (A cache that cannot be written only costs the next compile this one.)
  if (publish(object.path, entryOf(cache, recordsPaths ? keys.exact : keys.relocatable)))
    prune(cache, b.keep);
  return object;
}

/// The object `b` builds: `object()` in dir, copied from the cache or
/// built there (and then stored).
llvm::Expected<CachedObject> buildObject(const ObjectBuild &b, llvm::StringRef dir,
                                         llvm::raw_ostream *log) {
  auto keys = b.byDependencies ? dependencyKeys(b, dir) : preprocess(b, dir);
  if (!keys && b.byDependencies) {
    // (no key for nvcc's object: compiled as before the cache, not failed)
    if (log)
      *log << "  no cache key for " << b.what << " (" << llvm::toString(keys.takeError())
           << "): not cached\n";
    return compileObject(b, dir, "", Keys{}, log);
  }
  if (!keys)
    return keys.takeError();
  std::string cache = cacheDir(b.kind);
  for (const std::string &key : {keys->relocatable, keys->exact}) {
    std::string entry = entryOf(cache, key);
    if (cache.empty() || !llvm::sys::fs::exists(entry) ||
        llvm::sys::fs::copy_file(entry, inDir(dir, b.object())))
      continue;
    if (log)
      *log << "  " << b.what << " from " << entry << "\n";
    // Its last use, for prune().
    int fd;
    if (!llvm::sys::fs::openFileForWrite(entry, fd, llvm::sys::fs::CD_OpenExisting,
                                         llvm::sys::fs::OF_Append)) {
      (void)llvm::sys::fs::setLastAccessAndModificationTime(fd, std::chrono::system_clock::now());
      llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    }
    return CachedObject{inDir(dir, b.object()), entry, *keys};
  }
  return compileObject(b, dir, cache, *keys, log);
}

/// Builds `object` again without the cache, replacing its entry.
llvm::Expected<CachedObject> rebuildObject(const ObjectBuild &b, const CachedObject &object,
                                           llvm::StringRef dir, llvm::raw_ostream *log) {
  if (log)
    *log << "  the cached " << object.cacheEntry << " did not link: building it again\n";
  llvm::sys::fs::remove(object.cacheEntry);
  return compileObject(b, dir, llvm::sys::path::parent_path(object.cacheEntry), object.keys,
                       log);
}

/// support.cpp in dir: the support object's source.
llvm::Error writeSupportSource(llvm::StringRef dir) {
  int fd;
  if (std::error_code ec = llvm::sys::fs::openFileForWrite(inDir(dir, kSupportSource), fd))
    return makeError("cannot write " + inDir(dir, kSupportSource) + ": " + ec.message());
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << "#define LLMC_MODEL_SUPPORT_DEFINITIONS\n"
        "#include \"runtime/src/model/ModelSupport.h\"\n";
  return llvm::Error::success();
}

void removeObjectFiles(const ObjectBuild &b, llvm::StringRef dir) {
  for (const std::string &file : {b.text(), b.object(), b.depfile()})
    llvm::sys::fs::remove(inDir(dir, file));
}

} // namespace

llvm::Error mlir::llmc::linkWithCachedObjects(const LinkedObjects &objects, llvm::StringRef dir,
                                              llvm::raw_ostream *log,
                                              llvm::function_ref<llvm::Error(
                                                  llvm::ArrayRef<std::string>)> link) {
  std::vector<ObjectBuild> builds = {
      modelBuild(objects)};
  if (!objects.supportCompile.empty()) {
    if (llvm::Error e = writeSupportSource(dir))
      return e;
    builds.push_back(supportBuild(objects.supportCompile));
  }
  std::vector<CachedObject> built;
  auto cleanup = llvm::make_scope_exit([&] {
    for (const ObjectBuild &b : builds)
      removeObjectFiles(b, dir);
    llvm::sys::fs::remove(inDir(dir, kSupportSource));
    llvm::sys::fs::remove(inDir(dir, kCompilerVersion));
  });
  std::vector<std::string> files;
  for (const ObjectBuild &b : builds) {
    auto o = buildObject(b, dir, log);
    if (!o)
      return o.takeError();
    built.push_back(*o);
    files.push_back(b.object());
  }
  llvm::Error e = link(files);
  bool cached = llvm::any_of(built, [](const CachedObject &o) { return !o.cacheEntry.empty(); });
  if (e && cached) {
    // A damaged cache entry must not fail every compile after it: the
    // objects that came from the cache are built again.
    llvm::consumeError(std::move(e));
    for (size_t i = 0; i < builds.size(); ++i) {
      if (built[i].cacheEntry.empty())
        continue;
      auto o = rebuildObject(builds[i], built[i], dir, log);
      if (!o)
        return o.takeError();
      built[i] = *o;
    }
    e = link(files);
  }
  return e;
}
