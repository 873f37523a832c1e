// build_shard_layout: the load-time layout both engines use (worker/plan/shard_layout.h).
#include "worker/plan/shard_layout.h"

#include <algorithm>

#include "common/error.h"
#include "worker/plan/id_set.h"

namespace gtadoc::plan {
namespace {

/// Sorts `v` and appends (value, multiplicity) runs to items/cnts.
void append_runs(std::vector<uint32_t>& v, std::vector<uint32_t>& items,
                 std::vector<uint32_t>& cnts) {
  if (v.size() > 1) std::sort(v.begin(), v.end());
  for (size_t i = 0; i < v.size();) {
    size_t j = i + 1;
    while (j < v.size() && v[j] == v[i]) ++j;
    GTADOC_EXPECTS(j - i < 0xFFFFFFFFull, "shard layout: a symbol repeats 2^32 times in one body");
    items.push_back(v[i]);
    cnts.push_back(static_cast<uint32_t>(j - i));
    i = j;
  }
}

}  // namespace

ShardLayout build_shard_layout(const ShardGrammar& g, const Exec& ex) {
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

  // 1. Shard-local vocabulary: the distinct words the shard uses, ranked in id order.
  RankedIdSet words(V);
  ex.parallel_for(0, S, 1 << 16, [&](unsigned, uint64_t lo, uint64_t hi) {
    for (uint64_t i = lo; i < hi; ++i)
      if (is_word(g.symbols[i], V)) words.insert_concurrently(g.symbols[i]);
  });
  words.rank();
  s.local_words = words.members();

  // 2. Bodies re-encoded with local word indices; unit ranges.
  s.body.resize(S);
  ex.parallel_for(0, S, 1 << 16, [&](unsigned, uint64_t lo, uint64_t hi) {
    for (uint64_t i = lo; i < hi; ++i) {
      const Symbol x = g.symbols[i];
      if (is_boundary(x)) {
        s.body[i] = kBoundaryCode;
      } else if (is_word(x, V)) {
        s.body[i] = words.rank_of(x);
      } else {
        s.body[i] = kRuleFlag | rule_of(x, V);
      }
    }
  });
  s.unit_begin.resize(units);
  s.unit_end.resize(units);
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

  // 3. Bags per unit: child rules and words with their multiplicities.
  struct Scratch {
    std::vector<uint32_t> rules, words;
  };
  std::vector<Scratch> scratch(ex.threads);
  auto collect = [&](unsigned tid, uint64_t u) {
    Scratch& sc = scratch[tid];
    sc.rules.clear();
    sc.words.clear();
    const uint32_t limit = u < s.num_inner ? static_cast<uint32_t>(u) : s.num_inner;
    for (uint64_t i = s.unit_begin[u]; i < s.unit_end[u]; ++i) {
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
    return &sc;
  };
  s.children =
      build_csr<uint32_t>(ex, units, 256, [&](unsigned tid, uint64_t u, auto& items, auto& cnts) {
        append_runs(collect(tid, u)->rules, items, cnts);
      });
  s.terms =
      build_csr<uint32_t>(ex, units, 256, [&](unsigned tid, uint64_t u, auto& items, auto& cnts) {
        append_runs(collect(tid, u)->words, items, cnts);
      });

  // 4. Uses in the root, and the height of every inner rule.
  s.root_uses.assign(s.num_inner, 0);
  for (uint64_t u = s.num_inner; u < units; ++u)
    for (uint64_t i = s.children.off[u]; i < s.children.off[u + 1]; ++i)
      s.root_uses[s.children.item[i]] += s.children.cnt[i];
  s.level_of.resize(s.num_inner);
  const uint32_t inner_levels = s.num_inner == 0 ? 0 : g.num_levels() - 1;
  for (uint32_t h = 0; h < inner_levels; ++h)
    for (uint32_t r = g.level_offsets[h]; r < g.level_offsets[h + 1]; ++r) s.level_of[r] = h;
  return s;
}

std::vector<uint32_t> unit_of_positions(const ShardLayout& s, const Exec& ex) {
  std::vector<uint32_t> out(s.body.size(), kNoUnit);
  ex.parallel_for(0, s.num_units(), 256, [&](unsigned, uint64_t lo, uint64_t hi) {
    for (uint64_t u = lo; u < hi; ++u)
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(s.unit_begin[u]),
                out.begin() + static_cast<std::ptrdiff_t>(s.unit_end[u]), static_cast<uint32_t>(u));
  });
  return out;
}

std::vector<uint32_t> row_of_entries(const Csr<uint32_t>& bags, const Exec& ex) {
  std::vector<uint32_t> out(bags.item.size());
  ex.parallel_for(0, bags.rows(), 1024, [&](unsigned, uint64_t lo, uint64_t hi) {
    for (uint64_t r = lo; r < hi; ++r)
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(bags.off[r]),
                out.begin() + static_cast<std::ptrdiff_t>(bags.off[r + 1]),
                static_cast<uint32_t>(r));
  });
  return out;
}

}  // namespace gtadoc::plan
