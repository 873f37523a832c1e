// Traversal selector of the CPU engine: the plan layer's cost model (worker/plan/selector.h) with
// the CPU's constants, exact own-window counts, and a table budget in host memory.
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>

#include "common/settings.h"
#include "worker/cpu/cpu_internal.h"

namespace gtadoc::cpu {

uint64_t table_memory_budget() {
  if (const std::optional<uint64_t> v = settings::bytes_if_set("GTADOC_CPU_TABLE_BUDGET"))
    return *v;
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return uint64_t{4} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4;
}

TraversalChoice select_traversal(const Query& Q) {
  const CpuShard& s = Q.s;
  if (!Q.per_doc()) return {Traversal::kTopDown, std::string(plan::kGlobalTopDownReason)};
  const bool seq = is_sequence_task(Q.q.task);
  plan::SelectorInput in;
  in.num_inner = s.num_inner;
  in.num_docs = s.num_docs;
  in.child_off = s.children.off.data();
  in.child_item = s.children.item.data();
  // Own entries of a unit: its distinct words, or its exact number of local windows.
  in.own_bound.resize(s.num_units());
  for (uint64_t u = 0; u < s.num_units(); ++u)
    in.own_bound[u] = seq ? Q.seq.local_windows(u) : s.terms.len(u);
  // A table holds at most the distinct words or windows of the rule's (normalized) expansion.
  in.table_cap.resize(s.num_inner);
  for (uint32_t r = 0; r < s.num_inner; ++r)
    in.table_cap[r] =
        seq ? (Q.seq.len[r] >= Q.seq.n ? Q.seq.len[r] - Q.seq.k : 0) : s.g.rule_length[r];
  if (seq) {
    for (uint64_t b : in.own_bound) in.item_space += b;
  } else {
    in.item_space = Q.vocab.size();
  }
  const plan::SelectorEstimate est = plan::estimate_traversals(in, plan::kCpuCostModel);
  return plan::choose_per_document(
      est, static_cast<double>(table_memory_budget()) / std::max(1u, Q.budget_share),
      Q.budget_share > 1 ? "a quarter of RAM, or GTADOC_CPU_TABLE_BUDGET, shared by the shards "
                           "traversed at once"
                         : "a quarter of RAM, or GTADOC_CPU_TABLE_BUDGET");
}

}  // namespace gtadoc::cpu
