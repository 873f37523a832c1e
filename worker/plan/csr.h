// Rows of (item, count) pairs in CSR form, the layout of every per-unit bag of the query plan
// (children and terms of a shard, own items, bottom-up tables), and a parallel builder that
// writes each row once in row order whatever the thread count.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "common/big_alloc.h"

#include "worker/plan/thread_pool.h"

namespace gtadoc::plan {

/// Rows of (item, count) pairs in CSR form; items ascending within a row unless said otherwise.
template <class C>
struct Csr {
  std::vector<uint64_t> off{0};
  std::vector<uint32_t> item;
  std::vector<C> cnt;
  uint64_t rows() const { return off.size() - 1; }
  uint64_t len(uint64_t r) const { return off[r + 1] - off[r]; }
};

/// Non-owning view of a Csr (so identity queries reuse load-time arrays).
template <class C>
struct CsrView {
  const uint64_t* off = nullptr;
  const uint32_t* item = nullptr;
  const C* cnt = nullptr;
  uint64_t len(uint64_t r) const { return off[r + 1] - off[r]; }
  static CsrView of(const Csr<C>& c) { return {c.off.data(), c.item.data(), c.cnt.data()}; }
};

/// Where a row builder appends one row's (item, count) pairs.
template <class C>
struct CsrSink {
  std::vector<uint32_t>* item;
  std::vector<C>* cnt;
  void push(uint32_t i, C c) const {
    item->push_back(i);
    cnt->push_back(c);
  }
};

/// Reserves room for `n` elements in an empty `v` (address space only: pages are touched when
/// written), on huge pages where it is large, so appending never moves what is there.
template <class T>
void reserve_on_huge_pages(std::vector<T>& v, size_t n) {
  if (n == 0 || v.capacity() >= n) return;
  std::vector<T>().swap(v);
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
}

/// Builds N Csrs with `rows` rows each in one parallel pass: fn(tid, row, sinks) appends row's
/// pairs of Csr k to sinks[k] (so one reading of a row can fill several bags). Rows are claimed
/// in chunks of `grain`; the result is the same whatever the thread count. `max_entries`, when
/// not 0, bounds the pairs of each Csr: the arrays appended to are reserved that large up front
/// (appending into growing vectors moved and faulted in every entry several times).
template <class C, size_t N, class Fn>
std::array<Csr<C>, N> build_csrs(const Exec& ex, uint64_t rows, uint64_t grain, Fn&& fn,
                                 uint64_t max_entries = 0) {
  std::array<Csr<C>, N> out;
  for (Csr<C>& o : out) o.off.assign(rows + 1, 0);
  std::array<CsrSink<C>, N> sinks;
  if (ex.threads <= 1 || rows <= grain) {
    for (size_t k = 0; k < N; ++k) {
      reserve_on_huge_pages(out[k].item, max_entries);
      reserve_on_huge_pages(out[k].cnt, max_entries);
      sinks[k] = {&out[k].item, &out[k].cnt};
    }
    for (uint64_t r = 0; r < rows; ++r) {
      fn(0u, r, sinks);
      for (size_t k = 0; k < N; ++k) out[k].off[r + 1] = out[k].item.size();
    }
    return out;
  }
  struct Chunk {
    uint64_t lo, hi;
    std::array<uint64_t, N> start;
  };
  struct Buf {
    std::array<std::vector<uint32_t>, N> item;
    std::array<std::vector<C>, N> cnt;
    std::vector<Chunk> chunks;
  };
  std::vector<Buf> bufs(ex.threads);
  ex.parallel_for(0, rows, grain, [&](unsigned tid, uint64_t lo, uint64_t hi) {
    Buf& b = bufs[tid];
    if (b.chunks.empty())
      for (size_t k = 0; k < N; ++k) {
        reserve_on_huge_pages(b.item[k], max_entries);
        reserve_on_huge_pages(b.cnt[k], max_entries);
      }
    Chunk chunk{lo, hi, {}};
    std::array<CsrSink<C>, N> mine;
    for (size_t k = 0; k < N; ++k) {
      chunk.start[k] = b.item[k].size();
      mine[k] = {&b.item[k], &b.cnt[k]};
    }
    b.chunks.push_back(chunk);
    std::array<uint64_t, N> before = chunk.start;
    for (uint64_t r = lo; r < hi; ++r) {
      fn(tid, r, mine);
      for (size_t k = 0; k < N; ++k) {
        out[k].off[r + 1] = b.item[k].size() - before[k];
        before[k] = b.item[k].size();
      }
    }
  });
  for (Csr<C>& o : out) {
    for (uint64_t r = 0; r < rows; ++r) o.off[r + 1] += o.off[r];
    resize_on_huge_pages(o.item, o.off[rows]);
    resize_on_huge_pages(o.cnt, o.off[rows]);
  }
  ex.on_all([&](unsigned tid) {
    Buf& b = bufs[tid];
    for (size_t k = 0; k < N; ++k) {
      Csr<C>& o = out[k];
      for (const Chunk& c : b.chunks) {
        const uint64_t n = o.off[c.hi] - o.off[c.lo];
        std::copy_n(b.item[k].begin() + c.start[k], n, o.item.begin() + o.off[c.lo]);
        std::copy_n(b.cnt[k].begin() + c.start[k], n, o.cnt.begin() + o.off[c.lo]);
      }
      std::vector<uint32_t>().swap(b.item[k]);
      std::vector<C>().swap(b.cnt[k]);
    }
  });
  return out;
}

/// Builds a Csr with `rows` rows in parallel: fn(tid, row, items, counts) appends row's pairs.
template <class C, class Fn>
Csr<C> build_csr(const Exec& ex, uint64_t rows, uint64_t grain, Fn&& fn) {
  return std::move(build_csrs<C, 1>(ex, rows, grain, [&](unsigned tid, uint64_t r, auto& sinks) {
    fn(tid, r, *sinks[0].item, *sinks[0].cnt);
  })[0]);
}

}  // namespace gtadoc::plan
