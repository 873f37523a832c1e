// Sort-and-sum of records by key. See reduce.h.
//
// Each record becomes a 16-byte entry {prefix, payload}: the prefix packs the first two key
// values (k0 << 32 | k1; just k0 for width 1), the payload is the count (width 1) or the row
// index. Entries are LSD radix-sorted by prefix with 8-bit digits in parallel, skipping digits
// that are equal in every entry (word ids rarely use all 32 bits). For width 1 and 2 the prefix
// is the whole key; wider keys then sort each run of equal prefixes by the remaining values.
// Finally equal keys are summed into a fresh row-major batch, in parallel over key groups.
#include "cluster/reduce.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "common/error.h"

namespace gtadoc {

namespace {

struct Entry {
  uint64_t prefix;
  uint64_t payload;
};

constexpr size_t kParallelThreshold = size_t{1} << 16;

template <typename Fn>
void run_threads(unsigned threads, Fn&& fn) {
  if (threads <= 1) {
    fn(0u);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back([&fn, t] { fn(t); });
  fn(0u);
  for (auto& th : pool) th.join();
}

inline size_t block_begin(size_t n, unsigned threads, unsigned t) {
  return static_cast<size_t>((static_cast<unsigned __int128>(n) * t) / threads);
}

// Stable parallel LSD radix sort of `a` by prefix; `tmp` is scratch of the same size.
void radix_sort(std::vector<Entry>& a, std::vector<Entry>& tmp, unsigned threads) {
  const size_t n = a.size();
  if (n < 2) return;
  // Bits that differ between entries: only digits touching them need a pass.
  std::vector<uint64_t> varying(threads, 0);
  const uint64_t first = a[0].prefix;
  run_threads(threads, [&](unsigned t) {
    uint64_t v = 0;
    for (size_t i = block_begin(n, threads, t); i < block_begin(n, threads, t + 1); ++i) {
      v |= a[i].prefix ^ first;
    }
    varying[t] = v;
  });
  uint64_t diff = 0;
  for (uint64_t v : varying) diff |= v;

  std::vector<size_t> hist(static_cast<size_t>(threads) * 256);
  for (unsigned shift = 0; shift < 64; shift += 8) {
    if (((diff >> shift) & 0xff) == 0) continue;
    std::fill(hist.begin(), hist.end(), 0);
    run_threads(threads, [&](unsigned t) {
      size_t* h = hist.data() + static_cast<size_t>(t) * 256;
      for (size_t i = block_begin(n, threads, t); i < block_begin(n, threads, t + 1); ++i) {
        ++h[(a[i].prefix >> shift) & 0xff];
      }
    });
    size_t pos = 0;  // turn counts into start positions: digit-major, thread-minor (stable)
    for (size_t digit = 0; digit < 256; ++digit) {
      for (unsigned t = 0; t < threads; ++t) {
        size_t& h = hist[static_cast<size_t>(t) * 256 + digit];
        const size_t c = h;
        h = pos;
        pos += c;
      }
    }
    run_threads(threads, [&](unsigned t) {
      size_t* h = hist.data() + static_cast<size_t>(t) * 256;
      for (size_t i = block_begin(n, threads, t); i < block_begin(n, threads, t + 1); ++i) {
        tmp[h[(a[i].prefix >> shift) & 0xff]++] = a[i];
      }
    });
    a.swap(tmp);
  }
}

// Splits [0, n) into `threads` ranges whose inner boundaries fall where same(i - 1, i) is false.
template <typename Same>
std::vector<size_t> group_aligned_bounds(size_t n, unsigned threads, Same&& same) {
  std::vector<size_t> bounds(threads + 1);
  bounds[0] = 0;
  bounds[threads] = n;
  for (unsigned t = 1; t < threads; ++t) {
    size_t b = std::max(block_begin(n, threads, t), bounds[t - 1]);
    while (b > 0 && b < n && same(b - 1, b)) ++b;
    bounds[t] = b;
  }
  return bounds;
}

}  // namespace

void reduce_records(RecordBatch& batch, unsigned threads) {
  const size_t n = batch.size();
  const uint32_t w = batch.width;
  GTADOC_EXPECTS(w >= 1, "key width must be at least 1");
  GTADOC_EXPECTS(batch.keys.size() == n * w, "record keys do not match counts and width");
  if (n == 0) return;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  if (n < kParallelThreshold) threads = 1;
  threads = static_cast<unsigned>(std::min<size_t>(threads, n / 1024 + 1));

  const uint32_t* keys = batch.keys.data();
  const uint64_t* counts = batch.counts.data();
  std::vector<Entry> entries(n);
  run_threads(threads, [&](unsigned t) {
    for (size_t i = block_begin(n, threads, t); i < block_begin(n, threads, t + 1); ++i) {
      if (w == 1) {
        entries[i] = {keys[i], counts[i]};
      } else {
        entries[i] = {(uint64_t{keys[i * w]} << 32) | keys[i * w + 1], i};
      }
    }
  });
  {
    std::vector<Entry> tmp(n);
    radix_sort(entries, tmp, threads);
  }

  // Same key for entries at sorted positions i and j.
  auto same = [&](size_t i, size_t j) {
    if (entries[i].prefix != entries[j].prefix) return false;
    if (w <= 2) return true;
    return std::memcmp(keys + entries[i].payload * w + 2, keys + entries[j].payload * w + 2,
                       (w - 2) * sizeof(uint32_t)) == 0;
  };

  if (w > 2) {  // order each run of equal prefixes by the remaining key values
    auto same_prefix = [&](size_t i, size_t j) { return entries[i].prefix == entries[j].prefix; };
    const std::vector<size_t> bounds = group_aligned_bounds(n, threads, same_prefix);
    auto tail_less = [&](const Entry& x, const Entry& y) {
      const uint32_t* kx = keys + x.payload * w;
      const uint32_t* ky = keys + y.payload * w;
      for (uint32_t c = 2; c < w; ++c) {
        if (kx[c] != ky[c]) return kx[c] < ky[c];
      }
      return false;
    };
    run_threads(threads, [&](unsigned t) {
      size_t i = bounds[t];
      while (i < bounds[t + 1]) {
        size_t j = i + 1;
        while (j < bounds[t + 1] && entries[j].prefix == entries[i].prefix) ++j;
        if (j - i > 1) std::sort(entries.begin() + i, entries.begin() + j, tail_less);
        i = j;
      }
    });
  }

  // Sum groups of equal keys: count groups per range, then write each range's groups.
  const std::vector<size_t> bounds = group_aligned_bounds(n, threads, same);
  std::vector<size_t> groups(threads + 1, 0);
  run_threads(threads, [&](unsigned t) {
    size_t g = 0;
    for (size_t i = bounds[t]; i < bounds[t + 1]; ++i) {
      if (i == bounds[t] || !same(i - 1, i)) ++g;
    }
    groups[t + 1] = g;
  });
  for (unsigned t = 0; t < threads; ++t) groups[t + 1] += groups[t];

  RecordBatch out;
  out.width = w;
  out.keys.resize(groups[threads] * w);
  out.counts.resize(groups[threads]);
  run_threads(threads, [&](unsigned t) {
    size_t g = groups[t];
    for (size_t i = bounds[t]; i < bounds[t + 1];) {
      size_t j = i;
      uint64_t sum = 0;
      do {
        sum += w == 1 ? entries[j].payload : counts[entries[j].payload];
        ++j;
      } while (j < bounds[t + 1] && same(i, j));
      uint32_t* k = out.keys.data() + g * w;
      if (w == 1) {
        k[0] = static_cast<uint32_t>(entries[i].prefix);
      } else if (w == 2) {
        k[0] = static_cast<uint32_t>(entries[i].prefix >> 32);
        k[1] = static_cast<uint32_t>(entries[i].prefix);
      } else {
        std::memcpy(k, keys + entries[i].payload * w, w * sizeof(uint32_t));
      }
      out.counts[g] = sum;
      ++g;
      i = j;
    }
  });
  batch = std::move(out);
}

}  // namespace gtadoc
