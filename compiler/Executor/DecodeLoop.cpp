//===- DecodeLoop.cpp - prefill and decode through past/present IO -------===//
#include "compiler/Executor/Error.h"
#include "compiler/Executor/DecodeLoop.h"

#include <cstring>
#include <functional>
#include <memory>
#include <optional>

#include "compiler/Executor/Conformance.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;


llvm::Expected<DecodeLoop> DecodeLoop::create(const Executor &exec, DecoderIO io,
                                              std::vector<int64_t> emptyCache) {
  DecodeLoop loop(exec, std::move(io));
  std::set<std::string> covered;
  auto needInput = [&](const std::string &name, const char *role) -> llvm::Error {
    for (const ValueSignature &s : exec.inputs())
      if (s.name == name) {
        loop.inputTypes[name] = s.dtype;
        covered.insert(name);
        return llvm::Error::success();
      }
    return makeError(llvm::Twine("the model has no ") + role + " input '" + name + "'");
  };
  auto needOutput = [&](const std::string &name, const char *role) -> llvm::Error {
    for (const ValueSignature &s : exec.outputs())
      if (s.name == name)
        return llvm::Error::success();
    return makeError(llvm::Twine("the model has no ") + role + " output '" + name + "'");
  };
  const DecoderIO &d = loop.io;
  if (llvm::Error e = needInput(d.inputIds, "input_ids"))
    return std::move(e);
  if (!d.attentionMask.empty())
    if (llvm::Error e = needInput(d.attentionMask, "attention mask"))
      return std::move(e);
  if (!d.positionIds.empty())
    if (llvm::Error e = needInput(d.positionIds, "position ids"))
      return std::move(e);
  if (!d.writeIndices.empty())
    if (llvm::Error e = needInput(d.writeIndices, "write indices"))
      return std::move(e);
  if (!d.kvValidLength.empty())
    if (llvm::Error e = needInput(d.kvValidLength, "valid key length"))
      return std::move(e);
  if (llvm::Error e = needOutput(d.logits, "logits"))
    return std::move(e);
  bool staticCache = !d.writeIndices.empty() || !d.kvValidLength.empty() || d.fixedCacheRows;
  if (staticCache && d.caches.empty())
    return makeError("write indices, valid key lengths and fixed cache rows need past/present "
                     "caches");
  if (!d.caches.empty() && !staticCache &&
      (std::count(emptyCache.begin(), emptyCache.end(), 0) != 1 ||
       std::any_of(emptyCache.begin(), emptyCache.end(), [](int64_t x) { return x < 0; })))
    return makeError("the empty cache shape needs one 0 (the sequence) and no negative sizes");
  if (staticCache && (emptyCache.empty() || std::any_of(emptyCache.begin(), emptyCache.end(),
                                                        [](int64_t x) { return x <= 0; })))
    return makeError("a static cache needs its full shape, every size positive");
  for (const DecoderIO::Cache &c : d.caches) {
    if (llvm::Error e = needInput(c.past, "past"))
      return std::move(e);
    if (llvm::Error e = needOutput(c.present, "present"))
      return std::move(e);
    cpu::Tensor empty;
    if (cpu::Status st = cpu::Tensor::allocate(loop.inputTypes[c.past], emptyCache, empty); !st)
      return makeError("past '" + c.past + "': " + st.message());
    loop.past[c.past] = std::move(empty);
  }
  for (const ValueSignature &s : exec.inputs())
    if (!covered.count(s.name))
      return makeError("input '" + s.name + "' (" + s.describe() +
                  ") is neither input_ids, attention mask, position ids, write indices, valid key "
                       "length nor a past cache");
  return loop;
}

llvm::Expected<cpu::Tensor> DecodeLoop::indexTensor(const std::string &input,
                                                    llvm::ArrayRef<int64_t> values,
                                                    std::vector<int64_t> shape) const {
  cpu::DType type = inputTypes.at(input);
  cpu::Tensor t;
  if (cpu::Status st = cpu::Tensor::allocate(type, shape, t); !st)
    return makeError("input '" + input + "': " + st.message());
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == cpu::DType::Int64)
      t.mutableData<int64_t>()[i] = values[i];
    else if (type == cpu::DType::Int32 && values[i] >= INT32_MIN && values[i] <= INT32_MAX)
      t.mutableData<int32_t>()[i] = int32_t(values[i]);
    else
      return makeError("input '" + input + "' must be int32 or int64 (and hold " +
                  std::to_string(values[i]) + ")");
  }
  return t;
}

