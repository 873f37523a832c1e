// Top-down traversals (TADOC / G-TADOC Algorithm 1 on the CPU): rule weights propagated from the
// root by height levels, then weight x own items. Per-document tasks run the same propagation on
// each document's reachable sub-DAG, documents in parallel.
#include <algorithm>

#include "worker/cpu/accumulate.h"
#include "worker/cpu/cpu_internal.h"

namespace gtadoc::cpu {

std::vector<uint64_t> rule_weights(const CpuShard& s, const Exec& ex) {
  std::vector<uint64_t> w(s.root_uses);
  const auto& P = s.parents;
  // Parents have greater heights, so a level is final once every higher level is.
  for (uint32_t h = s.num_inner_levels(); h-- > 0;) {
    ex.parallel_for(s.level_begin(h), s.level_end(h), 4096,
                    [&](unsigned, uint64_t lo, uint64_t hi) {
                      for (uint64_t r = lo; r < hi; ++r) {
                        uint64_t sum = w[r];
                        for (uint64_t i = P.off[r]; i < P.off[r + 1]; ++i)
                          sum += w[P.item[i]] * P.cnt[i];
                        w[r] = sum;
                      }
                    });
  }
  return w;
}

RecordBatch topdown_global(Query& Q, const std::vector<uint64_t>& weights) {
  GlobalSum sum(Q.items.count, Q.ex);
  const auto own = Q.items.own;
  const uint32_t inner = Q.s.num_inner;
  Q.ex.parallel_for(0, Q.s.num_units(), 2048, [&](unsigned tid, uint64_t lo, uint64_t hi) {
    uint64_t* arr = sum.prepare(tid);
    for (uint64_t u = lo; u < hi; ++u) {
      const uint64_t w = u < inner ? weights[u] : 1;
      if (w == 0) continue;
      for (uint64_t i = own.off[u]; i < own.off[u + 1]; ++i)
        sum.add(arr, own.item[i], w * own.cnt[i]);
    }
  });
  return sum.emit(Q);
}

namespace {

/// Per-thread state of the per-document top-down traversal: epoch-stamped visit marks and
/// weights over the inner rules, and the list of the current document's reachable rules.
struct SubDagScratch {
  std::vector<uint32_t> stamp;
  std::vector<uint64_t> weight;
  std::vector<uint32_t> reached;
  uint32_t epoch = 0;
};

}  // namespace

RecordBatch topdown_per_doc(Query& Q) {
  const CpuShard& s = Q.s;
  const auto& C = s.children;
  const auto own = Q.items.own;
  std::vector<SubDagScratch> scratch(Q.ex.threads);
  return for_each_doc(Q, [&](unsigned tid, uint32_t d, auto& acc) {
    SubDagScratch& sc = scratch[tid];
    if (sc.stamp.size() != s.num_inner) {
      sc.stamp.assign(s.num_inner, 0);
      sc.weight.assign(s.num_inner, 0);
    }
    if (++sc.epoch == 0) {  // wrapped: clear the marks once every 2^32 documents
      std::fill(sc.stamp.begin(), sc.stamp.end(), 0);
      sc.epoch = 1;
    }
    const uint32_t ep = sc.epoch;
    auto& reached = sc.reached;
    reached.clear();
    const uint64_t u = uint64_t{s.num_inner} + d;
    auto visit = [&](uint64_t unit) {
      for (uint64_t i = C.off[unit]; i < C.off[unit + 1]; ++i) {
        uint32_t c = C.item[i];
        if (sc.stamp[c] != ep) {
          sc.stamp[c] = ep;
          sc.weight[c] = 0;
          reached.push_back(c);
        }
      }
    };
    // Collect the reachable sub-DAG (the list doubles as the work queue).
    visit(u);
    for (size_t i = 0; i < reached.size(); ++i) visit(reached[i]);
    // Weights in descending id order: every parent before its children.
    for (uint64_t i = C.off[u]; i < C.off[u + 1]; ++i) sc.weight[C.item[i]] += C.cnt[i];
    std::sort(reached.begin(), reached.end(), std::greater<>());
    for (uint32_t r : reached) {
      const uint64_t wr = sc.weight[r];
      for (uint64_t i = C.off[r]; i < C.off[r + 1]; ++i) sc.weight[C.item[i]] += wr * C.cnt[i];
    }
    for (uint64_t i = own.off[u]; i < own.off[u + 1]; ++i) acc.add(own.item[i], own.cnt[i]);
    for (uint32_t r : reached) {
      const uint64_t wr = sc.weight[r];
      for (uint64_t i = own.off[r]; i < own.off[r + 1]; ++i) acc.add(own.item[i], wr * own.cnt[i]);
    }
  });
}

}  // namespace gtadoc::cpu
