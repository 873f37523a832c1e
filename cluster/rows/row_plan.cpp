#include "cluster/rows/row_plan.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "cluster/reduce.h"
#include "cluster/rows/parallel_sort.h"
#include "common/error.h"
#include "common/parallel.h"

namespace gtadoc {

namespace {

/// A row's sort key: (~count, tie) ascending, where tie is a record's rank in the key order,
/// packed with the record index: lo = tie << 32 | index (or just the index when tie == index).
struct CountItem {
  uint64_t hi, lo;
  friend bool operator<(const CountItem& a, const CountItem& b) {
    return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
  }
};

constexpr uint64_t kLow32 = 0xFFFFFFFFull;

/// Position of each selected record in the joined-bytes order of its key, where the n-gram
/// starts at `off` (a leading document id orders first). Records are sorted by key, so for an
/// identity order the position is the index and nothing is computed (empty result). Otherwise
/// the keys are rewritten into ranks (SequenceOrder::to_ranks) and radix-sorted by
/// reduce_records, which keeps each record's index in its count (rewritten keys stay unique).
std::vector<uint32_t> sequence_ranks(const RecordBatch& r, const SequenceOrder& order, uint32_t off,
                                     unsigned threads) {
  if (order.identity()) return {};
  const uint64_t n = r.size();
  const uint32_t w = r.width;
  RecordBatch ranked;
  ranked.width = w;
  ranked.keys.resize(n * w);
  ranked.counts.resize(n);
  parallel_blocks(n, threads, [&](uint64_t lo, uint64_t hi) {
    for (uint64_t i = lo; i < hi; ++i) {
      uint32_t* k = ranked.keys.data() + i * w;
      std::memcpy(k, r.keys.data() + i * w, w * sizeof(uint32_t));
      order.to_ranks(k + off);
      ranked.counts[i] = i;
    }
  });
  reduce_records(ranked, threads);
  std::vector<uint32_t> rank(n);
  parallel_blocks(n, threads, [&](uint64_t lo, uint64_t hi) {
    for (uint64_t i = lo; i < hi; ++i) rank[ranked.counts[i]] = static_cast<uint32_t>(i);
  });
  return rank;
}

/// The smallest count a record needs to be among the `top` largest of counts[begin, end)
/// (0 when all are kept).
uint64_t top_threshold(const RecordBatch& r, uint64_t begin, uint64_t end, uint64_t top) {
  if (top == 0 || end - begin <= top) return 0;
  std::vector<uint64_t> c(r.counts.begin() + begin, r.counts.begin() + end);
  std::nth_element(c.begin(), c.begin() + (top - 1), c.end(), std::greater<uint64_t>());
  return c[top - 1];
}

/// top_threshold over all records, in parallel: each block keeps its `top` largest counts in a
/// heap (most counts fail at the heap's minimum), then one selection over the blocks' survivors.
uint64_t parallel_top_threshold(const RecordBatch& r, uint64_t top, unsigned threads) {
  const uint64_t n = r.size();
  if (top == 0 || n <= top) return 0;
  const unsigned blocks = std::max(1u, threads) * 4;
  if (top * blocks * 4 > n) return top_threshold(r, 0, n, top);
  std::vector<std::vector<uint64_t>> heaps(blocks);
  parallel_for(blocks, threads, [&](size_t b) {
    std::vector<uint64_t>& h = heaps[b];  // min-heap of the block's largest counts
    h.reserve(top);
    for (uint64_t i = n * b / blocks; i < n * (b + 1) / blocks; ++i) {
      const uint64_t c = r.counts[i];
      if (h.size() < top) {
        h.push_back(c);
        std::push_heap(h.begin(), h.end(), std::greater<uint64_t>());
      } else if (c > h.front()) {
        std::pop_heap(h.begin(), h.end(), std::greater<uint64_t>());
        h.back() = c;
        std::push_heap(h.begin(), h.end(), std::greater<uint64_t>());
      }
    }
  });
  std::vector<uint64_t> all;
  for (const auto& h : heaps) all.insert(all.end(), h.begin(), h.end());
  std::nth_element(all.begin(), all.begin() + (top - 1), all.end(), std::greater<uint64_t>());
  return all[top - 1];
}

/// Records [begin, end) with count >= min_count, ordered by (count desc, tie asc), at most
/// `top` (0 = all), appended to `out` as record indices.
void ordered_group(const RecordBatch& r, uint64_t begin, uint64_t end, uint64_t top,
                   uint64_t min_count, const std::vector<uint32_t>& tie,
                   std::vector<CountItem>& items, uint64_t* out) {
  items.clear();
  const uint64_t threshold = std::max(min_count, top_threshold(r, begin, end, top));
  for (uint64_t i = begin; i < end; ++i) {
    if (r.counts[i] < threshold) continue;
    items.push_back({~r.counts[i], tie.empty() ? i : (uint64_t{tie[i]} << 32) | i});
  }
  std::sort(items.begin(), items.end());
  const uint64_t keep = top == 0 ? items.size() : std::min<uint64_t>(top, items.size());
  for (uint64_t k = 0; k < keep; ++k) out[k] = tie.empty() ? items[k].lo : items[k].lo & kLow32;
}

uint64_t kept_in_group(const RecordBatch& r, uint64_t begin, uint64_t end, uint64_t top,
                       uint64_t min_count) {
  uint64_t kept = 0;
  for (uint64_t i = begin; i < end; ++i) kept += r.counts[i] >= min_count;
  return top == 0 ? kept : std::min(kept, top);
}

/// Groups (runs of records, `starts` from run_starts) each become rows ordered by
/// (count desc, tie asc) with --top / --min-count per group. With `one_row_per_group` a group
/// is one row (term-vector); otherwise every kept record is a row (sequence-count --per-doc).
void plan_groups(const RecordBatch& r, const std::vector<uint64_t>& starts, uint64_t top,
                 uint64_t min_count, const std::vector<uint32_t>& tie, unsigned threads,
                 RowPlan& plan, bool one_row_per_group) {
  const uint64_t groups = starts.size() - 1;
  std::vector<uint64_t> at(groups + 1, 0);
  parallel_blocks(
      groups, threads,
      [&](uint64_t lo, uint64_t hi) {
        for (uint64_t g = lo; g < hi; ++g)
          at[g] = kept_in_group(r, starts[g], starts[g + 1], top, min_count);
      },
      256);
  const uint64_t total = exclusive_scan_in_place(at);
  at[groups] = total;
  plan.order.resize(total);
  parallel_blocks(
      groups, threads,
      [&](uint64_t lo, uint64_t hi) {
        std::vector<CountItem> items;
        for (uint64_t g = lo; g < hi; ++g)
          ordered_group(r, starts[g], starts[g + 1], top, min_count, tie, items,
                        plan.order.data() + at[g]);
      },
      64);
  if (one_row_per_group) plan.row_begin = std::move(at);
}

RowPlan plan_counted(const RecordBatch& r, const RowPlanContext& ctx, uint32_t off) {
  // word-count, sequence-count: one row per record, (count desc, key order asc).
  RowPlan plan;
  const uint64_t n = r.size();
  GTADOC_EXPECTS(n <= kLow32, "too many rows on one rank (more than 2^32)");
  if (off == 0) {
    // Only records that can make the cut are sorted, and only they get sequence ranks.
    const uint64_t threshold = parallel_top_threshold(r, ctx.q.top, ctx.threads);
    std::vector<uint64_t> cand;
    if (threshold > 0) {
      std::vector<std::vector<uint64_t>> parts(ctx.threads * 4);
      parallel_for(parts.size(), ctx.threads, [&](size_t b) {
        for (uint64_t i = n * b / parts.size(); i < n * (b + 1) / parts.size(); ++i)
          if (r.counts[i] >= threshold) parts[b].push_back(i);
      });
      for (const auto& part : parts) cand.insert(cand.end(), part.begin(), part.end());
    }
    const bool all = threshold == 0;
    const uint64_t m = all ? n : cand.size();
    auto record = [&](uint64_t k) { return all ? k : cand[k]; };
    std::vector<uint32_t> tie;
    if (ctx.q.task == Task::kSequenceCount) {
      if (all) {
        tie = sequence_ranks(r, *ctx.order, 0, ctx.threads);
      } else {
        RecordBatch sub;
        sub.width = r.width;
        sub.keys.resize(m * r.width);
        sub.counts.resize(m);
        for (uint64_t k = 0; k < m; ++k)
          std::memcpy(sub.keys.data() + k * r.width, r.keys.data() + cand[k] * r.width,
                      r.width * sizeof(uint32_t));
        tie = sequence_ranks(sub, *ctx.order, 0, ctx.threads);
      }
    }
    std::vector<CountItem> items(m);
    parallel_blocks(m, ctx.threads, [&](uint64_t lo, uint64_t hi) {
      for (uint64_t k = lo; k < hi; ++k) {
        const uint64_t i = record(k);
        items[k] = {~r.counts[i], tie.empty() ? i : (uint64_t{tie[k]} << 32) | i};
      }
    });
    parallel_sort(items.begin(), items.end(), std::less<CountItem>(), ctx.threads);
    const uint64_t keep =
        ctx.q.top == 0 ? items.size() : std::min<uint64_t>(ctx.q.top, items.size());
    plan.order.resize(keep);
    parallel_blocks(keep, ctx.threads, [&](uint64_t lo, uint64_t hi) {
      for (uint64_t k = lo; k < hi; ++k) plan.order[k] = items[k].lo & kLow32;
    });
    return plan;
  }
  std::vector<uint32_t> tie;
  if (ctx.q.task == Task::kSequenceCount) tie = sequence_ranks(r, *ctx.order, off, ctx.threads);
  // --per-doc: groups of one document, --top per document.
  const uint32_t* keys = r.keys.data();
  const uint32_t w = r.width;
  const auto starts = run_starts(
      n, [&](uint64_t i, uint64_t j) { return keys[i * w] == keys[j * w]; }, ctx.threads);
  plan_groups(r, starts, ctx.q.top, 1, tie, ctx.threads, plan, false);
  return plan;
}

RowPlan plan_inverted(const RecordBatch& r, const RowPlanContext& ctx) {
  // [w, doc] sorted: a row is a run of one word, documents ascending; word ids are byte order.
  RowPlan plan;
  const uint32_t* keys = r.keys.data();
  plan.row_begin = run_starts(
      r.size(), [&](uint64_t i, uint64_t j) { return keys[2 * i] == keys[2 * j]; }, ctx.threads);
  plan.positions = r.size();
  return plan;
}

RowPlan plan_term_vector(const RecordBatch& r, const RowPlanContext& ctx) {
  // [doc, w] sorted: every owned document is a row (possibly empty), words by count desc then
  // word asc (record order within a document), --min-count then --top.
  const uint32_t* keys = r.keys.data();
  RowPlan plan;
  const DocId docs = ctx.doc_end - ctx.doc_begin;
  plan.row_doc.resize(docs);
  std::iota(plan.row_doc.begin(), plan.row_doc.end(), ctx.doc_begin);
  // Records of document doc_begin + d are [starts[d], starts[d + 1]) (empty when it has none).
  auto first_of = [&](DocId doc) {
    uint64_t lo = 0, hi = r.size();
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (keys[2 * mid] < doc)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  };
  std::vector<uint64_t> starts(static_cast<size_t>(docs) + 1);
  parallel_for(starts.size(), ctx.threads,
               [&](size_t d) { starts[d] = first_of(ctx.doc_begin + static_cast<DocId>(d)); });
  GTADOC_EXPECTS(starts.front() == 0 && starts.back() == r.size(),
                 "term-vector records of documents this rank does not own");
  plan_groups(r, starts, ctx.q.top, ctx.q.min_count, {}, ctx.threads, plan, true);
  if (ctx.doc_rows != nullptr) {  // keep only the filtered documents' rows (serial: few rows)
    RowPlan kept;
    kept.row_begin.push_back(0);
    for (uint64_t row = 0; row < plan.row_doc.size(); ++row) {
      const DocId d = plan.row_doc[row];
      if (d >= ctx.doc_rows->size() || (*ctx.doc_rows)[d] == 0) continue;
      for (uint64_t p = plan.row_begin[row]; p < plan.row_begin[row + 1]; ++p)
        kept.order.push_back(plan.order[p]);
      kept.row_begin.push_back(kept.order.size());
      kept.row_doc.push_back(d);
    }
    return kept;
  }
  return plan;
}

/// Writes the record indices [b, e) of one ranked row to `out` in posting order: count desc, then
/// record order (document asc). Most rows hold a few postings: an insertion sort (stable, and one
/// pass when the counts already descend) up to kInsertionRow, a stable sort above.
void order_postings(const RecordBatch& r, uint64_t b, uint64_t e, uint64_t* out) {
  constexpr uint64_t kInsertionRow = 32;
  const uint64_t m = e - b;
  std::iota(out, out + m, b);
  const uint64_t* counts = r.counts.data();
  if (m <= kInsertionRow) {
    for (uint64_t i = 1; i < m; ++i) {
      const uint64_t x = out[i], c = counts[x];
      uint64_t j = i;
      for (; j > 0 && counts[out[j - 1]] < c; --j) out[j] = out[j - 1];
      out[j] = x;
    }
    return;
  }
  std::stable_sort(out, out + m, [&](uint64_t x, uint64_t y) { return counts[x] > counts[y]; });
}

RowPlan plan_ranked(const RecordBatch& r, const RowPlanContext& ctx) {
  // [w1..wn, doc] sorted: a row is a run of one n-gram; rows in joined-bytes order, postings by
  // count desc then document asc (record order within the run).
  const uint32_t n = ctx.q.n, w = r.width;
  const uint32_t* keys = r.keys.data();
  auto runs = run_starts(
      r.size(),
      [&](uint64_t i, uint64_t j) {
        const uint32_t *a = keys + i * w, *b = keys + j * w;
        for (uint32_t k = 0; k < n; ++k)
          if (a[k] != b[k]) return false;
        return true;
      },
      ctx.threads);
  const uint64_t groups = runs.size() - 1;
  RowPlan plan;
  plan.order.resize(r.size());
  std::vector<uint64_t> group;  // row k is run group[k]; empty: run k (keys in byte order)
  if (ctx.order->identity()) {
    plan.row_begin = std::move(runs);
  } else {  // the n-grams of the runs, ranked in joined-bytes order
    group.resize(groups);
    RecordBatch heads;
    heads.width = n;
    heads.keys.resize(groups * n);
    heads.counts.resize(groups);
    parallel_blocks(groups, ctx.threads, [&](uint64_t lo, uint64_t hi) {
      for (uint64_t g = lo; g < hi; ++g)
        std::memcpy(heads.keys.data() + g * n, keys + runs[g] * w, n * sizeof(uint32_t));
    });
    const std::vector<uint32_t> rank = sequence_ranks(heads, *ctx.order, 0, ctx.threads);
    parallel_blocks(groups, ctx.threads, [&](uint64_t lo, uint64_t hi) {
      for (uint64_t g = lo; g < hi; ++g) group[rank[g]] = g;
    });
    plan.row_begin.resize(groups + 1);
    for (uint64_t k = 0; k < groups; ++k) plan.row_begin[k] = runs[group[k] + 1] - runs[group[k]];
    plan.row_begin[groups] = 0;
    exclusive_scan_in_place(plan.row_begin);
  }
  const std::vector<uint64_t>& starts = group.empty() ? plan.row_begin : runs;
  parallel_blocks(
      groups, ctx.threads,
      [&](uint64_t lo, uint64_t hi) {
        for (uint64_t k = lo; k < hi; ++k) {
          const uint64_t g = group.empty() ? k : group[k];
          order_postings(r, starts[g], starts[g + 1], plan.order.data() + plan.row_begin[k]);
        }
      },
      1024);
  return plan;
}

}  // namespace

void RowPlan::truncate(uint64_t keep) {
  if (keep >= rows()) return;
  if (!row_begin.empty()) {
    row_begin.resize(keep + 1);
    if (!row_doc.empty()) row_doc.resize(keep);
  } else if (!order.empty()) {
    order.resize(keep);
  } else {
    positions = keep;
  }
}

bool count_ordered(const QueryOptions& q) {
  return q.task == Task::kWordCount || (q.task == Task::kSequenceCount && !q.per_doc);
}

std::optional<uint32_t> count_order_group(const QueryOptions& q) {
  if (count_ordered(q)) return 0;
  if (q.task == Task::kRankedInvertedIndex) return q.n;
  return std::nullopt;
}

RowPlan plan_ordered_rows(const RecordBatch& r, const QueryOptions& q, const SequenceOrder* order,
                          unsigned threads) {
  const std::optional<uint32_t> group = count_order_group(q);
  GTADOC_EXPECTS(group.has_value(), "plan_ordered_rows: the task's rows are not count-ordered");
  GTADOC_EXPECTS(!is_sequence_task(q.task) || (order != nullptr && order->identity()),
                 "plan_ordered_rows: sequence keys not in output order");
  RowPlan plan;
  plan.positions = r.size();
  if (*group > 0) {
    const uint32_t g = *group, w = r.width;
    const uint32_t* keys = r.keys.data();
    plan.row_begin = run_starts(
        r.size(),
        [&](uint64_t i, uint64_t j) {
          return std::memcmp(keys + i * w, keys + j * w, g * sizeof(uint32_t)) == 0;
        },
        threads);
  }
  return plan;
}

RowPlan plan_rows(const RecordBatch& reduced, const RowPlanContext& ctx) {
  switch (ctx.q.task) {
    case Task::kWordCount:
      return plan_counted(reduced, ctx, 0);
    case Task::kSort: {
      RowPlan plan;
      plan.positions = reduced.size();
      return plan;
    }
    case Task::kInvertedIndex:
      return plan_inverted(reduced, ctx);
    case Task::kTermVector:
      return plan_term_vector(reduced, ctx);
    case Task::kSequenceCount:
      GTADOC_EXPECTS(ctx.order != nullptr, "sequence rows need the sequence order");
      return plan_counted(reduced, ctx, ctx.q.per_doc ? 1 : 0);
    case Task::kRankedInvertedIndex:
      GTADOC_EXPECTS(ctx.order != nullptr, "sequence rows need the sequence order");
      return plan_ranked(reduced, ctx);
  }
  GTADOC_FAIL("unknown task");
}

}  // namespace gtadoc
