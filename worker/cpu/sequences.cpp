// Sequence support (G-TADOC §IV-D on the CPU): per-rule head/tail buffers and normalized lengths
// computed once per query by levels, then each unit's LOCAL n-gram windows (those not inside one
// child) read from a short stream built of words and the children's heads/tails.
#include <algorithm>

#include "common/error.h"
#include "worker/cpu/cpu_internal.h"
#include "worker/cpu/hash_tables.h"
#include "worker/plan/radix_sort.h"

namespace gtadoc::cpu {
namespace {

constexpr uint32_t kBreak = 0xFFFFFFFFu;
/// Bodies longer than this many symbols are split into chunks scanned independently.
constexpr uint64_t kChunk = 4096;

/// Builds a unit's local stream and reports its local windows.
class WindowScanner {
 public:
  explicit WindowScanner(const Query& Q)
      : body_(Q.s.body.data()),
        lnorm_(Q.vocab.lnorm.data()),
        seq_(Q.seq),
        n_(Q.seq.n),
        k_(Q.seq.k) {}

  /// f(window) for every local window of a body ending at `ue` whose first word comes from a
  /// symbol in [ca, cb): n consecutive words of the expansion, not all from one symbol (a
  /// child's full expansion is never re-counted) and not crossing the middle of a long child.
  template <class F>
  void scan(uint64_t ca, uint64_t cb, uint64_t ue, F&& f) {
    words_.clear();
    tags_.clear();
    for (uint64_t p = ca; p < cb; ++p) append(p, static_cast<uint32_t>(p - ca));
    const size_t base = words_.size();
    for (uint64_t p = cb; p < ue && words_.size() - base < k_; ++p)
      append(p, static_cast<uint32_t>(p - ca));
    const uint32_t end_tag = static_cast<uint32_t>(cb - ca);
    const size_t m = words_.size();
    for (size_t i = 0; i < m;) {
      size_t j = i;
      while (j < m && words_[j] != kBreak) ++j;
      for (size_t w = i; w + n_ <= j; ++w) {
        if (tags_[w] >= end_tag) return;
        if (tags_[w] != tags_[w + n_ - 1]) f(words_.data() + w);
      }
      i = j + 1;
    }
  }

 private:
  void push(uint32_t word, uint32_t tag) {
    words_.push_back(word);
    tags_.push_back(tag);
  }
  void append(uint64_t p, uint32_t tag) {
    const uint32_t x = body_[p];
    if ((x & kRuleFlag) == 0) {
      const uint32_t it = lnorm_[x];
      if (it != kNoItem) push(it, tag);
      return;
    }
    const uint32_t c = x & ~kRuleFlag;
    const uint64_t len = seq_.len[c];
    if (len == 0) return;
    const uint32_t* head = seq_.head.data() + static_cast<size_t>(c) * k_;
    const uint32_t* tail = seq_.tail.data() + static_cast<size_t>(c) * k_;
    const uint32_t hn = static_cast<uint32_t>(std::min<uint64_t>(len, k_));
    for (uint32_t i = 0; i < hn; ++i) push(head[i], tag);
    if (len <= 2ull * k_) {  // whole expansion: head, then the tail's words not in the head
      for (uint32_t i = static_cast<uint32_t>(2 * hn - len); i < hn; ++i) push(tail[i], tag);
    } else {  // windows cannot span the middle of the child
      push(kBreak, tag);
      for (uint32_t i = 0; i < k_; ++i) push(tail[i], tag);
    }
  }

