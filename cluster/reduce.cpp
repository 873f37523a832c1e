// Sort-and-sum of records by key. See reduce.h.
//
// Batches already in order return as they are; a few sorted runs are merged (merge_sorted_runs);
// keys of 2 to 4 values are sorted whole (cluster/reduce_wide.h). Otherwise each record becomes
// a 16-byte entry {prefix, payload}: the payload is the count (width 1) or
// the row index; the prefix is one 64-bit chunk of the key (two key values). Entries are LSD
// radix-sorted with 11-bit digits in parallel, chunk by chunk from the last to the first (each
// pass stable), placing digits only where bits differ between entries (word and document ids rarely
// use all 32 bits), so after the last pass the prefix holds the first two key values and entries
// are in key order. Finally equal keys are summed into a fresh row-major batch, in parallel over
// key groups.
#include "cluster/reduce.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "cluster/block_ranges.h"
#include "cluster/merge_runs.h"
#include "cluster/reduce_wide.h"
#include "common/big_alloc.h"
#include "common/error.h"
#include "common/parallel.h"
#include "worker/count_merge.h"

namespace gtadoc {

namespace {

struct Entry {
  uint64_t prefix;
  uint64_t payload;
};

constexpr size_t kParallelThreshold = size_t{1} << 16;
/// Keys up to this wide are sorted whole (reduce_wide_keys); wider ones by chunks (below).
constexpr uint32_t kMaxWideWidth = 4;

// Stable parallel LSD radix sort of `a` by prefix; `tmp` is scratch of the same size.
void radix_sort(UninitVector<Entry>& a, UninitVector<Entry>& tmp, unsigned threads) {
  const size_t n = a.size();
  if (n < 2) return;
  // Bits that differ between entries: only digits touching them need a pass.
  std::vector<uint64_t> varying(threads, 0);
  const uint64_t first = a[0].prefix;
  run_on_threads(threads, [&](unsigned t) {
    uint64_t v = 0;
    for (size_t i = block_begin(n, threads, t), end = block_begin(n, threads, t + 1); i < end;
         ++i) {
      v |= a[i].prefix ^ first;
    }
    varying[t] = v;
  });
  uint64_t diff = 0;
  for (uint64_t v : varying) diff |= v;

  // 11-bit digits placed at the varying bits only: a digit starts at the lowest varying bit
  // not yet covered, so runs of constant bits (unused high bits of ids) cost no pass.
  constexpr unsigned kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  std::vector<size_t> hist(static_cast<size_t>(threads) * kBuckets);
  for (unsigned shift = 0; shift < 64; shift += kDigitBits) {
    if ((diff >> shift) == 0) break;
    shift += static_cast<unsigned>(__builtin_ctzll(diff >> shift));
    std::fill(hist.begin(), hist.end(), 0);
    run_on_threads(threads, [&](unsigned t) {
      size_t* h = hist.data() + static_cast<size_t>(t) * kBuckets;
      for (size_t i = block_begin(n, threads, t), end = block_begin(n, threads, t + 1); i < end;
           ++i) {
        ++h[(a[i].prefix >> shift) & (kBuckets - 1)];
      }
    });
    size_t pos = 0;  // turn counts into start positions: digit-major, thread-minor (stable)
    for (size_t digit = 0; digit < kBuckets; ++digit) {
      for (unsigned t = 0; t < threads; ++t) {
        size_t& h = hist[static_cast<size_t>(t) * kBuckets + digit];
        const size_t c = h;
        h = pos;
        pos += c;
      }
    }
    run_on_threads(threads, [&](unsigned t) {
      size_t* h = hist.data() + static_cast<size_t>(t) * kBuckets;
      for (size_t i = block_begin(n, threads, t), end = block_begin(n, threads, t + 1); i < end;
           ++i) {
        tmp[h[(a[i].prefix >> shift) & (kBuckets - 1)]++] = a[i];
      }
    });
    a.swap(tmp);
  }
}

/// Few strictly increasing runs (the shuffled slices of ranks whose records were each already
/// reduced, in key order): merged in parallel instead of sorted (cluster/merge_runs.h), equal
/// keys summed. Returns false (nothing done) when there are more than kMaxRuns runs: up to
/// there a record costs ceil(log2 runs) comparisons (8 at 256), against a sort's passes over
/// every record; a rank's combined CPU batches stay under it up to several thousand shards.
constexpr size_t kMaxRuns = 256;

/// Keys of `W` values (0: the batch's width, known at run time), compared value by value.
template <uint32_t W>
struct KeyOps {
  uint32_t w;
  uint32_t width() const { return W != 0 ? W : w; }
  bool less(const uint32_t* a, const uint32_t* b) const {
    for (uint32_t c = 0; c < width(); ++c)
      if (a[c] != b[c]) return a[c] < b[c];
    return false;
  }
  bool equal(const uint32_t* a, const uint32_t* b) const {
    for (uint32_t c = 0; c < width(); ++c)
      if (a[c] != b[c]) return false;
    return true;
  }
};

template <uint32_t W>
bool merge_sorted_runs_of(RecordBatch& batch, unsigned threads) {
  const size_t n = batch.size();
  const KeyOps<W> ops{batch.width};
  const uint32_t w = ops.width();
  const uint32_t* keys = batch.keys.data();
  const uint64_t* counts = batch.counts.data();
  auto less = [&](size_t i, size_t j) { return ops.less(keys + i * w, keys + j * w); };
  // Run starts: every i whose key is not above its predecessor's.
  std::vector<std::vector<size_t>> found(threads);
  std::vector<uint8_t> too_many(threads, 0);
  run_on_threads(threads, [&](unsigned t) {
    for (size_t i = std::max<size_t>(block_begin(n, threads, t), 1),
                end = block_begin(n, threads, t + 1);
         i < end; ++i) {
      if (!less(i - 1, i)) {
        found[t].push_back(i);
        if (found[t].size() > kMaxRuns) {
          too_many[t] = 1;
          return;
        }
      }
    }
  });
  std::vector<size_t> starts{0};
  for (unsigned t = 0; t < threads; ++t) {
    if (too_many[t]) return false;
    starts.insert(starts.end(), found[t].begin(), found[t].end());
  }
  if (starts.size() > kMaxRuns) return false;
  starts.push_back(n);
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  for (size_t r = 0; r + 1 < starts.size(); ++r) runs.push_back({starts[r], starts[r + 1]});
  // Pieces of about 1 M records (at least four per thread): the input's memory goes back a
  // piece at a time (below).
  const size_t want_pieces = std::max<size_t>(size_t{threads} * 4, std::min<size_t>(n >> 20, 4096));
  const RunPieces cut = cut_runs(std::move(runs), want_pieces, threads, less);
  // Each piece merged straight into the output, from where its inputs would start there; equal
  // keys summed shorten a piece, and the pieces then move down to close the gaps. No piece's
  // records are copied twice when no keys are equal (tasks keyed by document).
  const size_t pieces = cut.pieces();
  // The input is read once, piece after piece: once every piece up to p is merged, what the
  // runs hold below piece p + 1 is not read again, and its pages go back to the system, so the
  // merge holds about one copy of the records (the output growing as the input shrinks) instead
  // of two.
  std::mutex done_mu;
  std::vector<uint8_t> done(pieces, 0);
  size_t prefix = 0;  // pieces [0, prefix) merged
  const size_t key_bytes = batch.keys.capacity() * sizeof(uint32_t);
  const size_t count_bytes = batch.counts.capacity() * sizeof(uint64_t);
  // Per run, the byte offsets from which its keys and counts are still held.
  std::vector<size_t> keys_held(cut.runs.size()), counts_held(cut.runs.size());
  for (size_t k = 0; k < cut.runs.size(); ++k) {
    keys_held[k] = cut.runs[k].first * w * sizeof(uint32_t);
    counts_held[k] = cut.runs[k].first * sizeof(uint64_t);
  }
  auto piece_done = [&](size_t p) {
    std::lock_guard<std::mutex> lock(done_mu);
    done[p] = 1;
    const size_t was = prefix;
    while (prefix < pieces && done[prefix]) ++prefix;
    if (prefix == was) return;
    for (size_t k = 0; k < cut.runs.size(); ++k) {
      const uint64_t to = cut.at[prefix][k];
      keys_held[k] = release_pages(keys, key_bytes, keys_held[k], to * w * sizeof(uint32_t));
      counts_held[k] = release_pages(counts, count_bytes, counts_held[k], to * sizeof(uint64_t));
    }
  };
  std::vector<uint64_t> from(pieces + 1, 0), written(pieces, 0);
  for (size_t p = 0; p < pieces; ++p) from[p + 1] = from[p] + cut.size(p);
  RecordBatch out;
  out.width = w;
  out.keys.resize(n * w);
  out.counts.resize(n);
  uint32_t* out_keys = out.keys.data();
  uint64_t* out_counts = out.counts.data();
  parallel_for(pieces, threads, [&](size_t p) {
    uint64_t o = from[p];  // next record of the piece's output
    if constexpr (W == 1) {  // word ids: counted where that pays (worker/count_merge.h)
      std::vector<CountRun> runs;
      for (size_t k = 0; k < cut.runs.size(); ++k) {
        const uint64_t b = cut.at[p][k], e = cut.at[p + 1][k];
        if (b < e) runs.push_back({keys + b, counts + b, e - b});
      }
      if (CountMerge::merge_if_it_pays(runs, cut.size(p), [&](uint32_t key, uint64_t count) {
            out_keys[o] = key;
            out_counts[o++] = count;
          })) {
        written[p] = o - from[p];
        piece_done(p);
        return;
      }
    }
    merge_piece(cut, p, less, [&](uint64_t i) {
      if (o > from[p] && ops.equal(keys + i * w, out_keys + (o - 1) * w)) {
        out_counts[o - 1] += counts[i];
        return;
      }
      std::memcpy(out_keys + o * w, keys + i * w, w * sizeof(uint32_t));
      out_counts[o] = counts[i];
      ++o;
    });
    written[p] = o - from[p];
    piece_done(p);
  });
  uint64_t total = 0;
  for (size_t p = 0; p < pieces; ++p) {
    if (total != from[p]) {
      std::memmove(out_keys + total * w, out_keys + from[p] * w, written[p] * w * sizeof(uint32_t));
      std::memmove(out_counts + total, out_counts + from[p], written[p] * sizeof(uint64_t));
    }
    total += written[p];
  }
  out.keys.resize(total * w);
  out.counts.resize(total);
  batch = std::move(out);
  return true;
}

bool merge_sorted_runs(RecordBatch& batch, unsigned threads) {
  switch (batch.width) {
    case 1:
      return merge_sorted_runs_of<1>(batch, threads);
    case 2:
      return merge_sorted_runs_of<2>(batch, threads);
    case 3:
      return merge_sorted_runs_of<3>(batch, threads);
    case 4:
      return merge_sorted_runs_of<4>(batch, threads);
    case 5:
      return merge_sorted_runs_of<5>(batch, threads);
    default:
      return merge_sorted_runs_of<0>(batch, threads);
  }
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
  // Already reduced (keys strictly increasing: one shard's or a merged batch's word records, in
  // key order): nothing to do. One parallel pass instead of a sort.
  {
    std::vector<uint8_t> ordered(threads, 1);
    run_on_threads(threads, [&](unsigned t) {
      const size_t begin = std::max<size_t>(block_begin(n, threads, t), 1);
      const size_t end = block_begin(n, threads, t + 1);
      for (size_t i = begin; i < end; ++i) {
        if (!std::lexicographical_compare(keys + (i - 1) * w, keys + i * w, keys + i * w,
                                          keys + (i + 1) * w)) {
          ordered[t] = 0;
          return;
        }
      }
    });
    if (std::all_of(ordered.begin(), ordered.end(), [](uint8_t o) { return o != 0; })) return;
  }
  if (merge_sorted_runs(batch, threads)) return;
  if (w >= 2 && w <= kMaxWideWidth) {  // whole keys in the entries (cluster/reduce_wide.h)
    reduce_wide_keys(batch, threads);
    return;
  }
  // The key as 64-bit chunks of two values (the last one padded with 0 for odd widths); LSD
  // over the chunks, least significant first: each pass is a stable radix sort by one chunk.
  const uint32_t chunks = (w + 1) / 2;
  auto chunk_of = [&](size_t row, uint32_t c) {
    const uint32_t* k = keys + row * w + 2 * c;
    return (uint64_t{k[0]} << 32) | (2 * c + 1 < w ? k[1] : 0u);
  };
  // On huge pages and not zero-filled (every entry is written before it is read): at 16 bytes a
  // record these two arrays are most of the memory a reduce first touches.
  UninitVector<Entry> entries(n);
  {
    UninitVector<Entry> tmp(n);
    for (uint32_t c = chunks; c-- > 0;) {
      run_on_threads(threads, [&](unsigned t) {
        for (size_t i = block_begin(n, threads, t), end = block_begin(n, threads, t + 1); i < end;
             ++i) {
          const size_t row = c + 1 == chunks ? i : entries[i].payload;
          if (w == 1)
            entries[i] = {keys[i], counts[i]};
          else
            entries[i] = {chunk_of(row, c), row};
        }
      });
      radix_sort(entries, tmp, threads);
    }
  }
  // Same key for entries at sorted positions i and j.
  auto same = [&](size_t i, size_t j) {
    if (entries[i].prefix != entries[j].prefix) return false;
    // The rest of the key, compared in line: a call to memcmp for the two to three values
    // left was 12 % of a CPU ranked-inverted-index (perf, 1 GB archive, dev VM).
    const uint32_t* a = keys + entries[i].payload * w;
    const uint32_t* b = keys + entries[j].payload * w;
    for (uint32_t k = 2; k < w; ++k)
      if (a[k] != b[k]) return false;
    return true;
  };

  // Sum groups of equal keys: count groups per range, then write each range's groups.
  const std::vector<size_t> bounds = group_aligned_bounds(n, threads, same);
  std::vector<size_t> groups(threads + 1, 0);
  run_on_threads(threads, [&](unsigned t) {
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
  run_on_threads(threads, [&](unsigned t) {
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
