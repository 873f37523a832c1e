#include "worker/records.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <span>

#include "common/error.h"
#include "common/parallel.h"
#include "worker/count_merge.h"

namespace gtadoc {

RecordBatch concatenate(std::vector<RecordBatch>&& batches, uint32_t width, unsigned threads) {
  if (batches.size() == 1 && batches[0].width == width) return std::move(batches[0]);
  RecordBatch out;
  out.width = width;
  std::vector<size_t> first(batches.size() + 1, 0);  // first record of each batch in `out`
  for (size_t b = 0; b < batches.size(); ++b) {
    GTADOC_EXPECTS(batches[b].size() == 0 || batches[b].width == width,
                   "record batches of different widths");
    first[b + 1] = first[b] + batches[b].size();
  }
  out.keys.resize(first.back() * width);
  out.counts.resize(first.back());
  // Pieces of at most 4 Mi records, so a few large batches still spread over threads.
  constexpr size_t kPiece = size_t{1} << 22;
  std::vector<std::pair<size_t, size_t>> pieces;  // (batch, first record in it)
  for (size_t b = 0; b < batches.size(); ++b)
    for (size_t i = 0; i < batches[b].size(); i += kPiece) pieces.push_back({b, i});
  // A batch is freed as soon as its last piece is copied: the copy holds the records about once
  // (the batches shrinking as the output grows) rather than twice.
  std::unique_ptr<std::atomic<size_t>[]> left(new std::atomic<size_t>[batches.size()]());
  for (const auto& piece : pieces) left[piece.first].fetch_add(1, std::memory_order_relaxed);
  parallel_for(pieces.size(), threads, [&](size_t p) {
    const auto [b, i] = pieces[p];
    {
      const RecordBatch& in = batches[b];
      const size_t n = std::min(kPiece, in.size() - i);
      std::memcpy(out.keys.data() + (first[b] + i) * width, in.keys.data() + i * width,
                  n * width * sizeof(uint32_t));
      std::memcpy(out.counts.data() + first[b] + i, in.counts.data() + i, n * sizeof(uint64_t));
    }
    if (left[b].fetch_sub(1, std::memory_order_acq_rel) == 1) batches[b] = RecordBatch{};
  });
  batches.clear();
  return out;
}

namespace {

bool key_less(const uint32_t* a, const uint32_t* b, uint32_t w) {
  for (uint32_t i = 0; i < w; ++i)
    if (a[i] != b[i]) return a[i] < b[i];
  return false;
}

RecordBatch merge_two(const RecordBatch& a, const RecordBatch& b, uint32_t w) {
  RecordBatch out;
  out.width = w;
  out.keys.resize((a.size() + b.size()) * w);
  out.counts.resize(a.size() + b.size());
  size_t i = 0, j = 0, n = 0;
  auto put = [&](const RecordBatch& from, size_t at, uint64_t count) {
    std::memcpy(out.keys.data() + n * w, from.keys.data() + at * w, w * sizeof(uint32_t));
    out.counts[n++] = count;
  };
  while (i < a.size() && j < b.size()) {
    const uint32_t* ka = a.keys.data() + i * w;
    const uint32_t* kb = b.keys.data() + j * w;
    if (key_less(ka, kb, w)) {
      put(a, i, a.counts[i]), ++i;
    } else if (key_less(kb, ka, w)) {
      put(b, j, b.counts[j]), ++j;
    } else {
      put(a, i, a.counts[i] + b.counts[j]), ++i, ++j;
    }
  }
  for (; i < a.size(); ++i) put(a, i, a.counts[i]);
  for (; j < b.size(); ++j) put(b, j, b.counts[j]);
  out.keys.resize(n * w);
  out.counts.resize(n);
  return out;
}

}  // namespace

bool keys_increasing(const RecordBatch& b) {
  for (size_t i = 1; i < b.size(); ++i)
    if (!key_less(b.keys.data() + (i - 1) * b.width, b.keys.data() + i * b.width, b.width))
      return false;
  return true;
}

// Merges k >= 2 increasing batches in one pass: a min-heap of the batches by their next key.
// kWidth: the key width known at compile time (the word tasks' 1), or 0 to use `w`.
template <uint32_t kWidth>
RecordBatch merge_many(std::span<const RecordBatch> in, uint32_t w) {
  if constexpr (kWidth != 0) w = kWidth;
  size_t total = 0;
  for (const RecordBatch& b : in) total += b.size();
  RecordBatch out;
  out.width = w;
  out.keys.resize(total * w);
  out.counts.resize(total);
  std::vector<size_t> at(in.size(), 0);
  auto key = [&](uint32_t b) { return in[b].keys.data() + at[b] * w; };
  auto less = [&](const uint32_t* x, const uint32_t* y) {
    if constexpr (kWidth == 1) return *x < *y;
    return key_less(x, y, w);
  };
  // std heap order: the batch whose next key is smallest on top.
  auto later = [&](uint32_t x, uint32_t y) { return less(key(y), key(x)); };
  std::vector<uint32_t> heap;
  for (uint32_t b = 0; b < in.size(); ++b)
    if (in[b].size() > 0) heap.push_back(b);
  std::make_heap(heap.begin(), heap.end(), later);
  size_t n = 0;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const uint32_t b = heap.back();
    const uint32_t* k = key(b);
    if (n > 0 && !less(out.keys.data() + (n - 1) * w, k)) {  // equal: keys only increase
      out.counts[n - 1] += in[b].counts[at[b]];
    } else {
      std::memcpy(out.keys.data() + n * w, k, w * sizeof(uint32_t));
      out.counts[n++] = in[b].counts[at[b]];
    }
    if (++at[b] < in[b].size())
      std::push_heap(heap.begin(), heap.end(), later);
    else
      heap.pop_back();
  }
  out.keys.resize(n * w);
  out.counts.resize(n);
  return out;
}