  const uint32_t* body_;
  const uint32_t* lnorm_;
  const SeqInfo& seq_;
  uint32_t n_, k_;
  std::vector<uint32_t> words_, tags_;
};

struct WorkItem {
  uint64_t unit, ca, cb, ue;
};

/// Chunks of every unit that has local windows (and, with weights, a non-zero weight).
std::vector<WorkItem> work_items(const Query& Q, const std::vector<uint64_t>* weights) {
  std::vector<WorkItem> out;
  const CpuShard& s = Q.s;
  for (uint64_t u = 0; u < s.num_units(); ++u) {
    if (Q.seq.local_windows(u) == 0) continue;
    if (weights && u < s.num_inner && (*weights)[u] == 0) continue;
    auto [b, e] = s.unit_body(u);
    for (uint64_t a = b; a < e; a += kChunk) out.push_back({u, a, std::min(e, a + kChunk), e});
  }
  return out;
}

}  // namespace

void build_heads_tails(Query& Q) {
  const CpuShard& s = Q.s;
  SeqInfo& sq = Q.seq;
  sq.n = Q.q.n;
  sq.k = sq.n - 1;
  const uint32_t k = sq.k;
  sq.len.assign(s.num_inner, 0);
  sq.head.assign(static_cast<size_t>(s.num_inner) * k, 0);
  sq.tail.assign(static_cast<size_t>(s.num_inner) * k, 0);
  sq.stream_len.assign(s.num_units(), 0);
  Q.items.width = sq.n;
  const uint32_t* body = s.body.data();
  const uint32_t* lnorm = Q.vocab.lnorm.data();

  // Stream length (window bound) of a body, and its normalized length.
  auto measure = [&](uint64_t b, uint64_t e, uint64_t& len) {
    uint64_t sl = 0;
    len = 0;
    for (uint64_t p = b; p < e; ++p) {
      const uint32_t x = body[p];
      if (x & kRuleFlag) {
        const uint64_t lc = sq.len[x & ~kRuleFlag];
        len += lc;
        sl += std::min<uint64_t>(lc, 2ull * k);
      } else if (lnorm[x] != kNoItem) {
        ++len;
        ++sl;
      }
    }
    return sl;
  };

  for (uint32_t h = 0; h < s.num_inner_levels(); ++h) {
    Q.ex.parallel_for(
        s.level_begin(h), s.level_end(h), 1024, [&](unsigned, uint64_t lo, uint64_t hi) {
          for (uint64_t r = lo; r < hi; ++r) {
            const uint64_t b = s.g.rule_offsets[r], e = s.g.rule_offsets[r + 1];
            uint64_t len;
            sq.stream_len[r] = measure(b, e, len);
            sq.len[r] = len;
            const uint32_t want = static_cast<uint32_t>(std::min<uint64_t>(len, k));
            // Head: the first `want` words, left to right.
            uint32_t* head = sq.head.data() + r * k;
            uint32_t got = 0;
            for (uint64_t p = b; p < e && got < want; ++p) {
              const uint32_t x = body[p];
              if (x & kRuleFlag) {
                const uint32_t c = x & ~kRuleFlag;
                const uint32_t take = static_cast<uint32_t>(
                    std::min<uint64_t>(std::min<uint64_t>(sq.len[c], k), want - got));
                std::copy_n(sq.head.data() + static_cast<size_t>(c) * k, take, head + got);
                got += take;
              } else if (lnorm[x] != kNoItem) {
                head[got++] = lnorm[x];
              }
            }
            // Tail: the last `want` words, filled right to left.
            uint32_t* tail = sq.tail.data() + r * k;
            uint32_t pos = want;
            for (uint64_t p = e; p > b && pos > 0; --p) {
              const uint32_t x = body[p - 1];
              if (x & kRuleFlag) {
                const uint32_t c = x & ~kRuleFlag;
                const uint32_t cn = static_cast<uint32_t>(std::min<uint64_t>(sq.len[c], k));
                const uint32_t take = std::min(cn, pos);
                std::copy_n(sq.tail.data() + static_cast<size_t>(c) * k + (cn - take), take,
                            tail + pos - take);
                pos -= take;
              } else if (lnorm[x] != kNoItem) {
                tail[--pos] = lnorm[x];
              }
            }
          }
        });
  }
  Q.ex.parallel_for(s.num_inner, s.num_units(), 64, [&](unsigned, uint64_t lo, uint64_t hi) {
    for (uint64_t u = lo; u < hi; ++u) {
      auto [b, e] = s.unit_body(u);
      uint64_t len;
      sq.stream_len[u] = measure(b, e, len);
    }
  });
}

RecordBatch sequence_count_topdown(Query& Q, const std::vector<uint64_t>& weights) {
  const unsigned T = Q.ex.threads;
  const uint32_t n = Q.seq.n;
  const std::vector<WorkItem> work = work_items(Q, &weights);
  StockTables tables(T, n, true);
  std::vector<std::unique_ptr<WindowScanner>> scanners(T);
  Q.ex.parallel_for(0, work.size(), 16, [&](unsigned tid, uint64_t lo, uint64_t hi) {
    if (!scanners[tid]) scanners[tid] = std::make_unique<WindowScanner>(Q);
    NgramTable& table = tables[tid];
    PrefetchedProbes adds(table, [&](const uint32_t* key, uint32_t hash, uint64_t w) {
      table.add(key, hash, w);
    });
    for (uint64_t i = lo; i < hi; ++i) {
      const WorkItem& wi = work[i];
      const uint64_t w = wi.unit < Q.s.num_inner ? weights[wi.unit] : 1;
      // A window lives in the scanner's stream until scan() returns: flushed before that.
      scanners[tid]->scan(wi.ca, wi.cb, wi.ue,
                          [&](const uint32_t* win) { adds.put(win, hash_key(win, n), w); });
      adds.flush();
    }
  });

  // Emit: one partition per thread (by hash), each merging its keys from every thread's table.
  std::vector<RecordBatch> out(T);
  auto emitter = [&](RecordBatch& b) {
    return [&](uint32_t, uint32_t, const uint32_t* key, uint64_t c) {
      const size_t at = b.keys.size();
      b.keys.resize(at + n);
      for (uint32_t j = 0; j < n; ++j) b.keys[at + j] = Q.vocab.item_word[key[j]];
      b.counts.push_back(c);
    };
  };
  auto reserve = [&](RecordBatch& b, uint64_t records) {
    b.counts.reserve(records);
    b.keys.reserve(records * n);
  };
  if (T == 1) {
    reserve(out[0], tables[0].size());
    tables[0].for_each(emitter(out[0]));
  } else {
    Q.ex.on_all([&](unsigned p) {
      StockTables part(1, n, true);
      NgramTable& into = part[0];
      PrefetchedProbes adds(into, [&](const uint32_t* key, uint32_t hash, uint64_t c) {
        into.add(key, hash, c);
      });
      for (unsigned t = 0; t < T; ++t)
        tables[t].for_each([&](uint32_t, uint32_t h, const uint32_t* key, uint64_t c) {
          if (hash_partition(h, T) == p) adds.put(key, h, c);
        });
      adds.flush();
      reserve(out[p], into.size());
      part[0].for_each(emitter(out[p]));
    });
  }
  return concat_batches(out, n);
}

void intern_windows(Query& Q) {
  const CpuShard& s = Q.s;
  const unsigned T = Q.ex.threads;
  const uint32_t n = Q.seq.n;
  const std::vector<WorkItem> work = work_items(Q, nullptr);

  // 1. Every thread interns the windows of the chunks it claims into its own index; a chunk's
  //    result is its sorted (local id, count) list in that thread's buffer.
  struct ThreadOut {
    std::vector<uint32_t> ids, cnts;
    std::vector<uint32_t> tmp, sort_tmp;
  };
  StockTables index(T, n, false);
  std::vector<ThreadOut> tout(T);
  std::vector<uint32_t> wi_thread(work.size());
  std::vector<uint64_t> wi_start(work.size() + 1), wi_len(work.size());
  std::vector<std::unique_ptr<WindowScanner>> scanners(T);
  Q.ex.parallel_for(0, work.size(), 16, [&](unsigned tid, uint64_t lo, uint64_t hi) {
    if (!scanners[tid]) scanners[tid] = std::make_unique<WindowScanner>(Q);
    NgramTable& idx = index[tid];
    ThreadOut& o = tout[tid];
    PrefetchedProbes inserts(idx, [&](const uint32_t* key, uint32_t hash, uint64_t) {
      o.tmp.push_back(idx.insert(key, hash));
    });
    for (uint64_t i = lo; i < hi; ++i) {
      const WorkItem& wi = work[i];
      o.tmp.clear();
      // A window lives in the scanner's stream until scan() returns: flushed before that.
      scanners[tid]->scan(wi.ca, wi.cb, wi.ue,
                          [&](const uint32_t* win) { inserts.put(win, hash_key(win, n), 0); });
      inserts.flush();
      plan::sort_ids(o.tmp, o.sort_tmp);
      wi_thread[i] = tid;
      wi_start[i] = o.ids.size();
      for (size_t a = 0; a < o.tmp.size();) {
        size_t b = a + 1;
        while (b < o.tmp.size() && o.tmp[b] == o.tmp[a]) ++b;
        o.ids.push_back(o.tmp[a]);
        o.cnts.push_back(static_cast<uint32_t>(b - a));
        a = b;
      }
      wi_len[i] = o.ids.size() - wi_start[i];
    }
  });

  // 2. Global ids: partition the distinct keys by hash; partition p numbers its keys from
  //    base[p]. trans[t][local id] = global id.
  std::vector<std::vector<uint32_t>> trans(T);
  ItemSpace& items = Q.items;
  items.width = n;
  if (T == 1) {
    items.count = index[0].size();
    items.keys.resize(items.count * n);
    index[0].for_each([&](uint32_t id, uint32_t, const uint32_t* key, uint64_t) {
      std::copy_n(key, n, items.keys.begin() + static_cast<size_t>(id) * n);
    });
  } else {
    StockTables part(T, n, false);
    for (unsigned t = 0; t < T; ++t) trans[t].resize(index[t].size());
    Q.ex.on_all([&](unsigned p) {
      for (unsigned t = 0; t < T; ++t) {
        std::vector<uint32_t>& to = trans[t];
        NgramTable& into = part[p];
        PrefetchedProbes inserts(into, [&](const uint32_t* key, uint32_t hash, uint64_t id) {
          to[id] = into.insert(key, hash);
        });
        index[t].for_each([&](uint32_t id, uint32_t h, const uint32_t* key, uint64_t) {
          if (hash_partition(h, T) == p) inserts.put(key, h, id);
        });
        inserts.flush();
      }
    });
    std::vector<uint64_t> base(T + 1, 0);
    for (unsigned p = 0; p < T; ++p) base[p + 1] = base[p] + part[p].size();
    GTADOC_EXPECTS(base[T] < kNoItem, "cpu engine: more than 2^32 distinct n-grams in a shard");
    items.count = base[T];
    items.keys.resize(base[T] * n);
    Q.ex.on_all([&](unsigned t) {
      part[t].for_each([&](uint32_t pid, uint32_t, const uint32_t* key, uint64_t) {
        std::copy_n(key, n, items.keys.begin() + (base[t] + pid) * n);
      });
      index[t].for_each([&](uint32_t id, uint32_t h, const uint32_t*, uint64_t) {
        trans[t][id] += static_cast<uint32_t>(base[hash_partition(h, T)]);
      });
    });
  }

  // 3. Own items per unit: its chunks' lists translated to global ids, sorted, summed.
  std::vector<uint64_t> unit_first(s.num_units() + 1, 0);
  for (const WorkItem& wi : work) ++unit_first[wi.unit + 1];
  for (uint64_t u = 0; u < s.num_units(); ++u) unit_first[u + 1] += unit_first[u];
  std::vector<std::vector<uint64_t>> scratch(T), sort_tmp(T);
  items.own_store = build_csr<uint32_t>(
      Q.ex, s.num_units(), 512, [&](unsigned tid, uint64_t u, auto& out_items, auto& out_cnts) {
        std::vector<uint64_t>& sc = scratch[tid];
        sc.clear();
        for (uint64_t i = unit_first[u]; i < unit_first[u + 1]; ++i) {
          const ThreadOut& o = tout[wi_thread[i]];
          const auto* tr = T == 1 ? nullptr : trans[wi_thread[i]].data();
          for (uint64_t j = wi_start[i]; j < wi_start[i] + wi_len[i]; ++j)
            sc.push_back(uint64_t{tr ? tr[o.ids[j]] : o.ids[j]} << 32 | o.cnts[j]);
        }
        append_summed(sc, sort_tmp[tid], out_items, out_cnts);
      });
  items.own = CsrView<uint32_t>::of(items.own_store);
}

}  // namespace gtadoc::cpu
