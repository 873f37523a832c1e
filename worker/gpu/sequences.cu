// Sequence support (G-TADOC §IV-D). Initialization: every inner rule's normalized length and its
// head/tail buffers (the first and last k = n-1 normalized words of its expansion), computed
// bottom-up by levels with the per-rule workload classes. Traversal: each unit's LOCAL windows,
// the n-grams of its expansion not inside a single body symbol, found without any DFS: a window
// is counted at the body position of its first word, and only needs the last <= k words of that
// position (a word, or a child's tail) followed by the first <= k words of the next positions
// (words and children's heads/whole short expansions). A child longer than 2k contributes a
// break between its head and tail, which a window can never cross; a window starting at a
// position always ends past it, so it spans >= 2 body symbols. Positions whose symbols expand to
// nothing are skipped through `nxt` (a suffix minimum), so every position does O(k) work.
//
// Windows are keyed by their n word items packed into u64 columns and grouped with an LSD radix
// sort over the columns; global sequence-count reduces weights per n-gram, per-document tasks
// intern the n-grams to dense ids and reuse the word-task traversals.
#include <algorithm>
#include <string>

#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"
#include "worker/gpu/rule_ops.cuh"

namespace gtadoc::gpu {
namespace {

inline constexpr uint32_t kMaxK = 7;  // n <= 8

// ------------------------------------------------------------------ lengths, heads and tails

struct HeadTailOp {
  const uint32_t* body;
  const uint64_t* ub;
  const uint64_t* ue;
  const uint32_t* lnorm;
  uint64_t* slen;
  uint32_t* head;
  uint32_t* tail;
  uint32_t k;

  __device__ uint64_t len_of(uint32_t x) const {
    if (x & kRuleFlag) return slen[x & ~kRuleFlag];
    return lnorm[x] != kNoItem ? 1 : 0;
  }
  /// Words the symbol can give to a head or a tail: min(len, k).
  __device__ uint32_t words_of(uint32_t x) const {
    if (x & kRuleFlag) {
      const uint64_t l = slen[x & ~kRuleFlag];
      return l < k ? static_cast<uint32_t>(l) : k;
    }
    return lnorm[x] != kNoItem ? 1u : 0u;
  }
  /// The first `take` words of symbol x.
  __device__ void copy_first(uint32_t x, uint32_t take, uint32_t* dst) const {
    if (x & kRuleFlag) {
      const uint32_t* src = head + static_cast<uint64_t>(x & ~kRuleFlag) * k;
      for (uint32_t i = 0; i < take; ++i) dst[i] = src[i];
    } else {
      dst[0] = lnorm[x];
    }
  }
  /// The last `take` words of symbol x.
  __device__ void copy_last(uint32_t x, uint32_t take, uint32_t* dst) const {
    if (x & kRuleFlag) {
      const uint32_t have = words_of(x);
      const uint32_t* src = tail + static_cast<uint64_t>(x & ~kRuleFlag) * k + (have - take);
      for (uint32_t i = 0; i < take; ++i) dst[i] = src[i];
    } else {
      dst[0] = lnorm[x];
    }
  }

  __device__ void thread(uint32_t r) const {
    const uint64_t b = ub[r], e = ue[r];
    uint64_t len = 0;
    for (uint64_t p = b; p < e; ++p) len += len_of(body[p]);
    slen[r] = len;
    const uint32_t want = len < k ? static_cast<uint32_t>(len) : k;
    uint32_t* h = head + static_cast<uint64_t>(r) * k;
    uint32_t got = 0;
    for (uint64_t p = b; p < e && got < want; ++p) {
      const uint32_t x = body[p];
      const uint32_t take = min(words_of(x), want - got);
      if (take > 0) copy_first(x, take, h + got);
      got += take;
    }
    uint32_t* t = tail + static_cast<uint64_t>(r) * k;
    uint32_t pos = want;  // fill right to left
    for (uint64_t p = e; p > b && pos > 0; --p) {
      const uint32_t x = body[p - 1];
      const uint32_t take = min(words_of(x), pos);
      if (take > 0) copy_last(x, take, t + pos - take);
      pos -= take;
    }
  }

