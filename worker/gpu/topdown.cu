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
// in batches when memory is short. Triples produced for lower levels wait in per-level slices of
// level-sorted chunks, so each triple is sorted once by level and once by (doc, rule).
#include <memory>
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

/// (doc, rule, weight) triples in struct-of-arrays form, doc relative to the batch start.
struct Triples {
  DeviceBuffer<uint32_t> doc, rule;
  DeviceBuffer<uint64_t> weight;
  uint64_t n = 0;
};
/// A run of one level's triples inside a level-sorted chunk.
struct Slice {
  std::shared_ptr<const Triples> chunk;
  uint64_t off = 0, n = 0;
};

/// Pairs (row << 32 | item, count) for the own entries [begin, end) of units row + unit0.
__global__ void own_range_pairs_kernel(UnitCsr own, uint64_t begin, uint64_t n, uint32_t unit0,
                                       uint64_t* keys, uint64_t* vals) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const uint64_t e = begin + i;
    keys[i] = static_cast<uint64_t>(own.unit[e] - unit0) << 32 | own.item[e];
    vals[i] = own.cnt ? own.cnt[e] : 1u;
  }
}

/// Triples for the child entries [begin, end) of documents' segments.
__global__ void seed_triples_kernel(UnitCsr ch, uint64_t begin, uint64_t n, uint32_t unit0,
                                    uint32_t* doc, uint32_t* rule, uint64_t* weight) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const uint64_t e = begin + i;
    doc[i] = ch.unit[e] - unit0;
    rule[i] = ch.item[e];
    weight[i] = ch.cnt[e];
  }
}

__global__ void level_keys_kernel(const uint32_t* rule, const uint32_t* level_of, uint64_t n,
                                  uint64_t* keys) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) keys[i] = level_of[rule[i]];
}

__global__ void gather_triples_kernel(const uint32_t* doc, const uint32_t* rule,
                                      const uint64_t* weight, const uint32_t* perm, uint64_t n,
                                      uint32_t* odoc, uint32_t* orule, uint64_t* oweight) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const uint32_t j = perm[i];
    odoc[i] = doc[j];
    orule[i] = rule[j];
    oweight[i] = weight[j];
  }
}

__global__ void merge_keys_kernel(const uint32_t* doc, const uint32_t* rule, const uint64_t* w,
                                  uint64_t n, uint64_t* keys, uint64_t* vals) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    keys[i] = static_cast<uint64_t>(doc[i]) << 32 | rule[i];
    vals[i] = w[i];
  }
}

/// lens[t] = entries of the rule of merged triple t in the CSR `csr`.
__global__ void row_lengths_kernel(const uint64_t* keys, uint64_t n, const uint64_t* off,
                                   uint64_t* lens) {
  for (uint64_t t = global_thread(); t < n; t += global_stride()) {
    const uint32_t r = static_cast<uint32_t>(keys[t]);
    lens[t] = off[r + 1] - off[r];
  }
}

/// Own entries of merged triples: (doc << 32 | item, weight x count).
__global__ void expand_own_kernel(const uint64_t* tkeys, const uint64_t* tw, const uint64_t* toff,
                                  uint64_t nt, UnitCsr own, uint64_t total, uint64_t* keys,
                                  uint64_t* vals) {
  for (uint64_t j = global_thread(); j < total; j += global_stride()) {
    const uint64_t t = find_segment(toff, nt, j);
    const uint32_t r = static_cast<uint32_t>(tkeys[t]);
    const uint64_t doc = tkeys[t] >> 32;
    const uint64_t e = own.off[r] + (j - toff[t]);
    keys[j] = doc << 32 | own.item[e];
    vals[j] = tw[t] * (own.cnt ? own.cnt[e] : 1u);
  }
}

/// Children of merged triples: (doc, child, weight x uses).
__global__ void expand_children_kernel(const uint64_t* tkeys, const uint64_t* tw,
                                       const uint64_t* toff, uint64_t nt, UnitCsr ch,
                                       uint64_t total, uint32_t* doc, uint32_t* rule,
                                       uint64_t* weight) {
  for (uint64_t j = global_thread(); j < total; j += global_stride()) {
    const uint64_t t = find_segment(toff, nt, j);
    const uint32_t r = static_cast<uint32_t>(tkeys[t]);
    const uint64_t e = ch.off[r] + (j - toff[t]);
    doc[j] = static_cast<uint32_t>(tkeys[t] >> 32);
    rule[j] = ch.item[e];
    weight[j] = tw[t] * ch.cnt[e];
  }
}

