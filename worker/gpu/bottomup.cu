// Bottom-up traversals (G-TADOC Algorithm 2, level-synchronous): every inner rule gets a local
// table, the reduced (item, count) list of its whole expansion, built level by level from the
// leaves: a rule's input is its own entries plus its children's tables x uses. One level is one
// flat, load-balanced expansion (each input entry found by a segment search over exact prefix
// sums, so long rules need no special case) followed by a radix sort and reduce-by-key keyed
// (row, item). The memory pool is sized by that pre-pass: the scan of input sizes gives the
// exact buffer of a level, and the table of a level is stored at its exact reduced size.
// Documents are then their segment's own entries plus their children's tables.
#include <vector>

#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {
namespace {

using ull = unsigned long long;

/// Read-only view of the tables for kernels.
struct TableView {
  const uint32_t* const* item;
  const uint64_t* const* count;
  const uint64_t* len;
};

__global__ void own_pairs_kernel(UnitCsr own, uint64_t begin, uint64_t n, uint32_t unit0,
                                 uint64_t* keys, uint64_t* vals) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const uint64_t e = begin + i;
    keys[i] = static_cast<uint64_t>(own.unit[e] - unit0) << 32 | own.item[e];
    vals[i] = own.cnt ? own.cnt[e] : 1u;
  }
}

__global__ void child_table_lengths_kernel(const uint32_t* child, uint64_t begin, uint64_t n,
                                           const uint64_t* len, uint64_t* out) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) out[i] = len[child[begin + i]];
}

/// Children's table entries x uses, keyed by the parent's row.
__global__ void child_table_pairs_kernel(UnitCsr ch, uint64_t begin, const uint64_t* off,
                                         uint64_t nseg, uint64_t total, uint32_t unit0, TableView t,
                                         uint64_t* keys, uint64_t* vals) {
  for (uint64_t j = global_thread(); j < total; j += global_stride()) {
    const uint64_t i = find_segment(off, nseg, j);
    const uint64_t e = begin + i;
    const uint32_t c = ch.item[e];
    const uint64_t x = j - off[i];
    keys[j] = static_cast<uint64_t>(ch.unit[e] - unit0) << 32 | t.item[c][x];
    vals[j] = t.count[c][x] * ch.cnt[e];
  }
}

__global__ void split_table_kernel(const uint64_t* keys, uint64_t n, uint32_t* items,
                                   uint32_t* row_len) {
  for (uint64_t j = global_thread(); j < n; j += global_stride()) {
    items[j] = static_cast<uint32_t>(keys[j]);
    atomicAdd(row_len + (keys[j] >> 32), 1u);
  }
}

__global__ void set_rows_kernel(const uint64_t* off, uint32_t rows, uint32_t rule0,
                                const uint32_t* items, const uint64_t* counts,
                                const uint32_t** item_ptr, const uint64_t** count_ptr,
                                uint64_t* len) {
  for (uint64_t row = global_thread(); row < rows; row += global_stride()) {
    const uint32_t r = rule0 + static_cast<uint32_t>(row);
    item_ptr[r] = items + off[row];
    count_ptr[r] = counts + off[row];
    len[r] = off[row + 1] - off[row];
  }
}

__global__ void accumulate_own_kernel(UnitCsr own, uint64_t begin, uint64_t end, ull* acc) {
  for (uint64_t e = begin + global_thread(); e < end; e += global_stride())
    atomicAdd(acc + own.item[e], static_cast<ull>(own.cnt ? own.cnt[e] : 1u));
}

__global__ void top_lengths_kernel(const uint32_t* top, uint64_t n, const uint64_t* len,
                                   uint64_t* out) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) out[i] = len[top[i]];
}

__global__ void accumulate_top_tables_kernel(const uint32_t* top, const uint64_t* off,
                                             uint64_t nseg, uint64_t total,
                                             const uint64_t* root_uses, TableView t, ull* acc) {
  for (uint64_t j = global_thread(); j < total; j += global_stride()) {
    const uint64_t i = find_segment(off, nseg, j);
    const uint32_t r = top[i];
    const uint64_t x = j - off[i];
    atomicAdd(acc + t.item[r][x], static_cast<ull>(t.count[r][x] * root_uses[r]));
  }
}

TableView view(const RuleTables& t) {
  return {t.item_ptr.data(), t.count_ptr.data(), t.len.data()};
}

