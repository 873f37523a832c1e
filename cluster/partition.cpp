// Hash and range partitioning of records, and sampled range splitters. See partition.h.
#include "cluster/partition.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "cluster/comm.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/parallel.h"

namespace gtadoc {

namespace {

void check_layout(const KeyLayout& layout, uint32_t parts,
                  std::span<const uint32_t> range_splitters) {
  GTADOC_EXPECTS(parts >= 1, "partition count must be at least 1");
  GTADOC_EXPECTS(layout.width >= 1, "key width must be at least 1");
  GTADOC_EXPECTS(layout.partition_width >= 1 && layout.partition_width <= layout.width,
                 "partition width must be in 1..key width");
  if (layout.range_partition && parts > 1) {
    GTADOC_EXPECTS(range_splitters.size() == parts - 1,
                   "range partitioning needs parts - 1 splitters");
    GTADOC_EXPECTS(std::is_sorted(range_splitters.begin(), range_splitters.end()),
                   "range splitters must be non-decreasing");
  }
}

inline uint32_t range_owner(uint32_t first, std::span<const uint32_t> splitters) {
  return static_cast<uint32_t>(std::upper_bound(splitters.begin(), splitters.end(), first) -
                               splitters.begin());
}

inline uint32_t hash_owner(const uint32_t* key, uint32_t partition_width, uint32_t parts) {
  return static_cast<uint32_t>(hash_u32s(std::span<const uint32_t>(key, partition_width)) % parts);
}

// floor(total * p / parts) without overflow (p < parts).
uint64_t scaled_share(uint64_t total, uint32_t p, uint32_t parts) {
  return (total / parts) * p + (total % parts) * p / parts;
}

constexpr size_t kSampleBytes = sizeof(uint32_t) + sizeof(uint64_t);

}  // namespace

uint32_t owner_of(std::span<const uint32_t> key, const KeyLayout& layout, uint32_t parts,
                  std::span<const uint32_t> range_splitters) {
  check_layout(layout, parts, range_splitters);
  GTADOC_EXPECTS(key.size() == layout.width, "key does not match the layout width");
  if (parts == 1) return 0;
  if (layout.range_partition) return range_owner(key[0], range_splitters);
  return hash_owner(key.data(), layout.partition_width, parts);
}

PartitionedRecords partition_records(const RecordBatch& batch, const KeyLayout& layout,
                                     uint32_t parts, std::span<const uint32_t> range_splitters,
                                     unsigned threads) {
  threads = resolve_threads(threads);
  check_layout(layout, parts, range_splitters);
  GTADOC_EXPECTS(batch.width == layout.width, "record width does not match the key layout");
  const size_t n = batch.size();
  const uint32_t w = batch.width;
  GTADOC_EXPECTS(batch.keys.size() == n * w, "record keys do not match counts and width");

  PartitionedRecords out;
  out.offsets.assign(static_cast<size_t>(parts) + 1, 0);
  if (parts == 1) {
    out.records = batch;
    out.offsets[1] = n;
    return out;
  }

  // Blocks of rows in parallel: owners and per-block counts, then every block scatters its rows
  // to its own cursors (block-major within an owner, so the result stays stable).
  const uint32_t* keys = batch.keys.data();
  const size_t blocks = std::max<size_t>(1, std::min<size_t>(n >> 15, size_t{threads} * 4));
  std::vector<uint32_t> owner(n);
  std::vector<size_t> cursor(blocks * parts, 0);  // block b, part p: count, then write cursor
  auto block_range = [&](size_t b) {
    return std::pair<size_t, size_t>{n * b / blocks, n * (b + 1) / blocks};
  };
  parallel_for(blocks, threads, [&](size_t b) {
    const auto [lo, hi] = block_range(b);
    size_t* count = cursor.data() + b * parts;
    if (layout.range_partition) {
      for (size_t i = lo; i < hi; ++i) owner[i] = range_owner(keys[i * w], range_splitters);
    } else {
      for (size_t i = lo; i < hi; ++i)
        owner[i] = hash_owner(keys + i * w, layout.partition_width, parts);
    }
    for (size_t i = lo; i < hi; ++i) ++count[owner[i]];
  });
  size_t pos = 0;
  for (uint32_t p = 0; p < parts; ++p) {
    out.offsets[p] = pos;
    for (size_t b = 0; b < blocks; ++b) {
      const size_t c = cursor[b * parts + p];
      cursor[b * parts + p] = pos;
      pos += c;
    }
  }
  out.offsets[parts] = pos;

  out.records.width = w;
  out.records.keys.resize(n * w);
  out.records.counts.resize(n);
  uint32_t* dst_keys = out.records.keys.data();
  uint64_t* dst_counts = out.records.counts.data();
  parallel_for(blocks, threads, [&](size_t b) {
    const auto [lo, hi] = block_range(b);
    size_t* next = cursor.data() + b * parts;
    for (size_t i = lo; i < hi; ++i) {
      const size_t d = next[owner[i]]++;
      if (w == 1)
        dst_keys[d] = keys[i];
      else
        std::memcpy(dst_keys + d * w, keys + i * w, w * sizeof(uint32_t));
      dst_counts[d] = batch.counts[i];
    }
  });
  return out;
}

std::vector<uint32_t> choose_range_splitters(Comm& comm, const RecordBatch& local, uint32_t parts) {
  if (parts <= 1) return {};
  const size_t n = local.size();
  const uint32_t w = local.width;
  GTADOC_EXPECTS(w >= 1 && local.keys.size() == n * w, "record keys do not match counts and width");
  // Local candidates: every first key value, or an evenly strided subset of kSplitterCandidates.
  const size_t m = std::min(n, kSplitterCandidates);
  std::vector<uint32_t> cand(m);
  for (size_t j = 0; j < m; ++j) {
    const size_t i = static_cast<size_t>((static_cast<unsigned __int128>(j) * n) / m);
    cand[j] = local.keys[i * w];
  }
  return choose_range_splitters(comm, std::move(cand), n, parts);
}

std::vector<uint32_t> choose_range_splitters(Comm& comm, std::vector<uint32_t> cand, uint64_t rows,
                                             uint32_t parts) {
  if (parts <= 1) return {};
  const size_t n = rows;
  const size_t m = cand.size();
  GTADOC_EXPECTS(m == std::min<uint64_t>(rows, kSplitterCandidates),
                 "range splitters: wrong number of candidates");

  // Samples drawn in proportion to each rank's row count, about 64 per partition in total.
  const uint64_t global_rows = comm.allreduce(static_cast<uint64_t>(n), ReduceOp::kSum);
  std::vector<uint32_t> splitters(parts - 1, 0);
  if (global_rows == 0) return splitters;
  const double target = std::clamp<double>(64.0 * parts, 1024.0, double(1 << 20));
  size_t local_samples = 0;
  if (n > 0) {
    local_samples = static_cast<size_t>(std::ceil(double(n) * target / double(global_rows)));
    local_samples = std::clamp<size_t>(local_samples, 1, n);
  }
  std::sort(cand.begin(), cand.end());

  // Sample j stands for rows [j*n/S, (j+1)*n/S) of the sorted order; its value is the candidate
  // at the middle of that bucket.
  std::vector<uint8_t> packed(local_samples * kSampleBytes);
  for (size_t j = 0; j < local_samples; ++j) {
    const uint64_t lo = static_cast<uint64_t>(j) * n / local_samples;
    const uint64_t hi = static_cast<uint64_t>(j + 1) * n / local_samples;
    const size_t at = static_cast<size_t>((2 * j + 1) * m / (2 * local_samples));
    const uint32_t value = cand[std::min(at, m - 1)];
    const uint64_t weight = hi - lo;
    std::memcpy(packed.data() + j * kSampleBytes, &value, sizeof(value));
    std::memcpy(packed.data() + j * kSampleBytes + sizeof(value), &weight, sizeof(weight));
  }

  // Everyone merges the same samples in the same way, so everyone gets the same splitters.
  std::map<uint32_t, uint64_t> weight_of;
  uint64_t total = 0;
  for (const auto& buf : comm.allgather_bytes(packed)) {
    for (size_t off = 0; off + kSampleBytes <= buf.size(); off += kSampleBytes) {
      uint32_t value;
      uint64_t weight;
      std::memcpy(&value, buf.data() + off, sizeof(value));
      std::memcpy(&weight, buf.data() + off + sizeof(value), sizeof(weight));
      weight_of[value] += weight;
      total += weight;
    }
  }
  if (total == 0) return splitters;
  std::vector<uint32_t> values;
  std::vector<uint64_t> cumulative;  // weight of all samples with value <= values[i]
  values.reserve(weight_of.size());
  cumulative.reserve(weight_of.size());
  uint64_t running = 0;
  for (const auto& [value, weight] : weight_of) {
    running += weight;
    values.push_back(value);
    cumulative.push_back(running);
  }

  uint32_t previous = 0;
  for (uint32_t p = 1; p < parts; ++p) {
    const uint64_t share = scaled_share(total, p, parts);
    const size_t i = static_cast<size_t>(
        std::lower_bound(cumulative.begin(), cumulative.end(), share) - cumulative.begin());
    // Splitter values[i] puts value i above the cut, values[i] + 1 puts it below: take the cut
    // whose weight below is closer to the share.
    const uint64_t below_exclusive = i == 0 ? 0 : cumulative[i - 1];
    const uint64_t below_inclusive = cumulative[i];
    uint32_t s = values[i];
    if (s != UINT32_MAX && below_inclusive - share < share - below_exclusive) s = values[i] + 1;
    s = std::max(s, previous);
    splitters[p - 1] = s;
    previous = s;
  }
  return splitters;
}

}  // namespace gtadoc
