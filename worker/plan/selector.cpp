// estimate_traversals / choose_per_document (worker/plan/selector.h).
#include "worker/plan/selector.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gtadoc::plan {

SelectorEstimate estimate_traversals(const SelectorInput& in, const CostModel& model) {
  const uint64_t units = uint64_t{in.num_inner} + in.num_docs;
  const uint64_t* off = in.child_off;
  const uint32_t* item = in.child_item;
  const std::vector<uint64_t>& own = in.own_bound;
  const uint64_t space = in.item_space;

  // Bottom-up: bound of every table (its input, the expansion and the item space cap it).
  std::vector<uint64_t> bound(in.num_inner, 0);
  double inputs = 0, entries = 0;
  for (uint32_t r = 0; r < in.num_inner; ++r) {
    uint64_t input = own[r];
    for (uint64_t e = off[r]; e < off[r + 1]; ++e) input += bound[item[e]];
    bound[r] = std::min({input, in.table_cap[r], space});
    inputs += static_cast<double>(input);
    entries += static_cast<double>(bound[r]);
  }
  double doc_inputs = 0;
  for (uint64_t u = in.num_inner; u < units; ++u) {
    doc_inputs += static_cast<double>(own[u]);
    for (uint64_t e = off[u]; e < off[u + 1]; ++e)
      doc_inputs += static_cast<double>(bound[item[e]]);
  }
  // Tables hold u32 items and u64 counts (plus the engine's sorting buffers).
  const double table_bytes =
      entries * 12 + model.sort_bytes_per_entry * std::min(inputs, entries + doc_inputs);

  // Top-down: each sampled document's reachable sub-DAG, found with a stamped BFS.
  const uint32_t D = in.num_docs;
  const uint32_t samples = std::min<uint32_t>(D, model.samples);
  std::vector<uint32_t> stamp(in.num_inner, 0), queue;
  double sampled_cost = 0, work = 0;
  const double work_cap =
      model.work_cap * (static_cast<double>(in.num_inner) + static_cast<double>(off[units]));
  uint32_t done = 0;
  for (uint32_t i = 0; i < samples; ++i) {
    if (done > 0 && work >= work_cap) break;
    const uint32_t d = static_cast<uint32_t>(uint64_t{i} * D / samples);
    const uint64_t u = uint64_t{in.num_inner} + d;
    double cost = static_cast<double>(own[u]);
    if (model.count_doc_children) cost += static_cast<double>(off[u + 1] - off[u]);
    queue.clear();
    auto visit = [&](uint64_t unit) {
      for (uint64_t e = off[unit]; e < off[unit + 1]; ++e) {
        const uint32_t c = item[e];
        if (stamp[c] != done + 1) {
          stamp[c] = done + 1;
          queue.push_back(c);
        }
      }
    };
    visit(u);
    for (size_t j = 0; j < queue.size(); ++j) {
      const uint32_t r = queue[j];
      visit(r);
      cost += static_cast<double>(own[r] + (off[r + 1] - off[r]));
    }
    const double k = static_cast<double>(queue.size());
    cost += model.sort_reached_by_value ? k * std::log2(k + 2) : 2.0 * k;
    sampled_cost += cost;
    work += cost;
    ++done;
  }
  SelectorEstimate est;
  est.top_down = done == 0 ? 0 : sampled_cost / done * D;
  est.bottom_up = inputs + doc_inputs;
  est.table_bytes = table_bytes;
  est.numbers = fmt::format(
      "est. entries moved bottom-up {:.3g} (tables <= {:.0f} MiB) vs top-down {:.3g} ({} of {} "
      "docs sampled)",
      est.bottom_up, table_bytes / (1 << 20), est.top_down, done, D);
  return est;
}

TraversalChoice choose_per_document(const SelectorEstimate& est, double budget_bytes,
                                    std::string_view budget_what) {
  if (est.table_bytes > budget_bytes)
    return {Traversal::kTopDown,
            fmt::format("per-document task, bottom-up tables need up to {:.0f} MiB, over the "
                        "{:.0f} MiB budget ({})",
                        est.table_bytes / (1 << 20), budget_bytes / (1 << 20), budget_what)};
  if (est.bottom_up < est.top_down)
    return {Traversal::kBottomUp, "per-document task, " + est.numbers};
  return {Traversal::kTopDown, "per-document task, " + est.numbers};
}

}  // namespace gtadoc::plan
