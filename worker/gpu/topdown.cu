// Top-down traversals (G-TADOC Algorithm 1, level-synchronous). The DAG is static, so instead
// of G-TADOC's in-edge masks and repeated launches until no rule changes, rules are processed
// by height levels precomputed at load: when level h runs, every parent (greater height) is
// final. Within a level each rule runs with its workload class (thread / warp / block).
//
// Per-document tasks: the weight of a rule in one document is propagated as (doc, rule, weight)
// triples, level by level from the documents' root segments. Design choice (vs G-TADOC's
// bottom-up local tables, which bottomup.cu also provides): the triples of one level are merged
// with a radix sort + reduce-by-key, so the work and memory are proportional to the reachable
// (document, rule) pairs, never to the size of per-rule tables, and documents can be processed
// in batches when memory is short. A level's children are counted by level on the device and,
// after the level's one host synchronization, written straight into per-level runs of one chunk,
// where the lower levels take their slices: no sort by level, and one synchronization per level
// (there were six; H200, 450 MB in one shard: inverted-index 34.5 -> 25.9 ms). Tried and not
// kept: a thread per triple (a warp for long rules) with warp-aggregated output positions
// instead of the scans and segment searches: inverted-index 25 -> 33 ms, the levels' merges
// 5.5 -> 13-14 ms and the expansions 4.9 -> 8.2 ms (docs/PERFORMANCE.md, "Measured and not kept").
#include <bit>
#include <cub/block/block_scan.cuh>
#include <memory>
#include <string>
#include <vector>

#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"
#include "worker/gpu/rule_ops.cuh"

namespace gtadoc::gpu {
namespace {

using ull = unsigned long long;

/// weight[child] += weight[rule] x uses, for every distinct child of the rule.
struct PushWeightsOp {
  const uint64_t* off;
  const uint32_t* child;
  const uint32_t* uses;
  ull* weight;

