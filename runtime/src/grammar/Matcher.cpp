//===- Matcher.cpp - a grammar over a vocabulary: token masks -------------===//
#include "runtime/src/grammar/Matcher.h"

#include <algorithm>
#include <cstdint>

namespace llmc::grammar {

void TokenTrie::build(const std::vector<std::string> &tokens) {
  std::vector<int32_t> order;
  for (size_t id = 0; id < tokens.size(); ++id)
    if (!tokens[id].empty())
      order.push_back(int32_t(id));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return tokens[size_t(a)] != tokens[size_t(b)] ? tokens[size_t(a)] < tokens[size_t(b)] : a < b;
  });
  // Sorted spellings come in the trie's preorder: each adds the nodes past
  // its common prefix with the one before.
  byte = {0};
  depth = {0};
  end = {0};
  maxDepth = 0;
  std::vector<uint32_t> path = {0}, nodeOf;
  const std::string *prev = nullptr;
  for (int32_t id : order) {
    const std::string &w = tokens[size_t(id)];
    size_t common = 0;
    if (prev)
      while (common < prev->size() && common < w.size() && (*prev)[common] == w[common])
        ++common;
    while (path.size() > common + 1) {
      end[path.back()] = uint32_t(byte.size());
      path.pop_back();
    }
    maxDepth = std::max(maxDepth, uint32_t(w.size()));
    for (size_t k = common; k < w.size(); ++k) {
      path.push_back(uint32_t(byte.size()));
      byte.push_back(uint8_t(w[k]));
      depth.push_back(uint32_t(k + 1));
      end.push_back(0);
    }
    nodeOf.push_back(path.back());
    prev = &w;
  }
  while (!path.empty()) {
    end[path.back()] = uint32_t(byte.size());
    path.pop_back();
  }
  ids = order;
  size_t n = byte.size();
  first.assign(n + 1, uint32_t(ids.size()));
  for (size_t j = ids.size(); j-- > 0;)
    first[nodeOf[j]] = uint32_t(j);
  for (size_t node = n; node-- > 0;)
    first[node] = std::min(first[node], first[node + 1]);
}

Matcher::Matcher(Grammar grammar, std::vector<std::string> tokenBytes)
    : g(std::move(grammar)), tokens(std::move(tokenBytes)) {
  trie.build(tokens);
}

uint32_t StackPool::push(uint32_t below, uint32_t position) {
  auto [it, inserted] = index.try_emplace(key(below, position), uint32_t(nodes.size()));
  if (inserted)
    nodes.push_back({position, below, nodes[below].depth + 1});
  return it->second;
}

void StackPool::release(size_t mark) {
  for (size_t id = mark; id < nodes.size(); ++id)
    index.erase(key(nodes[id].below, nodes[id].position));
  nodes.resize(mark);
}

bool Matcher::expand(StackPool &pool, uint32_t s, Stacks &out) const {
  pool.expanding.clear();
  return expand(pool, s, out, pool.expanding);
}

bool Matcher::expand(StackPool &pool, uint32_t s, Stacks &out,
                     std::vector<uint64_t> &chain) const {
  while (true) {
    if (s == 0) {
      out.push_back(0);
      return out.size() <= MaxStacks * 4;
    }
    uint32_t pos = pool.top(s), e = g.elements[pos];
    if (e == Grammar::End) { // the rule is done: back to where it was used
      s = pool.below(s);
      continue;
    }
    if (!Grammar::isRule(e)) {
      out.push_back(s);
      return out.size() <= MaxStacks * 4;
    }
    // A reference: return past it, unless it ends its alternative.
    uint32_t base = g.elements[pos + 1] == Grammar::End ? pool.below(s)
                                                        : pool.push(pool.below(s), pos + 1);
    if (pool.depth(base) >= MaxDepth)
      return false;
    // The same rule over the same stack again before any byte (a
    // repetition of something that can be empty) adds nothing new.
    uint64_t key = uint64_t(e & ~Grammar::RuleBit) << 32 | base;
    if (std::find(chain.begin(), chain.end(), key) != chain.end())
      return true;
    chain.push_back(key);
    for (uint32_t alt : g.alternatives[e & ~Grammar::RuleBit])
      if (!expand(pool, pool.push(base, alt), out, chain))
        return false;
    chain.pop_back();
    return true;
  }
}

static void canonical(Stacks &s) {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
}

Stacks Matcher::start(StackPool &pool) const {
  Stacks out;
  for (uint32_t alt : g.alternatives[g.root])
    if (!expand(pool, pool.push(0, alt), out))
      break; // a grammar this ambiguous fails at its first byte
  canonical(out);
  return out;
}

bool Matcher::advance(StackPool &pool, const Stacks &from, uint8_t byte, Stacks &to,
                      std::string *why) const {
  to.clear();
  bool ok = true;
  for (uint32_t s : from) {
    if (s == 0)
      continue;
    uint32_t pos = pool.top(s);
    if (g.matches(g.elements[pos], byte) && !expand(pool, pool.push(pool.below(s), pos + 1), to)) {
      ok = false;
      break;
    }
  }
  canonical(to);
  if (ok && to.size() <= MaxStacks)
    return true;
  if (why)
    *why = "the grammar is too ambiguous to follow (more than " + std::to_string(MaxStacks) +
           " parses at once, or nesting deeper than " + std::to_string(MaxDepth) + ")";
  to.clear();
  return false;
}