  /// Heads and tails by one warp: 32 symbols at a time, a prefix sum of their word counts
  /// tells every lane where its words go; stops as soon as k words are found.
  __device__ void warp_heads_tails(uint32_t r, uint64_t len, uint32_t lane) const {
    const uint64_t b = ub[r], e = ue[r];
    const uint32_t want = len < k ? static_cast<uint32_t>(len) : k;
    uint32_t* h = head + static_cast<uint64_t>(r) * k;
    uint32_t got = 0;
    for (uint64_t base = b; base < e && got < want; base += kWarp) {
      const uint64_t p = base + lane;
      uint32_t x = 0, w = 0;
      if (p < e) {
        x = body[p];
        w = words_of(x);
      }
      const uint32_t incl = warp_inclusive_sum(w, lane);
      const uint32_t before = got + (incl - w);
      if (w > 0 && before < want) copy_first(x, min(w, want - before), h + before);
      got += __shfl_sync(0xffffffffu, incl, kWarp - 1);
    }
    uint32_t* t = tail + static_cast<uint64_t>(r) * k;
    const uint64_t m = e - b;
    got = 0;  // words found from the end
    for (uint64_t base = 0; base < m && got < want; base += kWarp) {
      const uint64_t i = base + lane;
      uint32_t x = 0, w = 0;
      if (i < m) {
        x = body[e - 1 - i];
        w = words_of(x);
      }
      const uint32_t incl = warp_inclusive_sum(w, lane);
      const uint32_t after = got + (incl - w);  // words of later symbols already placed
      if (w > 0 && after < want) {
        const uint32_t take = min(w, want - after);
        copy_last(x, take, t + (want - after - take));
      }
      got += __shfl_sync(0xffffffffu, incl, kWarp - 1);
    }
  }

  __device__ void warp(uint32_t r, uint32_t lane) const {
    uint64_t len = 0;
    for (uint64_t p = ub[r] + lane; p < ue[r]; p += kWarp) len += len_of(body[p]);
    len = warp_sum(len);
    if (lane == 0) slen[r] = len;
    warp_heads_tails(r, len, lane);
  }

  __device__ void block(uint32_t r) const {
    __shared__ uint64_t partial[kRuleBlock / kWarp];
    __shared__ uint64_t total;
    uint64_t len = 0;
    for (uint64_t p = ub[r] + threadIdx.x; p < ue[r]; p += blockDim.x) len += len_of(body[p]);
    len = warp_sum(len);
    const uint32_t lane = threadIdx.x % kWarp, wid = threadIdx.x / kWarp;
    if (lane == 0) partial[wid] = len;
    __syncthreads();
    if (wid == 0) {
      uint64_t v = lane < blockDim.x / kWarp ? partial[lane] : 0;
      v = warp_sum(v);
      if (lane == 0) {
        total = v;
        slen[r] = v;
      }
    }
    __syncthreads();
    if (wid == 0) warp_heads_tails(r, total, lane);
  }
};

// ------------------------------------------------------------------ local windows

/// Packing of n word items (< 2^b each) into nw u64 columns of up to ipw items, first item
/// most significant; column j of window i is cols[j * stride + i].
struct KeyPack {
  uint32_t n = 0, b = 1, ipw = 1, nw = 0;

  __host__ __device__ uint32_t column_items(uint32_t j) const {
    const uint32_t lo = j * ipw;
    return (lo + ipw < n ? lo + ipw : n) - lo;
  }
  __device__ void pack(const uint32_t* w, uint64_t* cols, uint64_t stride, uint64_t at) const {
    for (uint32_t j = 0; j < nw; ++j) {
      uint64_t v = 0;
      const uint32_t lo = j * ipw, hi = lo + column_items(j);
      for (uint32_t t = lo; t < hi; ++t) v = (v << b) | w[t];
      cols[j * stride + at] = v;
    }
  }
  __device__ uint32_t unpack(const uint64_t* cols, uint64_t stride, uint64_t at, uint32_t t) const {
    const uint32_t j = t / ipw;
    const uint32_t shift = (j * ipw + column_items(j) - 1 - t) * b;
    const uint64_t mask = b >= 64 ? ~uint64_t{0} : (uint64_t{1} << b) - 1;
    return static_cast<uint32_t>((cols[j * stride + at] >> shift) & mask);
  }
};

KeyPack make_pack(uint32_t n, uint64_t items) {
  KeyPack kp;
  kp.n = n;
  kp.b = static_cast<uint32_t>(bits_for(items == 0 ? 0 : items - 1));
  kp.ipw = 64 / kp.b;
  kp.nw = (n + kp.ipw - 1) / kp.ipw;
  return kp;
}

struct WindowScan {
  const uint32_t* body;
  const uint32_t* sym_unit;
  const uint64_t* unit_end;
  const uint32_t* lnorm;
  const uint64_t* slen;
  const uint32_t* head;
  const uint32_t* tail;
  const uint64_t* nxt;     // S + 1 entries
  const uint64_t* weight;  // nullable: skip units of weight 0
  uint32_t inner;
  uint32_t k;

