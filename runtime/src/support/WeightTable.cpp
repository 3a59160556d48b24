//===- WeightTable.cpp - weights.bin's per-tensor checksums ----------------===//
#include "runtime/src/support/WeightTable.h"

#include "runtime/src/support/XxHash64.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace llmc {
namespace {

bool parseHex64(const std::string &s, uint64_t &out) {
  if (s.size() != 16)
    return false;
  out = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0)
      return false;
    out = out << 4 | uint64_t(d);
  }
  return true;
}

} // namespace

bool readWeightTable(const json::Value &weights, uint64_t fileBytes,
                     std::vector<WeightRange> &out, std::string &error) {
  out.clear();
  const json::Value *table = weights.get("table");
  if (!table || table->kind != json::Value::Array) {
    error = "manifest.json: weights.table is missing (written by an older llmc? recompile)";
    return false;
  }
  uint64_t next = 0;
  for (size_t i = 0; i < table->array.size(); ++i) {
    const json::Value &e = table->array[i];
    const json::Value *name = e.get("name"), *offset = e.get("offset"), *bytes = e.get("bytes"),
                      *digest = e.get("xxh64");
    WeightRange r;
    std::string where = "manifest.json: weights.table[" + std::to_string(i) + "]";
    if (!name || name->kind != json::Value::String || !offset || !offset->isInt() || !bytes ||
        !bytes->isInt() || !digest || !parseHex64(digest->asString(), r.xxh64)) {
      error = where + " needs a name, an offset, bytes and an xxh64 of 16 hex digits";
      return false;
    }
    r.name = name->string;
    if (offset->asInt() < 0 || bytes->asInt() < 0 || uint64_t(offset->asInt()) != next ||
        uint64_t(bytes->asInt()) > fileBytes - next) {
      error = where + " ('" + r.name + "') does not follow the previous range within the " +
              std::to_string(fileBytes) + " bytes of weights.bin";
      return false;
    }
    r.offset = next;
    r.bytes = uint64_t(bytes->asInt());
    next += r.bytes;
    out.push_back(std::move(r));
  }
  if (next != fileBytes) {
    error = "manifest.json: weights.table covers " + std::to_string(next) +
            " bytes; weights.bin has " + std::to_string(fileBytes);
    return false;
  }
  return true;
}

bool checkWeights(const std::vector<WeightRange> &table, const void *data, std::string &error,
                  unsigned threads) {
  const auto *base = static_cast<const uint8_t *>(data);
  std::vector<uint8_t> bad(table.size(), 0);
  std::vector<uint64_t> got(table.size(), 0);
  // Ranges go to the threads largest first, each taking the next one left.
  std::vector<size_t> order(table.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return table[a].bytes > table[b].bytes; });
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < order.size();) {
      const WeightRange &r = table[order[k]];
      got[order[k]] = xxHash64(base + r.offset, size_t(r.bytes));
      bad[order[k]] = got[order[k]] != r.xxh64;
    }
  };
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  threads = unsigned(std::min<size_t>(threads, std::max<size_t>(1, table.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (...) { // no thread to be had: the others (and this one) do its share
      break;
    }
  }
  work();
  for (std::thread &t : pool)
    t.join();
  for (size_t i = 0; i < table.size(); ++i)
    if (bad[i]) {
      const WeightRange &r = table[i];
      error = "weights.bin: tensor '" + r.name + "' (bytes " + std::to_string(r.offset) + ".." +
              std::to_string(r.offset + r.bytes) + ") does not match its checksum in " +
              "manifest.json (xxh64 " + hex64(got[i]) + ", expected " + hex64(r.xxh64) +
              "): the file is damaged";
      return false;
    }
  return true;
}

} // namespace llmc