  __device__ void push(uint32_t r, uint64_t first, uint64_t step) const {
    const ull w = weight[r];
    if (w == 0) return;
    for (uint64_t e = off[r] + first; e < off[r + 1]; e += step)
      atomicAdd(weight + child[e], w * uses[e]);
  }
  __device__ void thread(uint32_t r) const { push(r, 0, 1); }
  __device__ void warp(uint32_t r, uint32_t lane) const { push(r, lane, kWarp); }
  __device__ void block(uint32_t r) const { push(r, threadIdx.x, blockDim.x); }
};

/// acc[item] += weight(unit) x count for every own entry (documents have weight 1).
__global__ void accumulate_weighted_kernel(UnitCsr own, uint64_t n, const uint64_t* weight,
                                           uint32_t inner, ull* acc) {
  for (uint64_t e = global_thread(); e < n; e += global_stride()) {
    const uint32_t u = own.unit[e];
    const uint64_t w = u < inner ? weight[u] : 1;
    if (w == 0) continue;
    atomicAdd(acc + own.item[e], static_cast<ull>(w * (own.cnt ? own.cnt[e] : 1u)));
  }
}

// ------------------------------------------------------------------ per-document triples

/// Bits of a rule's index within its level [lo[h], lo[h + 1]) (at least 1).
__host__ __device__ inline uint32_t level_bits(const uint32_t* lo, uint32_t h) {
  const uint32_t span = lo[h + 1] - lo[h];
  const uint32_t top = span > 1 ? span - 1 : 1;
#ifdef __CUDA_ARCH__
  return 32 - __clz(top);
#else
  return static_cast<uint32_t>(std::bit_width(top));
#endif
}

/// Triples (doc, rule, weight) of one level, reduced or not: key = doc << bits | (rule - lo)
/// (doc relative to the batch start, rule relative to its level's first rule), value = weight.
/// The documents seed the traversal as triples of a pseudo-level whose rules are their own
/// units: key = d << bits | d, lo = the first document's unit.
struct LevelTriples {
  DeviceBuffer<uint64_t> keys, weight;
  uint64_t cap = 0;                 ///< host: the buffers' length (an upper bound of the count)
  const uint64_t* count = nullptr;  ///< device: how many triples there are
  uint32_t lo = 0;                  ///< unit of index 0
  uint32_t bits = 1;                ///< rule-index bits of the key
};

/// Per triple t < count: own[t] and kids[t] = the rule's own entries and distinct children (0
/// past the count).
__global__ void triple_lengths_kernel(const uint64_t* keys, const uint64_t* count, uint64_t cap,
                                      uint32_t lo, uint32_t bits, const uint64_t* own_off,
                                      const uint64_t* ch_off, uint64_t* own, uint64_t* kids) {
  const uint64_t n = *count, mask = (uint64_t{1} << bits) - 1;
  for (uint64_t t = global_thread(); t < cap; t += global_stride()) {
    if (t < n) {
      const uint32_t r = lo + static_cast<uint32_t>(keys[t] & mask);
      own[t] = own_off[r + 1] - own_off[r];
      kids[t] = ch_off[r + 1] - ch_off[r];
    } else {
      own[t] = 0;
      kids[t] = 0;
    }
  }
}

/// Adds one to counter[slot] for every calling lane, one atomic per distinct slot in the warp;
/// returns the counter's value before this lane's increment (lanes of a slot get consecutive
/// values).
__device__ inline ull warp_aggregated_increment(ull* counter, uint32_t slot) {
  const unsigned active = __activemask();
  const unsigned peers = __match_any_sync(active, slot);
  const int leader = __ffs(peers) - 1;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  ull base = 0;
  if (lane == leader) base = atomicAdd(counter + slot, static_cast<ull>(__popc(peers)));
  base = __shfl_sync(peers, base, leader);
  return base + __popc(peers & ((1u << lane) - 1));
}

/// The child entry j of the triples' children (kid_off: exclusive offsets over n triples).
struct ChildEntry {
  uint64_t t;  ///< triple
  uint64_t e;  ///< entry of the children CSR
};
__device__ inline ChildEntry child_entry(const uint64_t* keys, const uint64_t* kid_off, uint64_t n,
                                         uint32_t lo, uint64_t mask, const uint64_t* ch_off,
                                         uint64_t j) {
  const uint64_t t = find_segment(kid_off, n, j);
  const uint32_t r = lo + static_cast<uint32_t>(keys[t] & mask);
  return {t, ch_off[r] + (j - kid_off[t])};
}

/// stat = {count, own entries, child entries, then per level below: children at that level}
/// (stat[3 + level] zeroed before). Grid-stride over the device-side totals.
__global__ void child_levels_kernel(const uint64_t* keys, const uint64_t* count, uint64_t cap,
                                    uint32_t lo, uint32_t bits, const uint64_t* own_off,
                                    const uint64_t* kid_off, UnitCsr ch, const uint32_t* level_of,
                                    ull* stat) {
  const uint64_t n = *count, total = kid_off[cap];
  if (global_thread() == 0) {
    stat[0] = n;
    stat[1] = own_off[cap];
    stat[2] = total;
  }
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (uint64_t j = global_thread(); j < total; j += global_stride()) {
    const ChildEntry c = child_entry(keys, kid_off, n, lo, mask, ch.off, j);
    warp_aggregated_increment(stat + 3, level_of[ch.item[c.e]]);
  }
}

/// Own entries of the triples: (doc << 32 | item, weight x count).
__global__ void expand_own_kernel(const uint64_t* keys, const uint64_t* w, const uint64_t* own_off,
                                  uint64_t n, uint32_t lo, uint32_t bits, UnitCsr own,
                                  uint64_t total, uint64_t* okeys, uint64_t* ovals) {
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (uint64_t j = global_thread(); j < total; j += global_stride()) {
    const uint64_t t = find_segment(own_off, n, j);
    const uint32_t r = lo + static_cast<uint32_t>(keys[t] & mask);
    const uint64_t doc = keys[t] >> bits;
    const uint64_t e = own.off[r] + (j - own_off[t]);
    okeys[j] = doc << 32 | own.item[e];
    ovals[j] = w[t] * (own.cnt ? own.cnt[e] : 1u);
  }
}

/// Children of the triples become triples of their levels, filed by level: child entry j goes
/// to cursor[level]++ (cursor starts at each level's offset in the output).
__global__ void expand_children_kernel(const uint64_t* keys, const uint64_t* w,
                                       const uint64_t* kid_off, uint64_t n, uint32_t lo,
                                       uint32_t bits, UnitCsr ch, const uint32_t* level_of,
                                       const uint32_t* level_lo, uint64_t total, ull* cursor,
                                       uint64_t* okeys, uint64_t* ow) {
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (uint64_t j = global_thread(); j < total; j += global_stride()) {
    const ChildEntry c = child_entry(keys, kid_off, n, lo, mask, ch.off, j);
    const uint32_t child = ch.item[c.e];
    const uint32_t lv = level_of[child];
    const uint64_t doc = keys[c.t] >> bits;
    const ull at = warp_aggregated_increment(cursor, lv);
    okeys[at] = doc << level_bits(level_lo, lv) | (child - level_lo[lv]);
    ow[at] = w[c.t] * ch.cnt[c.e];
  }
}

/// The documents [0, nd) as triples of weight 1 (see LevelTriples).
__global__ void seed_kernel(uint32_t nd, uint32_t bits, uint64_t* keys, uint64_t* w,
                            uint64_t* count) {
  for (uint64_t d = global_thread(); d < nd; d += global_stride()) {
    keys[d] = d << bits | d;
    w[d] = 1;
  }
  if (global_thread() == 0) *count = nd;
}

/// starts[i] = counts[0] + ... + counts[i - 1] (one block).
__global__ void level_starts_kernel(const ull* counts, uint32_t n, ull* starts) {
  using Scan = cub::BlockScan<ull, kBlock>;
  __shared__ typename Scan::TempStorage tmp;
  __shared__ ull carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (uint32_t base = 0; base < n; base += kBlock) {
    const uint32_t i = base + threadIdx.x;
    ull excl = 0, tile = 0;
    Scan(tmp).ExclusiveSum(i < n ? counts[i] : ull{0}, excl, tile);
    if (i < n) starts[i] = carry + excl;
    __syncthreads();
    if (threadIdx.x == 0) carry += tile;
    __syncthreads();
  }
}

/// Up to kMax runs of (key, weight) arrays, copied one after the other.
struct SliceTable {
  static constexpr int kMax = 32;
  const uint64_t* keys[kMax];
  const uint64_t* weight[kMax];
  uint64_t start[kMax + 1];  ///< output offset of each run; start[count] = total
  int count = 0;
};
__global__ void concat_slices_kernel(SliceTable tab, uint64_t* keys, uint64_t* weight) {
  const uint64_t total = tab.start[tab.count];
  for (uint64_t i = global_thread(); i < total; i += global_stride()) {
    int s = 0;
    while (tab.start[s + 1] <= i) ++s;
    const uint64_t k = i - tab.start[s];
    keys[i] = tab.keys[s][k];
    weight[i] = tab.weight[s][k];
  }
}

/// A rank's triples of lower levels, kept level-filed in the chunk their producer wrote.
struct TripleChunk {
  DeviceBuffer<uint64_t> keys, weight;
};
struct Slice {
  std::shared_ptr<const TripleChunk> chunk;
  uint64_t off = 0, n = 0;
};

/// Level-synchronous propagation of (doc, rule, weight) triples from the documents down. Per
/// level: the level's triples (filed there by the levels above) are merged with a radix sort
/// on (doc, rule index) and a reduce-by-key; their own words go to the output pairs; their
/// children are counted by level, and, after the level's one host synchronization (which
/// brings the counts), written straight into per-level runs of one chunk.
class PerDocTopDown {
 public:
  PerDocTopDown(Query& Q, const OwnSet& own, uint32_t d0, uint32_t d1)
      : Q_(Q),
        s_(Q.s),
        own_(own),
        d0_(d0),
        d1_(d1),
        doc_bits_(bits_for(d1 - d0 - 1)),
        levels_(Q.s.num_inner_levels()),
        pending_(levels_),
        out_(32 + doc_bits_, Q.pool) {
    level_lo_host_.assign(s_.g.level_offsets.begin(), s_.g.level_offsets.begin() + levels_ + 1);
    level_lo_ = DeviceBuffer<uint32_t>(level_lo_host_, Q.pool);
    stat_ = DeviceBuffer<uint64_t>(3 + levels_, Q.pool);
    stat_host_.resize(3 + levels_);
  }