bool Matcher::advanceToken(StackPool &pool, const Stacks &from, int32_t id, Stacks &to,
                           std::string *why) const {
  to.clear();
  if (id < 0 || size_t(id) >= tokens.size() || tokens[size_t(id)].empty())
    return true;
  Stacks cur = from, next;
  for (char c : tokens[size_t(id)]) {
    if (!advance(pool, cur, uint8_t(c), next, why))
      return false;
    if (next.empty())
      return true;
    cur.swap(next);
  }
  to = std::move(cur);
  return true;
}

Matcher::Split Matcher::computeSplit(const std::vector<uint32_t> &frames) const {
  Split sp;
  sp.accepted.assign(maskWords(), 0);
  size_t n = trie.byte.size();
  uint32_t maxDepth = trie.maxDepth;
  // The stacks after the bytes of the path to each node, by depth, with
  // the stack below the frames cut off: a stack that empties has popped
  // past them, and what may follow depends on the rest.
  StackPool pool;
  std::vector<Stacks> level(maxDepth + 1);
  std::vector<char> escaped(maxDepth + 1, 0);
  uint32_t start = 0;
  for (size_t k = frames.size(); k-- > 0;)
    start = pool.push(start, frames[k]);
  level[0] = {start};
  auto uncertainRange = [&](uint32_t from, uint32_t to) {
    for (uint32_t j = trie.first[from]; j < trie.first[to]; ++j)
      sp.uncertain.push_back(trie.ids[j]);
  };
  Stacks next;
  for (uint32_t i = 1; i < n;) {
    uint32_t d = trie.depth[i];
    if (!advance(pool, level[d - 1], trie.byte[i], next)) {
      uncertainRange(i, trie.end[i]); // left to the walk from the full stack
      i = trie.end[i];
      continue;
    }
    bool left = canEnd(next);
    if (left)
      next.erase(next.begin());
    bool esc = escaped[d - 1] || left;
    for (uint32_t j = trie.first[i]; j < trie.first[i + 1]; ++j) {
      int32_t t = trie.ids[j];
      if (!next.empty() || left)
        sp.accepted[size_t(t) / 64] |= uint64_t(1) << (t % 64);
      else if (escaped[d - 1])
        sp.uncertain.push_back(t);
    }
    if (next.empty()) {
      if (esc)
        uncertainRange(i + 1, trie.end[i]);
      i = trie.end[i];
      continue;
    }
    level[d].swap(next);
    escaped[d] = esc;
    ++i;
  }
  return sp;
}

const Matcher::Split &Matcher::split(const std::vector<uint32_t> &frames) const {
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto it = cache.find(frames);
    if (it != cache.end())
      return *it->second;
  }
  auto fresh = std::make_unique<Split>(computeSplit(frames));
  std::lock_guard<std::mutex> lock(cacheMutex);
  auto [it, inserted] = cache.try_emplace(frames, std::move(fresh));
  return *it->second;
}

const Matcher::Split &Matcher::contextSplit(const StackPool &pool, uint32_t s,
                                            std::vector<uint32_t> &frames) const {
  frames.clear();
  size_t enough = tokens.size() / 16;
  for (uint32_t at = s;; at = pool.below(at)) {
    frames.push_back(pool.top(at));
    const Split &sp = split(frames);
    if (sp.uncertain.size() <= enough || pool.below(at) == 0)
      return sp;
  }
}

void Matcher::mask(StackPool &pool, const Stacks &at, uint64_t *mask) const {
  size_t words = maskWords();
  std::fill(mask, mask + words, 0);
  std::vector<const Split *> splits;
  std::vector<uint32_t> frames;
  for (uint32_t s : at) {
    const Split *sp = s != 0 ? &contextSplit(pool, s, frames) : nullptr;
    splits.push_back(sp);
    if (sp && std::find(splits.begin(), splits.end() - 1, sp) == splits.end() - 1)
      for (size_t w = 0; w < words; ++w)
        mask[w] |= sp->accepted[w];
  }
  // The uncertain tokens, walked from the whole stack in trie order: a
  // token reuses the stacks of the prefix it shares with the one before,
  // and one whose prefix already led nowhere costs nothing. What the walks
  // push is forgotten after.
  size_t mark = pool.mark();
  std::vector<Stacks> &level = pool.scratch;
  for (size_t i = 0; i < at.size(); ++i) {
    if (at[i] == 0)
      continue;
    const Split &sp = *splits[i];
    if (level.empty())
      level.resize(1);
    level[0] = {at[i]};
    const std::string *prev = nullptr;
    size_t valid = 0, dead = SIZE_MAX; // levels computed; bytes after which none lived
    for (int32_t t : sp.uncertain) {
      uint64_t bit = uint64_t(1) << (t % 64);
      if (mask[size_t(t) / 64] & bit)
        continue;
      const std::string &w = tokens[size_t(t)];
      size_t common = 0;
      if (prev)
        while (common < prev->size() && common < w.size() && (*prev)[common] == w[common])
          ++common;
      prev = &w;
      if (dead <= common)
        continue;
      dead = SIZE_MAX;
      size_t k = std::min(common, valid);
      if (level.size() < w.size() + 1)
        level.resize(w.size() + 1);
      for (; k < w.size(); ++k)
        if (!advance(pool, level[k], uint8_t(w[k]), level[k + 1]) || level[k + 1].empty()) {
          level[k + 1].clear();
          dead = k + 1;
          break;
        }
      valid = std::min(k, w.size());
      if (dead == SIZE_MAX)
        mask[size_t(t) / 64] |= bit;
    }
  }
  pool.release(mark);
}

} // namespace llmc::grammar