/// Reduced (row << 32 | item, count) of units [u0, u1), row = unit - u0: their own entries plus
/// their children's tables x uses (children must have tables).
Pairs gather_units(Query& Q, const OwnSet& own, const RuleTables* t, uint32_t u0, uint32_t u1) {
  const GpuShard& s = Q.s;
  const uint64_t ob = own.h_off[u0], n_own = own.h_off[u1] - ob;
  const uint64_t cb = s.h_ch_off[u0], nch = s.h_ch_off[u1] - cb;
  DeviceBuffer<uint64_t> off(nch + 1, Q.pool);
  uint64_t n_tab = 0;
  if (nch > 0) {
    GTADOC_EXPECTS(t != nullptr, "gather_units: children without tables");
    DeviceBuffer<uint64_t> lens(nch, Q.pool);
    child_table_lengths_kernel<<<grid_for(nch), kBlock, 0, Q.stream>>>(s.ch_item.data(), cb, nch,
                                                                       t->len.data(), lens.data());
    GTADOC_CHECK_LAUNCH();
    n_tab = exclusive_offsets(lens.data(), nch, off.data(), Q.pool);
  }
  Pairs p;
  p.n = n_own + n_tab;
  p.keys = DeviceBuffer<uint64_t>(p.n, Q.pool);
  p.vals = DeviceBuffer<uint64_t>(p.n, Q.pool);
  if (n_own > 0) {
    own_pairs_kernel<<<grid_for(n_own), kBlock, 0, Q.stream>>>(own.csr, ob, n_own, u0,
                                                               p.keys.data(), p.vals.data());
    GTADOC_CHECK_LAUNCH();
  }
  if (n_tab > 0) {
    child_table_pairs_kernel<<<grid_for(n_tab), kBlock, 0, Q.stream>>>(
        s.children(), cb, off.data(), nch, n_tab, u0, view(*t), p.keys.data() + n_own,
        p.vals.data() + n_own);
    GTADOC_CHECK_LAUNCH();
  }
  off.reset();
  return reduce_pairs(std::move(p), 32 + bits_for(u1 - u0 - 1), Q.pool);
}

}  // namespace

RuleTables build_rule_tables(Query& Q, const OwnSet& own) {
  const GpuShard& s = Q.s;
  RuleTables t;
  const uint32_t H = s.num_inner_levels();
  t.items.resize(H);
  t.counts.resize(H);
  t.item_ptr = DeviceBuffer<const uint32_t*>(s.inner, Q.pool);
  t.count_ptr = DeviceBuffer<const uint64_t*>(s.inner, Q.pool);
  t.len = DeviceBuffer<uint64_t>(s.inner, Q.pool);
  t.item_ptr.memset_async(0);
  t.count_ptr.memset_async(0);
  t.len.memset_async(0);
  for (uint32_t h = 0; h < H; ++h) {
    const uint32_t lo = s.g.level_offsets[h], hi = s.g.level_offsets[h + 1];
    if (hi == lo) continue;
    Pairs p = gather_units(Q, own, &t, lo, hi);
    const uint32_t rows = hi - lo;
    DeviceBuffer<uint32_t> row_len(rows, Q.pool);
    DeviceBuffer<uint64_t> off(uint64_t{rows} + 1, Q.pool);
    row_len.memset_async(0);
    t.items[h] = DeviceBuffer<uint32_t>(p.n, Q.pool);
    if (p.n > 0) {
      split_table_kernel<<<grid_for(p.n), kBlock, 0, Q.stream>>>(p.keys.data(), p.n,
                                                                 t.items[h].data(), row_len.data());
      GTADOC_CHECK_LAUNCH();
    }
    exclusive_offsets(row_len.data(), rows, off.data(), Q.pool);
    t.counts[h] = std::move(p.vals);
    set_rows_kernel<<<grid_for(rows), kBlock, 0, Q.stream>>>(
        off.data(), rows, lo, t.items[h].data(), t.counts[h].data(), t.item_ptr.data(),
        t.count_ptr.data(), t.len.data());
    GTADOC_CHECK_LAUNCH();
    t.entries += p.n;
  }
  Q.mark("rule tables");
  return t;
}

RecordBatch bottomup_global(Query& Q, const OwnSet& own, const RuleTables& t) {
  const GpuShard& s = Q.s;
  DeviceBuffer<uint64_t> acc(own.items, Q.pool);
  acc.memset_async(0);
  ull* a = reinterpret_cast<ull*>(acc.data());
  // The root's own entries ...
  const uint64_t ob = own.h_off[s.inner], oe = own.h_off[s.units];
  if (oe > ob) {
    accumulate_own_kernel<<<grid_for(oe - ob), kBlock, 0, Q.stream>>>(own.csr, ob, oe, a);
    GTADOC_CHECK_LAUNCH();
  }
  // ... plus the tables of the rules the root uses, x their uses.
  const uint64_t ntop = s.top_rules.size();
  if (ntop > 0) {
    DeviceBuffer<uint64_t> lens(ntop, Q.pool), off(ntop + 1, Q.pool);
    top_lengths_kernel<<<grid_for(ntop), kBlock, 0, Q.stream>>>(s.top_rules.data(), ntop,
                                                                t.len.data(), lens.data());
    GTADOC_CHECK_LAUNCH();
    const uint64_t total = exclusive_offsets(lens.data(), ntop, off.data(), Q.pool);
    if (total > 0) {
      accumulate_top_tables_kernel<<<grid_for(total), kBlock, 0, Q.stream>>>(
          s.top_rules.data(), off.data(), ntop, total, s.root_uses.data(), view(t), a);
      GTADOC_CHECK_LAUNCH();
    }
  }
  return emit_dense(Q, acc.data(), own.items);
}

RecordBatch bottomup_per_doc(Query& Q, const OwnSet& own, const RuleTables& t, uint32_t d0,
                             uint32_t d1) {
  GTADOC_EXPECTS(d0 < d1 && d1 <= Q.s.num_docs, "bottomup_per_doc: bad document range");
  Pairs p = gather_units(Q, own, &t, Q.s.inner + d0, Q.s.inner + d1);
  Q.mark("gather documents");
  return emit_pairs(Q, p.keys.data(), p.vals.data(), p.n, d0);
}

}  // namespace gtadoc::gpu