  RecordBatch run() {
    const uint32_t nd = d1_ - d0_;
    LevelTriples seed;
    seed.cap = nd;
    seed.lo = s_.inner + d0_;
    seed.bits = static_cast<uint32_t>(doc_bits_);
    seed.keys = DeviceBuffer<uint64_t>(nd, Q_.pool);
    seed.weight = DeviceBuffer<uint64_t>(nd, Q_.pool);
    DeviceBuffer<uint64_t> seed_count(1, Q_.pool);
    seed_kernel<<<grid_for(nd), kBlock, 0, Q_.stream>>>(nd, seed.bits, seed.keys.data(),
                                                        seed.weight.data(), seed_count.data());
    GTADOC_CHECK_LAUNCH();
    seed.count = seed_count.data();
    expand(seed, levels_);
    for (uint32_t h = levels_; h-- > 0;) step(h);
    Q_.mark("level steps");
    if (Q_.phases.enabled())
      Q_.phases.note(std::to_string(tally_[4]) +
                     " levels with triples: " + std::to_string(tally_[0]) + " triples in, " +
                     std::to_string(tally_[1]) + " merged, " + std::to_string(tally_[2]) +
                     " own entries, " + std::to_string(tally_[3]) + " children; largest level " +
                     std::to_string(largest_));
    Pairs res = out_.finish();
    Q_.mark("finish pairs");
    return emit_pairs(Q_, res.keys.data(), res.vals.data(), res.n, d0_);
  }