  /// buf = the last <= k words of position p, then the next <= k words of its unit; returns
  /// the number of windows starting at p (windows are buf[i .. i + k], i < result).
  __device__ uint32_t collect(uint64_t p, uint32_t* buf, uint32_t& unit) const {
    const uint32_t u = sym_unit[p];
    unit = u;
    if (u == kNoUnit) return 0;
    if (weight != nullptr && u < inner && weight[u] == 0) return 0;
    const uint32_t x = body[p];
    uint32_t na = 0;
    if (x & kRuleFlag) {
      const uint32_t c = x & ~kRuleFlag;
      const uint64_t len = slen[c];
      const uint32_t m = len < k ? static_cast<uint32_t>(len) : k;
      for (uint32_t i = 0; i < m; ++i) buf[na++] = tail[static_cast<uint64_t>(c) * k + i];
    } else if (lnorm[x] != kNoItem) {
      buf[na++] = lnorm[x];
    }
    if (na == 0) return 0;
    const uint64_t end = unit_end[u];
    uint32_t nb = 0;
    for (uint64_t q = nxt[p + 1]; nb < k && q < end; q = nxt[q + 1]) {
      const uint32_t y = body[q];
      if (y == kBoundaryCode) break;
      if (y & kRuleFlag) {
        const uint32_t c = y & ~kRuleFlag;
        const uint64_t len = slen[c];
        const uint32_t m = len < k ? static_cast<uint32_t>(len) : k;
        const uint32_t* h = head + static_cast<uint64_t>(c) * k;
        for (uint32_t i = 0; i < m && nb < k; ++i) buf[na + nb++] = h[i];
        if (len <= 2ull * k) {  // a short child is whole: head, then the rest of its tail
          const uint32_t* t = tail + static_cast<uint64_t>(c) * k;
          for (uint32_t i = static_cast<uint32_t>(2 * m - len); i < m && nb < k; ++i)
            buf[na + nb++] = t[i];
        }  // else: a break follows the head, but the head already gave k words
      } else {
        buf[na + nb++] = lnorm[y];
      }
    }
    return na + nb > k ? na + nb - k : 0;
  }
};

/// v[q] = q where position q has words or is a boundary, else S; v[S] = S.
__global__ void stop_positions_kernel(const uint32_t* body, const uint32_t* lnorm,
                                      const uint64_t* slen, uint64_t S, uint64_t* v) {
  for (uint64_t q = global_thread(); q <= S; q += global_stride()) {
    bool stop = q == S;
    if (!stop) {
      const uint32_t x = body[q];
      if (x == kBoundaryCode) {
        stop = true;
      } else if (x & kRuleFlag) {
        stop = slen[x & ~kRuleFlag] != 0;
      } else {
        stop = lnorm[x] != kNoItem;
      }
    }
    v[q] = stop ? q : S;
  }
}

__global__ void count_windows_kernel(WindowScan ws, uint64_t S, uint32_t* counts) {
  uint32_t buf[2 * kMaxK];
  for (uint64_t p = global_thread(); p < S; p += global_stride()) {
    uint32_t unit;
    counts[p] = ws.collect(p, buf, unit);
  }
}

/// Writes the windows of positions [p0, p1) at off[p] - base: packed keys and either the
/// unit's weight (weights mode) or the unit.
__global__ void write_windows_kernel(WindowScan ws, KeyPack kp, uint64_t p0, uint64_t p1,
                                     const uint64_t* off, uint64_t base, uint64_t stride,
                                     uint64_t* cols, uint64_t* weight_out, uint32_t* unit_out) {
  uint32_t buf[2 * kMaxK];
  for (uint64_t p = p0 + global_thread(); p < p1; p += global_stride()) {
    uint32_t unit;
    const uint32_t c = ws.collect(p, buf, unit);
    const uint64_t at = off[p] - base;
    for (uint32_t i = 0; i < c; ++i) {
      kp.pack(buf + i, cols, stride, at + i);
      if (weight_out != nullptr) weight_out[at + i] = unit < ws.inner ? ws.weight[unit] : 1;
      if (unit_out != nullptr) unit_out[at + i] = unit;
    }
  }
}

__global__ void group_flags_kernel(const uint64_t* scols, uint32_t nw, uint64_t W,
                                   uint32_t* flags) {
  for (uint64_t i = global_thread(); i < W; i += global_stride()) {
    bool fresh = i == 0;
    for (uint32_t j = 0; j < nw && !fresh; ++j) fresh = scols[j * W + i] != scols[j * W + i - 1];
    flags[i] = fresh;
  }
}

/// first[g] = sorted position of group g's first window; group id of every sorted window.
__global__ void group_ids_kernel(const uint64_t* goff, uint64_t W, uint64_t* first, uint32_t* gid) {
  for (uint64_t i = global_thread(); i < W; i += global_stride()) {
    const uint64_t g = goff[i + 1] - 1;
    if (goff[i] != goff[i + 1]) first[g] = i;
    gid[i] = static_cast<uint32_t>(g);
  }
}

__global__ void scatter_kernel(const uint32_t* val, const uint32_t* perm, uint64_t n,
                               uint32_t* out) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) out[perm[i]] = val[i];
}

