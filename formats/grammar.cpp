// Finalizing, validating and expanding shard grammars. Every pass is linear in the grammar size
// and iterative (explicit stacks), so deep DAGs cannot overflow the call stack.
#include "formats/grammar.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <utility>

#include "common/big_alloc.h"
#include "common/error.h"
#include "common/parallel.h"
#include "common/recycled_arrays.h"

namespace gtadoc {
namespace {

constexpr uint32_t kUnknown = 0xFFFFFFFFu;
constexpr uint32_t kVisiting = 0xFFFFFFFEu;

/// Heights of the rules of a raw grammar (0 = no rule below), by an iterative post-order walk.
/// Checks on the way that every symbol is a word, a rule other than the root, or a boundary
/// inside the root, and that the rules form no cycle.
std::vector<uint32_t> raw_heights(uint32_t num_words, const RawGrammar& raw) {
  const std::vector<uint64_t>& off = raw.offsets;
  const std::vector<Symbol>& sym = raw.symbols;
  const uint32_t num_rules = static_cast<uint32_t>(off.size() - 1);
  std::vector<uint32_t> height(num_rules, kUnknown);
  struct Frame {
    uint32_t rule;
    uint32_t height;
    uint64_t pos;
  };
  std::vector<Frame> stack;
  for (uint32_t start = 0; start < num_rules; ++start) {
    if (height[start] != kUnknown) continue;
    height[start] = kVisiting;
    stack.push_back({start, 0, off[start]});
    while (!stack.empty()) {
      size_t top = stack.size() - 1;
      const uint32_t r = stack[top].rule;
      const uint64_t end = off[r + 1];
      uint32_t child = kUnknown;
      while (stack[top].pos < end) {
        Symbol s = sym[stack[top].pos];
        if (is_boundary(s)) {
          GTADOC_EXPECTS(r == 0, "finalize_grammar: boundary symbol outside the root");
        } else if (s >= num_words) {
          uint32_t c = rule_of(s, num_words);
          GTADOC_EXPECTS(c < num_rules && c != 0,
                         "finalize_grammar: reference to rule " + std::to_string(c));
          GTADOC_EXPECTS(height[c] != kVisiting, "finalize_grammar: cyclic rules");
          if (height[c] == kUnknown) {
            child = c;
            break;
          }
          stack[top].height = std::max(stack[top].height, height[c] + 1);
        }
        ++stack[top].pos;
      }
      if (child != kUnknown) {
        height[child] = kVisiting;
        stack.push_back({child, 0, off[child]});  // the parent re-reads this symbol later
      } else {
        height[r] = stack[top].height;
        stack.pop_back();
      }
    }
  }
  return height;
}

[[noreturn]] void corrupt(std::string_view what, const std::string& violation) {
  throw InputError(std::string(what) + ": corrupt grammar: " + violation);
}

}  // namespace

ShardGrammar finalize_grammar(uint32_t num_words, DocId first_doc, uint32_t num_docs,
                              const RawGrammar& raw) {
  const std::vector<uint64_t>& off = raw.offsets;
  GTADOC_EXPECTS(off.size() >= 2 && off.front() == 0 && off.back() == raw.symbols.size(),
                 "finalize_grammar: offsets do not match the symbols");
  for (size_t i = 1; i < off.size(); ++i)
    GTADOC_EXPECTS(off[i - 1] <= off[i], "finalize_grammar: offsets not monotone");
  GTADOC_EXPECTS(num_docs >= 1, "finalize_grammar: a shard holds at least one document");
  GTADOC_EXPECTS(off.size() - 1 <= static_cast<uint64_t>(kBoundaryBit - num_words),
                 "finalize_grammar: too many rules for the vocabulary size");
  const uint32_t num_rules = static_cast<uint32_t>(off.size() - 1);

  std::vector<uint32_t> height = raw_heights(num_words, raw);
  const uint32_t top = height[0];
  for (uint32_t r = 1; r < num_rules; ++r)
    GTADOC_EXPECTS(height[r] < top,
                   "finalize_grammar: rule " + std::to_string(r) + " is not below the root");

  ShardGrammar g;
  g.num_words = num_words;
  g.first_doc = first_doc;
  g.num_docs = num_docs;

  // Counting sort by height, stable by old id; the root is alone at the top level.
  g.level_offsets.assign(static_cast<size_t>(top) + 2, 0);
  for (uint32_t r = 0; r < num_rules; ++r) ++g.level_offsets[height[r] + 1];
  for (size_t h = 1; h < g.level_offsets.size(); ++h) g.level_offsets[h] += g.level_offsets[h - 1];
  std::vector<uint32_t> new_id(num_rules);
  std::vector<uint32_t> old_id(num_rules);
  {
    std::vector<uint32_t> next(g.level_offsets.begin(), g.level_offsets.end() - 1);
    for (uint32_t r = 0; r < num_rules; ++r) {
      uint32_t id = next[height[r]]++;
      new_id[r] = id;
      old_id[id] = r;
    }
  }
  std::vector<uint32_t>().swap(height);

  // Bodies in the new order, with rule symbols rewritten; lengths and uses bottom-up.
  g.rule_offsets.resize(num_rules + 1);
  g.symbols.resize(raw.symbols.size());
  g.rule_length.assign(num_rules, 0);
  g.rule_uses.assign(num_rules, 0);
  uint64_t pos = 0;
  for (uint32_t id = 0; id < num_rules; ++id) {
    g.rule_offsets[id] = pos;
    uint32_t r = old_id[id];
    uint64_t length = 0;
    for (uint64_t i = off[r]; i < off[r + 1]; ++i) {
      Symbol s = raw.symbols[i];
      if (is_boundary(s)) {
        g.symbols[pos++] = s;
        continue;
      }
      if (s < num_words) {
        ++length;
      } else {
        uint32_t c = new_id[rule_of(s, num_words)];
        s = rule_symbol(c, num_words);
        GTADOC_EXPECTS(!__builtin_add_overflow(length, g.rule_length[c], &length),
                       "finalize_grammar: rule length overflows 64 bits");
        ++g.rule_uses[c];
      }
      g.symbols[pos++] = s;
    }
    g.rule_length[id] = length;
  }
  g.rule_offsets[num_rules] = pos;

  // Document segments of the root.
  const uint64_t root_begin = g.rule_offsets[num_rules - 1];
  const uint64_t root_len = pos - root_begin;
  g.doc_root_offsets.reserve(static_cast<size_t>(num_docs) + 1);
  g.doc_root_offsets.push_back(0);
  for (uint64_t i = 0; i < root_len; ++i)
    if (is_boundary(g.symbols[root_begin + i])) g.doc_root_offsets.push_back(i + 1);
  GTADOC_EXPECTS(g.doc_root_offsets.size() == num_docs,
                 "finalize_grammar: root holds " + std::to_string(g.doc_root_offsets.size() - 1) +
                     " boundaries for " + std::to_string(num_docs) + " documents");
  g.doc_root_offsets.push_back(root_len + 1);
  localize_words(g);
  return g;
}

void localize_words(ShardGrammar& g) {
  const uint32_t V = g.num_words;
  std::vector<Symbol>& sym = g.symbols;
  const uint64_t S = sym.size();
  std::vector<WordId> local;
  if (uint64_t{V} / 8 <= S * sizeof(Symbol)) {
    // A bit per id of the space, ranked by the popcounts of the words before.
    std::vector<uint64_t> bits((uint64_t{V} + 63) / 64, 0);
    for (uint64_t i = 0; i < S; ++i)
      if (sym[i] < V) bits[sym[i] >> 6] |= uint64_t{1} << (sym[i] & 63);
    std::vector<uint32_t> before(bits.size(), 0);
    uint32_t n = 0;
    for (size_t k = 0; k < bits.size(); ++k) {
      before[k] = n;
      n += static_cast<uint32_t>(std::popcount(bits[k]));
    }
    local.reserve(n);
    for (size_t k = 0; k < bits.size(); ++k)
      for (uint64_t b = bits[k]; b != 0; b &= b - 1)
        local.push_back(static_cast<WordId>(k * 64 + std::countr_zero(b)));
    const uint32_t L = n;
    for (uint64_t i = 0; i < S; ++i) {
      const Symbol s = sym[i];
      if (s < V) {
        const uint64_t below = bits[s >> 6] & ((uint64_t{1} << (s & 63)) - 1);
        sym[i] = before[s >> 6] + static_cast<uint32_t>(std::popcount(below));
      } else if (!is_boundary(s)) {
        sym[i] = rule_symbol(rule_of(s, V), L);
      }
    }
  } else {
    // A space much larger than the grammar: the word symbols sorted, then searched.
    for (uint64_t i = 0; i < S; ++i)
      if (sym[i] < V) local.push_back(sym[i]);
    std::sort(local.begin(), local.end());
    local.erase(std::unique(local.begin(), local.end()), local.end());
    const uint32_t L = static_cast<uint32_t>(local.size());
    for (uint64_t i = 0; i < S; ++i) {
      const Symbol s = sym[i];
      if (s < V)
        sym[i] =
            static_cast<Symbol>(std::lower_bound(local.begin(), local.end(), s) - local.begin());
      else if (!is_boundary(s))
        sym[i] = rule_symbol(rule_of(s, V), L);
    }
  }
  g.num_words = static_cast<uint32_t>(local.size());
  g.local_words = std::move(local);
}

namespace {

/// Below this many symbols validate_grammar checks on one thread only.
constexpr uint64_t kParallelValidateSymbols = uint64_t{1} << 16;
/// Symbols per task of the parallel checks.
constexpr uint64_t kValidateTaskSymbols = uint64_t{1} << 16;
/// Largest memory for the workers' own use counts and word marks (fewer workers beyond it).
constexpr uint64_t kPerWorkerBytes = uint64_t{256} << 20;

/// check_grammar_frame's conditions: true when they all hold.
bool frame_valid(const ShardGrammar& g) {
  const uint32_t V = g.num_words;
  if (g.local_words.size() != V) return false;
  for (size_t i = 1; i < g.local_words.size(); ++i)
    if (g.local_words[i] <= g.local_words[i - 1]) return false;
  const std::vector<uint64_t>& off = g.rule_offsets;
  if (off.size() < 2 || off.size() - 1 > static_cast<uint64_t>(kBoundaryBit) - V) return false;
  const uint32_t R = static_cast<uint32_t>(off.size() - 1);
  const RuleId root = R - 1;
  if (off[0] != 0 || off[R] != g.symbols.size()) return false;
  for (uint32_t r = 0; r < root; ++r)
    if (off[r] >= off[r + 1]) return false;  // decreasing, or an empty body
  if (off[root] > off[R]) return false;
  if (g.rule_length.size() != R || g.rule_uses.size() != R || g.rule_uses[root] != 0) return false;
  if (g.num_docs == 0 || static_cast<uint64_t>(g.first_doc) + g.num_docs > (uint64_t{1} << 32))
    return false;
  const std::vector<uint32_t>& lo = g.level_offsets;
  if (lo.size() < 2) return false;
  const size_t L = lo.size() - 1;
  if (lo[0] != 0 || lo[L] != R || lo[L - 1] != root) return false;
  for (size_t h = 0; h < L; ++h)
    if (lo[h] > lo[h + 1]) return false;
  const std::vector<uint64_t>& dro = g.doc_root_offsets;
  const uint64_t root_begin = off[root], root_len = off[R] - root_begin;
  if (dro.size() != static_cast<size_t>(g.num_docs) + 1 || dro[0] != 0 ||
      dro[g.num_docs] != root_len + 1)
    return false;
  std::vector<uint32_t> ids;
  ids.reserve(g.num_docs - 1);
  for (uint32_t d = 1; d < g.num_docs; ++d) {
    if (dro[d] <= dro[d - 1] || dro[d] > root_len) return false;
    const Symbol s = g.symbols[root_begin + dro[d] - 1];
    if (!is_boundary(s)) return false;
    ids.push_back(s & ~kBoundaryBit);
  }
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}

/// Whether `g` satisfies every invariant validate_grammar checks, decided on `threads` threads.
/// Each rule is checked against the *stored* metadata of its children instead of values computed
/// bottom-up, so rules are independent: its rule_length must be the sum over its body of 1 per
/// word and the stored rule_length of each child, and its level h (the one level_offsets gives
/// it) must be one more than its highest child's. Levels are ranges of ids, so the highest child
/// is the one with the largest id M, and "h = level(M) + 1" is lo[h-1] <= M < lo[h] (no rule
/// child at h = 0): no per-rule level array and no random access for heights. When every rule
/// agrees with its children's stored values, by induction over ids (children have smaller ids)
/// the stored values are the computed ones, which is what the sequential checks ask.
/// A false answer names nothing: the sequential checks then find the first violation.
bool valid_in_parallel(const ShardGrammar& g, unsigned threads) {
  if (!frame_valid(g)) return false;  // offsets, levels and the documents' separators hold
  const uint32_t V = g.num_words;
  const uint32_t R = g.num_rules();
  const RuleId root = R - 1;
  const std::vector<uint64_t>& off = g.rule_offsets;
  const std::vector<Symbol>& sym = g.symbols;
  const uint64_t num_symbols = sym.size();
  const std::vector<uint32_t>& lo = g.level_offsets;
  const size_t L = lo.size() - 1;

  std::atomic<bool> ok{true};
  auto fail = [&] { ok.store(false, std::memory_order_relaxed); };
  auto failed = [&] { return !ok.load(std::memory_order_relaxed); };

  // Tasks: the rules but the root as runs of whole rules of about kValidateTaskSymbols symbols
  // (cut where the offsets say, whether or not they are valid: each rule checks its own), and the
  // root body in pieces of kValidateTaskSymbols symbols.
  const uint64_t root_begin = off[root];
  struct Task {
    uint32_t first_rule, end_rule;  ///< non-root rules [first, end), or first == end == root
    uint64_t begin, end;            ///< root symbols [begin, end) (absolute)
  };
  std::vector<Task> tasks;
  for (uint32_t r = 0; r < root;) {
    const uint64_t target = off[r] + kValidateTaskSymbols;
    uint32_t end = static_cast<uint32_t>(
        std::upper_bound(off.begin() + r + 1, off.begin() + root + 1, target) - off.begin() - 1);
    end = std::max(end, r + 1);
    tasks.push_back({r, end, 0, 0});
    r = end;
  }
  const size_t root_task0 = tasks.size();
  for (uint64_t p = root_begin; p < off[R]; p += kValidateTaskSymbols)
    tasks.push_back({root, root, p, std::min<uint64_t>(off[R], p + kValidateTaskSymbols)});
  struct RootPart {
    int64_t max_child = -1;  ///< largest rule id referenced
    uint64_t length = 0, boundaries = 0;
  };
  std::vector<RootPart> root_parts(tasks.size() - root_task0);

  // Each worker counts the rules' uses and marks the words it sees in arrays of its own (R + 1
  // counts, V + 1 bits: the last slot of each takes what is not a rule child or not a word), so
  // the loops run without a branch on the kind of each symbol (otherwise mispredicted about
  // every other symbol) and without atomics; merged afterwards. Workers are fewer where their
  // arrays would take too much memory.
  const uint64_t word_blocks = uint64_t{V} / 64 + 1;
  const uint64_t worker_bytes = (uint64_t{R} + 1) * sizeof(uint32_t) + word_blocks * 8;
  const size_t workers =
      std::max<size_t>(1, std::min<size_t>({resolve_threads(threads), tasks.size(),
                                            static_cast<size_t>(kPerWorkerBytes / worker_bytes)}));
  std::vector<std::vector<uint32_t>> uses(workers);
  std::vector<std::vector<uint64_t>> seen(workers);
  std::atomic<size_t> next_task{0};
  const Symbol* const sp = sym.data();
  const uint64_t* const lengths = g.rule_length.data();
  parallel_for(workers, workers, [&](size_t w) {
    resize_on_huge_pages(uses[w], uint64_t{R} + 1);
    seen[w].assign(word_blocks, 0);
    uint32_t* const counts = uses[w].data();
    uint64_t* const bits = seen[w].data();
    // Symbols [begin, end) of a body whose rule children must be below `limit`; boundaries are
    // allowed (and counted) in the root only. False when a symbol is neither.
    auto scan = [&](uint64_t begin, uint64_t end, uint32_t limit, bool root_body, RootPart& part) {
      bool bad = false;
      uint64_t length = 0, boundaries = 0;
      int64_t max_child = -1;
      for (uint64_t i = begin; i < end; ++i) {
        const Symbol s = sp[i];
        const bool word = s < V;
        const bool boundary = is_boundary(s);
        const uint32_t c = s - V;  // the rule, when a rule
        const bool child = !word && !boundary && c < limit;
        bad |= !word && !child && !(boundary && root_body);
        boundaries += boundary;
        const uint64_t child_length = lengths[child ? c : 0];  // read whatever the kind
        bad |= __builtin_add_overflow(length, word ? 1 : child ? child_length : 0, &length);
        ++counts[child ? c : R];
        max_child = std::max<int64_t>(max_child, child ? int64_t{c} : -1);
        const uint32_t bit = word ? s : V;
        bits[bit >> 6] |= uint64_t{1} << (bit & 63);
      }
      part = {max_child, length, boundaries};
      return !bad;
    };
    for (size_t t; (t = next_task.fetch_add(1)) < tasks.size() && !failed();) {
      const Task& task = tasks[t];
      RootPart part;
      if (task.first_rule == root) {
        if (!scan(task.begin, task.end, root, true, part)) return fail();
        root_parts[t - root_task0] = part;
        continue;
      }
      size_t h = std::upper_bound(lo.begin(), lo.end(), task.first_rule) - lo.begin() - 1;
      for (uint32_t r = task.first_rule; r < task.end_rule; ++r) {
        while (r >= lo[h + 1]) ++h;
        const uint64_t begin = off[r], end = off[r + 1];
        if (begin >= end || end > num_symbols) return fail();  // decreasing, empty or beyond
        if (!scan(begin, end, r, false, part) || part.length != lengths[r]) return fail();
        const int64_t max_child = part.max_child;
        if (h == 0 ? max_child >= 0 : max_child < lo[h - 1] || max_child >= lo[h]) return fail();
      }
    }
  });
  if (failed()) return false;

  // The root (alone on the top level L - 1), and the uses.
  int64_t root_max_child = -1;
  uint64_t root_length = 0, boundaries = 0;
  for (const RootPart& part : root_parts) {
    root_max_child = std::max(root_max_child, part.max_child);
    if (__builtin_add_overflow(root_length, part.length, &root_length)) return false;
    boundaries += part.boundaries;
  }
  if (root_length != g.rule_length[root]) return false;
  for (uint64_t k = 0; k < word_blocks; ++k) {
    uint64_t any = 0;
    for (const std::vector<uint64_t>& b : seen) any |= b[k];
    const uint64_t first = k * 64;  // bits of words [first, min(first + 64, V)) must all be set
    const uint64_t want = V - first >= 64 ? ~uint64_t{0} : (uint64_t{1} << (V - first)) - 1;
    if ((any & want) != want) return false;
  }
  if (L - 1 == 0 ? root_max_child >= 0 : root_max_child < lo[L - 2] || root_max_child >= lo[L - 1])
    return false;
  const uint64_t rule_tasks = (R - 1) / kValidateTaskSymbols + 1;
  parallel_for(rule_tasks, threads, [&](size_t t) {
    const uint64_t a = t * kValidateTaskSymbols,
                   b = std::min<uint64_t>(R, a + kValidateTaskSymbols);
    for (uint64_t r = a; r < b; ++r) {
      uint32_t n = 0;  // wraps like the sequential count
      for (const std::vector<uint32_t>& u : uses) n += u[r];
      if (n != g.rule_uses[r]) return fail();
    }
  });
  if (failed()) return false;

  // Root: exactly num_docs - 1 boundaries (the frame put one, with distinct ids, right before
  // the start of each next document).
  return boundaries == g.num_docs - 1;
}

/// The local vocabulary's own checks (its use by the bodies is checked with them).
void check_local_words(const ShardGrammar& g, std::string_view what) {
  using std::to_string;
  if (g.local_words.size() != g.num_words)
    corrupt(what, "local_words has " + to_string(g.local_words.size()) + " entries for " +
                      to_string(g.num_words) + " words");
  for (size_t i = 1; i < g.local_words.size(); ++i)
    if (g.local_words[i] <= g.local_words[i - 1])
      corrupt(what, "local_words are not strictly ascending (entry " + to_string(i) + ")");
}

/// validate_grammar's checks in order, bottom-up on one thread: throws at the first violation.
void validate_sequentially(const ShardGrammar& g, std::string_view what) {
  using std::to_string;
  const uint32_t V = g.num_words;
  const size_t num_offsets = g.rule_offsets.size();
  if (num_offsets < 2) corrupt(what, "no rules");
  if (num_offsets - 1 > static_cast<uint64_t>(kBoundaryBit) - V)
    corrupt(what, "too many rules for the vocabulary size");
  const uint32_t R = static_cast<uint32_t>(num_offsets - 1);
  const RuleId root = R - 1;
  if (g.rule_offsets[0] != 0) corrupt(what, "rule_offsets[0] is not 0");
  if (g.rule_offsets[R] != g.symbols.size())
    corrupt(what, "rule_offsets end at " + to_string(g.rule_offsets[R]) + ", not at the " +
                      to_string(g.symbols.size()) + " symbols");
  for (uint32_t r = 0; r < R; ++r) {
    if (g.rule_offsets[r] > g.rule_offsets[r + 1])
      corrupt(what, "rule_offsets decrease at rule " + to_string(r));
    if (r != root && g.rule_offsets[r] == g.rule_offsets[r + 1])
      corrupt(what, "rule " + to_string(r) + " has an empty body");
  }
  if (g.rule_length.size() != R) corrupt(what, "rule_length has the wrong size");
  if (g.rule_uses.size() != R) corrupt(what, "rule_uses has the wrong size");
  if (g.num_docs == 0) corrupt(what, "no documents");
  if (static_cast<uint64_t>(g.first_doc) + g.num_docs > (uint64_t{1} << 32))
    corrupt(what, "document ids out of range");
  if (g.doc_root_offsets.size() != static_cast<size_t>(g.num_docs) + 1)
    corrupt(what, "doc_root_offsets has the wrong size");
  if (g.level_offsets.size() < 2) corrupt(what, "level_offsets has fewer than 2 entries");

  // Bodies: symbol ranges, heights, lengths and uses, all from smaller ids up.
  std::vector<uint32_t> height(R, 0);
  std::vector<uint32_t> uses;
  resize_on_huge_pages(uses, R);
  std::vector<uint8_t> word_used(V, 0);
  for (uint32_t r = 0; r < R; ++r) {
    uint32_t h = 0;
    uint64_t length = 0;
    for (uint64_t i = g.rule_offsets[r]; i < g.rule_offsets[r + 1]; ++i) {
      Symbol s = g.symbols[i];
      if (is_boundary(s)) {
        if (r != root) corrupt(what, "boundary symbol in rule " + to_string(r) + " (not the root)");
      } else if (s < V) {
        ++length;
        word_used[s] = 1;
      } else {
        uint32_t c = rule_of(s, V);
        if (c >= r)
          corrupt(what, "rule " + to_string(r) + " references rule " + to_string(c) +
                            " (not a smaller id)");
        h = std::max(h, height[c] + 1);
        if (__builtin_add_overflow(length, g.rule_length[c], &length))
          corrupt(what, "length of rule " + to_string(r) + " overflows");
        ++uses[c];
      }
    }
    height[r] = h;
    if (g.rule_length[r] != length)
      corrupt(what, "rule_length[" + to_string(r) + "] is " + to_string(g.rule_length[r]) +
                        ", its body expands to " + to_string(length) + " words");
  }
  for (uint32_t r = 0; r < R; ++r)
    if (g.rule_uses[r] != uses[r])
      corrupt(what, "rule_uses[" + to_string(r) + "] is " + to_string(g.rule_uses[r]) +
                        ", counted " + to_string(uses[r]));
  for (uint32_t w = 0; w < V; ++w)
    if (!word_used[w]) corrupt(what, "local word " + to_string(w) + " is used by no rule");

  // Levels: monotone, covering every rule, each rule at its height, the root alone on top.
  const size_t L = g.level_offsets.size() - 1;
  if (g.level_offsets[0] != 0 || g.level_offsets[L] != R)
    corrupt(what, "level_offsets do not span the rules");
  for (size_t h = 0; h < L; ++h) {
    if (g.level_offsets[h] > g.level_offsets[h + 1] || g.level_offsets[h + 1] > R)
      corrupt(what, "level_offsets decrease at level " + to_string(h));
    for (uint32_t r = g.level_offsets[h]; r < g.level_offsets[h + 1]; ++r)
      if (height[r] != h)
        corrupt(what, "rule " + to_string(r) + " of height " + to_string(height[r]) +
                          " is listed at level " + to_string(h));
  }
  if (g.level_offsets[L - 1] != root) corrupt(what, "the root is not alone at the top level");

  // Root: boundaries at the recorded document starts, one per document gap, all distinct.
  const uint64_t root_begin = g.rule_offsets[root];
  const uint64_t root_len = g.rule_offsets[R] - root_begin;
  if (g.doc_root_offsets[0] != 0) corrupt(what, "doc_root_offsets[0] is not 0");
  std::vector<uint32_t> boundary_ids;
  boundary_ids.reserve(g.num_docs - 1);
  uint32_t d = 0;
  for (uint64_t i = 0; i < root_len; ++i) {
    Symbol s = g.symbols[root_begin + i];
    if (!is_boundary(s)) continue;
    if (++d >= g.num_docs)
      corrupt(what, "root holds more than " + to_string(g.num_docs - 1) + " boundaries");
    if (g.doc_root_offsets[d] != i + 1)
      corrupt(what, "doc_root_offsets[" + to_string(d) + "] does not follow its boundary");
    boundary_ids.push_back(s & ~kBoundaryBit);
  }
  if (d + 1 != g.num_docs)
    corrupt(what, "root holds " + to_string(d) + " boundaries for " + to_string(g.num_docs) +
                      " documents");
  if (g.doc_root_offsets[g.num_docs] != root_len + 1)
    corrupt(what, "doc_root_offsets does not end at the root length + 1");
  std::sort(boundary_ids.begin(), boundary_ids.end());
  if (std::adjacent_find(boundary_ids.begin(), boundary_ids.end()) != boundary_ids.end())
    corrupt(what, "a boundary symbol occurs twice");
}

}  // namespace

void check_grammar_frame(const ShardGrammar& g, std::string_view what) {
  if (frame_valid(g)) return;
  validate_grammar(g, what, 1);  // its message: the first violation may lie in a body
  throw InternalError(std::string(what) +
                      ": the grammar's frame checks reject what the "
                      "sequential checks accept");
}

bool detail::grammar_valid_in_parallel(const ShardGrammar& g, unsigned threads) {
  return valid_in_parallel(g, threads);
}

void validate_grammar(const ShardGrammar& g, std::string_view what, unsigned threads) {
  check_local_words(g, what);
  // The parallel checks accept exactly the grammars the sequential ones accept; they only say
  // yes or no, so a grammar they reject is checked again sequentially for the message.
  threads = resolve_threads(threads);
  if (threads > 1 && g.symbols.size() >= kParallelValidateSymbols && valid_in_parallel(g, threads))
    return;
  validate_sequentially(g, what);
}

void expand_document(const ShardGrammar& g, uint32_t d, std::vector<WordId>& out) {
  GTADOC_EXPECTS(d < g.num_docs,
                 "expand_document: document " + std::to_string(d) + " out of range");
  auto [begin, end] = g.doc_segment(d);
  const uint32_t V = g.num_words;
  uint64_t total = 0;
  for (uint64_t i = begin; i < end; ++i) {
    Symbol s = g.symbols[i];
    total += s < V ? 1 : is_boundary(s) ? 0 : g.rule_length[rule_of(s, V)];
  }
  out.reserve(out.size() + total);
  std::vector<std::pair<uint64_t, uint64_t>> stack;  // [pos, end) still to emit, per open body
  stack.emplace_back(begin, end);
  while (!stack.empty()) {
    auto& [pos, stop] = stack.back();
    if (pos == stop) {
      stack.pop_back();
      continue;
    }
    Symbol s = g.symbols[pos++];
    if (s < V) {
      out.push_back(g.local_words[s]);
    } else {
      GTADOC_EXPECTS(!is_boundary(s), "expand_document: boundary inside a document segment");
      RuleId r = rule_of(s, V);
      stack.emplace_back(g.body_begin(r), g.body_end(r));
    }
  }
}

void recycle_grammar(ShardGrammar&& g) noexcept {
  recycled::give(std::move(g.local_words));
  recycled::give(std::move(g.symbols));
  recycled::give(std::move(g.rule_uses));
  recycled::give(std::move(g.rule_offsets));
  recycled::give(std::move(g.rule_length));
  recycled::give(std::move(g.doc_root_offsets));
  g = ShardGrammar{};
}

}  // namespace gtadoc
