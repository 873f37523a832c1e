// Result accumulation shared by the traversals: GlobalSum (one count per item for the whole
// shard: per-thread dense arrays, or one atomic array when those would be too large) and
// for_each_doc (per-document accumulation on the pool, one record batch per thread).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "worker/cpu/cpu_internal.h"
#include "worker/cpu/hash_tables.h"

namespace gtadoc::cpu {

/// Bytes of per-thread dense accumulators the engine allows before switching to hashing/atomics.
inline constexpr uint64_t kDenseBudget = uint64_t{1} << 30;

class GlobalSum {
 public:
  GlobalSum(uint64_t items, const Exec& ex) : items_(items), ex_(ex) {
    if (ex.threads <= 1 || items * 8 * ex.threads > kDenseBudget) {
      atomic_ = ex.threads > 1;
      arrays_.resize(1);
      arrays_[0].assign(items, 0);
    } else {
      arrays_.resize(ex.threads);  // each thread allocates (first touch) its own on first add
    }
  }

  /// Call once per thread before adding from it (cheap when already prepared).
  uint64_t* prepare(unsigned tid) {
    if (arrays_.size() == 1) return arrays_[0].data();
    if (arrays_[tid].size() != items_) arrays_[tid].assign(items_, 0);
    return arrays_[tid].data();
  }
  void add(uint64_t* arr, uint32_t item, uint64_t c) const {
    if (atomic_) {
      std::atomic_ref<uint64_t>(arr[item]).fetch_add(c, std::memory_order_relaxed);
    } else {
      arr[item] += c;
    }
  }

  /// Records for every item with a non-zero total (no document in the key).
  RecordBatch emit(const Query& Q) {
    std::vector<RecordBatch> out(ex_.threads);
    ex_.parallel_for(0, items_, 1 << 16, [&](unsigned tid, uint64_t lo, uint64_t hi) {
      for (uint64_t i = lo; i < hi; ++i) {
        uint64_t c = 0;
        for (const auto& a : arrays_)
          if (!a.empty()) c += a[i];
        if (c != 0) Q.emit(out[tid], static_cast<uint32_t>(i), 0, c);
      }
    });
    return concat_batches(out, Q.key_width());
  }

 private:
  uint64_t items_;
  Exec ex_;
  bool atomic_ = false;
  std::vector<std::vector<uint64_t>> arrays_;
};

/// Runs fill(tid, d, acc) for every shard-local document d on the pool and emits the drained
/// accumulator as records keyed with the global document id.
template <class Acc, class Fill>
RecordBatch for_each_doc_with(Query& Q, Fill&& fill) {
  const uint32_t D = Q.s.num_docs;
  const unsigned T = Q.ex.threads;
  std::vector<std::unique_ptr<Acc>> accs(T);
  std::vector<RecordBatch> out(T);
  if (Q.expected_records > 0)
    for (RecordBatch& b : out) {
      const uint64_t share = Q.expected_records / T + 1;
      b.counts.reserve(share);
      b.keys.reserve(share * Q.key_width());
    }
  const uint64_t grain = std::max<uint64_t>(1, D / (uint64_t{T} * 64));
  Q.ex.parallel_for(0, D, grain, [&](unsigned tid, uint64_t lo, uint64_t hi) {
    if (!accs[tid]) accs[tid] = std::make_unique<Acc>(Q.items.count);
    Acc& acc = *accs[tid];
    for (uint64_t d = lo; d < hi; ++d) {
      fill(tid, static_cast<uint32_t>(d), acc);
      const DocId doc = Q.s.g.first_doc + static_cast<DocId>(d);
      acc.drain([&](uint32_t item, uint64_t c) { Q.emit(out[tid], item, doc, c); },
                [&](uint32_t item) { Q.prefetch_key(item); });
    }
  });
  return concat_batches(out, Q.key_width());
}

/// for_each_doc_with a dense accumulator when the item space is small enough, else hashing.
template <class Fill>
RecordBatch for_each_doc(Query& Q, Fill&& fill) {
  if (Q.items.count * 8 * Q.ex.threads <= kDenseBudget)
    return for_each_doc_with<DenseAccumulator>(Q, fill);
  return for_each_doc_with<HashAccumulator>(Q, fill);
}

}  // namespace gtadoc::cpu