/// The n word items of every group (from its first sorted window).
__global__ void group_items_kernel(KeyPack kp, const uint64_t* scols, uint64_t W,
                                   const uint64_t* first, uint64_t G, uint32_t* items) {
  for (uint64_t g = global_thread(); g < G; g += global_stride())
    for (uint32_t t = 0; t < kp.n; ++t) items[g * kp.n + t] = kp.unpack(scols, W, first[g], t);
}

__global__ void ngram_records_kernel(KeyPack kp, const uint64_t* scols, uint64_t W,
                                     const uint64_t* first, const uint64_t* sums, uint64_t G,
                                     const uint32_t* item_word, uint32_t* keys, uint64_t* counts) {
  for (uint64_t g = global_thread(); g < G; g += global_stride()) {
    for (uint32_t t = 0; t < kp.n; ++t)
      keys[g * kp.n + t] = item_word[kp.unpack(scols, W, first[g], t)];
    counts[g] = sums[g];
  }
}

__global__ void own_offsets_kernel(const uint64_t* unit_begin, const uint64_t* off, uint32_t units,
                                   uint64_t W, uint64_t* own_off) {
  for (uint64_t u = global_thread(); u <= units; u += global_stride())
    own_off[u] = u < units ? off[unit_begin[u]] : W;
}

WindowScan make_scan(const Query& Q, const WindowIndex* idx, const uint64_t* weights) {
  const GpuShard& s = Q.s;
  return WindowScan{s.body.data(),
                    s.sym_unit.data(),
                    s.unit_end.data(),
                    Q.lnorm,
                    Q.slen,
                    Q.head,
                    Q.tail,
                    idx ? idx->nxt.data() : nullptr,
                    weights,
                    s.inner,
                    Q.k};
}

/// Windows grouped by n-gram: sorted packed columns, the permutation from sorted to original
/// order, group offsets over the sorted order and each group's first sorted position.
struct Grouped {
  DeviceBuffer<uint64_t> scols;
  DeviceBuffer<uint32_t> perm;
  DeviceBuffer<uint32_t> gid;    ///< sorted position -> group
  DeviceBuffer<uint64_t> first;  ///< group -> first sorted position
  uint64_t groups = 0;
};

