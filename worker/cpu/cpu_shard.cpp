// Load-time precomputation of the CPU engine: shard-local vocabulary, re-encoded bodies, bags of
// children and words per unit, parent lists and root uses. Done once per shard, reused by every
// query.
#include <algorithm>
#include <atomic>
#include <bit>

#include "common/error.h"
#include "worker/cpu/cpu_internal.h"

namespace gtadoc::cpu {
namespace {

/// Sorts `v` and appends (value, multiplicity) runs to items/cnts.
void append_runs(std::vector<uint32_t>& v, std::vector<uint32_t>& items,
                 std::vector<uint32_t>& cnts) {
  if (v.size() > 1) std::sort(v.begin(), v.end());
  for (size_t i = 0; i < v.size();) {
    size_t j = i + 1;
    while (j < v.size() && v[j] == v[i]) ++j;
    GTADOC_EXPECTS(j - i < 0xFFFFFFFFull, "cpu engine: a symbol repeats 2^32 times in one body");
    items.push_back(v[i]);
    cnts.push_back(static_cast<uint32_t>(j - i));
    i = j;
  }
}

}  // namespace

CpuShard::CpuShard(ShardGrammar grammar, const Exec& ex) : g(std::move(grammar)) {
  GTADOC_EXPECTS(g.rule_offsets.size() >= 2, "cpu engine: grammar has no root rule");
  GTADOC_EXPECTS(g.rule_offsets.back() == g.symbols.size(), "cpu engine: bad rule offsets");
  GTADOC_EXPECTS(g.num_rules() < kRuleFlag, "cpu engine: too many rules");
  GTADOC_EXPECTS(g.level_offsets.size() >= 2 && g.level_offsets.back() == g.num_rules(),
                 "cpu engine: bad level offsets");
  num_inner = g.num_rules() - 1;
  GTADOC_EXPECTS(g.level_offsets[g.num_levels() - 1] == num_inner,
                 "cpu engine: the root must be alone on the top level");
  num_docs = g.num_docs;
  GTADOC_EXPECTS(g.doc_root_offsets.size() >= static_cast<size_t>(num_docs) + 1 || num_docs == 0,
                 "cpu engine: bad document offsets");
  const uint32_t V = g.num_words;
  const uint64_t S = g.symbols.size();

  // 1. Shard-local vocabulary: the distinct words the shard uses, ranked in id order.
  std::vector<uint64_t> bits((static_cast<size_t>(V) + 63) / 64, 0);
  ex.parallel_for(0, S, 1 << 16, [&](unsigned, uint64_t lo, uint64_t hi) {
    for (uint64_t i = lo; i < hi; ++i) {
      Symbol s = g.symbols[i];
      if (!is_word(s, V)) continue;
      std::atomic_ref<uint64_t> word(bits[s >> 6]);
      uint64_t bit = uint64_t{1} << (s & 63);
      if ((word.load(std::memory_order_relaxed) & bit) == 0)
        word.fetch_or(bit, std::memory_order_relaxed);
    }
  });
  std::vector<uint32_t> rank(bits.size() + 1, 0);
  for (size_t i = 0; i < bits.size(); ++i)
    rank[i + 1] = rank[i] + static_cast<uint32_t>(std::popcount(bits[i]));
  local_words.reserve(rank.back());
  for (size_t i = 0; i < bits.size(); ++i)
    for (uint64_t b = bits[i]; b != 0; b &= b - 1)
      local_words.push_back(static_cast<WordId>(i * 64 + std::countr_zero(b)));

  // 2. Bodies re-encoded with local word indices.
  body.resize(S);
  ex.parallel_for(0, S, 1 << 16, [&](unsigned, uint64_t lo, uint64_t hi) {
    for (uint64_t i = lo; i < hi; ++i) {
      Symbol s = g.symbols[i];
      if (is_boundary(s)) {
        body[i] = kBoundaryCode;
      } else if (is_word(s, V)) {
        uint64_t m = bits[s >> 6] & ((uint64_t{1} << (s & 63)) - 1);
        body[i] = rank[s >> 6] + static_cast<uint32_t>(std::popcount(m));
      } else {
        body[i] = kRuleFlag | rule_of(s, V);
      }
    }
  });

  // 3. Bags per unit: child rules and words with their multiplicities.
  struct Scratch {
    std::vector<uint32_t> rules, words;
  };
  std::vector<Scratch> scratch(ex.threads);
  auto collect = [&](unsigned tid, uint64_t u) {
    Scratch& sc = scratch[tid];
    sc.rules.clear();
    sc.words.clear();
    auto [b, e] = unit_body(u);
    const uint32_t limit = u < num_inner ? static_cast<uint32_t>(u) : num_inner;
    for (uint64_t i = b; i < e; ++i) {
      uint32_t x = body[i];
      GTADOC_EXPECTS(x != kBoundaryCode, "cpu engine: boundary symbol inside a rule or document");
      if (x & kRuleFlag) {
        uint32_t c = x & ~kRuleFlag;
        GTADOC_EXPECTS(c < limit, "cpu engine: rule references a rule of greater id");
        sc.rules.push_back(c);
      } else {
        sc.words.push_back(x);
      }
    }
    return &sc;
  };
  const uint64_t units = num_units();
  children =
      build_csr<uint32_t>(ex, units, 256, [&](unsigned tid, uint64_t u, auto& items, auto& cnts) {
        append_runs(collect(tid, u)->rules, items, cnts);
      });
  terms =
      build_csr<uint32_t>(ex, units, 256, [&](unsigned tid, uint64_t u, auto& items, auto& cnts) {
        append_runs(collect(tid, u)->words, items, cnts);
      });

  // 4. Parent lists (inner parents) and uses in the root.
  root_uses.assign(num_inner, 0);
  parents.off.assign(static_cast<size_t>(num_inner) + 1, 0);
  for (uint32_t p = 0; p < num_inner; ++p)
    for (uint64_t i = children.off[p]; i < children.off[p + 1]; ++i)
      ++parents.off[children.item[i] + 1];
  for (uint32_t r = 0; r < num_inner; ++r) parents.off[r + 1] += parents.off[r];
  parents.item.resize(parents.off[num_inner]);
  parents.cnt.resize(parents.off[num_inner]);
  {
    std::vector<uint64_t> fill(parents.off.begin(), parents.off.end() - 1);
    for (uint32_t p = 0; p < num_inner; ++p)
      for (uint64_t i = children.off[p]; i < children.off[p + 1]; ++i) {
        uint64_t at = fill[children.item[i]]++;
        parents.item[at] = p;
        parents.cnt[at] = children.cnt[i];
      }
  }
  for (uint64_t u = num_inner; u < units; ++u)
    for (uint64_t i = children.off[u]; i < children.off[u + 1]; ++i)
      root_uses[children.item[i]] += children.cnt[i];

  // 5. Height of every inner rule.
  level_of.resize(num_inner);
  for (uint32_t h = 0; h < num_inner_levels(); ++h)
    for (uint32_t r = level_begin(h); r < level_end(h); ++r) level_of[r] = h;
}

RecordBatch concat_batches(std::vector<RecordBatch>& parts, uint32_t width) {
  RecordBatch out;
  out.width = width;
  size_t n = 0;
  for (const auto& p : parts) n += p.size();
  if (parts.size() == 1) {
    out = std::move(parts[0]);
    out.width = width;
    return out;
  }
  out.keys.reserve(n * width);
  out.counts.reserve(n);
  for (auto& p : parts) {
    out.append(p);
    p = RecordBatch();
  }
  return out;
}

}  // namespace gtadoc::cpu
