//===- Calibration.cpp - statistics of the inputs of linear layers --------===//
#include "passes/Calibration.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/SHA256.h"

#include <array>
#include <cmath>
#include <cstring>

using namespace mlir::llmc;

namespace {

constexpr char kMagic[8] = {'L', 'L', 'M', 'C', 'C', 'A', 'L', '1'};

void putU64(llvm::raw_ostream &os, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i)
    b[i] = char((v >> (8 * i)) & 0xff);
  os.write(b, 8);
}

struct Reader {
  llvm::StringRef data;
  size_t at = 0;
  bool take(size_t n, const char *&p) {
    if (data.size() - at < n)
      return false;
    p = data.data() + at;
    at += n;
    return true;
  }
  bool u64(uint64_t &v) {
    const char *p;
    if (!take(8, p))
      return false;
    v = 0;
    for (int i = 0; i < 8; ++i)
      v |= uint64_t(uint8_t(p[i])) << (8 * i);
    return true;
  }
};

} // namespace

const CalibrationStats::Layer *CalibrationStats::find(uint64_t fingerprint, int64_t n,
                                                      int64_t k) const {
  for (const Layer &l : layers)
    if (l.fingerprint == fingerprint && l.n == n && l.k == k)
      return &l;
  return nullptr;
}

uint64_t mlir::llmc::weightFingerprint(llvm::ArrayRef<uint8_t> bytes) {
  std::array<uint8_t, 32> digest = llvm::SHA256::hash(bytes);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(digest[size_t(i)]) << (8 * i);
  return v;
}

std::string CalibrationStats::serialize() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  os.write(kMagic, 8);
  putU64(os, inputs.size());
  std::vector<float> row;
  for (const Input &in : inputs) {
    putU64(os, uint64_t(in.k));
    putU64(os, uint64_t(in.rows));
    row.resize(size_t(in.k));
    for (int64_t i = 0; i < in.k; ++i) {
      for (int64_t j = 0; j < in.k; ++j)
        row[size_t(j)] = float(in.gram[size_t(i * in.k + j)]);
      os.write(reinterpret_cast<const char *>(row.data()), row.size() * sizeof(float));
    }
  }
  putU64(os, layers.size());
  for (const Layer &l : layers) {
    putU64(os, l.fingerprint);
    putU64(os, uint64_t(l.n));
    putU64(os, uint64_t(l.k));
    putU64(os, uint64_t(l.input));
  }
  return out;
}

llvm::Error CalibrationStats::write(llvm::StringRef path) const {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError("cannot write " + path.str() + ": " + ec.message());
  os << serialize();
  os.close();
  if (os.has_error()) {
    std::string why = os.error().message();
    os.clear_error(); // (or the stream's destructor aborts)
    return llvm::createStringError("cannot write " + path.str() + ": " + why);
  }
  return llvm::Error::success();
}

llvm::Expected<CalibrationStats> CalibrationStats::read(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return llvm::createStringError("cannot read " + path.str() + ": " + buf.getError().message());
  return parse((*buf)->getBuffer(), path);
}

llvm::Expected<CalibrationStats> CalibrationStats::parse(llvm::StringRef data,
                                                         llvm::StringRef name) {
  auto bad = [&](const std::string &why) {
    return llvm::createStringError(name.str() + " is not a calibration file llmc wrote: " + why);
  };
  Reader r{data};
  const char *magic;
  if (!r.take(8, magic) || std::memcmp(magic, kMagic, 8) != 0)
    return bad("no LLMCCAL1 header");
  CalibrationStats s;
  uint64_t count;
  if (!r.u64(count) || count > (1u << 20))
    return bad("bad input count");
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t k, rows;
    if (!r.u64(k) || !r.u64(rows) || k == 0 || k > (1u << 16))
      return bad("input " + std::to_string(i) + " has a bad size");
    const char *p;
    if (k * k * sizeof(float) > r.data.size() - r.at || !r.take(size_t(k * k * sizeof(float)), p))
      return bad("input " + std::to_string(i) + " is cut short");
    Input in;
    in.k = int64_t(k), in.rows = int64_t(rows);
    in.gram.resize(size_t(k * k));
    for (size_t e = 0; e < k * k; ++e) {
      float v;
      std::memcpy(&v, p + e * sizeof(float), sizeof(float));
      if (!std::isfinite(v))
        return bad("input " + std::to_string(i) + " holds a value that is not finite");
      in.gram[e] = v;
    }
    s.inputs.push_back(std::move(in));
  }
  if (!r.u64(count) || count > (1u << 20))
    return bad("bad layer count");
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t fp, n, k, input;
    if (!r.u64(fp) || !r.u64(n) || !r.u64(k) || !r.u64(input))
      return bad("layer " + std::to_string(i) + " is cut short");
    if (input >= s.inputs.size() || uint64_t(s.inputs[input].k) != k)
      return bad("layer " + std::to_string(i) + " names no input of its K");
    s.layers.push_back({fp, int64_t(n), int64_t(k), int64_t(input)});
  }
  if (r.at != r.data.size())
    return bad("bytes past the end");
  return s;
}