/// LSD radix sort over the key columns (least significant column first, each pass stable).
Grouped group_windows(Query& Q, const KeyPack& kp, DeviceBuffer<uint64_t>& cols, uint64_t W) {
  Grouped gr;
  gr.perm = DeviceBuffer<uint32_t>(W, Q.pool);
  iota_async(gr.perm.data(), W, Q.stream);
  {
    DeviceBuffer<uint32_t> perm_alt(W, Q.pool);
    DeviceBuffer<uint64_t> keys(W, Q.pool), keys_alt(W, Q.pool);
    for (uint32_t j = kp.nw; j-- > 0;) {
      gather_async(cols.data() + j * W, gr.perm.data(), keys.data(), W, Q.stream);
      sort_pairs(keys, keys_alt, gr.perm, perm_alt, W, static_cast<int>(kp.column_items(j) * kp.b),
                 Q.pool);
    }
  }
  gr.scols = DeviceBuffer<uint64_t>(uint64_t{kp.nw} * W, Q.pool);
  for (uint32_t j = 0; j < kp.nw; ++j)
    gather_async(cols.data() + j * W, gr.perm.data(), gr.scols.data() + j * W, W, Q.stream);
  cols.reset();
  DeviceBuffer<uint32_t> flags(W, Q.pool);
  DeviceBuffer<uint64_t> goff(W + 1, Q.pool);
  group_flags_kernel<<<grid_for(W), kBlock, 0, Q.stream>>>(gr.scols.data(), kp.nw, W, flags.data());
  GTADOC_CHECK_LAUNCH();
  gr.groups = exclusive_offsets(flags.data(), W, goff.data(), Q.pool);
  flags.reset();
  gr.first = DeviceBuffer<uint64_t>(gr.groups, Q.pool);
  gr.gid = DeviceBuffer<uint32_t>(W, Q.pool);
  group_ids_kernel<<<grid_for(W), kBlock, 0, Q.stream>>>(goff.data(), W, gr.first.data(),
                                                         gr.gid.data());
  GTADOC_CHECK_LAUNCH();
  return gr;
}

}  // namespace

std::shared_ptr<const PreparedSeq> build_heads_tails(const Query& Q) {
  const GpuShard& s = Q.s;
  GTADOC_EXPECTS(Q.k >= 1 && Q.k <= kMaxK, "build_heads_tails: n out of range");
  auto ps = std::make_shared<PreparedSeq>();
  ps->slen = DeviceBuffer<uint64_t>(s.inner, Q.pool);
  ps->head = DeviceBuffer<uint32_t>(uint64_t{s.inner} * Q.k, Q.pool);
  ps->tail = DeviceBuffer<uint32_t>(uint64_t{s.inner} * Q.k, Q.pool);
  const HeadTailOp op{s.body.data(),   s.unit_begin.data(), s.unit_end.data(), Q.lnorm,
                      ps->slen.data(), ps->head.data(),     ps->tail.data(),   Q.k};
  for (uint32_t h = 0; h < s.num_inner_levels(); ++h) launch_level(s, s.levels[h], op, Q.stream);
  return ps;
}

WindowIndex index_windows(Query& Q, const uint64_t* weights) {
  const GpuShard& s = Q.s;
  WindowIndex idx;
  idx.nxt = DeviceBuffer<uint64_t>(s.S + 1, Q.pool);
  idx.off = DeviceBuffer<uint64_t>(s.S + 1, Q.pool);
  {
    DeviceBuffer<uint64_t> stops(s.S + 1, Q.pool);
    stop_positions_kernel<<<grid_for(s.S + 1), kBlock, 0, Q.stream>>>(s.body.data(), Q.lnorm,
                                                                      Q.slen, s.S, stops.data());
    GTADOC_CHECK_LAUNCH();
    suffix_min(stops.data(), idx.nxt.data(), s.S + 1, Q.pool);
  }
  DeviceBuffer<uint32_t> counts(s.S, Q.pool);
  if (s.S > 0) {
    count_windows_kernel<<<grid_for(s.S), kBlock, 0, Q.stream>>>(make_scan(Q, &idx, weights), s.S,
                                                                 counts.data());
    GTADOC_CHECK_LAUNCH();
  }
  idx.windows = exclusive_offsets(counts.data(), s.S, idx.off.data(), Q.pool);
  Q.mark("index windows");
  return idx;
}