 private:
  /// Level h: merges its triples, then expands them.
  void step(uint32_t h) {
    std::vector<Slice> slices = std::move(pending_[h]);
    pending_[h].clear();
    uint64_t n = 0;
    for (const Slice& sl : slices) n += sl.n;
    if (n == 0) return;
    GTADOC_EXPECTS(n < (uint64_t{1} << 32), "gpu engine: more than 2^32 triples in one level");
    DeviceBuffer<uint64_t> keys(n, Q_.pool), weight(n, Q_.pool);
    uint64_t first = 0;  // where this group of slices starts in keys / weight
    for (size_t i = 0; i < slices.size(); i += SliceTable::kMax) {
      SliceTable tab;
      uint64_t at = 0;
      for (size_t k = i; k < slices.size() && tab.count < SliceTable::kMax; ++k) {
        tab.keys[tab.count] = slices[k].chunk->keys.data() + slices[k].off;
        tab.weight[tab.count] = slices[k].chunk->weight.data() + slices[k].off;
        tab.start[tab.count] = at;
        at += slices[k].n;
        ++tab.count;
      }
      tab.start[tab.count] = at;
      concat_slices_kernel<<<grid_for(at), kBlock, 0, Q_.stream>>>(tab, keys.data() + first,
                                                                   weight.data() + first);
      GTADOC_CHECK_LAUNCH();
      first += at;
    }
    slices.clear();  // chunks are freed once every level has taken its slice
    const uint32_t bits = level_bits(level_lo_host_.data(), h);
    {
      DeviceBuffer<uint64_t> keys_alt(n, Q_.pool), weight_alt(n, Q_.pool);
      sort_pairs(keys, keys_alt, weight, weight_alt, n, static_cast<int>(bits) + doc_bits_,
                 Q_.pool);
      keys_alt.reset();
      weight_alt.reset();
    }
    LevelTriples m;
    m.cap = n;
    m.lo = level_lo_host_[h];
    m.bits = bits;
    m.keys = DeviceBuffer<uint64_t>(n, Q_.pool);
    m.weight = DeviceBuffer<uint64_t>(n, Q_.pool);
    DeviceBuffer<uint64_t> count(1, Q_.pool);
    reduce_by_key_async(keys.data(), weight.data(), n, m.keys.data(), m.weight.data(), count.data(),
                        Q_.pool);
    keys.reset();
    weight.reset();
    m.count = count.data();
    Q_.mark("level merge");
    expand(m, h);
    Q_.mark("level expand");
  }

