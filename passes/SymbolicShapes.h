//===- SymbolicShapes.h - what shape computations compute, symbolically ---===//
//
// Exports compute reshape targets, mask sizes and positions at run time from
// Shape(x): Gather, Concat, Unsqueeze, arithmetic. This analysis evaluates
// such integer computations over symbols, one per dynamic dimension (the
// #llm.dims name where there is one, so equal names are equal sizes), giving
// each small integer value (rank <= 1, at most kMaxElements elements) a list
// of polynomials with integer coefficients. Symbols stand for sizes, so they
// are non-negative.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_SYMBOLICSHAPES_H
#define LLMC_PASSES_SYMBOLICSHAPES_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::llmc {

/// A polynomial over size symbols with integer coefficients.
class SymExpr {
public:
  SymExpr() = default;
  static SymExpr constant(int64_t c);
  static SymExpr symbol(unsigned id);

  bool isConstant() const;
  /// The value when constant.
  std::optional<int64_t> asConstant() const;
  /// The symbol when the expression is exactly one symbol.
  std::optional<unsigned> asSymbol() const;
  /// The value with symbol i set to values[i] (nullopt past the end, or
  /// on overflow).
  std::optional<int64_t> evaluate(const std::vector<int64_t> &values) const;
  /// For `*this == 0` solved for symbol `id`: E with id == E, when id
  /// occurs only as a linear term with coefficient 1 or -1.
  std::optional<SymExpr> solveFor(unsigned id) const;
  /// True when every coefficient is >= 0 (so the value is >= 0).
  bool isNonNegative() const;

  SymExpr operator+(const SymExpr &o) const;
  SymExpr operator-(const SymExpr &o) const;
  SymExpr operator*(const SymExpr &o) const;
  /// Exact division by a non-zero constant (every coefficient divisible).
  std::optional<SymExpr> divideExactly(int64_t d) const;
  bool operator==(const SymExpr &o) const { return terms == o.terms; }
  bool operator!=(const SymExpr &o) const { return !(*this == o); }

  /// The symbols it mentions.
  std::vector<unsigned> symbols() const;

  /// Arithmetic overflowed or the expression grew too large: treat as unknown.
  bool overflowed() const { return overflow; }
  std::string str(const std::vector<std::string> &names) const;

private:
  using Monomial = std::vector<unsigned>; // sorted symbol ids
  std::map<Monomial, int64_t> terms;     // no zero coefficients
  bool overflow = false;
  void add(const Monomial &m, int64_t c);
};

/// The symbolic values of the small integer tensors of one function.
class SymbolicShapes {
public:
  static constexpr int64_t kMaxElements = 16;

  /// Analyses every operation of `root`'s regions, in order.
  explicit SymbolicShapes(Operation *root);

  /// The elements of `v` (row-major; a scalar has one), when known.
  const std::vector<SymExpr> *lookup(Value v) const;
  /// The symbolic size of dimension `d` of `v` (a constant, its #llm.dims
  /// name, or a symbol private to (v, d)).
  SymExpr dimOf(Value v, int64_t d);
  /// Dimension `d` of an onnx.range with step 1: limit - start, when both
  /// are known and that is not negative.
  std::optional<SymExpr> rangeLength(Value v, int64_t d);
  /// The name of a symbol (a dim name, or "v<k>.d<i>" for a private one).
  const std::string &symbolName(unsigned id) const { return names[id]; }
  const std::vector<std::string> &symbolNames() const { return names; }
  /// Whether the symbol is a named (#llm.dims) dimension.
  bool isNamed(unsigned id) const { return named[id]; }
  /// A dimension name for `e` when it involves only named symbols: the
  /// symbol's name, or the canonical spelling of a sum such as
  /// "past_sequence_length + sequence_length".
  std::optional<std::string> nameOf(const SymExpr &e) const;

private:
  void visit(Operation *op);
  SymExpr parseDimName(StringRef name);
  unsigned intern(const std::string &name, bool isNamed);

  llvm::DenseMap<Value, std::vector<SymExpr>> values;
  std::map<std::string, unsigned> ids;
  std::vector<std::string> names;
  std::vector<bool> named;
  llvm::DenseMap<Value, unsigned> privateBase; // first symbol of a value's dims
  unsigned privateValues = 0;
};

} // namespace mlir::llmc

#endif // LLMC_PASSES_SYMBOLICSHAPES_H
