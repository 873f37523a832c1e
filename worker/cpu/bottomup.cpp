// Bottom-up traversals (TADOC / G-TADOC Algorithm 2 on the CPU): every inner rule gets a sorted
// table of the items of its expansion, built level by level from its own items and its children's
// tables x multiplicity; a document is then its segment's own items plus its top-level tables.
#include <algorithm>

#include "worker/cpu/accumulate.h"
#include "worker/cpu/cpu_internal.h"

namespace gtadoc::cpu {
namespace {

/// A sorted (item, count) run with a multiplier applied to its counts.
struct Run {
  const uint32_t* item;
  const uint64_t* cnt64;  // exactly one of cnt64 / cnt32 is set
  const uint32_t* cnt32;
  uint64_t len;
  uint64_t mult;
  uint64_t count(uint64_t i) const { return (cnt64 ? cnt64[i] : cnt32[i]) * mult; }
};

struct MergeScratch {
  std::vector<uint32_t> ai, bi;
  std::vector<uint64_t> ac, bc;
  std::vector<std::pair<uint32_t, uint64_t>> pairs;
  std::vector<Run> runs;
};

/// Table row of inner rule r.
Run table_run(const CpuShard& s, const RuleTables& t, uint32_t r, uint64_t mult) {
  const uint32_t h = s.level_of[r];
  const Csr<uint64_t>& c = t.levels[h];
  const uint64_t row = r - s.level_begin(h);
  const uint64_t b = c.off[row];
  return {c.item.data() + b, c.cnt.data() + b, nullptr, c.off[row + 1] - b, mult};
}

/// Merges sorted runs into items/cnts (summing equal items).
void merge_runs(MergeScratch& sc, std::vector<uint32_t>& items, std::vector<uint64_t>& cnts) {
  auto& runs = sc.runs;
  if (runs.size() <= 8) {
    // Successive two-way merges through two scratch buffers.
    sc.ai.clear();
    sc.ac.clear();
    for (const Run& r : runs) {
      sc.bi.clear();
      sc.bc.clear();
      size_t i = 0, j = 0;
      while (i < sc.ai.size() && j < r.len) {
        if (sc.ai[i] < r.item[j]) {
          sc.bi.push_back(sc.ai[i]);
          sc.bc.push_back(sc.ac[i++]);
        } else if (r.item[j] < sc.ai[i]) {
          sc.bi.push_back(r.item[j]);
          sc.bc.push_back(r.count(j++));
        } else {
          sc.bi.push_back(sc.ai[i]);
          sc.bc.push_back(sc.ac[i++] + r.count(j++));
        }
      }
      for (; i < sc.ai.size(); ++i) {
        sc.bi.push_back(sc.ai[i]);
        sc.bc.push_back(sc.ac[i]);
      }
      for (; j < r.len; ++j) {
        sc.bi.push_back(r.item[j]);
        sc.bc.push_back(r.count(j));
      }
      sc.ai.swap(sc.bi);
      sc.ac.swap(sc.bc);
    }
    items.insert(items.end(), sc.ai.begin(), sc.ai.end());
    cnts.insert(cnts.end(), sc.ac.begin(), sc.ac.end());
    return;
  }
  // Many runs: gather, sort, sum.
  auto& p = sc.pairs;
  p.clear();
  for (const Run& r : runs)
    for (uint64_t j = 0; j < r.len; ++j) p.emplace_back(r.item[j], r.count(j));
  std::sort(p.begin(), p.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < p.size();) {
    uint64_t c = 0;
    size_t j = i;
    for (; j < p.size() && p[j].first == p[i].first; ++j) c += p[j].second;
    items.push_back(p[i].first);
    cnts.push_back(c);
    i = j;
  }
}

}  // namespace

RuleTables build_rule_tables(Query& Q) {
  const CpuShard& s = Q.s;
  const auto& C = s.children;
  const auto own = Q.items.own;
  RuleTables t;
  t.levels.resize(s.num_inner_levels());
  std::vector<MergeScratch> scratch(Q.ex.threads);
  for (uint32_t h = 0; h < s.num_inner_levels(); ++h) {
    const uint32_t lo = s.level_begin(h);
    t.levels[h] = build_csr<uint64_t>(
        Q.ex, s.level_end(h) - lo, 64, [&](unsigned tid, uint64_t row, auto& items, auto& cnts) {
          const uint32_t r = lo + static_cast<uint32_t>(row);
          MergeScratch& sc = scratch[tid];
          sc.runs.clear();
          const uint64_t ob = own.off[r];
          if (own.off[r + 1] > ob)
            sc.runs.push_back({own.item + ob, nullptr, own.cnt + ob, own.off[r + 1] - ob, 1});
          for (uint64_t i = C.off[r]; i < C.off[r + 1]; ++i) {
            Run run = table_run(s, t, C.item[i], C.cnt[i]);
            if (run.len > 0) sc.runs.push_back(run);
          }
          merge_runs(sc, items, cnts);
        });
  }
  return t;
}

RecordBatch bottomup_global(Query& Q, const RuleTables& t) {
  const CpuShard& s = Q.s;
  const auto own = Q.items.own;
  GlobalSum sum(Q.items.count, Q.ex);
  // The root's own items plus the tables of the rules it uses, x their uses in the root.
  Q.ex.parallel_for(0, s.num_units(), 256, [&](unsigned tid, uint64_t lo, uint64_t hi) {
    uint64_t* arr = sum.prepare(tid);
    for (uint64_t u = lo; u < hi; ++u) {
      if (u < s.num_inner) {
        const uint64_t m = s.root_uses[u];
        if (m == 0) continue;
        Run run = table_run(s, t, static_cast<uint32_t>(u), m);
        for (uint64_t j = 0; j < run.len; ++j) sum.add(arr, run.item[j], run.count(j));
      } else {
        for (uint64_t i = own.off[u]; i < own.off[u + 1]; ++i)
          sum.add(arr, own.item[i], own.cnt[i]);
      }
    }
  });
  return sum.emit(Q);
}

RecordBatch bottomup_per_doc(Query& Q, const RuleTables& t) {
  const CpuShard& s = Q.s;
  const auto& C = s.children;
  const auto own = Q.items.own;
  return for_each_doc(Q, [&](unsigned, uint32_t d, auto& acc) {
    const uint64_t u = uint64_t{s.num_inner} + d;
    // The items of a document are spread over the shard's: each sum is prefetched a few adds
    // ahead, so that their cache misses overlap.
    constexpr uint64_t kAhead = 8;
    for (uint64_t i = own.off[u], e = own.off[u + 1]; i < e; ++i) {
      if (i + kAhead < e) acc.prefetch(own.item[i + kAhead]);
      acc.add(own.item[i], own.cnt[i]);
    }
    for (uint64_t i = C.off[u]; i < C.off[u + 1]; ++i) {
      Run run = table_run(s, t, C.item[i], C.cnt[i]);
      for (uint64_t j = 0; j < run.len; ++j) {
        if (j + kAhead < run.len) acc.prefetch(run.item[j + kAhead]);
        acc.add(run.item[j], run.count(j));
      }
    }
  });
}

}  // namespace gtadoc::cpu
