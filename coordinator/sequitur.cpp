// Word-level Sequitur over flat arrays. Every symbol and every rule guard is a 12-byte node in one
// vector (value, prev, next as 32-bit indexes, freed nodes reused through a free list); digrams
// live in an open-addressing table of 8-byte slots; newly formed digrams are checked from an
// explicit work stack, so no call chain grows with the input. The run time is dominated by cache
// misses on the table and on old nodes, hence huge pages, prefetches ahead of each lookup, and a
// bit per node saying whether it is the indexed occurrence of its digram.
#include "coordinator/sequitur.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "common/big_alloc.h"
#include "common/error.h"

namespace gtadoc {
namespace {

constexpr uint32_t kNil = 0xFFFFFFFFu;
constexpr uint64_t kMaxNodes = 0xFFFFFF00ull;
/// Internal node values: words (< V) and boundaries keep their meaning, rule r is V + r, and a
/// guard node of rule r holds kGuardBit | r. Guards never compare equal to a symbol value, and
/// every boundary is the single value kBoundaryMark (the real values are kept in input order).
constexpr uint32_t kGuardBit = 0x80000000u;
constexpr uint32_t kBoundaryMark = 0x7FFFFFFFu;

struct Node {
  uint32_t val;
  uint32_t prev;  ///< kNil when the node is on the free list
  uint32_t next;
};

/// 64-bit mix of a digram; its high 32 bits are the table fingerprint.
inline uint32_t digram_fingerprint(uint32_t a, uint32_t b) {
  uint64_t k = (static_cast<uint64_t>(a) << 32) | b;
  k ^= k >> 31;
  k *= 0x7FB5D329728EA185ull;
  k ^= k >> 27;
  k *= 0x81DADEF4BC2DD44Dull;
  k ^= k >> 33;
  return static_cast<uint32_t>(k >> 32);
}

/// Digram index: linear probing over 8-byte slots (fingerprint << 32 | node). The home slot of
/// an entry is derived from its fingerprint alone (fp * capacity >> 32, so any capacity works and
/// the table grows by 1.5x), hence deletion shifts entries back without touching nodes. A lookup
/// compares fingerprints and confirms a hit by reading the node's digram.
class DigramTable {
 public:
  explicit DigramTable(size_t expected) { rehash(std::max<size_t>(1024, expected + expected / 2)); }

  /// Returns the node indexed under the digram with fingerprint `fp` for which `same(node)` is
  /// true; when there is none, indexes `x` under it and returns kNil.
  template <typename Same>
  uint32_t find_or_insert(uint32_t fp, uint32_t x, Same&& same) {
    for (size_t i = home(fp);; i = next(i)) {
      uint64_t s = slots_[i];
      uint32_t node = static_cast<uint32_t>(s);
      if (node == kNil) {
        slots_[i] = (static_cast<uint64_t>(fp) << 32) | x;
        if (++size_ > grow_at_) rehash(capacity_ + capacity_ / 2);
        return kNil;
      }
      if (static_cast<uint32_t>(s >> 32) == fp && same(node)) return node;
    }
  }

  /// Always inlined, as are its callers below: GCC drops a call to a function whose only effect is
  /// a prefetch as dead code (CTest's compiled.prefetches checks they are in the built code).
  [[gnu::always_inline]] void prefetch(uint32_t fp) const { __builtin_prefetch(&slots_[home(fp)]); }

  /// Removes the entry for node `x` (fingerprint `fp`) if `x` is the one indexed.
  bool erase(uint32_t fp, uint32_t x) {
    size_t i = home(fp);
    for (;; i = next(i)) {
      uint32_t node = static_cast<uint32_t>(slots_[i]);
      if (node == x) break;
      if (node == kNil) return false;
    }
    // Backward-shift deletion: pull later entries of the cluster into the hole when their home
    // slot does not lie cyclically in (hole, j].
    for (size_t j = i;;) {
      j = next(j);
      uint64_t s = slots_[j];
      if (static_cast<uint32_t>(s) == kNil) break;
      size_t h = home(static_cast<uint32_t>(s >> 32));
      bool stays = (i <= j) ? (h > i && h <= j) : (h > i || h <= j);
      if (!stays) {
        slots_[i] = s;
        i = j;
      }
    }
    slots_[i] = kEmpty;
    --size_;
    return true;
  }

