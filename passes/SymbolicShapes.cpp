//===- SymbolicShapes.cpp - what shape computations compute, symbolically -===//
#include "passes/SymbolicShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::llmc;

//===----------------------------------------------------------------------===//
// SymExpr
//===----------------------------------------------------------------------===//

namespace {
constexpr size_t kMaxTerms = 16; // larger polynomials are not worth tracking
} // namespace

void SymExpr::add(const Monomial &m, int64_t c) {
  if (c == 0)
    return;
  int64_t &slot = terms[m];
  if (__builtin_add_overflow(slot, c, &slot))
    overflow = true;
  if (slot == 0)
    terms.erase(m);
  if (terms.size() > kMaxTerms)
    overflow = true;
}

SymExpr SymExpr::constant(int64_t c) {
  SymExpr e;
  e.add({}, c);
  return e;
}

SymExpr SymExpr::symbol(unsigned id) {
  SymExpr e;
  e.add({id}, 1);
  return e;
}

bool SymExpr::isConstant() const {
  return !overflow && (terms.empty() || (terms.size() == 1 && terms.begin()->first.empty()));
}

std::optional<int64_t> SymExpr::asConstant() const {
  if (!isConstant())
    return std::nullopt;
  return terms.empty() ? 0 : terms.begin()->second;
}

std::optional<int64_t> SymExpr::evaluate(const std::vector<int64_t> &values) const {
  if (overflow)
    return std::nullopt;
  int64_t total = 0;
  for (const auto &[m, c] : terms) {
    int64_t term = c;
    for (unsigned id : m) {
      if (id >= values.size() || __builtin_mul_overflow(term, values[id], &term))
        return std::nullopt;
    }
    if (__builtin_add_overflow(total, term, &total))
      return std::nullopt;
  }
  return total;
}

std::optional<SymExpr> SymExpr::solveFor(unsigned id) const {
  if (overflow)
    return std::nullopt;
  int64_t coefficient = 0;
  SymExpr rest;
  for (const auto &[m, c] : terms) {
    if (m == Monomial{id}) {
      coefficient = c;
      continue;
    }
    if (std::find(m.begin(), m.end(), id) != m.end())
      return std::nullopt;
    rest.add(m, c);
  }
  if (coefficient != 1 && coefficient != -1)
    return std::nullopt;
  // c * id + rest == 0  ->  id == -rest / c
  return coefficient == 1 ? SymExpr::constant(0) - rest : rest;
}

std::optional<unsigned> SymExpr::asSymbol() const {
  if (overflow || terms.size() != 1)
    return std::nullopt;
  auto &[m, c] = *terms.begin();
  if (m.size() != 1 || c != 1)
    return std::nullopt;
  return m[0];
}