llvm::Expected<cpu::Tensor> DecodeLoop::step(llvm::ArrayRef<int64_t> tokens) {
  if (tokens.empty())
    return makeError("a decode step needs at least one token");
  // Without caches, every step runs on the whole sequence.
  std::vector<int64_t> sequence;
  int64_t start = cached;
  if (io.caches.empty()) {
    sequence = history;
    sequence.insert(sequence.end(), tokens.begin(), tokens.end());
    tokens = sequence;
    start = 0;
  }
  int64_t n = int64_t(tokens.size());
  std::vector<NamedTensor> inputs;
  auto ids = indexTensor(io.inputIds, tokens, {1, n});
  if (!ids)
    return ids.takeError();
  inputs.push_back({io.inputIds, std::move(*ids)});
  if (!io.attentionMask.empty()) {
    std::vector<int64_t> ones(size_t(start + n), 1);
    auto mask = indexTensor(io.attentionMask, ones, {1, start + n});
    if (!mask)
      return mask.takeError();
    inputs.push_back({io.attentionMask, std::move(*mask)});
  }
  if (!io.positionIds.empty()) {
    std::vector<int64_t> positions(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      positions[size_t(i)] = start + i;
    auto pos = indexTensor(io.positionIds, positions, {1, n});
    if (!pos)
      return pos.takeError();
    inputs.push_back({io.positionIds, std::move(*pos)});
  }
  if (!io.writeIndices.empty()) {
    auto t = indexTensor(io.writeIndices, {start}, {1});
    if (!t)
      return t.takeError();
    inputs.push_back({io.writeIndices, std::move(*t)});
  }
  if (!io.kvValidLength.empty()) {
    auto t = indexTensor(io.kvValidLength, {start + n}, {1});
    if (!t)
      return t.takeError();
    inputs.push_back({io.kvValidLength, std::move(*t)});
  }
  for (auto &[name, tensor] : past)
    inputs.push_back({name, tensor});
  auto outputs = exec->run(inputs);
  if (!outputs)
    return outputs.takeError();
  auto find = [&](const std::string &name) -> const cpu::Tensor * {
    for (const NamedTensor &o : *outputs)
      if (o.name == name)
        return &o.tensor;
    return nullptr;
  };
  std::map<std::string, cpu::Tensor> next;
  for (const DecoderIO::Cache &c : io.caches) {
    const cpu::Tensor *present = find(c.present);
    const cpu::Tensor &before = past.at(c.past);
    if (!present || present->dtype() != before.dtype() || present->rank() != before.rank())
      return makeError("present '" + c.present + "' cannot be fed back as past '" + c.past + "'");
    next[c.past] = *present;
  }
  const cpu::Tensor *logits = find(io.logits);
  if (!logits)
    return makeError("no logits output '" + io.logits + "'");
  cpu::Tensor result = *logits;
  past = std::move(next);
  if (io.caches.empty()) {
    history = std::move(sequence);
    cached = int64_t(history.size());
  } else {
    cached += n;
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Fixtures
//===----------------------------------------------------------------------===//

namespace {

llvm::Error readInts(const llvm::json::Object &o, llvm::StringRef key, std::vector<int64_t> &out) {
  const llvm::json::Array *a = o.getArray(key);
  if (!a)
    return makeError("'" + key + "' must be a list of integers");
  for (const llvm::json::Value &v : *a) {
    std::optional<int64_t> i = v.getAsInteger();
    if (!i)
      return makeError("'" + key + "' must be a list of integers");
    out.push_back(*i);
  }
  return llvm::Error::success();
}

std::string stringOr(const llvm::json::Object &o, llvm::StringRef key) {
  std::optional<llvm::StringRef> s = o.getString(key);
  return s ? s->str() : std::string();
}

} // namespace

llvm::Expected<ModelFixture> ModelFixture::load(llvm::StringRef dir, llvm::StringRef sharedDir) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "fixture.json");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return makeError(path + ": cannot read: " + buffer.getError().message());
  auto json = llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return makeError(path + ": " + llvm::toString(json.takeError()));
  auto bad = [&](const llvm::Twine &why) { return makeError(path + ": " + why); };
  const llvm::json::Object *root = json->getAsObject();
  if (!root)
    return bad("not a JSON object");
  ModelFixture f;
  f.dir = dir.str();
  f.name = stringOr(*root, "name");
  if (f.name.empty())
    f.name = llvm::sys::path::filename(dir).str();
  if (std::string shared = stringOr(*root, "shared_model"); !shared.empty()) {
    if (sharedDir.empty())
      return bad("the model is under the shared folder; pass --shared");
    llvm::SmallString<256> model(sharedDir);
    llvm::sys::path::append(model, shared);
    f.model = model.str().str();
  } else {
    std::string model = stringOr(*root, "model");
    if (model.empty() || llvm::sys::path::is_absolute(model) || llvm::StringRef(model).contains(".."))
      return bad("'model' must name a file inside the fixture folder");
    llvm::SmallString<256> full(dir);
    llvm::sys::path::append(full, model);
    f.model = full.str().str();
  }
  const llvm::json::Object *io = root->getObject("io");
  if (!io)
    return bad("no 'io' object");
  f.io.inputIds = stringOr(*io, "input_ids");
  f.io.attentionMask = stringOr(*io, "attention_mask");
  f.io.positionIds = stringOr(*io, "position_ids");
  f.io.writeIndices = stringOr(*io, "write_indices");
  f.io.kvValidLength = stringOr(*io, "kv_valid_length");
  f.io.fixedCacheRows = io->getBoolean("fixed_cache_rows").value_or(false);
  f.io.logits = stringOr(*io, "logits");
  if (f.io.inputIds.empty() || f.io.logits.empty())
    return bad("'io' needs input_ids and logits");
  if (const llvm::json::Array *caches = io->getArray("cache")) {
    for (const llvm::json::Value &v : *caches) {
      const llvm::json::Object *c = v.getAsObject();
      if (!c || stringOr(*c, "past").empty() || stringOr(*c, "present").empty())
        return bad("each 'io.cache' entry needs 'past' and 'present'");
      f.io.caches.push_back({stringOr(*c, "past"), stringOr(*c, "present")});
    }
  }
  if (llvm::Error e = readInts(*root, "cache_shape", f.emptyCache))
    return bad(llvm::toString(std::move(e)));
  if (llvm::Error e = readInts(*root, "prompt", f.prompt))
    return bad(llvm::toString(std::move(e)));
  if (llvm::Error e = readInts(*root, "tokens", f.tokens))
    return bad(llvm::toString(std::move(e)));
  if (root->get("greedy"))
    if (llvm::Error e = readInts(*root, "greedy", f.greedy))
      return bad(llvm::toString(std::move(e)));
  if (f.prompt.empty())
    return bad("empty prompt");
  const llvm::json::Array *refs = root->getArray("references");
  if (!refs || refs->size() != f.tokens.size() + 1)
    return bad("'references' must list the prefill and one file per decode step (" +
               llvm::Twine(f.tokens.size() + 1) + ")");
  for (const llvm::json::Value &v : *refs) {
    std::optional<llvm::StringRef> s = v.getAsString();
    if (!s || llvm::sys::path::is_absolute(*s) || s->contains(".."))
      return bad("'references' must be files inside the fixture folder");
    llvm::SmallString<256> full(dir);
    llvm::sys::path::append(full, *s);
    f.references.push_back(full.str().str());
  }
  if (std::optional<double> tol = root->getNumber("tolerance")) {
    if (!(*tol > 0 && *tol < 1))
      return bad("'tolerance' must be in (0, 1)");
    f.tolerance = *tol;
  }
  return f;
}

bool FixtureReport::passed() const {
  if (!error.empty() || steps.empty())
    return false;
  if (greedyActual != greedyExpected)
    return false;
  for (const StepCheck &s : steps) {
    if (!s.withinTolerance)
      return false;
    if (s.expectedToken >= 0 && s.argmax != s.expectedToken && !s.nearTie)
      return false;
  }
  return true;
}

namespace {

/// The last position's logits of a [.., S, V] tensor.
std::vector<double> lastRow(const cpu::Tensor &t) {
  int64_t v = t.rank() ? t.dim(t.rank() - 1) : 1;
  std::vector<double> row(static_cast<size_t>(v));
  for (int64_t i = 0; i < v; ++i)
    row[size_t(i)] = floatElement(t, t.numel() - v + i);
  return row;
}

int64_t argmax(const std::vector<double> &row) {
  return int64_t(std::max_element(row.begin(), row.end()) - row.begin());
}

} // namespace

namespace {
/// Drives the prefill/decode entry points llmc-insert-kv-cache makes: caches
/// of zeros (batch 1), fed back by name, start_pos advancing.
class CacheLoop {
public:
  static llvm::Expected<CacheLoop> create(const Executor &exec) {
    CacheLoop loop;
    loop.exec = &exec;
    // Dynamic entry points, or the batch-1 buckets of llmc-bucket-shapes.
    std::string prefill = "prefill";
    loop.decodeName = "decode";
    if (!exec.inputsOf("prefill")) {
      loop.decodeName = "decode_b1";
      for (const std::string &name : exec.functionNames()) {
        llvm::StringRef rest(name);
        int64_t s;
        if (rest.consume_front("prefill_b1_s") && !rest.getAsInteger(10, s))
          loop.buckets[s] = name;
      }
      if (loop.buckets.empty())
        return makeError("the program has no prefill entry point (nor batch-1 buckets)");
      prefill = loop.buckets.begin()->second;
    }
    const std::vector<ValueSignature> *ins = exec.inputsOf(prefill);
    if (!ins || !exec.inputsOf(loop.decodeName) || ins->size() < 3 ||
        (*ins)[1].name != "start_pos")
      return makeError("the program has no prefill(tokens, start_pos, caches...) entry point");
    loop.tokenType = (*ins)[0].dtype;
    for (size_t i = 2; i < ins->size(); ++i) {
      const ValueSignature &c = (*ins)[i];
      std::vector<int64_t> shape = c.dims;
      if (!c.ranked || shape.size() != 4)
        return makeError("cache input '" + c.name + "' is " + c.describe());
      shape[0] = 1;
      if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; }))
        return makeError("cache input '" + c.name + "' has no static size: " + c.describe());
      cpu::Tensor t;
      if (cpu::Status st = cpu::Tensor::allocate(c.dtype, shape, t); !st)
        return makeError("cache '" + c.name + "': " + st.message());
      std::memset(t.mutableRaw(), 0, t.bytes());
      loop.caches.push_back({c.name, std::move(t)});
    }
    return loop;
  }

  /// Logits [1, n, vocab] for `tokens` after everything so far.
  llvm::Expected<cpu::Tensor> step(llvm::ArrayRef<int64_t> tokens) {
    int64_t n = int64_t(tokens.size());
    // The function, and the length it takes (a bucket: padded on the right).
    bool decodeStep = n == 1 && position > 0;
    std::string function = decodeStep ? decodeName : "prefill";
    int64_t width = n;
    if (!decodeStep && !buckets.empty()) {
      auto it = buckets.lower_bound(n);
      if (it == buckets.end())
        return makeError(std::to_string(n) + " tokens exceed the largest prefill bucket " +
                         std::to_string(buckets.rbegin()->first));
      function = it->second;
      width = it->first;
    }
    cpu::Tensor ids, start;
    if (cpu::Status st = cpu::Tensor::allocate(tokenType, {1, width}, ids); !st)
      return makeError(st.message());
    std::memset(ids.mutableRaw(), 0, ids.bytes());
    for (int64_t i = 0; i < n; ++i) {
      if (tokenType == cpu::DType::Int64)
        ids.mutableData<int64_t>()[i] = tokens[size_t(i)];
      else
        ids.mutableData<int32_t>()[i] = int32_t(tokens[size_t(i)]);
    }
    if (cpu::Status st = cpu::Tensor::allocate(cpu::DType::Int64, {}, start); !st)
      return makeError(st.message());
    start.mutableData<int64_t>()[0] = position;
    std::vector<NamedTensor> inputs{{"tokens", ids}, {"start_pos", start}};
    inputs.insert(inputs.end(), caches.begin(), caches.end());
    auto outputs = exec->run(function, inputs);
    if (!outputs)
      return outputs.takeError();
    for (NamedTensor &c : caches)
      for (const NamedTensor &o : *outputs)
        if (o.name == c.name)
          c.tensor = o.tensor;
    position += n; // padded rows are overwritten before anything reads them
    const cpu::Tensor &logits = (*outputs)[0].tensor;
    if (width == n || logits.rank() != 3)
      return logits;
    // The first n rows (a copy: the padded run's tensor goes away).
    cpu::Tensor rows;
    if (cpu::Status st = cpu::Tensor::allocate(logits.dtype(), {1, n, logits.dim(2)}, rows); !st)
      return makeError(st.message());
    std::memcpy(rows.mutableRaw(), logits.raw(), rows.bytes());
    return rows;
  }

