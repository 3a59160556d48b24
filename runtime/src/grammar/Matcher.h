//===- Matcher.h - a grammar over a vocabulary: token masks ---------------===//
//
// Runs a Grammar (Grammar.h) as a pushdown automaton over bytes and turns
// it into the set of tokens allowed at each step of generation.
//
// State: a set of stacks (an ambiguous grammar can be in several places at
// once). A stack holds positions into Grammar::elements: its top is the
// next element to match, always a byte class once expanded, and below it
// the return positions of the rules it is inside (a reference that ends its
// alternative pushes none: repetitions, which recurse on the right, keep
// the stack flat). Stacks share their lower parts as a tree of nodes in a
// StackPool, interned, so a stack is one id, equal stacks have equal ids,
// and stepping a byte allocates nothing once the pool has grown. Id 0 is
// the empty stack: the root rule is complete.
//
// Masks. Walking every token through the automaton at every step would
// cost far more than a decode step, so, as XGrammar does, the vocabulary is
// split once per context and cached. A context is the top frames of a
// stack (its top position and the return positions below it); its split,
// computed by walking the token trie from those frames alone, is
//   accepted  - some path consumes the whole token without popping past
//               the frames: valid whatever the stack below holds;
//   uncertain - every path that survives pops past them before the
//               token's end: valid or not depending on the stack below;
//   the rest  - rejected in any context.
// A step's mask is the union of its stacks' accepted sets plus the
// uncertain tokens that a walk from the whole stack accepts (in trie
// order, sharing prefixes). One frame is often too little: inside a
// one-character rule (a JSON string's character) nearly every token is
// uncertain, so a context grows a frame at a time, while its uncertain
// tokens are more than a sixteenth of the vocabulary and the stack has
// more frames. Splits are built when first needed and shared by every
// generation using the grammar (guarded by a mutex).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_GRAMMAR_MATCHER_H
#define LLMC_RUNTIME_GRAMMAR_MATCHER_H

#include "runtime/src/grammar/Grammar.h"

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace llmc::grammar {

using Stacks = std::vector<uint32_t>; // stack ids, sorted, no duplicates

/// The nodes stacks are made of: node id = (position, the node below).
class StackPool {
public:
  StackPool() : nodes(1) {}
  /// The stack `below` with `position` pushed.
  uint32_t push(uint32_t below, uint32_t position);
  uint32_t top(uint32_t id) const { return nodes[id].position; }
  uint32_t below(uint32_t id) const { return nodes[id].below; }
  uint32_t depth(uint32_t id) const { return nodes[id].depth; }
  /// Everything pushed after mark() is forgotten by release(mark).
  size_t mark() const { return nodes.size(); }
  void release(size_t mark);
  /// Working space for Matcher::mask and Matcher::expand.
  std::vector<Stacks> scratch;
  std::vector<uint64_t> expanding;

private:
  struct Node {
    uint32_t position = 0, below = 0, depth = 0;
  };
  static uint64_t key(uint32_t below, uint32_t position) {
    return uint64_t(below) << 32 | position;
  }
  std::vector<Node> nodes;
  std::unordered_map<uint64_t, uint32_t> index;
};

/// The vocabulary's token bytes as a trie in preorder: node 0 is the root;
/// node n holds byte[n] at depth[n], its subtree is [n, end[n]), and the
/// tokens spelled by the path to it are ids[first[n] .. first[n + 1]).
struct TokenTrie {
  std::vector<uint8_t> byte;
  std::vector<uint32_t> depth, end, first;
  std::vector<int32_t> ids;
  uint32_t maxDepth = 0; // the longest token's bytes
  void build(const std::vector<std::string> &tokens);
};

class Matcher {
public:
  /// `tokens`: every token's bytes by id ("" for tokens never allowed).
  Matcher(Grammar grammar, std::vector<std::string> tokens);

  int64_t vocab() const { return int64_t(tokens.size()); }
  /// Words of a token mask: bit t of word t / 64.
  size_t maskWords() const { return (tokens.size() + 63) / 64; }

  // Stacks live in the caller's pool (one per generation: the matcher is
  // shared by threads).

  /// The stacks before any text.
  Stacks start(StackPool &pool) const;
  /// The stacks after `byte`; false (and `why`) when the grammar is too
  /// ambiguous to follow (more than MaxStacks at once, or nesting past
  /// MaxDepth). An empty result means the byte is not allowed.
  bool advance(StackPool &pool, const Stacks &from, uint8_t byte, Stacks &to,
               std::string *why = nullptr) const;
  /// The stacks after token `id`'s bytes (empty: not allowed).
  bool advanceToken(StackPool &pool, const Stacks &from, int32_t id, Stacks &to,
                    std::string *why = nullptr) const;
  /// The tokens allowed next into `mask` (maskWords() words).
  void mask(StackPool &pool, const Stacks &at, uint64_t *mask) const;
  /// Whether the text may end here, and whether it may go on.
  static bool canEnd(const Stacks &s) { return !s.empty() && s.front() == 0; }
  static bool canContinue(const Stacks &s) { return !s.empty() && s.back() != 0; }

  static constexpr size_t MaxStacks = 4096, MaxDepth = 4096;

private:
  struct Split {
    std::vector<uint64_t> accepted;
    std::vector<int32_t> uncertain;
  };
  /// Pushes the expansions of stack `s` onto `out` (each with a byte class
  /// on top, or empty).
  bool expand(StackPool &pool, uint32_t s, Stacks &out) const;
  bool expand(StackPool &pool, uint32_t s, Stacks &out, std::vector<uint64_t> &chain) const;
  /// The split of the context `frames` (positions, top first).
  const Split &split(const std::vector<uint32_t> &frames) const;
  Split computeSplit(const std::vector<uint32_t> &frames) const;
  /// The split to use for stack `s` (the context grown as above).
  const Split &contextSplit(const StackPool &pool, uint32_t s,
                            std::vector<uint32_t> &frames) const;

  Grammar g;
  std::vector<std::string> tokens;
  TokenTrie trie;
  mutable std::mutex cacheMutex;
  mutable std::map<std::vector<uint32_t>, std::unique_ptr<Split>> cache;
};

} // namespace llmc::grammar

#endif // LLMC_RUNTIME_GRAMMAR_MATCHER_H