std::vector<unsigned> SymExpr::symbols() const {
  std::vector<unsigned> out;
  for (auto &[m, c] : terms)
    out.insert(out.end(), m.begin(), m.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool SymExpr::isNonNegative() const {
  if (overflow)
    return false;
  return std::all_of(terms.begin(), terms.end(), [](auto &t) { return t.second >= 0; });
}

SymExpr SymExpr::operator+(const SymExpr &o) const {
  SymExpr r = *this;
  r.overflow |= o.overflow;
  for (auto &[m, c] : o.terms)
    r.add(m, c);
  return r;
}

SymExpr SymExpr::operator-(const SymExpr &o) const {
  SymExpr r = *this;
  r.overflow |= o.overflow;
  for (auto &[m, c] : o.terms) {
    if (c == INT64_MIN)
      r.overflow = true;
    else
      r.add(m, -c);
  }
  return r;
}

SymExpr SymExpr::operator*(const SymExpr &o) const {
  SymExpr r;
  r.overflow = overflow || o.overflow;
  for (auto &[m1, c1] : terms)
    for (auto &[m2, c2] : o.terms) {
      Monomial m = m1;
      m.insert(m.end(), m2.begin(), m2.end());
      std::sort(m.begin(), m.end());
      int64_t c;
      if (__builtin_mul_overflow(c1, c2, &c) || m.size() > 4)
        r.overflow = true;
      else
        r.add(m, c);
    }
  return r;
}

std::optional<SymExpr> SymExpr::divideExactly(int64_t d) const {
  if (overflow || d == 0)
    return std::nullopt;
  SymExpr r;
  for (auto &[m, c] : terms) {
    if (c % d != 0 || (c == INT64_MIN && d == -1))
      return std::nullopt;
    r.add(m, c / d);
  }
  return r;
}

std::string SymExpr::str(const std::vector<std::string> &names) const {
  if (overflow)
    return "?";
  // Terms sorted by their spelling, the constant last: one spelling per
  // polynomial ("past_sequence_length + sequence_length").
  std::vector<std::pair<std::string, int64_t>> parts;
  int64_t constant = 0;
  for (auto &[m, c] : terms) {
    if (m.empty()) {
      constant = c;
      continue;
    }
    std::vector<std::string> factors;
    for (unsigned id : m)
      factors.push_back(names[id]);
    std::sort(factors.begin(), factors.end());
    std::string t;
    for (const std::string &f : factors)
      t += (t.empty() ? "" : "*") + f;
    parts.push_back({t, c});
  }
  std::sort(parts.begin(), parts.end());
  if (constant != 0 || parts.empty())
    parts.push_back({"", constant});
  std::string s;
  for (auto &[t, c] : parts) {
    int64_t a = c < 0 ? -c : c; // INT64_MIN cannot reach here: it overflows first
    if (!s.empty())
      s += c < 0 ? " - " : " + ";
    else if (c < 0)
      s += "-";
    if (t.empty())
      s += std::to_string(a);
    else
      s += (a != 1 ? std::to_string(a) + "*" : "") + t;
  }
  return s;
}

//===----------------------------------------------------------------------===//
// The analysis
//===----------------------------------------------------------------------===//

SymbolicShapes::SymbolicShapes(Operation *root) {
  // The start_pos input of llmc-insert-kv-cache's entry points is a
  // position: a non-negative integer, so a symbol like a size.
  if (auto f = dyn_cast<func::FuncOp>(root))
    for (BlockArgument a : f.getArguments()) {
      auto name = f.getArgAttrOfType<StringAttr>(a.getArgNumber(), "llm.name");
      auto type = dyn_cast<RankedTensorType>(a.getType());
      if (name && name.getValue() == "start_pos" && type && type.getNumElements() == 1 &&
          type.getElementType().isInteger(64))
        values[a] = {SymExpr::symbol(intern("start_pos", /*isNamed=*/true))};
    }
  root->walk([&](Operation *op) { visit(op); });
}

unsigned SymbolicShapes::intern(const std::string &name, bool isNamed) {
  auto [it, fresh] = ids.try_emplace(name, unsigned(names.size()));
  if (fresh) {
    names.push_back(name);
    named.push_back(isNamed);
  }
  return it->second;
}

const std::vector<SymExpr> *SymbolicShapes::lookup(Value v) const {
  auto it = values.find(v);
  return it == values.end() ? nullptr : &it->second;
}

SymExpr SymbolicShapes::parseDimName(StringRef name) {
  // "a + b + 2" (how exporters name derived sizes) is the sum of its terms,
  // and "2*a" (how dimFor names a multiple) a product; any other name is
  // one symbol.
  SmallVector<StringRef> terms;
  name.split(terms, '+');
  if (terms.size() > 1 || name.contains('*')) {
    SymExpr sum = SymExpr::constant(0);
    bool ok = true;
    for (StringRef t : terms) {
      int64_t factor = 1;
      auto [head, rest] = t.split('*');
      if (!rest.empty() && !head.trim().getAsInteger(10, factor))
        t = rest;
      else
        factor = 1;
      t = t.trim();
      int64_t c;
      if (!t.getAsInteger(10, c))
        sum = sum + SymExpr::constant(c * factor);
      else if (!t.empty() && llvm::all_of(t, [](char ch) {
                 return llvm::isAlnum(ch) || ch == '_' || ch == '.' || ch == ':';
               }))
        sum = sum + SymExpr::constant(factor) * SymExpr::symbol(intern(t.str(), /*isNamed=*/true));
      else
        ok = false;
    }
    if (ok && !sum.overflowed())
      return sum;
  }
  return SymExpr::symbol(intern(name.str(), /*isNamed=*/true));
}

std::optional<std::string> SymbolicShapes::nameOf(const SymExpr &e) const {
  if (e.overflowed() || e.isConstant())
    return std::nullopt;
  for (unsigned id : e.symbols())
    if (!named[id])
      return std::nullopt;
  return e.str(names);
}

std::optional<SymExpr> SymbolicShapes::rangeLength(Value v, int64_t d) {
  // Range(start, limit, 1) has limit - start elements when that is >= 0.
  Operation *def = v.getDefiningOp();
  if (!def || def->getName().getStringRef() != "llm.onnx.range" || d != 0)
    return std::nullopt;
  const std::vector<SymExpr> *start = lookup(def->getOperand(0)),
                             *limit = lookup(def->getOperand(1)),
                             *delta = lookup(def->getOperand(2));
  if (!start || !limit || !delta || delta->size() != 1 || (*delta)[0].asConstant() != 1)
    return std::nullopt;
  SymExpr n = (*limit)[0] - (*start)[0];
  if (!n.isNonNegative())
    return std::nullopt;
  return n;
}

SymExpr SymbolicShapes::dimOf(Value v, int64_t d) {
  // A range whose length is a constant (limit - start of the same run-time
  // value) has it, whatever its type's name says (a bucket's
  // sequence_length, where the export computed it).
  std::optional<SymExpr> range = rangeLength(v, d);
  if (range && range->asConstant())
    return *range;
  MaybeShape shape = getShape(v.getType());
  if (shape && d < int64_t(shape->size())) {
    const Dim &dim = (*shape)[size_t(d)];
    if (dim.isStatic())
      return SymExpr::constant(dim.size);
    if (dim.name)
      return parseDimName(dim.name.getValue());
  }
  // Layout operations carry their operands' sizes: Transpose permutes them,
  // Concat adds them on its axis, Reshape copies those its target marks 0,
  // rope, attention and norms keep their input's.
  if (Operation *def = v.getDefiningOp()) {
    StringRef name = def->getName().getStringRef();
    int64_t rank = shape ? int64_t(shape->size()) : -1;
    if (name == "llm.onnx.transpose") {
      if (auto perm = def->getAttrOfType<DenseI64ArrayAttr>("perm"))
        if (d < int64_t(perm.size()))
          return dimOf(def->getOperand(0), perm[size_t(d)]);
    } else if (name == "llm.onnx.concat" && rank > 0) {
      int64_t axis = 0;
      if (auto a = def->getAttrOfType<IntegerAttr>("axis"))
        axis = a.getInt() < 0 ? a.getInt() + rank : a.getInt();
      if (d != axis)
        return dimOf(def->getOperand(0), d);
      SymExpr total = SymExpr::constant(0);
      for (Value operand : def->getOperands())
        total = total + dimOf(operand, d);
      return total;
    } else if (name == "llm.onnx.reshape" && def->getNumOperands() == 2) {
      auto allowZero = def->getAttrOfType<IntegerAttr>("allowzero");
      const std::vector<SymExpr> *target = lookup(def->getOperand(1));
      bool zeroCopies = !allowZero || allowZero.getInt() == 0;
      if (target && d < int64_t(target->size()) && zeroCopies &&
          (*target)[size_t(d)].asConstant() == 0)
        return dimOf(def->getOperand(0), d);
      // The -1: the input's elements over the other target sizes, the
      // sizes 0 copies cancelling the input's own (genai's q/k norms
      // reshape [B, S, H * D] to [B, S * H, D] and back with [0, -1, H * D]).
      MaybeShape in = getShape(def->getOperand(0).getType());
      if (target && in && d < int64_t(target->size()) && zeroCopies &&
          (*target)[size_t(d)].asConstant() == -1) {
        SymExpr elements = SymExpr::constant(1);
        int64_t divisor = 1;
        llvm::SmallVector<bool, 6> copied(in->size(), false);
        bool known = true;
        for (size_t j = 0; j < target->size() && known; ++j) {
          if (int64_t(j) == d)
            continue;
          std::optional<int64_t> c = (*target)[j].asConstant();
          if (c == 0 && j < in->size())
            copied[j] = true;
          else if (c && *c > 0)
            divisor *= *c;
          else
            known = false;
        }
        for (size_t i = 0; i < in->size() && known; ++i)
          if (!copied[i])
            elements = elements * dimOf(def->getOperand(0), int64_t(i));
        if (known)
          if (std::optional<SymExpr> size = elements.divideExactly(divisor))
            return *size;
      }
    } else if (name == "llm.rope" || (name == "llm.attention" && d < 3) ||
               name == "llm.rms_norm" || name == "llm.layer_norm" ||
               name == "llm.onnx.layer_normalization" ||
               name == "llm.ms.simplified_layer_normalization" ||
               name == "llm.onnx.rms_normalization") {
      return dimOf(def->getOperand(0), d);
    }
  }
  if (range)
    return *range;
  auto [it, fresh] = privateBase.try_emplace(v, 0);
  if (fresh)
    it->second = privateValues++;
  return SymExpr::symbol(
      intern("v" + std::to_string(it->second) + ".d" + std::to_string(d), /*isNamed=*/false));
}

namespace {

/// Elementwise combination with ONNX broadcasting of vectors (a length-1
/// side repeats); nullopt when lengths disagree.
template <typename F>
std::optional<std::vector<SymExpr>> zipWith(const std::vector<SymExpr> &a,
                                            const std::vector<SymExpr> &b, F &&f) {
  if (a.size() != b.size() && a.size() != 1 && b.size() != 1)
    return std::nullopt;
  size_t n = std::max(a.size(), b.size());
  std::vector<SymExpr> out;
  for (size_t i = 0; i < n; ++i) {
    std::optional<SymExpr> r = f(a[a.size() == 1 ? 0 : i], b[b.size() == 1 ? 0 : i]);
    if (!r || r->overflowed())
      return std::nullopt;
    out.push_back(*r);
  }
  return out;
}

/// 1 / 0 when a comparison is decidable, else nullopt.
std::optional<SymExpr> decide(std::optional<bool> b) {
  if (!b)
    return std::nullopt;
  return SymExpr::constant(*b ? 1 : 0);
}

/// a == b when decidable: equal polynomials, or a difference that is a
/// non-zero constant, or a non-negative expression against a negative one.
std::optional<bool> equalTo(const SymExpr &a, const SymExpr &b) {
  SymExpr d = a - b;
  if (d.overflowed())
    return std::nullopt;
  if (std::optional<int64_t> c = d.asConstant())
    return *c == 0;
  if (a.isNonNegative() && b.asConstant() && *b.asConstant() < 0)
    return false;
  if (b.isNonNegative() && a.asConstant() && *a.asConstant() < 0)
    return false;
  return std::nullopt;
}

/// a < b when decidable (constant difference only).
std::optional<bool> lessThan(const SymExpr &a, const SymExpr &b) {
  std::optional<int64_t> d = (b - a).asConstant();
  if (!d)
    return std::nullopt;
  return *d > 0;
}

int64_t normalizeIndex(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

} // namespace

void SymbolicShapes::visit(Operation *op) {
  if (op->getNumResults() != 1)
    return;
  Value result = op->getResult(0);
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type || type.getRank() > 1 || !type.getElementType().isInteger())
    return;
  if (type.getRank() == 1 && (type.isDynamicDim(0) || type.getDimSize(0) > kMaxElements))
    return;
  auto known = [&](unsigned i) -> const std::vector<SymExpr> * {
    return i < op->getNumOperands() ? lookup(op->getOperand(i)) : nullptr;
  };
  auto intAttr = [&](StringRef name, int64_t dflt) {
    if (auto a = op->getAttrOfType<IntegerAttr>(name))
      return a.getValue().getSExtValue();
    return dflt;
  };
  auto set = [&](std::optional<std::vector<SymExpr>> v) {
    if (!v)
      return;
    int64_t expect = type.getRank() == 0 ? 1 : type.getDimSize(0);
    if (int64_t(v->size()) != expect)
      return;
    for (const SymExpr &e : *v)
      if (e.overflowed())
        return;
    values[result] = std::move(*v);
  };
  StringRef name = op->getName().getStringRef();
  if (auto c = dyn_cast<ConstantOp>(op)) {
    if (std::optional<SmallVector<int64_t>> ints = readIntElements(c.getValue())) {
      std::vector<SymExpr> v;
      for (int64_t i : *ints)
        v.push_back(SymExpr::constant(i));
      set(v);
    }
    return;
  }
  if (!name.consume_front("llm.onnx."))
    return;
  if (name == "shape") {
    Value x = op->getOperand(0);
    auto xt = dyn_cast<RankedTensorType>(x.getType());
    if (!xt)
      return;
    int64_t rank = xt.getRank();
    int64_t start = std::clamp<int64_t>(normalizeIndex(intAttr("start", 0), rank), 0, rank);
    int64_t end = std::clamp<int64_t>(normalizeIndex(intAttr("end", rank), rank), 0, rank);
    std::vector<SymExpr> v;
    for (int64_t d = start; d < end; ++d)
      v.push_back(dimOf(x, d));
    set(v);
  } else if (name == "size") {
    auto xt = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (!xt)
      return;
    SymExpr n = SymExpr::constant(1);
    for (int64_t d = 0; d < xt.getRank(); ++d)
      n = n * dimOf(op->getOperand(0), d);
    set(std::vector<SymExpr>{n});
  } else if (name == "gather") {
    const std::vector<SymExpr> *data = known(0), *idx = known(1);
    if (!data || !idx || intAttr("axis", 0) != 0)
      return;
    std::vector<SymExpr> v;
    for (const SymExpr &i : *idx) {
      std::optional<int64_t> k = i.asConstant();
      if (!k)
        return;
      int64_t j = normalizeIndex(*k, int64_t(data->size()));
      if (j < 0 || j >= int64_t(data->size()))
        return;
      v.push_back((*data)[size_t(j)]);
    }
    set(v);
  } else if (name == "unsqueeze" || name == "squeeze" || name == "reshape" ||
             name == "flatten" || name == "identity") {
    if (const std::vector<SymExpr> *x = known(0))
      set(*x);
  } else if (name == "cast") {
    if (const std::vector<SymExpr> *x = known(0))
      if (getElementTypeOrSelf(op->getOperand(0).getType()).isSignlessInteger())
        set(*x);
  } else if (name == "concat") {
    std::vector<SymExpr> v;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      const std::vector<SymExpr> *x = known(i);
      if (!x)
        return;
      v.insert(v.end(), x->begin(), x->end());
    }
    set(v);
  } else if (name == "add" || name == "sub" || name == "mul" || name == "div" ||
             name == "max" || name == "min") {
    const std::vector<SymExpr> *a = known(0), *b = known(1);
    if (!a || !b || op->getNumOperands() != 2)
      return;
    set(zipWith(*a, *b, [&](const SymExpr &x, const SymExpr &y) -> std::optional<SymExpr> {
      if (name == "add")
        return x + y;
      if (name == "sub")
        return x - y;
      if (name == "mul")
        return x * y;
      std::optional<int64_t> cx = x.asConstant(), cy = y.asConstant();
      if (name == "div") {
        if (cx && cy && *cy != 0 && !(*cx == INT64_MIN && *cy == -1))
          return SymExpr::constant(*cx / *cy); // integer Div truncates
        if (cy && *cy > 0 && x.isNonNegative())
          return x.divideExactly(*cy);
        return std::nullopt;
      }
      if (x == y)
        return x;
      if (!cx || !cy)
        return std::nullopt;
      return SymExpr::constant(name == "max" ? std::max(*cx, *cy) : std::min(*cx, *cy));
    }));
  } else if (name == "neg") {
    if (const std::vector<SymExpr> *x = known(0)) {
      std::vector<SymExpr> v;
      for (const SymExpr &e : *x)
        v.push_back(SymExpr::constant(0) - e);
      set(v);
    }
  } else if (name == "equal" || name == "less" || name == "greater" ||
             name == "less_or_equal" || name == "greater_or_equal") {
    const std::vector<SymExpr> *a = known(0), *b = known(1);
    if (!a || !b)
      return;
    set(zipWith(*a, *b, [&](const SymExpr &x, const SymExpr &y) -> std::optional<SymExpr> {
      if (name == "equal")
        return decide(equalTo(x, y));
      if (name == "less")
        return decide(lessThan(x, y));
      if (name == "greater")
        return decide(lessThan(y, x));
      std::optional<bool> lt = name == "less_or_equal" ? lessThan(y, x) : lessThan(x, y);
      if (!lt)
        return std::nullopt;
      return SymExpr::constant(*lt ? 0 : 1);
    }));
  } else if (name == "not") {
    if (const std::vector<SymExpr> *x = known(0)) {
      std::vector<SymExpr> v;
      for (const SymExpr &e : *x)
        v.push_back(SymExpr::constant(e.asConstant() == 0 ? 1 : 0));
      set(v);
    }
  } else if (name == "where") {
    const std::vector<SymExpr> *c = known(0), *a = known(1), *b = known(2);
    if (!c || !a || !b)
      return;
    size_t n = std::max({c->size(), a->size(), b->size()});
    std::vector<SymExpr> v;
    for (size_t i = 0; i < n; ++i) {
      auto at = [&](const std::vector<SymExpr> &x) -> const SymExpr * {
        return x.size() == 1 ? &x[0] : i < x.size() ? &x[i] : nullptr;
      };
      const SymExpr *ci = at(*c), *ai = at(*a), *bi = at(*b);
      if (!ci || !ai || !bi || !ci->asConstant())
        return;
      v.push_back(*ci->asConstant() ? *ai : *bi);
    }
    set(v);
  } else if (name == "expand") {
    // (A rank <= 1 result: the input's one element repeated, or its
    // elements as they are.)
    const std::vector<SymExpr> *x = known(0);
    int64_t n = type.getRank() == 0 ? 1 : type.getDimSize(0);
    if (!x || (x->size() != 1 && int64_t(x->size()) != n))
      return;
    set(x->size() == 1 ? std::vector<SymExpr>(size_t(n), (*x)[0]) : *x);
  } else if (name == "constant_of_shape") {
    const std::vector<SymExpr> *shape = known(0);
    if (!shape || shape->size() > 1)
      return;
    int64_t n = 1;
    if (shape->size() == 1) {
      std::optional<int64_t> k = (*shape)[0].asConstant();
      if (!k || *k < 0 || *k > kMaxElements)
        return;
      n = *k;
    }
    int64_t fill = 0;
    if (auto value = op->getAttrOfType<ElementsAttr>("value")) {
      std::optional<SmallVector<int64_t>> ints = readIntElements(value);
      if (!ints || ints->size() != 1)
        return;
      fill = (*ints)[0];
    }
    set(std::vector<SymExpr>(size_t(n), SymExpr::constant(fill)));
  } else if (name == "slice") {
    const std::vector<SymExpr> *x = known(0), *starts = known(1), *ends = known(2);
    const std::vector<SymExpr> *axes = op->getNumOperands() > 3 ? known(3) : nullptr;
    const std::vector<SymExpr> *steps = op->getNumOperands() > 4 ? known(4) : nullptr;
    if (!x || !starts || !ends || starts->size() != 1 || ends->size() != 1)
      return;
    if (op->getNumOperands() > 3 && !isNone(op->getOperand(3)) &&
        (!axes || axes->size() != 1 || !(*axes)[0].asConstant() ||
         normalizeIndex(*(*axes)[0].asConstant(), 1) != 0))
      return;
    int64_t step = 1;
    if (op->getNumOperands() > 4 && !isNone(op->getOperand(4))) {
      if (!steps || steps->size() != 1 || !(*steps)[0].asConstant())
        return;
      step = *(*steps)[0].asConstant();
    }
    std::optional<int64_t> s = (*starts)[0].asConstant(), e = (*ends)[0].asConstant();
    if (!s || !e || step <= 0)
      return;
    int64_t n = int64_t(x->size());
    int64_t b = std::clamp<int64_t>(normalizeIndex(*s, n), 0, n);
    int64_t en = std::clamp<int64_t>(normalizeIndex(*e, n), 0, n);
    std::vector<SymExpr> v;
    for (int64_t i = b; i < en; i += step)
      v.push_back((*x)[size_t(i)]);
    set(v);
  } else if (name == "range") {
    const std::vector<SymExpr> *start = known(0), *limit = known(1), *delta = known(2);
    if (!start || !limit || !delta)
      return;
    std::optional<int64_t> s = (*start)[0].asConstant(), l = (*limit)[0].asConstant(),
                           d = (*delta)[0].asConstant();
    if (!s || !l || !d || *d == 0)
      return;
    std::vector<SymExpr> v;
    for (int64_t i = *s; (*d > 0 ? i < *l : i > *l) && int64_t(v.size()) <= kMaxElements; i += *d)
      v.push_back(SymExpr::constant(i));
    set(v);
  }
}
