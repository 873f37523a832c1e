// Rows of (item, count) pairs in CSR form, the layout of every per-unit bag of the query plan
// (children and terms of a shard, own items, bottom-up tables), and a parallel builder that
// writes each row once in row order whatever the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

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

/// Builds a Csr with `rows` rows in parallel: fn(tid, row, items, counts) appends row's pairs.
template <class C, class Fn>
Csr<C> build_csr(const Exec& ex, uint64_t rows, uint64_t grain, Fn&& fn) {
  Csr<C> out;
  out.off.assign(rows + 1, 0);
  if (ex.threads <= 1 || rows <= grain) {
    for (uint64_t r = 0; r < rows; ++r) {
      fn(0u, r, out.item, out.cnt);
      out.off[r + 1] = out.item.size();
    }
    return out;
  }
  struct Chunk {
    uint64_t lo, hi, start;
  };
  struct Buf {
    std::vector<uint32_t> item;
    std::vector<C> cnt;
    std::vector<Chunk> chunks;
  };
  std::vector<Buf> bufs(ex.threads);
  ex.parallel_for(0, rows, grain, [&](unsigned tid, uint64_t lo, uint64_t hi) {
    Buf& b = bufs[tid];
    b.chunks.push_back({lo, hi, b.item.size()});
    for (uint64_t r = lo; r < hi; ++r) {
      uint64_t before = b.item.size();
      fn(tid, r, b.item, b.cnt);
      out.off[r + 1] = b.item.size() - before;
    }
  });
  for (uint64_t r = 0; r < rows; ++r) out.off[r + 1] += out.off[r];
  out.item.resize(out.off[rows]);
  out.cnt.resize(out.off[rows]);
  ex.on_all([&](unsigned tid) {
    for (const Chunk& c : bufs[tid].chunks) {
      uint64_t n = out.off[c.hi] - out.off[c.lo];
      std::copy_n(bufs[tid].item.begin() + c.start, n, out.item.begin() + out.off[c.lo]);
      std::copy_n(bufs[tid].cnt.begin() + c.start, n, out.cnt.begin() + out.off[c.lo]);
    }
    std::vector<uint32_t>().swap(bufs[tid].item);
    std::vector<C>().swap(bufs[tid].cnt);
  });
  return out;
}

}  // namespace gtadoc::plan