RecordBatch merge_increasing(std::vector<RecordBatch>&& batches, uint32_t width) {
  if (batches.empty()) {
    RecordBatch empty;
    empty.width = width;
    return empty;
  }
  if (width == 1 && batches.size() > 1) {  // word ids: counted in one pass where that pays
    std::vector<CountRun> runs;
    size_t total = 0;
    for (const RecordBatch& b : batches) {
      if (b.size() > 0) runs.push_back({b.keys.data(), b.counts.data(), b.size()});
      total += b.size();
    }
    const auto [lo, hi] = CountMerge::span_of(runs);
    if (CountMerge::pays(total, runs.size(), lo, hi)) {
      RecordBatch out;
      out.width = 1;
      out.keys.resize(total);
      out.counts.resize(total);
      size_t n = 0;
      CountMerge::merge(runs, lo, hi, [&](uint32_t key, uint64_t count) {
        out.keys[n] = key;
        out.counts[n++] = count;
      });
      out.keys.resize(n);
      out.counts.resize(n);
      batches.clear();
      return out;
    }
  }
  // Rounds of up to kFanIn batches merged at once: few passes over the records, and a heap small
  // enough to stay in cache (one heap over hundreds of batches compared no better than pairs).
  constexpr size_t kFanIn = 16;
  while (batches.size() > 1) {
    std::vector<RecordBatch> next;
    next.reserve((batches.size() + kFanIn - 1) / kFanIn);
    for (size_t k = 0; k < batches.size(); k += kFanIn) {
      const std::span<const RecordBatch> group(batches.data() + k,
                                               std::min(kFanIn, batches.size() - k));
      if (group.size() == 1)
        next.push_back(std::move(batches[k]));
      else if (group.size() == 2)
        next.push_back(merge_two(group[0], group[1], width));
      else
        next.push_back(width == 1 ? merge_many<1>(group, width) : merge_many<0>(group, width));
    }
    batches = std::move(next);
  }
  RecordBatch out = std::move(batches[0]);
  out.width = width;
  batches.clear();
  return out;
}

}  // namespace gtadoc
