//===- artifact_fuzzer.cpp - libFuzzer target for the artifact loader -----===//
//
// llmc_model_load over a damaged artifact. The artifact is a real one
// (LLMC_FUZZ_ARTIFACT: a folder llmc compile wrote; ctest compiles a test
// fixture for it); an input replaces its manifest.json and damages its
// weights.bin:
//
//   input   = manifest.json text, then optionally "\0" and an edit list
//   edits   = 5-byte records: u32 position (little-endian), u8 value;
//             value != 0 XORs the byte at position % size with it,
//             value == 0 truncates the file at position % (size + 1)
//
// "@LIBSHA@" in the manifest text stands for libmodel.so's sha256 (which
// depends on the compiler that built it), so that seeds reach the checks
// after the library's. libmodel.so and tokenizer.json are the artifact's.
//
// Besides crashes and sanitizer reports, one property: a load that succeeds
// has weights.bin exactly as compiled. A damaged file must be refused (the
// manifest's per-tensor checksums cover every byte).
//
//===----------------------------------------------------------------------===//
#include "llmc/llmc.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace {

std::string dir, original, libSha;

bool readAll(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *artifact = std::getenv("LLMC_FUZZ_ARTIFACT");
  std::string manifest;
  if (!artifact || !readAll(std::string(artifact) + "/weights.bin", original) ||
      !readAll(std::string(artifact) + "/manifest.json", manifest)) {
    std::fprintf(stderr, "artifact_fuzzer: set LLMC_FUZZ_ARTIFACT to a compiled artifact\n");
    std::exit(2);
  }
  size_t at = manifest.find("\"library\"");
  at = at == std::string::npos ? at : manifest.find("\"sha256\": \"", at);
  if (at == std::string::npos) {
    std::fprintf(stderr, "artifact_fuzzer: no library sha256 in the manifest\n");
    std::exit(2);
  }
  libSha = manifest.substr(at + 11, 64);
  char tmpl[] = "/tmp/llmc-artifact-fuzz-XXXXXX";
  if (!mkdtemp(tmpl))
    std::exit(2);
  dir = tmpl;
  for (const char *name : {"libmodel.so", "tokenizer.json"}) {
    std::string from = std::string(artifact) + "/" + name;
    if (access(from.c_str(), R_OK) == 0 && symlink(from.c_str(), (dir + "/" + name).c_str()) != 0)
      std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string input(reinterpret_cast<const char *>(data), size);
  size_t split = input.find('\0');
  std::string manifest = input.substr(0, split);
  for (size_t at; (at = manifest.find("@LIBSHA@")) != std::string::npos;)
    manifest.replace(at, 8, libSha);
  std::string weights = original;
  if (split != std::string::npos)
    for (size_t p = split + 1; p + 5 <= input.size(); p += 5) {
      uint32_t pos;
      std::memcpy(&pos, input.data() + p, 4);
      uint8_t value = uint8_t(input[p + 4]);
      if (value == 0)
        weights.resize(pos % (weights.size() + 1));
      else if (!weights.empty())
        weights[pos % weights.size()] ^= char(value);
    }
  writeAll(dir + "/manifest.json", manifest);
  writeAll(dir + "/weights.bin", weights);

  llmc_model *model = nullptr;
  if (llmc_model_load(dir.c_str(), nullptr, &model) == LLMC_OK) {
    if (weights != original) {
      std::fprintf(stderr, "artifact_fuzzer: a damaged weights.bin loaded\n");
      __builtin_trap();
    }
    llmc_model_info info;
    llmc_model_get_info(model, &info);
    llmc_model_free(model);
  } else if (std::strlen(llmc_last_error()) == 0) {
    std::fprintf(stderr, "artifact_fuzzer: a failed load without a message\n");
    __builtin_trap();
  }
  return 0;
}
