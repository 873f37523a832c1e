#include "cluster/rows/rank_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "cluster/comm.h"
#include "cluster/rows/parallel_sort.h"
#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"

namespace gtadoc {

namespace {

/// Global row order of the count-ordered tasks on (count, key): count desc, then the key in
/// output order (word id, or the n-gram's joined bytes).
struct CountKeyLess {
  const SequenceOrder* order;
  bool operator()(uint64_t ca, const uint32_t* ka, uint64_t cb, const uint32_t* kb) const {
    if (ca != cb) return ca > cb;
    return order != nullptr ? order->less(ka, kb) : ka[0] < kb[0];
  }
};

/// The records of `plan` in plan order (one record per row).
RecordBatch rows_in_order(const RecordBatch& r, const RowPlan& plan, unsigned threads) {
  RecordBatch out;
  out.width = r.width;
  const uint64_t n = plan.rows();
  const uint32_t w = r.width;
  out.keys.resize(n * w);
  out.counts.resize(n);
  parallel_blocks(n, threads, [&](uint64_t lo, uint64_t hi) {
    for (uint64_t k = lo; k < hi; ++k) {
      const uint64_t i = plan.record_at(k);
      std::memcpy(out.keys.data() + k * w, r.keys.data() + i * w, w * sizeof(uint32_t));
      out.counts[k] = r.counts[i];
    }
  });
  return out;
}

/// Collective: parts - 1 splitter rows (count, key) drawn from every rank's ordered rows, each
/// sample weighted by the rows it stands for; the same on every rank. Rank p then owns the rows
/// r with splitter[p - 1] < r <= splitter[p].
RecordBatch choose_row_splitters(Comm& comm, const RecordBatch& rows, const CountKeyLess& less) {
  const uint32_t parts = static_cast<uint32_t>(comm.size());
  const uint32_t w = rows.width;
  const uint64_t n = rows.size();
  const uint64_t global = comm.allreduce(n, ReduceOp::kSum);
  const size_t bytes_per = 8 + 4 * size_t{w} + 8;
  std::vector<uint8_t> packed;
  if (n > 0) {
    const double target = 64.0 * parts;
    const uint64_t samples = std::clamp<uint64_t>(
        static_cast<uint64_t>(std::ceil(double(n) * target / double(global))), 1, n);
    packed.resize(samples * bytes_per);
    for (uint64_t j = 0; j < samples; ++j) {
      const uint64_t lo = j * n / samples, hi = (j + 1) * n / samples;
      const uint64_t last = hi - 1, weight = hi - lo;  // the bucket's last row stands for it
      uint8_t* p = packed.data() + j * bytes_per;
      std::memcpy(p, &rows.counts[last], 8);
      std::memcpy(p + 8, rows.keys.data() + last * w, 4 * size_t{w});
      std::memcpy(p + 8 + 4 * size_t{w}, &weight, 8);
    }
  }
  struct Sample {
    uint64_t count, weight;
    std::vector<uint32_t> key;
  };
  std::vector<Sample> all;
  for (const auto& buf : comm.allgather_bytes(packed))
    for (size_t off = 0; off + bytes_per <= buf.size(); off += bytes_per) {
      Sample s;
      s.key.resize(w);
      std::memcpy(&s.count, buf.data() + off, 8);
      std::memcpy(s.key.data(), buf.data() + off + 8, 4 * size_t{w});
      std::memcpy(&s.weight, buf.data() + off + 8 + 4 * size_t{w}, 8);
      all.push_back(std::move(s));
    }
  std::sort(all.begin(), all.end(), [&](const Sample& a, const Sample& b) {
    return less(a.count, a.key.data(), b.count, b.key.data());
  });
  RecordBatch splitters;
  splitters.width = w;
  uint64_t total = 0;
  for (const auto& s : all) total += s.weight;
  uint64_t cumulative = 0;
  size_t k = 0;
  for (uint32_t p = 1; p < parts; ++p) {
    const uint64_t share = total / parts * p + total % parts * p / parts;
    while (k < all.size() && cumulative + all[k].weight < share) cumulative += all[k++].weight;
    if (all.empty()) {  // no rows anywhere: any splitter will do
      std::vector<uint32_t> zero(w, 0);
      splitters.push(zero, 0);
    } else {
      const Sample& s = all[std::min(k, all.size() - 1)];
      splitters.push(s.key, s.count);
    }
  }
  return splitters;
}

/// Collective: moves ordered rows so that rank r holds the r-th range of the global order. The
/// result holds one sorted run per source rank, of sizes `runs`.
RecordBatch exchange_rows(Comm& comm, const RecordBatch& rows, const CountKeyLess& less,
                          std::vector<size_t>& runs) {
  const RecordBatch splitters = choose_row_splitters(comm, rows, less);
  const uint32_t parts = static_cast<uint32_t>(comm.size());
  const uint32_t w = rows.width;
  // rows are sorted: the rows of part p are [cut[p], cut[p + 1]).
  std::vector<size_t> cut(parts + 1, 0);
  cut[parts] = rows.size();
  for (uint32_t p = 1; p < parts; ++p) {
    const uint64_t sc = splitters.counts[p - 1];
    const uint32_t* sk = splitters.keys.data() + size_t{p - 1} * w;
    size_t lo = cut[p - 1], hi = rows.size();  // first row above the splitter
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (less(sc, sk, rows.counts[mid], rows.keys.data() + mid * w))
        hi = mid;
      else
        lo = mid + 1;
    }
    cut[p] = lo;
  }
  std::vector<size_t> key_counts(parts), counts(parts);
  for (uint32_t p = 0; p < parts; ++p) {
    counts[p] = cut[p + 1] - cut[p];
    key_counts[p] = counts[p] * w;
  }
  RecordBatch got;
  got.width = w;
  std::vector<uint32_t> keys =
      comm.alltoallv(std::span<const uint32_t>(rows.keys.data(), rows.keys.size()), key_counts);
  std::vector<uint64_t> c = comm.alltoallv(
      std::span<const uint64_t>(rows.counts.data(), rows.counts.size()), counts, &runs);
  got.keys.assign(keys.begin(), keys.end());
  got.counts.assign(c.begin(), c.end());
  return got;
}

/// One row per record, in order: the k-way merge of the sorted runs of `r` (sizes `runs`).
RowPlan merge_runs(const RecordBatch& r, const std::vector<size_t>& runs,
                   const CountKeyLess& less) {
  RowPlan plan;
  plan.order.resize(r.size());
  struct Head {
    uint64_t at, end;
  };
  std::vector<Head> heads;
  uint64_t begin = 0;
  for (size_t size : runs) {
    if (size > 0) heads.push_back({begin, begin + size});
    begin += size;
  }
  const uint32_t w = r.width;
  auto after = [&](const Head& a, const Head& b) {  // heap order: the smallest row on top
    return less(r.counts[b.at], r.keys.data() + b.at * w, r.counts[a.at], r.keys.data() + a.at * w);
  };
  std::make_heap(heads.begin(), heads.end(), after);
  uint64_t k = 0;
  while (!heads.empty()) {
    std::pop_heap(heads.begin(), heads.end(), after);
    Head& h = heads.back();
    plan.order[k++] = h.at++;
    if (h.at == h.end)
      heads.pop_back();
    else
      std::push_heap(heads.begin(), heads.end(), after);
  }
  return plan;
}

}  // namespace

