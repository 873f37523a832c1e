// The host-side layout of a shard that both engines traverse, built once at load: the shard's
// own vocabulary, the bodies re-encoded with it, the units (inner rules, then one root segment per
// document), per-unit bags of child rules and of words (CSR), the rules' uses in the root and
// their heights. The CPU engine keeps it as its loaded shard; the GPU engine uploads it. Both
// therefore see the same local word numbering, the same unit numbering and the same bags.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/types.h"
#include "formats/grammar.h"
#include "worker/plan/csr.h"
#include "worker/plan/level_schedule.h"
#include "worker/plan/thread_pool.h"

namespace gtadoc::plan {

/// Body symbols re-encoded at load: words become shard-local word indices (< kRuleFlag), rules
/// kRuleFlag | id, boundaries kBoundaryCode.
inline constexpr uint32_t kRuleFlag = 0x80000000u;
inline constexpr uint32_t kBoundaryCode = 0xFFFFFFFFu;

/// A grammar symbol's code in a layout's body, for a shard of `num_words` words (constexpr, so
/// also device code's: the GPU engine re-encodes its uploaded symbols with it).
inline constexpr uint32_t layout_code(Symbol x, uint32_t num_words) {
  return is_boundary(x)          ? kBoundaryCode
         : is_word(x, num_words) ? x
                                 : kRuleFlag | rule_of(x, num_words);
}
/// A local word the query's normalization drops (Vocab::lnorm), or an absent item.
inline constexpr uint32_t kNoItem = 0xFFFFFFFFu;
/// A body position that belongs to no unit (a boundary between documents).
inline constexpr uint32_t kNoUnit = 0xFFFFFFFFu;

/// Units 0 .. num_inner-1 are the inner rules (every rule but the root, ids = rule ids); unit
/// num_inner + d is document d's segment of the root. Every body position but the boundaries
/// belongs to exactly one unit. Bag rows list distinct ids ascending, with their multiplicities.
struct ShardLayout {
  uint32_t num_inner = 0;  ///< rules other than the root
  uint32_t num_docs = 0;
  /// Shard-local word index -> global word id (ascending): the grammar's local_words, copied
  /// (kAll only: with kUnits the engine reads the grammar's own, which it keeps).
  std::vector<WordId> local_words;
  std::vector<uint32_t> body;  ///< the grammar's symbols re-encoded (kRuleFlag); kAll only
  std::vector<uint64_t> unit_begin, unit_end;  ///< absolute [begin, end) of each unit's body
  /// False when built without them (LayoutParts::kUnits): children, terms, root_uses and
  /// level_of are then empty, for an engine that derives them itself (the GPU engine's load).
  bool has_bags = true;
  Csr<uint32_t> children;           ///< per unit: distinct inner rules in its body, with uses
  Csr<uint32_t> terms;              ///< per unit: distinct local words in its body, with uses
  std::vector<uint64_t> root_uses;  ///< per inner rule: occurrences in the root (all documents)
  std::vector<uint32_t> level_of;   ///< per inner rule: height (0 = words only below)
  /// The inner rules' level schedule (worker/plan/level_schedule.h), built by a preparation for
  /// per-level kernels (add_level_schedule); has_schedule false otherwise.
  LevelSchedules schedule;
  bool has_schedule = false;

  uint64_t num_units() const { return uint64_t{num_inner} + num_docs; }
  std::pair<uint64_t, uint64_t> unit_body(uint64_t u) const { return {unit_begin[u], unit_end[u]}; }
  uint64_t body_length(uint64_t u) const { return unit_end[u] - unit_begin[u]; }
};

/// Seconds spent in each step of build_shard_layout, in step order (for benchmarks).
using StepTimes = std::vector<std::pair<std::string, double>>;

/// What build_shard_layout builds: everything, or the units only (`body` and `local_words` left
/// empty: the GPU engine uploads the grammar's symbols and re-encodes them on the device with
/// layout_code, as here, and reads the vocabulary from the grammar it keeps).
enum class LayoutParts { kAll, kUnits };

/// Builds the layout of `g` (already validated by formats/grammar.h's validate_grammar) on the
/// threads of `ex`; the result is the same whatever the thread count. Throws InternalError on a
/// structure the engines cannot traverse (a boundary inside a unit, a rule using a rule of
/// greater id, more units than 32-bit ids hold). `steps`, when given, receives step timings.
ShardLayout build_shard_layout(const ShardGrammar& g, const Exec& ex, StepTimes* steps = nullptr,
                               LayoutParts parts = LayoutParts::kAll);

/// The parts of the layout a GPU engine's load takes from the host: the units (it re-encodes the
/// bodies and builds the bags on the device), or everything with GTADOC_GPU_HOST_BAGS=1
/// (host-built bags, for comparison).
LayoutParts gpu_layout_parts();

/// Builds `layout.schedule` for `g` (the grammar `layout` was built from) and sets has_schedule.
void add_level_schedule(ShardLayout& layout, const ShardGrammar& g);

}  // namespace gtadoc::plan
