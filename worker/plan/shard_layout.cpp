// build_shard_layout: the load-time layout both engines use (worker/plan/shard_layout.h).
#include "worker/plan/shard_layout.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "common/big_alloc.h"
#include "common/error.h"
#include "common/recycled_arrays.h"
#include "common/settings.h"
#include "common/timer.h"
#include "worker/plan/radix_sort.h"

namespace gtadoc::plan {
namespace {

/// Bodies up to this length are bagged by an insertion sort of their symbols; longer ones
/// (document segments, mostly) by sort_ids. Sorting every symbol of a body and counting runs
/// costs no more than counting into dense counters and sorting the distinct ids, and touches no
/// memory sized by the shard per thread.
constexpr uint64_t kShortBody = 32;

struct BagScratch {
  std::vector<uint32_t> rules, words, sort_tmp;
};

/// Appends the (value, multiplicity) runs of a sorted `v`.
void emit_runs(const std::vector<uint32_t>& v, const CsrSink<uint32_t>& out) {
  for (size_t i = 0; i < v.size();) {
    size_t j = i + 1;
    while (j < v.size() && v[j] == v[i]) ++j;
    out.push(v[i], static_cast<uint32_t>(j - i));
    i = j;
  }
}

/// Sorts a short `v` (insertion sort) and appends its (value, multiplicity) runs.
void emit_sorted_runs(std::vector<uint32_t>& v, const CsrSink<uint32_t>& out) {
  for (size_t i = 1; i < v.size(); ++i) {
    const uint32_t x = v[i];
    size_t j = i;
    for (; j > 0 && v[j - 1] > x; --j) v[j] = v[j - 1];
    v[j] = x;
  }
  emit_runs(v, out);
}

}  // namespace

ShardLayout build_shard_layout(const ShardGrammar& g, const Exec& ex, StepTimes* steps,
                               LayoutParts parts) {
  Timer step_timer;
  auto step = [&](const char* name) {
    if (steps == nullptr) return;
    steps->emplace_back(name, step_timer.seconds());
    step_timer.reset();
  };
  GTADOC_EXPECTS(g.rule_offsets.size() >= 2 && g.rule_offsets.back() == g.symbols.size(),
                 "shard layout: bad rule offsets");
  GTADOC_EXPECTS(g.num_rules() < kRuleFlag && g.num_words < kRuleFlag,
                 "shard layout: too many rules or words");
  GTADOC_EXPECTS(g.level_offsets.size() >= 2 && g.level_offsets.back() == g.num_rules(),
                 "shard layout: bad level offsets");
  ShardLayout s;
  s.num_inner = g.num_rules() - 1;
  GTADOC_EXPECTS(g.level_offsets[g.num_levels() - 1] == s.num_inner,
                 "shard layout: the root must be alone on the top level");
  s.num_docs = g.num_docs;
  GTADOC_EXPECTS(
      s.num_docs == 0 || g.doc_root_offsets.size() == static_cast<size_t>(s.num_docs) + 1,
      "shard layout: bad document offsets");
  GTADOC_EXPECTS(s.num_units() < kNoUnit, "shard layout: too many rules and documents");
  const uint32_t V = g.num_words;
  const uint64_t S = g.symbols.size();
  const uint64_t units = s.num_units();

  // 1. (kAll) The shard's own vocabulary (the grammar's local words) and its bodies re-encoded:
  // words keep their local ids, rules get kRuleFlag. Nothing here is sized by the dictionary.
  if (parts == LayoutParts::kAll) {
    s.local_words = g.local_words;
    s.body = recycled::take(S);  // pages already in memory, when one is held
    resize_on_huge_pages(s.body, S);
    ex.parallel_for(0, S, 1 << 16, [&](unsigned, uint64_t lo, uint64_t hi) {
      for (uint64_t i = lo; i < hi; ++i) s.body[i] = layout_code(g.symbols[i], V);
    });
  }
  // Pages already in memory, when handed-back arrays are held (the previous shards' units).
  s.unit_begin = recycled::take<uint64_t>(units);
  resize_on_huge_pages(s.unit_begin, units);
  s.unit_end = recycled::take<uint64_t>(units);
  resize_on_huge_pages(s.unit_end, units);
  for (uint32_t r = 0; r < s.num_inner; ++r) {
    s.unit_begin[r] = g.rule_offsets[r];
    s.unit_end[r] = g.rule_offsets[r + 1];
  }
  const uint64_t root_begin = g.rule_offsets[s.num_inner];
  for (uint32_t d = 0; d < s.num_docs; ++d) {
    const auto [b, e] = g.doc_segment(d);
    GTADOC_EXPECTS(root_begin <= b && b <= e && e <= S, "shard layout: bad document segment");
    GTADOC_EXPECTS(d + 1 == s.num_docs || (e < S && is_boundary(g.symbols[e])),
                   "shard layout: documents not separated by a boundary symbol");
    s.unit_begin[s.num_inner + d] = b;
    s.unit_end[s.num_inner + d] = e;
  }

  step("bodies");
  if (parts != LayoutParts::kAll) {
    s.has_bags = false;
    return s;
  }

  // 3. Bags per unit, children and terms in one reading of each body.
  std::vector<BagScratch> scratch(ex.threads);
  auto bags = build_csrs<uint32_t, 2>(ex, units, 64, [&](unsigned tid, uint64_t u, auto& out) {
    BagScratch& sc = scratch[tid];
    sc.rules.clear();
    sc.words.clear();
    const uint64_t b = s.unit_begin[u], e = s.unit_end[u];
    GTADOC_EXPECTS(e - b < 0xFFFFFFFFull, "shard layout: a body of 2^32 symbols or more");
    const uint32_t limit = u < s.num_inner ? static_cast<uint32_t>(u) : s.num_inner;
    const bool dense = e - b > kShortBody;
    for (uint64_t i = b; i < e; ++i) {
      const uint32_t x = s.body[i];
      GTADOC_EXPECTS(x != kBoundaryCode, "shard layout: boundary symbol inside a rule or document");
      if (x & kRuleFlag) {
        const uint32_t c = x & ~kRuleFlag;
        GTADOC_EXPECTS(c < limit, "shard layout: rule references a rule of greater id");
        sc.rules.push_back(c);
      } else {
        sc.words.push_back(x);
      }
    }
    if (dense) {
      sort_ids(sc.rules, sc.sort_tmp);
      emit_runs(sc.rules, out[0]);
      sort_ids(sc.words, sc.sort_tmp);
      emit_runs(sc.words, out[1]);
    } else {
      emit_sorted_runs(sc.rules, out[0]);
      emit_sorted_runs(sc.words, out[1]);
    }
  }, /*max_entries=*/S);
  s.children = std::move(bags[0]);
  s.terms = std::move(bags[1]);
  step("bags");

  // 4. Uses in the root, and the height of every inner rule.
  s.root_uses.assign(s.num_inner, 0);
  for (uint64_t u = s.num_inner; u < units; ++u)
    for (uint64_t i = s.children.off[u]; i < s.children.off[u + 1]; ++i)
      s.root_uses[s.children.item[i]] += s.children.cnt[i];
  s.level_of.resize(s.num_inner);
  const uint32_t inner_levels = s.num_inner == 0 ? 0 : g.num_levels() - 1;
  for (uint32_t h = 0; h < inner_levels; ++h)
    for (uint32_t r = g.level_offsets[h]; r < g.level_offsets[h + 1]; ++r) s.level_of[r] = h;
  step("root uses and levels");
  return s;
}

LayoutParts gpu_layout_parts() {
  return settings::flag("GTADOC_GPU_HOST_BAGS") ? LayoutParts::kAll : LayoutParts::kUnits;
}

void add_level_schedule(ShardLayout& layout, const ShardGrammar& g) {
  const uint32_t inner = layout.num_inner;
  GTADOC_EXPECTS(layout.unit_begin.size() >= inner && layout.unit_end.size() >= inner &&
                     g.level_offsets.size() >= 2,
                 "shard layout: no units to schedule");
  layout.schedule = build_level_schedules(
      layout.unit_begin, layout.unit_end,
      std::span<const uint32_t>(g.level_offsets.data(), g.level_offsets.size() - 1), inner);
  layout.has_schedule = true;
}

}  // namespace gtadoc::plan