RankRows plan_rank_rows(Comm& comm, RecordBatch reduced, const QueryOptions& q,
                        const SequenceOrder* order, DocId doc_begin, DocId doc_end,
                        unsigned threads, const std::vector<uint8_t>* doc_rows) {
  RowPlanContext ctx{q, order, doc_begin, doc_end, threads, doc_rows};
  RankRows out;
  out.plan = plan_rows(reduced, ctx);
  out.records = std::move(reduced);
  if (comm.size() > 1 && count_ordered(q)) {
    Timer timer;
    const CountKeyLess less{q.task == Task::kSequenceCount ? order : nullptr};
    RecordBatch mine = rows_in_order(out.records, out.plan, threads);
    out.records = RecordBatch{};
    out.plan = RowPlan{};
    const double gathered = timer.seconds();
    std::vector<size_t> runs;
    out.records = exchange_rows(comm, mine, less, runs);
    mine = RecordBatch{};
    const double exchanged = timer.seconds();
    out.plan = merge_runs(out.records, runs, less);
    spdlog::debug("row exchange: {} rows; in order {:.3f}s, exchange {:.3f}s, merge {:.3f}s",
                  out.records.size(), gathered, exchanged - gathered, timer.seconds() - exchanged);
  }
  const std::vector<uint64_t> rows = comm.allgather(out.plan.rows());
  for (int r = 0; r < comm.rank(); ++r) out.first_row += rows[r];
  out.total_rows = std::accumulate(rows.begin(), rows.end(), uint64_t{0});
  if (count_ordered(q) && q.top > 0) {  // the global --top: the first K rows of the result
    out.plan.truncate(out.first_row >= q.top ? 0 : q.top - out.first_row);
    out.total_rows = std::min(out.total_rows, q.top);
    out.first_row = std::min(out.first_row, q.top);
  }
  return out;
}

}  // namespace gtadoc
