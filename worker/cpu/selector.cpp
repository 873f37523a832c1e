// Traversal selector of the CPU engine: global tasks go top-down; per-document tasks compare an
// estimated top-down cost (sampled documents' reachable sub-DAGs) with the bottom-up cost (table
// building plus merging each document's top-level tables), under a table memory budget.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "worker/cpu/cpu_internal.h"

namespace gtadoc::cpu {

uint64_t table_memory_budget() {
  if (const char* env = std::getenv("GTADOC_CPU_TABLE_BUDGET")) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (end != env) return v;
  }
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return uint64_t{4} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4;
}

TraversalChoice select_traversal(const Query& Q) {
  const CpuShard& s = Q.s;
  if (!Q.per_doc())
    return {Traversal::kTopDown,
            "global task: top-down visits every rule once, bottom-up would build a table per rule"};

  const bool seq = is_sequence_task(Q.q.task);
  const auto& C = s.children;
  auto own_bound = [&](uint64_t u) -> uint64_t {
    return seq ? Q.seq.local_windows(u) : s.terms.len(u);
  };
  uint64_t space = 0;  // bound on the number of distinct items
  if (seq) {
    for (uint64_t u = 0; u < s.num_units(); ++u) space += own_bound(u);
  } else {
    space = Q.vocab.size();
  }

  // Bottom-up: table size bound per rule (min of expansion size, item space, and own items plus
  // children's bounds); building costs the sum of merged inputs.
  std::vector<uint64_t> ub(s.num_inner, 0);
  double build = 0, entries = 0;
  for (uint32_t r = 0; r < s.num_inner; ++r) {
    uint64_t in = own_bound(r);
    for (uint64_t i = C.off[r]; i < C.off[r + 1]; ++i) in += ub[C.item[i]];
    uint64_t cap =
        seq ? (Q.seq.len[r] >= Q.seq.n ? Q.seq.len[r] - Q.seq.k : 0) : s.g.rule_length[r];
    ub[r] = std::min({in, cap, space});
    build += static_cast<double>(in);
    entries += static_cast<double>(ub[r]);
  }
  double bu_docs = 0;
  for (uint64_t u = s.num_inner; u < s.num_units(); ++u) {
    bu_docs += static_cast<double>(own_bound(u));
    for (uint64_t i = C.off[u]; i < C.off[u + 1]; ++i)
      bu_docs += static_cast<double>(ub[C.item[i]]);
  }
  const double est_bu = build + bu_docs;
  const double table_bytes = entries * 12;

  // Top-down: exact per-document cost on evenly spaced sample documents, extrapolated.
  const uint32_t D = s.num_docs;
  const uint32_t want = std::min<uint32_t>(D, 64);
  std::vector<uint32_t> stamp(s.num_inner, 0);
  std::vector<uint32_t> reached;
  double sampled_cost = 0;
  uint32_t sampled = 0;
  const double work_cap =
      4.0 * (static_cast<double>(s.num_inner) + static_cast<double>(C.off.back()));
  double work = 0;
  for (uint32_t i = 0; i < want && (sampled == 0 || work < work_cap); ++i) {
    const uint32_t d = static_cast<uint32_t>(static_cast<uint64_t>(i) * D / want);
    const uint64_t u = uint64_t{s.num_inner} + d;
    const uint32_t ep = sampled + 1;
    reached.clear();
    double cost = static_cast<double>(own_bound(u) + C.len(u));
    auto visit = [&](uint64_t unit) {
      for (uint64_t j = C.off[unit]; j < C.off[unit + 1]; ++j) {
        uint32_t c = C.item[j];
        if (stamp[c] != ep) {
          stamp[c] = ep;
          reached.push_back(c);
        }
      }
    };
    visit(u);
    for (size_t j = 0; j < reached.size(); ++j) {
      visit(reached[j]);
      cost += static_cast<double>(C.len(reached[j]) + own_bound(reached[j]));
    }
    const double k = static_cast<double>(reached.size());
    cost += k * std::log2(k + 2);
    sampled_cost += cost;
    work += cost;
    ++sampled;
  }
  const double est_td = sampled == 0 ? 0 : sampled_cost / sampled * D;
  const uint64_t budget = table_memory_budget();

  if (table_bytes > static_cast<double>(budget))
    return {Traversal::kTopDown,
            fmt::format("bottom-up tables need up to {:.0f} MiB, over the {} MiB budget",
                        table_bytes / (1 << 20), budget >> 20)};
  const std::string numbers = fmt::format(
      "est. cost bottom-up {:.3g} (tables <= {:.0f} MiB) vs top-down {:.3g} "
      "({} of {} docs sampled)",
      est_bu, table_bytes / (1 << 20), est_td, sampled, D);
  if (est_bu < est_td) return {Traversal::kBottomUp, "per-document task, " + numbers};
  return {Traversal::kTopDown, "per-document task, " + numbers};
}

}  // namespace gtadoc::cpu