class PerDocTopDown {
 public:
  PerDocTopDown(Query& Q, const OwnSet& own, uint32_t d0, uint32_t d1)
      : Q_(Q),
        s_(Q.s),
        own_(own),
        d0_(d0),
        d1_(d1),
        key_bits_(32 + bits_for(d1 - d0 - 1)),
        pending_(Q.s.num_inner_levels()),
        out_(key_bits_, Q.pool) {}

  RecordBatch run() {
    const uint32_t u0 = s_.inner + d0_, u1 = s_.inner + d1_;
    // The segments' own words, and their children seed the triples.
    const uint64_t ob = own_.h_off[u0], oe = own_.h_off[u1];
    if (oe > ob) {
      Pairs p;
      p.n = oe - ob;
      p.keys = DeviceBuffer<uint64_t>(p.n, Q_.pool);
      p.vals = DeviceBuffer<uint64_t>(p.n, Q_.pool);
      own_range_pairs_kernel<<<grid_for(p.n), kBlock, 0, Q_.stream>>>(own_.csr, ob, p.n, u0,
                                                                      p.keys.data(), p.vals.data());
      GTADOC_CHECK_LAUNCH();
      out_.add(std::move(p));
    }
    const uint64_t cb = s_.h_ch_off[u0], ce = s_.h_ch_off[u1];
    if (ce > cb) {
      Triples t = make_triples(ce - cb);
      seed_triples_kernel<<<grid_for(t.n), kBlock, 0, Q_.stream>>>(
          s_.children(), cb, t.n, u0, t.doc.data(), t.rule.data(), t.weight.data());
      GTADOC_CHECK_LAUNCH();
      bucket_by_level(std::move(t));
    }
    for (uint32_t h = s_.num_inner_levels(); h-- > 0;) step(h);
    Q_.mark("level steps");
    Pairs res = out_.finish();
    Q_.mark("finish pairs");
    return emit_pairs(Q_, res.keys.data(), res.vals.data(), res.n, d0_);
  }

 private:
  Triples make_triples(uint64_t n) {
    Triples t;
    t.n = n;
    t.doc = DeviceBuffer<uint32_t>(n, Q_.pool);
    t.rule = DeviceBuffer<uint32_t>(n, Q_.pool);
    t.weight = DeviceBuffer<uint64_t>(n, Q_.pool);
    return t;
  }

  /// Sorts triples by the level of their rule and files one slice per level.
  void bucket_by_level(Triples t) {
    GTADOC_EXPECTS(t.n < (uint64_t{1} << 32), "gpu engine: more than 2^32 triples in one step");
    DeviceBuffer<uint64_t> lv(t.n, Q_.pool), lv_alt(t.n, Q_.pool);
    DeviceBuffer<uint32_t> perm(t.n, Q_.pool), perm_alt(t.n, Q_.pool);
    level_keys_kernel<<<grid_for(t.n), kBlock, 0, Q_.stream>>>(t.rule.data(), s_.level_of.data(),
                                                               t.n, lv.data());
    GTADOC_CHECK_LAUNCH();
    iota_async(perm.data(), t.n, Q_.stream);
    sort_pairs(lv, lv_alt, perm, perm_alt, t.n, bits_for(s_.num_inner_levels()), Q_.pool);
    perm_alt.reset();
    auto sorted = std::make_shared<Triples>(make_triples(t.n));
    gather_triples_kernel<<<grid_for(t.n), kBlock, 0, Q_.stream>>>(
        t.doc.data(), t.rule.data(), t.weight.data(), perm.data(), t.n, sorted->doc.data(),
        sorted->rule.data(), sorted->weight.data());
    GTADOC_CHECK_LAUNCH();
    t = Triples();
    perm.reset();
    // Runs of equal levels (few: at most the levels below the producer).
    DeviceBuffer<uint32_t> run_len(sorted->n, Q_.pool);
    const uint64_t runs =
        run_length_encode(lv.data(), sorted->n, lv_alt.data(), run_len.data(), Q_.pool);
    std::vector<uint64_t> levels(runs);
    std::vector<uint32_t> lens(runs);
    lv_alt.download(levels.data(), runs);
    run_len.download(lens.data(), runs);
    uint64_t at = 0;
    for (uint64_t i = 0; i < runs; ++i) {
      GTADOC_EXPECTS(levels[i] < pending_.size(), "gpu engine: triple of a bad level");
      pending_[levels[i]].push_back({sorted, at, lens[i]});
      at += lens[i];
    }
  }

