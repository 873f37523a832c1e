// Sort-and-sum of records with keys of 2 to 4 values. See reduce_wide.h.
#include "cluster/reduce_wide.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "cluster/block_ranges.h"
#include "common/big_alloc.h"
#include "common/error.h"
#include "common/parallel.h"

namespace gtadoc {
namespace {

using u128 = unsigned __int128;

/// A record with its whole key: values 0-1 in hi, 2-3 in lo (absent values 0).
struct Wide {
  uint64_t hi, lo;
  uint64_t count;
};

inline u128 key_of(const Wide& e) {
  return (static_cast<u128>(e.hi) << 64) | e.lo;
}
inline bool key_less(const Wide& a, const Wide& b) {
  return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
}
inline bool same_key(const Wide& a, const Wide& b) {
  return a.hi == b.hi && a.lo == b.lo;
}

/// Position of the highest set bit of x != 0.
inline unsigned top_bit(u128 x) {
  const auto hi = static_cast<uint64_t>(x >> 64);
  return hi != 0 ? 127u - static_cast<unsigned>(__builtin_clzll(hi))
                 : 63u - static_cast<unsigned>(__builtin_clzll(static_cast<uint64_t>(x)));
}

/// Buckets of the first, out-of-cache pass; digits of the passes inside a bucket.
constexpr unsigned kTopBits = 10;
constexpr unsigned kInnerBits = 8;
/// Ranges this short are insertion-sorted.
constexpr size_t kInsertionBelow = 32;

/// Sorts the n entries at `in` by key, the result in `in`; `scratch` holds n entries. Most
/// significant digit first over the bits that vary inside the range, each sub-range sorted the
/// same way in `scratch` and copied back (a range of a bucket is small: the copies stay in cache).
void sort_range(Wide* in, Wide* scratch, size_t n) {
  if (n < 2) return;
  if (n < kInsertionBelow) {
    for (size_t i = 1; i < n; ++i) {
      const Wide x = in[i];
      size_t j = i;
      for (; j > 0 && key_less(x, in[j - 1]); --j) in[j] = in[j - 1];
      in[j] = x;
    }
    return;
  }
  const u128 first = key_of(in[0]);
  u128 diff = 0;
  for (size_t i = 1; i < n; ++i) diff |= key_of(in[i]) ^ first;
  if (diff == 0) return;  // one key
  const unsigned t = top_bit(diff);
  const unsigned shift = t + 1 >= kInnerBits ? t + 1 - kInnerBits : 0;
  constexpr size_t kDigits = size_t{1} << kInnerBits;
  auto digit = [&](const Wide& e) {
    return static_cast<size_t>(key_of(e) >> shift) & (kDigits - 1);
  };
  size_t count[kDigits] = {};
  for (size_t i = 0; i < n; ++i) ++count[digit(in[i])];
  size_t start[kDigits];
  size_t pos = 0;
  for (size_t d = 0; d < kDigits; ++d) {
    start[d] = pos;
    pos += count[d];
  }
  size_t at[kDigits];
  std::copy(start, start + kDigits, at);
  for (size_t i = 0; i < n; ++i) scratch[at[digit(in[i])]++] = in[i];
  for (size_t d = 0; d < kDigits; ++d) {
    if (count[d] == 0) continue;
    sort_range(scratch + start[d], in + start[d], count[d]);
  }
  std::memcpy(static_cast<void*>(in), scratch, n * sizeof(Wide));
}

}  // namespace

void reduce_wide_keys(RecordBatch& batch, unsigned threads) {
  const size_t n = batch.size();
  const uint32_t w = batch.width;
  GTADOC_EXPECTS(w >= 2 && w <= 4, "reduce_wide_keys: keys of 2 to 4 values only");
  GTADOC_EXPECTS(threads >= 1, "reduce_wide_keys: no threads");
  if (n == 0) return;

  const uint32_t* keys = batch.keys.data();
  const uint64_t* counts = batch.counts.data();
  auto entry = [&](size_t i) {
    const uint32_t* k = keys + i * w;
    return Wide{(uint64_t{k[0]} << 32) | k[1],
                (w > 2 ? uint64_t{k[2]} << 32 : 0) | (w > 3 ? k[3] : 0), counts[i]};
  };

  // 1. The key bits that vary across the batch (its keys read, nothing written).
  const u128 first = key_of(entry(0));
  std::vector<u128> varying(threads, 0);
  run_on_threads(threads, [&](unsigned t) {
    u128 v = 0;
    for (size_t i = block_begin(n, threads, t), end = block_begin(n, threads, t + 1); i < end; ++i)
      v |= key_of(entry(i)) ^ first;
    varying[t] = v;
  });
  u128 diff = 0;
  for (u128 v : varying) diff |= v;
  if (diff == 0) {  // one key
    RecordBatch one;
    one.width = w;
    one.keys.assign(keys, keys + w);
    one.counts.push_back(0);
    for (size_t i = 0; i < n; ++i) one.counts[0] += counts[i];
    batch = std::move(one);
    return;
  }

  // 2. The entries, with their whole keys, straight from the batch's arrays into buckets by the
  //    highest varying bits (per-thread counts, digit-major then thread-minor positions); the
  //    batch's arrays then go. Every bucket is sorted on its own, a thread's scratch the size of
  //    the largest bucket it sorts.
  UninitVector<Wide> sorted(n);
  const unsigned top = top_bit(diff);
  const unsigned shift = top + 1 >= kTopBits ? top + 1 - kTopBits : 0;
  constexpr size_t kBuckets = size_t{1} << kTopBits;
  auto bucket = [&](const Wide& e) {
    return static_cast<size_t>(key_of(e) >> shift) & (kBuckets - 1);
  };
  std::vector<size_t> hist(size_t{threads} * kBuckets, 0);
  run_on_threads(threads, [&](unsigned th) {
    size_t* h = hist.data() + size_t{th} * kBuckets;
    for (size_t i = block_begin(n, threads, th), end = block_begin(n, threads, th + 1); i < end;
         ++i)
      ++h[bucket(entry(i))];
  });
  std::vector<size_t> bucket_start(kBuckets + 1, 0);
  size_t pos = 0;
  for (size_t d = 0; d < kBuckets; ++d) {
    bucket_start[d] = pos;
    for (unsigned th = 0; th < threads; ++th) {
      size_t& h = hist[size_t{th} * kBuckets + d];
      const size_t c = h;
      h = pos;
      pos += c;
    }
  }
  bucket_start[kBuckets] = n;
  run_on_threads(threads, [&](unsigned th) {
    size_t* h = hist.data() + size_t{th} * kBuckets;
    for (size_t i = block_begin(n, threads, th), end = block_begin(n, threads, th + 1); i < end;
         ++i) {
      const Wide e = entry(i);
      sorted[h[bucket(e)]++] = e;
    }
  });
  batch = RecordBatch{};
  batch.width = w;
  std::atomic<size_t> next_bucket{0};
  run_on_threads(threads, [&](unsigned) {
    UninitVector<Wide> scratch;
    for (size_t d = next_bucket++; d < kBuckets; d = next_bucket++) {
      const size_t b = bucket_start[d], e = bucket_start[d + 1];
      if (e - b > scratch.size()) scratch.resize(e - b);
      sort_range(sorted.data() + b, scratch.data(), e - b);
    }
  });

  // 3. Equal keys summed, in parallel over ranges that start at a new key.
  const std::vector<size_t> bounds = group_aligned_bounds(
      n, threads, [&](size_t i, size_t j) { return same_key(sorted[i], sorted[j]); });
  std::vector<size_t> groups(threads + 1, 0);
  run_on_threads(threads, [&](unsigned t) {
    size_t g = 0;
    for (size_t i = bounds[t]; i < bounds[t + 1]; ++i)
      if (i == bounds[t] || !same_key(sorted[i - 1], sorted[i])) ++g;
    groups[t + 1] = g;
  });
  for (unsigned t = 0; t < threads; ++t) groups[t + 1] += groups[t];
  batch.keys.resize(groups[threads] * w);
  batch.counts.resize(groups[threads]);
  run_on_threads(threads, [&](unsigned t) {
    size_t g = groups[t];
    for (size_t i = bounds[t]; i < bounds[t + 1];) {
      uint64_t sum = 0;
      size_t j = i;
      do {
        sum += sorted[j].count;
        ++j;
      } while (j < bounds[t + 1] && same_key(sorted[i], sorted[j]));
      uint32_t* k = batch.keys.data() + g * w;
      k[0] = static_cast<uint32_t>(sorted[i].hi >> 32);
      k[1] = static_cast<uint32_t>(sorted[i].hi);
      if (w > 2) k[2] = static_cast<uint32_t>(sorted[i].lo >> 32);
      if (w > 3) k[3] = static_cast<uint32_t>(sorted[i].lo);
      batch.counts[g] = sum;
      ++g;
      i = j;
    }
  });
}

}  // namespace gtadoc
