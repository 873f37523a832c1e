// Turning device results into RecordBatch rows: the key layout of the task (worker/query.h
// KeyLayout) is written on the device (items -> normalized word ids, n-gram ids -> n words,
// global document ids), then keys and counts are downloaded. Output sizes are counted first.
#include <algorithm>
#include <numeric>

#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {
namespace {

__device__ void write_key(const KeySpec& ks, uint32_t* dst, uint32_t item, uint32_t doc) {
  if (ks.slot == DocSlot::kFirst) *dst++ = doc;
  if (ks.gid_items != nullptr) {
    const uint32_t* g = ks.gid_items + static_cast<uint64_t>(item) * ks.n;
    for (uint32_t j = 0; j < ks.n; ++j) *dst++ = ks.item_word[g[j]];
  } else {
    *dst++ = ks.item_word[item];
  }
  if (ks.slot == DocSlot::kLast) *dst = doc;
}

__global__ void nonzero_flags_kernel(const uint64_t* acc, uint64_t n, uint32_t* flags) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) flags[i] = acc[i] != 0;
}

__global__ void dense_records_kernel(KeySpec ks, uint32_t width, const uint64_t* acc,
                                     const uint64_t* pos, uint64_t n, uint32_t* keys,
                                     uint64_t* counts) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    if (acc[i] == 0) continue;
    const uint64_t at = pos[i];
    write_key(ks, keys + at * width, static_cast<uint32_t>(i), 0);
    counts[at] = acc[i];
  }
}

__global__ void pair_records_kernel(KeySpec ks, uint32_t width, const uint64_t* pkeys,
                                    const uint64_t* sums, uint64_t n, uint32_t d0, uint32_t* keys,
                                    uint64_t* counts) {
  for (uint64_t j = global_thread(); j < n; j += global_stride()) {
    const uint32_t local = d0 + static_cast<uint32_t>(pkeys[j] >> 32);
    const uint32_t doc = ks.doc_ids != nullptr ? ks.doc_ids[local] : ks.first_doc + local;
    write_key(ks, keys + j * width, static_cast<uint32_t>(pkeys[j]), doc);
    counts[j] = sums[j];
  }
}

}  // namespace

KeySpec Query::key_spec() const {
  KeySpec ks;
  ks.n = is_sequence_task(q.task) ? n : 1;
  ks.gid_items = is_sequence_task(q.task) ? gid_items.data() : nullptr;
  ks.item_word = item_word;
  ks.slot = slot();
  ks.first_doc = s.g.first_doc;
  ks.doc_ids = s.doc_ids.empty() ? nullptr : s.doc_ids.data();
  return ks;
}

RecordBatch emit_dense(Query& Q, const uint64_t* acc, uint64_t items) {
  const KeySpec ks = Q.key_spec();
  const uint32_t width = ks.width();
  DeviceBuffer<uint32_t> flags(items, Q.pool);
  DeviceBuffer<uint64_t> pos(items + 1, Q.pool);
  if (items > 0) {
    nonzero_flags_kernel<<<grid_for(items), kBlock, 0, Q.stream>>>(acc, items, flags.data());
    GTADOC_CHECK_LAUNCH();
  }
  const uint64_t n = exclusive_offsets(flags.data(), items, pos.data(), Q.pool);
  flags.reset();
  Q.mark("compact");
  DeviceBuffer<uint32_t> keys(n * width, Q.pool);
  DeviceBuffer<uint64_t> counts(n, Q.pool);
  if (n > 0) {
    dense_records_kernel<<<grid_for(items), kBlock, 0, Q.stream>>>(
        ks, width, acc, pos.data(), items, keys.data(), counts.data());
    GTADOC_CHECK_LAUNCH();
  }
  Q.mark("records");
  RecordBatch b = hand_over_records(Q, std::move(keys), std::move(counts), n, width);
  Q.mark("download");
  return b;
}

RecordBatch emit_pairs(Query& Q, const uint64_t* pkeys, const uint64_t* sums, uint64_t n,
                       uint32_t d0) {
  const KeySpec ks = Q.key_spec();
  const uint32_t width = ks.width();
  DeviceBuffer<uint32_t> keys(n * width, Q.pool);
  DeviceBuffer<uint64_t> counts(n, Q.pool);
  if (n > 0) {
    pair_records_kernel<<<grid_for(n), kBlock, 0, Q.stream>>>(ks, width, pkeys, sums, n, d0,
                                                              keys.data(), counts.data());
    GTADOC_CHECK_LAUNCH();
  }
  Q.mark("records");
  RecordBatch b = hand_over_records(Q, std::move(keys), std::move(counts), n, width);
  Q.mark("download");
  return b;
}

RecordBatch merge_batches(std::vector<RecordBatch>& parts, uint32_t width, bool merge) {
  RecordBatch all;
  all.width = width;
  if (parts.size() == 1) {
    all = std::move(parts[0]);
    all.width = width;
  } else {
    size_t n = 0;
    for (const RecordBatch& p : parts) n += p.size();
    all.keys.reserve(n * width);
    all.counts.reserve(n);
    for (RecordBatch& p : parts) {
      all.append(p);
      p = RecordBatch();
    }
  }
  parts.clear();
  if (!merge || all.size() < 2) return all;
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto key_less = [&](size_t a, size_t b) {
    return std::lexicographical_compare(
        all.keys.begin() + a * width, all.keys.begin() + (a + 1) * width,
        all.keys.begin() + b * width, all.keys.begin() + (b + 1) * width);
  };
  std::sort(order.begin(), order.end(), key_less);
  RecordBatch out;
  out.width = width;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    uint64_t c = 0;
    while (j < order.size() && !key_less(order[i], order[j])) c += all.counts[order[j++]];
    out.push(all.key(order[i]), c);
    i = j;
  }
  return out;
}

}  // namespace gtadoc::gpu
