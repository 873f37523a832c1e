// Traversal selector of the GPU engine (G-TADOC: "the optimal traversal strategy depends on both
// input data and analytics tasks"). Global tasks always go top-down: one weight pass over the
// DAG plus one pass over the own entries, while bottom-up would build a table for every rule.
// Per-document tasks compare estimates of the entries each strategy moves: top-down moves every
// document's reachable (rule, own entries) pairs (measured exactly on sampled documents,
// extrapolated); bottom-up moves the table inputs of every rule once, then each document's
// children's tables. Bottom-up is ruled out when its tables may not fit in device memory. The
// estimates depend only on the shard and the query's kind, so the engine caches them.
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {

SelectorEstimate estimate_traversals(const Query& Q) {
  const GpuShard& s = Q.s;
  const bool seq = is_sequence_task(Q.q.task);
  const uint64_t k = seq ? Q.k : 0;
  const std::vector<uint32_t>& ch_item = s.host_children();
  // Upper bound of a unit's own entries: its words, or k windows per body position.
  auto own_bound = [&](uint32_t u) -> uint64_t {
    return seq ? s.h_body_len[u] * k : s.h_tm_off[u + 1] - s.h_tm_off[u];
  };
  uint64_t space = Q.vocab().size();
  if (seq) {
    space = 0;
    for (uint32_t u = 0; u < s.units; ++u) space += own_bound(u);
  }

  // Bottom-up: bound of every table (its input, the expansion and the item space cap it).
  std::vector<uint64_t> bound(s.inner, 0);
  double inputs = 0, entries = 0;
  for (uint32_t r = 0; r < s.inner; ++r) {
    uint64_t in = own_bound(r);
    for (uint64_t e = s.h_ch_off[r]; e < s.h_ch_off[r + 1]; ++e) in += bound[ch_item[e]];
    const uint64_t len = s.g.rule_length[r];
    const uint64_t cap = seq ? (len > k ? len - k : 0) : len;
    bound[r] = std::min({in, cap, space});
    inputs += static_cast<double>(in);
    entries += static_cast<double>(bound[r]);
  }
  double doc_inputs = 0;
  for (uint32_t u = s.inner; u < s.units; ++u) {
    doc_inputs += static_cast<double>(own_bound(u));
    for (uint64_t e = s.h_ch_off[u]; e < s.h_ch_off[u + 1]; ++e)
      doc_inputs += static_cast<double>(bound[ch_item[e]]);
  }
  // Tables hold u32 items and u64 counts; building a level sorts pairs with double buffers.
  const double table_bytes = entries * 12 + 4 * 16 * std::min(inputs, entries + doc_inputs);

  // Top-down: each sampled document's reachable sub-DAG, found with a stamped BFS.
  const uint32_t D = s.num_docs;
  const uint32_t samples = std::min<uint32_t>(D, 48);
  std::vector<uint32_t> stamp(s.inner, 0), queue;
  double sampled_cost = 0, work = 0;
  const double work_cap =
      8.0 * (static_cast<double>(s.inner) + static_cast<double>(s.h_ch_off.back()));
  uint32_t done = 0;
  for (uint32_t i = 0; i < samples; ++i) {
    if (done > 0 && work > work_cap) break;
    const uint32_t d = static_cast<uint32_t>(uint64_t{i} * D / samples);
    const uint32_t u = s.inner + d;
    double cost = static_cast<double>(own_bound(u));
    queue.clear();
    auto visit = [&](uint32_t unit) {
      for (uint64_t e = s.h_ch_off[unit]; e < s.h_ch_off[unit + 1]; ++e) {
        const uint32_t c = ch_item[e];
        if (stamp[c] != done + 1) {
          stamp[c] = done + 1;
          queue.push_back(c);
        }
      }
    };
    visit(u);
    for (size_t j = 0; j < queue.size(); ++j) {
      visit(queue[j]);
      const uint32_t r = queue[j];
      cost += static_cast<double>(own_bound(r) + (s.h_ch_off[r + 1] - s.h_ch_off[r]));
    }
    // Every triple is sorted twice (by level, by (doc, rule)).
    cost += 2.0 * static_cast<double>(queue.size());
    sampled_cost += cost;
    work += cost;
    ++done;
  }
  SelectorEstimate est;
  est.top_down = done == 0 ? 0 : sampled_cost / done * D;
  est.bottom_up = inputs + doc_inputs;
  est.table_bytes = table_bytes;
  est.numbers =
      fmt::format("est. entries moved bottom-up {:.3g} vs top-down {:.3g} ({} of {} docs sampled)",
                  est.bottom_up, est.top_down, done, D);
  return est;
}

TraversalChoice select_traversal(const Query& Q, const SelectorEstimate& est,
                                 uint64_t free_device_bytes) {
  if (Q.slot() == DocSlot::kNone)
    return {Traversal::kTopDown,
            "global task: top-down visits every rule once, bottom-up would build a table per "
            "rule"};
  const double budget = static_cast<double>(free_device_bytes) / 2;
  if (est.table_bytes > budget)
    return {Traversal::kTopDown,
            fmt::format("per-document task, bottom-up tables need up to {:.0f} MiB, over half of "
                        "the {:.0f} MiB of free device memory",
                        est.table_bytes / (1 << 20),
                        static_cast<double>(free_device_bytes) / (1 << 20))};
  if (est.bottom_up < est.top_down)
    return {Traversal::kBottomUp, "per-document task, " + est.numbers};
  return {Traversal::kTopDown, "per-document task, " + est.numbers};
}

}  // namespace gtadoc::gpu
