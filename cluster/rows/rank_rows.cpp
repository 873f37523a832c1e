#include "cluster/rows/rank_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>

#include "cluster/comm.h"
#include "cluster/merge_runs.h"
#include "cluster/rows/parallel_sort.h"
#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/settings.h"
#include "common/timer.h"

namespace gtadoc {

namespace {

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

}  // namespace

RecordBatch choose_row_splitters(Comm& comm, uint64_t n, uint32_t w, const RowsAt& rows_at,
                                 const CountKeyLess& less) {
  const uint32_t parts = static_cast<uint32_t>(comm.size());
  const uint64_t global = comm.allreduce(n, ReduceOp::kSum);
  const size_t bytes_per = 8 + 4 * size_t{w} + 8;
  std::vector<uint8_t> packed;
  if (n > 0) {
    const double target = 64.0 * parts;
    const uint64_t samples = std::clamp<uint64_t>(
        static_cast<uint64_t>(std::ceil(double(n) * target / double(global))), 1, n);
    std::vector<uint64_t> last(samples), weight(samples);
    for (uint64_t j = 0; j < samples; ++j) {
      const uint64_t lo = j * n / samples, hi = (j + 1) * n / samples;
      last[j] = hi - 1;  // the bucket's last row stands for it
      weight[j] = hi - lo;
    }
    const RecordBatch rows = rows_at(last);
    GTADOC_EXPECTS(rows.size() == samples && rows.width == w, "choose_row_splitters: bad rows");
    packed.resize(samples * bytes_per);
    for (uint64_t j = 0; j < samples; ++j) {
      uint8_t* p = packed.data() + j * bytes_per;
      std::memcpy(p, &rows.counts[j], 8);
      std::memcpy(p + 8, rows.keys.data() + j * w, 4 * size_t{w});
      std::memcpy(p + 8 + 4 * size_t{w}, &weight[j], 8);
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

namespace {

/// Collective: moves ordered rows so that rank r holds the r-th range of the global order (or,
/// `to_root`, every row goes to rank 0: no splitters to agree on). The result holds one sorted
/// run per source rank, of sizes `runs`.
RecordBatch exchange_rows(Comm& comm, const RecordBatch& rows, const CountKeyLess& less,
                          bool to_root, std::vector<size_t>& runs) {
  const uint32_t parts = static_cast<uint32_t>(comm.size());
  const uint32_t w = rows.width;
  // rows are sorted: the rows of part p are [cut[p], cut[p + 1]).
  std::vector<size_t> cut(parts + 1, to_root ? rows.size() : 0);
  cut[0] = 0;
  cut[parts] = rows.size();
  const RecordBatch splitters = to_root ? RecordBatch{}
                                        : choose_row_splitters(
                                              comm, rows.size(), rows.width,
                                              [&](std::span<const uint64_t> at) {
                                                RecordBatch out;
                                                out.width = rows.width;
                                                for (uint64_t i : at)
                                                  out.push(rows.key(i), rows.counts[i]);
                                                return out;
                                              },
                                              less);
  for (uint32_t p = 1; p < parts && !to_root; ++p) {
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
  std::vector<size_t> counts(parts);
  for (uint32_t p = 0; p < parts; ++p) counts[p] = cut[p + 1] - cut[p];
  // Straight into place (Comm::alltoallv_records): no receive buffer to fill and copy again.
  const std::vector<uint64_t> sent(counts.begin(), counts.end());
  const std::vector<uint64_t> from = comm.alltoall(sent);
  runs.assign(from.begin(), from.end());
  std::vector<size_t> recv_first(parts, 0);
  size_t total = 0;
  for (uint32_t p = 0; p < parts; ++p) {
    recv_first[p] = total;
    total += runs[p];
  }
  RecordBatch got;
  got.width = w;
  got.keys.resize(total * w);
  got.counts.resize(total);
  comm.alltoallv_records(w, rows.keys.data(), rows.counts.data(), counts,
                         std::span<const size_t>(cut.data(), parts), got.keys.data(),
                         got.counts.data(), runs, recv_first);
  return got;
}

}  // namespace

bool top_rows_to_root(const QueryOptions& q) {
  return settings::flag("GTADOC_TOP_TO_ROOT") && count_ordered(q) && q.top > 0 &&
         q.top <= kTopRowsToRoot;
}

RowPlan merge_row_runs(const RecordBatch& r, const std::vector<size_t>& runs,
                       const CountKeyLess& less, unsigned threads) {
  RowPlan plan;
  plan.order.resize(r.size());
  const uint32_t w = r.width;
  std::vector<std::pair<uint64_t, uint64_t>> run;  // [begin, end) of each run
  uint64_t begin = 0;
  for (size_t size : runs) {
    run.push_back({begin, begin + size});
    begin += size;
  }
  auto row_less = [&](uint64_t a, uint64_t b) {
    return less(r.counts[a], r.keys.data() + a * w, r.counts[b], r.keys.data() + b * w);
  };
  const size_t pieces = r.size() < (uint64_t{1} << 16) ? 1 : size_t{std::max(1u, threads)} * 4;
  const RunPieces cut = cut_runs(std::move(run), pieces, threads, row_less);
  std::vector<uint64_t> out_at(cut.pieces() + 1, 0);
  for (size_t p = 0; p < cut.pieces(); ++p) out_at[p + 1] = out_at[p] + cut.size(p);
  parallel_for(cut.pieces(), threads, [&](size_t p) {
    uint64_t o = out_at[p];
    merge_piece(cut, p, row_less, [&](uint64_t i) { plan.order[o++] = i; });
  });
  return plan;
}

RankRows plan_rank_rows(Comm& comm, RecordBatch reduced, const QueryOptions& q,
                        const SequenceOrder* order, DocId doc_begin, DocId doc_end,
                        unsigned threads, const std::vector<uint8_t>* doc_rows, bool exchanged) {
  RowPlanContext ctx{q, order, doc_begin, doc_end, threads, doc_rows};
  RowPlan plan = plan_rows(reduced, ctx);
  return place_rank_rows(comm, std::move(reduced), std::move(plan), q, order, threads, exchanged);
}

RankRows place_rank_rows(Comm& comm, RecordBatch records, RowPlan plan, const QueryOptions& q,
                         const SequenceOrder* order, unsigned threads, bool exchanged) {
  RankRows out;
  out.plan = std::move(plan);
  out.records = std::move(records);
  if (comm.size() > 1 && count_ordered(q) && !exchanged) {
    Timer timer;
    const CountKeyLess less{q.task == Task::kSequenceCount ? order : nullptr};
    // Each key has one owner and each owner's plan is already cut to --top, so with
    // to_root rank 0 receives at most K rows per rank, among them the global first K.
    const bool to_root = top_rows_to_root(q);
    const bool in_order = out.plan.order.empty() && out.plan.row_begin.empty() &&
                          out.plan.positions == out.records.size();
    RecordBatch mine =
        in_order ? std::move(out.records) : rows_in_order(out.records, out.plan, threads);
    out.records = RecordBatch{};
    out.plan = RowPlan{};
    const double gathered = timer.seconds();
    std::vector<size_t> runs;
    out.records = exchange_rows(comm, mine, less, to_root, runs);
    mine = RecordBatch{};
    const double exchanged = timer.seconds();
    out.plan = merge_row_runs(out.records, runs, less, threads);
    spdlog::debug(
        "row exchange{}: {} rows; in order {:.3f} ms, exchange {:.3f} ms, merge {:.3f} ms",
        to_root ? " to rank 0 (--top)" : "", out.records.size(), gathered * 1e3,
        (exchanged - gathered) * 1e3, (timer.seconds() - exchanged) * 1e3);
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