RecordBatch sequence_count_topdown(Query& Q, const WindowIndex& idx, const uint64_t* weights,
                                   uint64_t p0, uint64_t p1) {
  RecordBatch out;
  out.width = Q.n;
  uint64_t base = 0, end = 0;
  idx.off.download(&base, 1, p0);
  idx.off.download(&end, 1, p1);
  const uint64_t W = end - base;
  if (W == 0) return out;
  GTADOC_EXPECTS(W < (uint64_t{1} << 32), "gpu engine: more than 2^32 windows in one piece");
  const KeyPack kp = make_pack(Q.n, Q.vocab().size());
  DeviceBuffer<uint64_t> cols(uint64_t{kp.nw} * W, Q.pool);
  DeviceBuffer<uint64_t> wts(W, Q.pool);
  write_windows_kernel<<<grid_for(p1 - p0), kBlock, 0, Q.stream>>>(
      make_scan(Q, &idx, weights), kp, p0, p1, idx.off.data(), base, W, cols.data(), wts.data(),
      nullptr);
  GTADOC_CHECK_LAUNCH();
  Q.mark("write windows");
  Grouped gr = group_windows(Q, kp, cols, W);
  Q.mark("group windows");
  DeviceBuffer<uint64_t> sorted_w(W, Q.pool);
  gather_async(wts.data(), gr.perm.data(), sorted_w.data(), W, Q.stream);
  wts.reset();
  gr.perm.reset();
  DeviceBuffer<uint32_t> uniq(gr.groups, Q.pool);
  DeviceBuffer<uint64_t> sums(gr.groups, Q.pool);
  const uint64_t G =
      reduce_by_key(gr.gid.data(), sorted_w.data(), W, uniq.data(), sums.data(), Q.pool);
  GTADOC_EXPECTS(G == gr.groups, "gpu engine: n-gram groups do not match");
  Q.mark("reduce");
  DeviceBuffer<uint32_t> keys(G * Q.n, Q.pool);
  DeviceBuffer<uint64_t> counts(G, Q.pool);
  ngram_records_kernel<<<grid_for(G), kBlock, 0, Q.stream>>>(
      kp, gr.scols.data(), W, gr.first.data(), sums.data(), G, Q.item_word, keys.data(),
      counts.data());
  GTADOC_CHECK_LAUNCH();
  Q.mark("records");
  out = hand_over_records(Q, std::move(keys), std::move(counts), G, Q.n);
  Q.mark("download");
  return out;
}

OwnSet intern_windows(Query& Q) {
  const GpuShard& s = Q.s;
  OwnSet own;
  WindowIndex idx = index_windows(Q, nullptr);
  const uint64_t W = idx.windows;
  if (W >= (uint64_t{1} << 32))
    throw ResourceError("gpu engine: " + std::to_string(W) +
                        " local n-gram windows in one shard exceed the 2^32 the GPU engine can "
                        "intern; use smaller shards or --engine cpu");
  const KeyPack kp = make_pack(Q.n, Q.vocab().size());
  own.unit_store = DeviceBuffer<uint32_t>(W, Q.pool);
  own.item_store = DeviceBuffer<uint32_t>(W, Q.pool);
  own.off_store = DeviceBuffer<uint64_t>(uint64_t{s.units} + 1, Q.pool);
  own_offsets_kernel<<<grid_for(uint64_t{s.units} + 1), kBlock, 0, Q.stream>>>(
      s.unit_begin.data(), idx.off.data(), s.units, W, own.off_store.data());
  GTADOC_CHECK_LAUNCH();
  if (W > 0) {
    DeviceBuffer<uint64_t> cols(uint64_t{kp.nw} * W, Q.pool);
    write_windows_kernel<<<grid_for(s.S), kBlock, 0, Q.stream>>>(
        make_scan(Q, &idx, nullptr), kp, 0, s.S, idx.off.data(), 0, W, cols.data(), nullptr,
        own.unit_store.data());
    GTADOC_CHECK_LAUNCH();
    idx = WindowIndex();
    Grouped gr = group_windows(Q, kp, cols, W);
    scatter_kernel<<<grid_for(W), kBlock, 0, Q.stream>>>(gr.gid.data(), gr.perm.data(), W,
                                                         own.item_store.data());
    GTADOC_CHECK_LAUNCH();
    Q.gid_items = DeviceBuffer<uint32_t>(gr.groups * Q.n, Q.pool);
    if (gr.groups > 0) {
      group_items_kernel<<<grid_for(gr.groups), kBlock, 0, Q.stream>>>(
          kp, gr.scols.data(), W, gr.first.data(), gr.groups, Q.gid_items.data());
      GTADOC_CHECK_LAUNCH();
    }
    own.items = gr.groups;
  }
  own.csr = {own.off_store.data(), own.unit_store.data(), own.item_store.data(), nullptr};
  own.h_off_store = own.off_store.to_host();
  own.h_off = own.h_off_store;
  Q.mark("intern windows");
  return own;
}

}  // namespace gtadoc::gpu