  /// The triples' own entries to the output; their children, all of levels below `below`,
  /// filed into pending_. One host synchronization.
  void expand(const LevelTriples& m, uint32_t below) {
    DeviceBuffer<uint64_t> own_len(m.cap, Q_.pool), kid_len(m.cap, Q_.pool);
    triple_lengths_kernel<<<grid_for(m.cap), kBlock, 0, Q_.stream>>>(
        m.keys.data(), m.count, m.cap, m.lo, m.bits, own_.csr.off, s_.ch_off.data(), own_len.data(),
        kid_len.data());
    GTADOC_CHECK_LAUNCH();
    DeviceBuffer<uint64_t> own_off(m.cap + 1, Q_.pool), kid_off(m.cap + 1, Q_.pool);
    exclusive_offsets_async(own_len.data(), m.cap, own_off.data(), Q_.pool);
    exclusive_offsets_async(kid_len.data(), m.cap, kid_off.data(), Q_.pool);
    own_len.reset();
    kid_len.reset();
    CUDA_TRY(cudaMemsetAsync(stat_.data(), 0, (3 + below) * sizeof(uint64_t), Q_.stream));
    child_levels_kernel<<<kStatGrid, kBlock, 0, Q_.stream>>>(
        m.keys.data(), m.count, m.cap, m.lo, m.bits, own_off.data(), kid_off.data(), s_.children(),
        s_.level_of.data(), reinterpret_cast<ull*>(stat_.data()));
    GTADOC_CHECK_LAUNCH();
    stat_.download(stat_host_.data(), 3 + below);
    const uint64_t n = stat_host_[0], own_total = stat_host_[1], kids = stat_host_[2];
    Q_.mark("level count");
    if (Q_.phases.enabled()) {
      tally_[0] += m.cap;
      tally_[1] += n;
      tally_[2] += own_total;
      tally_[3] += kids;
      tally_[4] += m.cap > 0;
      largest_ = std::max(largest_, m.cap);
    }

    if (own_total > 0) {
      Pairs p;
      p.n = own_total;
      p.keys = DeviceBuffer<uint64_t>(own_total, Q_.pool);
      p.vals = DeviceBuffer<uint64_t>(own_total, Q_.pool);
      expand_own_kernel<<<grid_for(own_total), kBlock, 0, Q_.stream>>>(
          m.keys.data(), m.weight.data(), own_off.data(), n, m.lo, m.bits, own_.csr, own_total,
          p.keys.data(), p.vals.data());
      GTADOC_CHECK_LAUNCH();
      out_.add(std::move(p));
    }
    if (kids == 0) return;
    GTADOC_EXPECTS(below > 0, "gpu engine: children below level 0");
    // Each level's run in the chunk starts at the sum of the counts of the levels before it.
    std::vector<uint64_t> start(below);
    uint64_t at = 0;
    for (uint32_t lv = 0; lv < below; ++lv) {
      start[lv] = at;
      at += stat_host_[3 + lv];
    }
    GTADOC_EXPECTS(at == kids, "gpu engine: children counted by level do not add up");
    DeviceBuffer<uint64_t> cursor(below, Q_.pool);
    level_starts_kernel<<<1, kBlock, 0, Q_.stream>>>(reinterpret_cast<const ull*>(stat_.data()) + 3,
                                                     below, reinterpret_cast<ull*>(cursor.data()));
    GTADOC_CHECK_LAUNCH();
    auto chunk = std::make_shared<TripleChunk>();
    chunk->keys = DeviceBuffer<uint64_t>(kids, Q_.pool);
    chunk->weight = DeviceBuffer<uint64_t>(kids, Q_.pool);
    expand_children_kernel<<<grid_for(kids), kBlock, 0, Q_.stream>>>(
        m.keys.data(), m.weight.data(), kid_off.data(), n, m.lo, m.bits, s_.children(),
        s_.level_of.data(), level_lo_.data(), kids, reinterpret_cast<ull*>(cursor.data()),
        chunk->keys.data(), chunk->weight.data());
    GTADOC_CHECK_LAUNCH();
    for (uint32_t lv = 0; lv < below; ++lv)
      if (stat_host_[3 + lv] > 0) pending_[lv].push_back({chunk, start[lv], stat_host_[3 + lv]});
  }