private:
  const Executor *exec = nullptr;
  std::string decodeName;
  std::map<int64_t, std::string> buckets; // prefill length -> function
  cpu::DType tokenType = cpu::DType::Int64;
  std::vector<NamedTensor> caches;
  int64_t position = 0;
};

/// The last `n` rows of a [1, T, V] tensor (a view).
cpu::Tensor lastRows(const cpu::Tensor &t, int64_t n) {
  if (t.rank() != 3 || t.dim(1) <= n)
    return t;
  size_t row = size_t(t.dim(2)) * cpu::storageSize(t.dtype());
  const char *base = static_cast<const char *>(t.raw()) + size_t(t.dim(1) - n) * row;
  return cpu::Tensor::wrap(t.dtype(), {1, n, t.dim(2)}, base);
}
} // namespace

namespace {
using Stepper = FixtureStepper;

/// Steps `exec` as its entry points allow: prefill/decode over the static
/// cache when it has them, the model's own IO otherwise.
llvm::Expected<Stepper> makeStepper(std::shared_ptr<Executor> exec, const ModelFixture &f) {
  if (exec->inputsOf("prefill") || exec->inputsOf("decode_b1")) {
    auto loop = CacheLoop::create(*exec);
    if (!loop)
      return loop.takeError();
    auto shared = std::make_shared<CacheLoop>(std::move(*loop));
    return Stepper([exec, shared](llvm::ArrayRef<int64_t> t) { return shared->step(t); });
  }
  auto loop = DecodeLoop::create(*exec, f.io, f.emptyCache);
  if (!loop)
    return loop.takeError();
  auto shared = std::make_shared<DecodeLoop>(std::move(*loop));
  return Stepper([exec, shared](llvm::ArrayRef<int64_t> t) { return shared->step(t); });
}
} // namespace

