// The traversal selector (G-TADOC: "the optimal traversal strategy depends on both input data
// and analytics tasks"), one cost model for both engines. Global tasks always go top-down: one
// weight pass over the DAG plus one pass over the own entries, while bottom-up would build a
// table for every rule. Per-document tasks compare estimates of the entries each strategy moves:
// top-down moves every document's reachable (rule, own entries) pairs (measured exactly on
// sampled documents, extrapolated); bottom-up moves the table inputs of every rule once, then
// each document's children's tables. Bottom-up is ruled out when its tables may not fit the
// engine's memory budget. The engines differ only in the constants of CostModel and in the
// budget (a quarter of RAM; half the free device memory).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "worker/query.h"

namespace gtadoc::plan {

struct TraversalChoice {
  Traversal traversal = Traversal::kTopDown;
  std::string reason;
};

/// Why a global task goes top-down (the reason the selector gives).
inline constexpr std::string_view kGlobalTopDownReason =
    "global task: top-down visits every rule once, bottom-up would build a table per rule";

/// An engine's constants of the cost model.
struct CostModel {
  uint32_t samples;             ///< documents sampled for the top-down estimate
  double work_cap;              ///< sampling stops past this x (inner rules + child entries)
  bool count_doc_children;      ///< a sampled document's own child entries add to its cost
  bool sort_reached_by_value;   ///< reached rules cost k log2(k+2) (one comparison sort), else 2k
  double sort_bytes_per_entry;  ///< bottom-up sorting buffers per table input (0: none)
};
inline constexpr CostModel kCpuCostModel{64, 4.0, true, true, 0};
inline constexpr CostModel kGpuCostModel{48, 8.0, false, false, 64};

/// What the estimate reads of a shard and a query. Unit numbering as plan::ShardLayout.
struct SelectorInput {
  uint32_t num_inner = 0, num_docs = 0;
  const uint64_t* child_off = nullptr;   ///< units + 1 offsets of the children bags
  const uint32_t* child_item = nullptr;  ///< child rule of every entry
  std::vector<uint64_t> own_bound;       ///< per unit: bound on its own entries
  std::vector<uint64_t> table_cap;       ///< per inner rule: bound from its expansion
  uint64_t item_space = 0;               ///< bound on distinct items
};

/// The estimates for one kind of query (they depend only on the shard and the query's kind).
struct SelectorEstimate {
  double bottom_up = 0, top_down = 0;  ///< entries each traversal moves
  double table_bytes = 0;              ///< memory the bottom-up tables may need
  std::string numbers;                 ///< the estimates, for the log
};

SelectorEstimate estimate_traversals(const SelectorInput& in, const CostModel& model);

/// The choice for a per-document task from its estimate, under `budget_bytes` for the tables;
/// `budget_what` names the budget in the reason.
TraversalChoice choose_per_document(const SelectorEstimate& est, double budget_bytes,
                                    std::string_view budget_what);

}  // namespace gtadoc::plan