  static constexpr unsigned kStatGrid = 512;

  Query& Q_;
  const GpuShard& s_;
  const OwnSet& own_;
  uint32_t d0_, d1_;
  int doc_bits_;
  uint32_t levels_;
  std::vector<std::vector<Slice>> pending_;
  PairAccumulator out_;
  std::vector<uint32_t> level_lo_host_;  ///< levels_ + 1 first rules of the inner levels
  DeviceBuffer<uint32_t> level_lo_;
  DeviceBuffer<uint64_t> stat_;
  std::vector<uint64_t> stat_host_;
  uint64_t tally_[5] = {0, 0, 0, 0, 0};  ///< GTADOC_GPU_PHASES=1: in, merged, own, kids, levels
  uint64_t largest_ = 0;
};

}  // namespace

DeviceBuffer<uint64_t> rule_weights(Query& Q) {
  const GpuShard& s = Q.s;
  DeviceBuffer<uint64_t> w(s.inner, Q.pool);
  copy_async(w.data(), s.root_uses.data(), s.inner, Q.stream);
  const PushWeightsOp op{s.ch_off.data(), s.ch_item.data(), s.ch_cnt.data(),
                         reinterpret_cast<ull*>(w.data())};
  // Level 0 rules have no rule children.
  for (uint32_t h = s.num_inner_levels(); h-- > 1;) launch_level(s, s.levels[h], op, Q.stream);
  Q.mark("rule weights");
  return w;
}

RecordBatch topdown_global(Query& Q, const OwnSet& own, const DeviceBuffer<uint64_t>& weights) {
  DeviceBuffer<uint64_t> acc(own.items, Q.pool);
  acc.memset_async(0);
  const uint64_t n = own.entries();
  if (n > 0) {
    accumulate_weighted_kernel<<<grid_for(n), kBlock, 0, Q.stream>>>(
        own.csr, n, weights.data(), Q.s.inner, reinterpret_cast<ull*>(acc.data()));
    GTADOC_CHECK_LAUNCH();
  }
  Q.mark("accumulate");
  return emit_dense(Q, acc.data(), own.items);
}

RecordBatch topdown_per_doc(Query& Q, const OwnSet& own, uint32_t d0, uint32_t d1) {
  GTADOC_EXPECTS(d0 < d1 && d1 <= Q.s.num_docs, "topdown_per_doc: bad document range");
  return PerDocTopDown(Q, own, d0, d1).run();
}

}  // namespace gtadoc::gpu