FixtureReport mlir::llmc::verifyFixture(const ModelFixture &f, llvm::StringRef pipeline) {
  auto exec = Executor::fromOnnxFile(f.model, pipeline);
  if (!exec) {
    FixtureReport report;
    report.error = llvm::toString(exec.takeError());
    return report;
  }
  // After llmc-insert-kv-cache: prefill and decode over the static cache
  // (or their buckets), which give the new tokens' rows.
  bool cached = (*exec)->inputsOf("prefill") || (*exec)->inputsOf("decode_b1");
  auto step = makeStepper(std::shared_ptr<Executor>(std::move(*exec)), f);
  if (!step) {
    FixtureReport report;
    report.error = llvm::toString(step.takeError());
    return report;
  }
  return verifyFixtureSteps(f, *step, cached);
}

FixtureReport mlir::llmc::verifyFixtureSteps(const ModelFixture &f, const FixtureStepper &step,
                                             bool newRowsOnly) {
  FixtureReport report;
  for (size_t i = 0; i < f.references.size(); ++i) {
    StepCheck check;
    check.label = i == 0 ? "prefill" : "step " + std::to_string(i - 1);
    // Teacher forcing with onnxruntime's tokens keeps both runs on the same
    // sequence even where a near-tie flips a greedy choice.
    std::vector<int64_t> stepTokens = i == 0 ? f.prompt : std::vector<int64_t>{f.tokens[i - 1]};
    auto logits = step(stepTokens);
    if (!logits) {
      report.error = check.label + ": " + llvm::toString(logits.takeError());
      return report;
    }
    auto ref = readTensorFile(f.references[i]);
    if (!ref) {
      report.error = llvm::toString(ref.takeError());
      return report;
    }
    // A cache-less export's reference covers the whole sequence; the cached
    // entry points give the new tokens' rows.
    cpu::Tensor expected =
        newRowsOnly ? lastRows(ref->tensor, logits->rank() == 3 ? logits->dim(1) : 0)
                    : ref->tensor; // (a view: ref stays alive below)
    // The runtime's logits are f32 whatever the model computes in; an f16
    // reference widens exactly.
    if (logits->dtype() == cpu::DType::Float && cpu::isFloat(expected.dtype()) &&
        expected.dtype() != cpu::DType::Float) {
      cpu::Tensor wide;
      if (cpu::Status st = cpu::Tensor::allocate(cpu::DType::Float, expected.shape(), wide); !st) {
        report.error = st.message();
        return report;
      }
      for (int64_t e = 0; e < expected.numel(); ++e)
        wide.mutableData<float>()[e] = float(floatElement(expected, e));
      expected = wide;
    }
    if (logits->dtype() != expected.dtype() || logits->shape() != expected.shape()) {
      report.error = check.label + ": logits are " + logits->describe() + ", the reference " +
                     expected.describe();
      return report;
    }
    Tolerance tol;
    tol.rtol = 0, tol.atol = 0, tol.scaleRel = f.tolerance;
    Comparison c = compareTensors(*logits, expected, tol);
    check.maxAbsError = c.maxAbsError;
    for (int64_t e = 0; e < expected.numel(); ++e)
      check.scale = std::max(check.scale, std::fabs(floatElement(expected, e)));
    check.withinTolerance = c.ok;
    if (i < f.tokens.size()) {
      std::vector<double> ours = lastRow(*logits), theirs = lastRow(expected);
      check.argmax = argmax(ours);
      check.expectedToken = f.tokens[i];
      std::vector<double> sorted = theirs;
      std::partial_sort(sorted.begin(), sorted.begin() + std::min<size_t>(2, sorted.size()),
                        sorted.end(), std::greater<double>());
      check.nearTie = sorted.size() > 1 && sorted[0] - sorted[1] <= 2 * f.tolerance * check.scale;
    }
    report.steps.push_back(check);
  }
  return report;
}