  void step(uint32_t h) {
    std::vector<Slice> slices = std::move(pending_[h]);
    pending_[h].clear();
    uint64_t n = 0;
    for (const Slice& sl : slices) n += sl.n;
    if (n == 0) return;
    // 1. Merge equal (doc, rule) triples: the weight of a rule in a document.
    Pairs m;
    m.n = n;
    m.keys = DeviceBuffer<uint64_t>(n, Q_.pool);
    m.vals = DeviceBuffer<uint64_t>(n, Q_.pool);
    uint64_t at = 0;
    for (const Slice& sl : slices) {
      merge_keys_kernel<<<grid_for(sl.n), kBlock, 0, Q_.stream>>>(
          sl.chunk->doc.data() + sl.off, sl.chunk->rule.data() + sl.off,
          sl.chunk->weight.data() + sl.off, sl.n, m.keys.data() + at, m.vals.data() + at);
      GTADOC_CHECK_LAUNCH();
      at += sl.n;
    }
    slices.clear();  // chunks are freed once every level has taken its slice
    m = reduce_pairs(std::move(m), key_bits_, Q_.pool);
    GTADOC_EXPECTS(m.n < (uint64_t{1} << 32), "gpu engine: more than 2^32 triples in one level");

    // 2. Their own entries, x weight.
    DeviceBuffer<uint64_t> lens(m.n, Q_.pool), off(m.n + 1, Q_.pool);
    row_lengths_kernel<<<grid_for(m.n), kBlock, 0, Q_.stream>>>(m.keys.data(), m.n, own_.csr.off,
                                                                lens.data());
    GTADOC_CHECK_LAUNCH();
    const uint64_t total = exclusive_offsets(lens.data(), m.n, off.data(), Q_.pool);
    if (total > 0) {
      Pairs p;
      p.n = total;
      p.keys = DeviceBuffer<uint64_t>(total, Q_.pool);
      p.vals = DeviceBuffer<uint64_t>(total, Q_.pool);
      expand_own_kernel<<<grid_for(total), kBlock, 0, Q_.stream>>>(m.keys.data(), m.vals.data(),
                                                                   off.data(), m.n, own_.csr, total,
                                                                   p.keys.data(), p.vals.data());
      GTADOC_CHECK_LAUNCH();
      out_.add(std::move(p));
    }

    // 3. Their children become triples of lower levels.
    if (h == 0) return;
    row_lengths_kernel<<<grid_for(m.n), kBlock, 0, Q_.stream>>>(m.keys.data(), m.n,
                                                                s_.ch_off.data(), lens.data());
    GTADOC_CHECK_LAUNCH();
    const uint64_t kids = exclusive_offsets(lens.data(), m.n, off.data(), Q_.pool);
    lens.reset();
    if (kids == 0) return;
    Triples t = make_triples(kids);
    expand_children_kernel<<<grid_for(kids), kBlock, 0, Q_.stream>>>(
        m.keys.data(), m.vals.data(), off.data(), m.n, s_.children(), kids, t.doc.data(),
        t.rule.data(), t.weight.data());
    GTADOC_CHECK_LAUNCH();
    m = Pairs();
    off.reset();
    bucket_by_level(std::move(t));
  }

  Query& Q_;
  const GpuShard& s_;
  const OwnSet& own_;
  uint32_t d0_, d1_;
  int key_bits_;
  std::vector<std::vector<Slice>> pending_;
  PairAccumulator out_;
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