  void release() { BigVector<uint64_t>().swap(slots_); }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  size_t home(uint32_t fp) const { return (static_cast<uint64_t>(fp) * capacity_) >> 32; }
  size_t next(size_t i) const { return i + 1 == capacity_ ? 0 : i + 1; }

  void rehash(size_t capacity) {
    GTADOC_EXPECTS(capacity <= (uint64_t{1} << 32), "sequitur: digram table too large");
    BigVector<uint64_t> old(capacity, kEmpty);
    old.swap(slots_);
    capacity_ = capacity;
    grow_at_ = capacity / 10 * 7;
    for (uint64_t s : old) {
      if (static_cast<uint32_t>(s) == kNil) continue;
      size_t i = home(static_cast<uint32_t>(s >> 32));
      while (static_cast<uint32_t>(slots_[i]) != kNil) i = next(i);
      slots_[i] = s;
    }
  }

  BigVector<uint64_t> slots_;
  size_t capacity_ = 0;
  size_t size_ = 0;
  size_t grow_at_ = 0;
};

class SequiturBuilder {
 public:
  SequiturBuilder(size_t num_tokens, uint32_t num_words)
      : num_words_(num_words), table_(num_tokens / 4) {
    GTADOC_EXPECTS(num_words < kBoundaryMark, "sequitur: vocabulary too large");
    // Live symbols never exceed the tokens appended and every rule but the root holds >= 2 of
    // them, so 1.5 nodes per token bound the node array; indexes must stay below kNil.
    GTADOC_EXPECTS(num_tokens <= kMaxNodes / 3 * 2 - 16,
                   "sequitur: shard of " + std::to_string(num_tokens) + " tokens is too large");
    nodes_.reserve(num_tokens + num_tokens / 2 + 16);
    indexed_.reserve(nodes_.capacity() / 64 + 1);
    pending_.reserve(64);
    uint32_t root = new_rule();
    GTADOC_EXPECTS(root == 0, "sequitur: root must be rule 0");
    attach_guard(root);
  }

  void append(Symbol t) {
    uint32_t v;
    if (is_boundary(t)) {
      v = kBoundaryMark;
      boundaries_.push_back(t);
    } else {
      GTADOC_EXPECTS(t < num_words_, "sequitur: token " + std::to_string(t) +
                                         " is not a word id below " + std::to_string(num_words_));
      v = t;
    }
    uint32_t g = guard_[0];
    uint32_t last = nodes_[g].prev;
    uint32_t z = alloc(v);
    link(last, z);
    link(z, g);
    ++live_symbols_;
    push(last);
    while (!pending_.empty()) {
      uint32_t x = pending_.back();
      pending_.pop_back();
      check(x);
    }
  }

  [[gnu::always_inline]] void prefetch_pair(Symbol a, Symbol b) const {
    if (((a | b) & kBoundaryBit) == 0) table_.prefetch(digram_fingerprint(a, b));
  }

  RawGrammar finish() {
    table_.release();
    std::vector<uint32_t>().swap(pending_);
    const uint32_t num_ids = static_cast<uint32_t>(guard_.size());
    std::vector<uint32_t> order;  // old rule ids in output order: root, then ascending
    std::vector<uint32_t> new_id(num_ids, kNil);
    for (uint32_t r = 0; r < num_ids; ++r) {
      if (guard_[r] == kNil) continue;
      GTADOC_EXPECTS(r == 0 || uses_[r] >= 2, "sequitur: rule used fewer than twice");
      new_id[r] = static_cast<uint32_t>(order.size());
      order.push_back(r);
    }
    GTADOC_EXPECTS(num_words_ + order.size() <= kBoundaryBit, "sequitur: too many rules");
    RawGrammar out;
    out.offsets.reserve(order.size() + 1);
    out.symbols.reserve(live_symbols_);
    size_t next_boundary = 0;
    for (uint32_t r : order) {
      uint32_t g = guard_[r];
      for (uint32_t x = nodes_[g].next; x != g; x = nodes_[x].next) {
        uint32_t v = nodes_[x].val;
        if (v < num_words_) {
          out.symbols.push_back(v);
        } else if (v == kBoundaryMark) {
          GTADOC_EXPECTS(r == 0, "sequitur: boundary inside a rule");
          out.symbols.push_back(boundaries_[next_boundary++]);
        } else {
          out.symbols.push_back(num_words_ + new_id[v - num_words_]);
        }
      }
      GTADOC_EXPECTS(r == 0 || out.symbols.size() - out.offsets.back() >= 2,
                     "sequitur: rule body shorter than two symbols");
      out.offsets.push_back(out.symbols.size());
    }
    GTADOC_EXPECTS(next_boundary == boundaries_.size() && out.symbols.size() == live_symbols_,
                   "sequitur: symbol accounting mismatch");
    return out;
  }