FixtureReport mlir::llmc::verifyAgainstImport(const ModelFixture &f, llvm::StringRef pipeline,
                                              int decodeSteps, double atol) {
  FixtureReport report;
  auto load = [&](llvm::StringRef p) -> llvm::Expected<Stepper> {
    auto exec = Executor::fromOnnxFile(f.model, p);
    if (!exec)
      return exec.takeError();
    return makeStepper(std::shared_ptr<Executor>(std::move(*exec)), f);
  };
  auto imported = load("");
  if (!imported) {
    report.error = "imported graph: " + llvm::toString(imported.takeError());
    return report;
  }
  auto compiled = load(pipeline);
  if (!compiled) {
    report.error = llvm::toString(compiled.takeError());
    return report;
  }
  std::vector<int64_t> tokens = f.prompt;
  for (int i = 0; i <= decodeSteps; ++i) {
    StepCheck check;
    check.label = i == 0 ? "prefill" : "step " + std::to_string(i - 1);
    auto want = (*imported)(tokens);
    if (!want) {
      report.error = check.label + ": imported graph: " + llvm::toString(want.takeError());
      return report;
    }
    auto got = (*compiled)(tokens);
    if (!got) {
      report.error = check.label + ": " + llvm::toString(got.takeError());
      return report;
    }
    // The imported graph of a cache-less export gives the whole sequence.
    cpu::Tensor expected = lastRows(*want, got->rank() == 3 ? got->dim(1) : 0);
    if (got->dtype() != expected.dtype() || got->shape() != expected.shape()) {
      report.error = check.label + ": logits are " + got->describe() + ", the imported graph's " +
                     expected.describe();
      return report;
    }
    Tolerance tol;
    tol.rtol = 0;
    if (got->dtype() == cpu::DType::Float && atol > 0)
      tol.atol = atol, tol.scaleRel = 0;
    else
      tol.atol = 0, tol.scaleRel = f.tolerance;
    Comparison c = compareTensors(*got, expected, tol);
    check.maxAbsError = c.maxAbsError;
    for (int64_t e = 0; e < expected.numel(); ++e)
      check.scale = std::max(check.scale, std::fabs(floatElement(expected, e)));
    check.withinTolerance = c.ok;
    std::vector<double> theirs = lastRow(expected);
    check.argmax = argmax(lastRow(*got));
    check.expectedToken = argmax(theirs);
    std::vector<double> sorted = theirs;
    std::partial_sort(sorted.begin(), sorted.begin() + std::min<size_t>(2, sorted.size()),
                      sorted.end(), std::greater<double>());
    check.nearTie = sorted.size() > 1 &&
                    sorted[0] - sorted[1] <= 2 * (atol > 0 ? atol : f.tolerance * check.scale);
    report.steps.push_back(check);
    // Greedy continuation by the imported graph.
    tokens = {check.expectedToken};
  }
  return report;
}
