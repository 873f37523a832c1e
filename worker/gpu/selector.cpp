// Traversal selector of the GPU engine: the plan layer's cost model (worker/plan/selector.h) with
// the GPU's constants (its top-down sorts triples twice by radix; bottom-up tables need sorting
// buffers), own entries bounded by k windows per body position, and half the free device memory
// as the tables' budget. The estimates depend only on the shard and the query's kind, so the
// engine caches them.
#include <string>
#include <vector>

#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {

SelectorEstimate estimate_traversals(const GpuShard& s, bool seq, uint64_t k, uint64_t vocab_size) {
  if (!seq) k = 0;
  plan::SelectorInput in;
  in.num_inner = s.inner;
  in.num_docs = s.num_docs;
  in.child_off = s.h_ch_off.data();
  in.child_item = s.host_children().data();
  // Upper bound of a unit's own entries: its words, or k windows per body position.
  in.own_bound.resize(s.units);
  for (uint32_t u = 0; u < s.units; ++u)
    in.own_bound[u] = seq ? s.h_body_len[u] * k : s.h_tm_off[u + 1] - s.h_tm_off[u];
  in.table_cap.resize(s.inner);
  for (uint32_t r = 0; r < s.inner; ++r) {
    const uint64_t len = s.g.rule_length[r];
    in.table_cap[r] = seq ? (len > k ? len - k : 0) : len;
  }
  if (seq) {
    for (uint64_t b : in.own_bound) in.item_space += b;
  } else {
    in.item_space = vocab_size;
  }
  return plan::estimate_traversals(in, plan::kGpuCostModel);
}

SelectorEstimate estimate_traversals(const Query& Q) {
  return estimate_traversals(Q.s, is_sequence_task(Q.q.task), Q.k, Q.vocab().size());
}

TraversalChoice select_traversal(const Query& Q, const SelectorEstimate& est,
                                 uint64_t free_device_bytes) {
  if (Q.slot() == DocSlot::kNone)
    return {Traversal::kTopDown, std::string(plan::kGlobalTopDownReason)};
  return plan::choose_per_document(est, static_cast<double>(free_device_bytes) / 2,
                                   "half of the free device memory");
}

}  // namespace gtadoc::gpu