 private:
  // ------------------------------------------------------------------ node plumbing
  bool is_guard(uint32_t x) const { return (nodes_[x].val & kGuardBit) != 0; }
  bool is_rule_value(uint32_t v) const { return v >= num_words_ && v < kBoundaryMark; }

  uint32_t alloc(uint32_t v) {
    if (free_nodes_ != kNil) {
      uint32_t x = free_nodes_;
      free_nodes_ = nodes_[x].next;
      nodes_[x].val = v;
      return x;
    }
    GTADOC_EXPECTS(nodes_.size() < kMaxNodes, "sequitur: node index overflow");
    if (nodes_.size() % 64 == 0) indexed_.push_back(0);
    nodes_.push_back({v, kNil, kNil});
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  void release(uint32_t x) {
    nodes_[x].prev = kNil;
    nodes_[x].next = free_nodes_;
    free_nodes_ = x;
  }
  void link(uint32_t x, uint32_t y) {
    nodes_[x].next = y;
    nodes_[y].prev = x;
  }
  /// Queues the digram starting at x for a uniqueness check (guards start no digram).
  void push(uint32_t x) {
    if (is_guard(x)) return;
    pending_.push_back(x);
    prefetch_digram(x);
  }

  uint32_t new_rule() {
    uint32_t r;
    if (!free_rules_.empty()) {
      r = free_rules_.back();
      free_rules_.pop_back();
    } else {
      r = static_cast<uint32_t>(guard_.size());
      GTADOC_EXPECTS(static_cast<uint64_t>(num_words_) + r < kBoundaryMark,
                     "sequitur: too many rules for the vocabulary size");
      guard_.push_back(kNil);
      uses_.push_back(0);
    }
    uses_[r] = 0;
    return r;
  }
  void attach_guard(uint32_t r) {
    uint32_t g = alloc(kGuardBit | r);
    link(g, g);
    guard_[r] = g;
  }
  void use(uint32_t v) {
    if (is_rule_value(v)) ++uses_[v - num_words_];
  }
  void unuse(uint32_t v) {
    if (is_rule_value(v)) --uses_[v - num_words_];
  }

  // ------------------------------------------------------------------ digram index
  bool is_indexed(uint32_t x) const { return (indexed_[x >> 6] >> (x & 63)) & 1; }
  void set_indexed(uint32_t x) { indexed_[x >> 6] |= uint64_t{1} << (x & 63); }
  void clear_indexed(uint32_t x) { indexed_[x >> 6] &= ~(uint64_t{1} << (x & 63)); }

  /// Starts loading the table slot of the digram at x (valid or not: a prefetch is only a hint).
  [[gnu::always_inline]] void prefetch_digram(uint32_t x) const {
    uint32_t a = nodes_[x].val;
    uint32_t b = nodes_[nodes_[x].next].val;
    if (((a | b) & kGuardBit) == 0) table_.prefetch(digram_fingerprint(a, b));
  }

  /// Drops the index entry of the digram starting at x if x is the indexed occurrence. When
  /// the digram is "aa" an overlapping occurrence next to it ("aaa") is re-queued, so a run
  /// stays indexed after the occurrence that represented it goes away. (Invariant: every digram
  /// is indexed, queued, or overlaps its indexed occurrence inside one run.)
  void remove_digram(uint32_t x) {
    if (!is_indexed(x)) return;
    clear_indexed(x);
    const Node& n = nodes_[x];
    uint32_t a = n.val;
    uint32_t y = n.next;
    table_.erase(digram_fingerprint(a, nodes_[y].val), x);
    if (a == nodes_[y].val) {
      if (nodes_[n.prev].val == a) pending_.push_back(n.prev);
      if (nodes_[nodes_[y].next].val == a) pending_.push_back(y);
    }
  }

  /// Enforces digram uniqueness for the digram starting at x (if x is still live).
  void check(uint32_t x) {
    const Node& n = nodes_[x];
    if (n.prev == kNil || is_indexed(x)) return;  // freed since queued, or already indexed
    uint32_t a = n.val;
    if (a & kGuardBit) return;
    uint32_t y = n.next;
    uint32_t b = nodes_[y].val;
    if ((b & kGuardBit) || a == kBoundaryMark || b == kBoundaryMark) return;
    uint32_t m = table_.find_or_insert(digram_fingerprint(a, b), x, [&](uint32_t c) {
      return nodes_[c].val == a && nodes_[nodes_[c].next].val == b;
    });
    if (m == kNil) {
      set_indexed(x);
      return;
    }
    if (m == x) return;  // unreachable while the index bits are exact
    if (a == b && (nodes_[m].next == x || y == m)) {
      check_run(x);
      return;
    }
    match(x, m);
  }

  /// x starts an "aa" digram overlapping the indexed one. Overlapping occurrences are allowed,
  /// but a run of four or more a's holds two disjoint ones: replace its first and third pairs.
  /// (With the checks in stack order the indexed pair is the run's first and this never fires
  /// in practice; it keeps the guarantee independent of that order.)
  void check_run(uint32_t x) {
    uint32_t a = nodes_[x].val;
    uint32_t s = x;
    while (nodes_[nodes_[s].prev].val == a) s = nodes_[s].prev;
    uint32_t t = s;
    int len = 1;
    while (len < 4 && nodes_[nodes_[t].next].val == a) {
      t = nodes_[t].next;
      ++len;
    }
    if (len >= 4) match(nodes_[nodes_[s].next].next, s);
  }

  /// True when the digram at x is the entire body of a rule other than the root.
  bool is_whole_rule(uint32_t x) const {
    uint32_t p = nodes_[x].prev;
    return is_guard(p) && is_guard(nodes_[nodes_[x].next].next) &&
           (nodes_[p].val & ~kGuardBit) != 0;
  }
  uint32_t rule_of_body(uint32_t x) const { return nodes_[nodes_[x].prev].val & ~kGuardBit; }

  /// ss and m are disjoint occurrences of one digram: replace both by one rule.
  void match(uint32_t ss, uint32_t m) {
    uint32_t r;
    if (is_whole_rule(m)) {
      r = rule_of_body(m);
      GTADOC_EXPECTS(!is_whole_rule(ss), "sequitur: two rules with the same body");
      substitute(ss, r);
    } else if (is_whole_rule(ss)) {
      r = rule_of_body(ss);
      substitute(m, r);
      push(ss);  // the rule's body is now the digram's only occurrence: index it
    } else {
      uint32_t a = nodes_[m].val;
      uint32_t b = nodes_[nodes_[m].next].val;
      if (is_rule_value(a) && uses_[a - num_words_] == 2) {
        extend_rule(ss, m, /*at_end=*/true);
        return;
      }
      if (is_rule_value(b) && uses_[b - num_words_] == 2) {
        extend_rule(ss, m, /*at_end=*/false);
        return;
      }
      r = new_rule();
      use(a);
      use(b);
      substitute(m, r);
      substitute(ss, r);
      attach_guard(r);
      uint32_t g = guard_[r];
      uint32_t c1 = alloc(a);
      uint32_t c2 = alloc(b);
      link(g, c1);
      link(c1, c2);
      link(c2, g);
      live_symbols_ += 2;
      push(c1);
    }
    // Rule utility: a symbol of r's (two-symbol) body may now be its rule's only use.
    uint32_t g = guard_[r];
    uint32_t first = nodes_[g].next;
    uint32_t second = nodes_[first].next;
    if (is_rule_value(nodes_[first].val) && uses_[nodes_[first].val - num_words_] == 1)
      expand(first);
    if (is_rule_value(nodes_[second].val) && uses_[nodes_[second].val - num_words_] == 1)
      expand(second);
  }

  /// The digram at the disjoint occurrences ss and m is (A c) (at_end) or (c A) (otherwise),
  /// and these are the only two uses of rule A. Plain Sequitur would make a rule [A c], find
  /// A used once and expand it; the same grammar (up to rule ids) comes from moving c into A's
  /// body, which leaves A's outer digrams in place: fewer index updates on the hot path of a
  /// repeated phrase, which grows its rule one symbol at a time.
  void extend_rule(uint32_t ss, uint32_t m, bool at_end) {
    const uint32_t rule_value = at_end ? nodes_[m].val : nodes_[nodes_[m].next].val;
    const uint32_t c = at_end ? nodes_[nodes_[m].next].val : nodes_[m].val;
    for (uint32_t x : {m, ss}) {
      if (at_end) {  // x = A, y = c: drop y
        uint32_t y = nodes_[x].next;
        uint32_t q = nodes_[y].next;
        remove_digram(x);
        remove_digram(y);
        release(y);
        link(x, q);
        push(x);
      } else {  // x = c, y = A: drop x
        uint32_t p = nodes_[x].prev;
        uint32_t y = nodes_[x].next;
        remove_digram(p);
        remove_digram(x);
        release(x);
        link(p, y);
        push(p);
      }
    }
    live_symbols_ -= 1;  // two symbols dropped, one added to the body
    uint32_t g = guard_[rule_value - num_words_];
    uint32_t z = alloc(c);
    if (at_end) {
      uint32_t last = nodes_[g].prev;
      link(last, z);
      link(z, g);
      push(last);
    } else {
      uint32_t first = nodes_[g].next;
      link(g, z);
      link(z, first);
      push(z);
    }
    if (is_rule_value(c) && --uses_[c - num_words_] == 1) expand(z);  // -2 outside, +1 inside
  }

  /// Replaces the digram starting at x by the symbol of rule r.
  void substitute(uint32_t x, uint32_t r) {
    uint32_t y = nodes_[x].next;
    uint32_t p = nodes_[x].prev;
    uint32_t q = nodes_[y].next;
    if (is_indexed(p)) prefetch_digram(p);
    if (is_indexed(y)) prefetch_digram(y);
    remove_digram(p);
    remove_digram(x);
    remove_digram(y);
    unuse(nodes_[x].val);
    unuse(nodes_[y].val);
    release(x);
    release(y);
    uint32_t z = alloc(num_words_ + r);
    ++uses_[r];
    link(p, z);
    link(z, q);
    --live_symbols_;
    push(z);
    push(p);  // popped first: the left digram is checked before the right one
  }

  /// s is the only use of its rule: splice the rule's body in its place and delete the rule.
  void expand(uint32_t s) {
    uint32_t rule = nodes_[s].val - num_words_;
    uint32_t g = guard_[rule];
    uint32_t first = nodes_[g].next;
    uint32_t last = nodes_[g].prev;
    uint32_t left = nodes_[s].prev;
    uint32_t right = nodes_[s].next;
    remove_digram(left);
    remove_digram(s);
    release(s);
    release(g);
    guard_[rule] = kNil;
    uses_[rule] = 0;
    free_rules_.push_back(rule);
    link(left, first);
    link(last, right);
    --live_symbols_;
    push(last);
    push(left);
  }

  uint32_t num_words_;
  BigVector<Node> nodes_;
  BigVector<uint64_t> indexed_;  ///< bit per node: it is the indexed occurrence of its digram
  uint32_t free_nodes_ = kNil;
  std::vector<uint32_t> guard_;  ///< rule -> guard node, kNil for a free rule id
  std::vector<uint32_t> uses_;   ///< rule -> occurrences in bodies
  std::vector<uint32_t> free_rules_;
  std::vector<uint32_t> pending_;   ///< nodes whose digram awaits a uniqueness check
  std::vector<Symbol> boundaries_;  ///< boundary symbols in input order
  uint64_t live_symbols_ = 0;
  DigramTable table_;
};

}  // namespace

RawGrammar sequitur(std::span<const Symbol> tokens, uint32_t num_words) {
  SequiturBuilder builder(tokens.size(), num_words);
  // The first lookup of a step is usually the digram (previous token, token): prefetch its slot
  // a few steps ahead.
  constexpr size_t kAhead = 3;
  const size_t n = tokens.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) builder.prefetch_pair(tokens[i + kAhead - 1], tokens[i + kAhead]);
    builder.append(tokens[i]);
  }
  return builder.finish();
}

}  // namespace gtadoc
