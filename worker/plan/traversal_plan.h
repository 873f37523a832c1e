// What runs for a query once its traversal is chosen, written once for both engines (gunrock's
// enactor over the engines' operators). Global sequence-count top-down counts the windows straight
// from every unit's weight; every other query first prepares the own items of every unit
// (terminal words, or interned n-gram windows), then runs top-down or bottom-up, globally or per
// document. An engine whose bottom-up tables do not fit falls back to top-down (`used` says so).
#pragma once

#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc::plan {

/// `ops` supplies the operators:
///   RecordBatch sequence_count_topdown();
///   void prepare_items();
///   bool build_tables();  // false: they do not fit, run top-down instead
///   RecordBatch topdown_global(), topdown_per_doc(), bottomup_global(), bottomup_per_doc();
template <class Ops>
RecordBatch run_traversal(const QueryOptions& q, Traversal& used, Ops& ops) {
  const bool per_doc = doc_slot(q) != DocSlot::kNone;
  if (used != Traversal::kBottomUp) used = Traversal::kTopDown;
  if (is_sequence_task(q.task) && !per_doc && used == Traversal::kTopDown)
    return ops.sequence_count_topdown();
  ops.prepare_items();
  if (used == Traversal::kBottomUp) {
    if (ops.build_tables()) return per_doc ? ops.bottomup_per_doc() : ops.bottomup_global();
    used = Traversal::kTopDown;
  }
  return per_doc ? ops.topdown_per_doc() : ops.topdown_global();
}

}  // namespace gtadoc::plan
