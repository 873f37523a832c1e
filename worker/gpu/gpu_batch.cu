// A batch of resident shards as one merged device DAG (numbering in worker/plan/batch_plan.h): the
// shards' rules level-major, their documents one after another, their vocabularies merged. Every
// traversal then runs on the batch exactly as on one shard: level k of every shard in the same
// launches, one set of per-level tables, one download of the records.
//
// Built from the shards' resident device arrays with device-to-device gathers (each merged array
// is a concatenation of blocks of consecutive units of one shard, so one kernel per array finds
// its block by a binary search over a few hundred segments and remaps symbols, units and items
// through small maps); the units' body ranges are derived there from the shards' own. Only the
// maps, the blocks' places, the CSR offsets and the level schedule come from the host, whose
// passes over the merged units (hundreds of millions in a batch of hundreds of shards) run on
// every core. The batch costs device memory about the size of its shards; the engine caches it
// per set of shards.
#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/parallel.h"
#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"
#include "worker/plan/batch_plan.h"

namespace gtadoc::gpu {
namespace {

/// A shard's resident arrays, as the gather kernels read them.
struct PartView {
  const uint32_t* body;
  const uint32_t* sym_unit;
  const uint64_t* unit_begin;
  const uint64_t* unit_end;
  const uint32_t* unit[2];  ///< [0] children, [1] terms
  const uint32_t* item[2];
  const uint32_t* cnt[2];
  const uint64_t* root_uses;
  uint64_t rule_base;  ///< into the rule map
  uint64_t word_base;  ///< into the word map
};

/// Segments on the device: dst offsets (nseg + 1, exclusive scan of lengths) and sources.
struct SegView {
  const uint64_t* off;
  const uint64_t* src;
  const uint32_t* part;
  const int64_t* delta;
  uint64_t n;
};

struct DeviceSegments {
  DeviceBuffer<uint64_t> off, src;
  DeviceBuffer<uint32_t> part;
  DeviceBuffer<int64_t> delta;
  uint64_t n = 0, total = 0;
  SegView view() const { return {off.data(), src.data(), part.data(), delta.data(), n}; }
};

DeviceSegments upload_segments(const std::vector<BatchSegment>& segs, MemoryPool& pool) {
  DeviceSegments d;
  d.n = segs.size();
  std::vector<uint64_t> off(segs.size() + 1), src(segs.size());
  std::vector<uint32_t> part(segs.size());
  std::vector<int64_t> delta(segs.size());
  for (size_t i = 0; i < segs.size(); ++i) {
    off[i] = segs[i].dst;
    src[i] = segs[i].src;
    part[i] = segs[i].shard;
    delta[i] = segs[i].unit_delta;
  }
  d.total = segs.empty() ? 0 : segs.back().dst + segs.back().len;
  off[segs.size()] = d.total;
  d.off = DeviceBuffer<uint64_t>(off, pool);
  d.src = DeviceBuffer<uint64_t>(src, pool);
  d.part = DeviceBuffer<uint32_t>(part, pool);
  d.delta = DeviceBuffer<int64_t>(delta, pool);
  return d;
}

__device__ inline uint32_t map_symbol(uint32_t x, const PartView& p, const uint32_t* rule_map,
                                      const uint32_t* word_map) {
  if (x == kBoundaryCode) return x;
  if (x & kRuleFlag) return kRuleFlag | rule_map[p.rule_base + (x & ~kRuleFlag)];
  return word_map[p.word_base + x];
}

/// Bodies and the unit of every position. Segments are dense in the merged body, so a position
/// outside every segment cannot exist.
__global__ void gather_body_kernel(SegView sg, const PartView* parts, const uint32_t* rule_map,
                                   const uint32_t* word_map, uint64_t total, uint32_t* body,
                                   uint32_t* sym_unit) {
  for (uint64_t j = global_thread(); j < total; j += global_stride()) {
    const uint64_t s = find_segment(sg.off, sg.n, j);
    const PartView& p = parts[sg.part[s]];
    const uint64_t src = sg.src[s] + (j - sg.off[s]);
    body[j] = map_symbol(p.body[src], p, rule_map, word_map);
    const uint32_t u = p.sym_unit[src];
    sym_unit[j] = u == kNoUnit ? kNoUnit : static_cast<uint32_t>(u + sg.delta[s]);
  }
}

/// Children (which = 0: items are rules) or terms (which = 1: items are words) CSR entries.
__global__ void gather_csr_kernel(SegView sg, const PartView* parts, int which,
                                  const uint32_t* rule_map, const uint32_t* word_map,
                                  uint64_t total, uint32_t* unit, uint32_t* item, uint32_t* cnt) {
  for (uint64_t j = global_thread(); j < total; j += global_stride()) {
    const uint64_t s = find_segment(sg.off, sg.n, j);
    const PartView& p = parts[sg.part[s]];
    const uint64_t src = sg.src[s] + (j - sg.off[s]);
    unit[j] = static_cast<uint32_t>(p.unit[which][src] + sg.delta[s]);
    const uint32_t x = p.item[which][src];
    item[j] = which == 0 ? rule_map[p.rule_base + x] : word_map[p.word_base + x];
    cnt[j] = p.cnt[which][src];
  }
}

/// Per inner rule values (root uses): segments over rule ids.
__global__ void gather_root_uses_kernel(SegView sg, const PartView* parts, uint64_t total,
                                        uint64_t* out) {
  for (uint64_t j = global_thread(); j < total; j += global_stride()) {
    const uint64_t s = find_segment(sg.off, sg.n, j);
    out[j] = parts[sg.part[s]].root_uses[sg.src[s] + (j - sg.off[s])];
  }
}

__global__ void used_flags_kernel(const uint64_t* uses, uint64_t n, uint32_t* flags) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) flags[i] = uses[i] != 0;
}

__global__ void compact_used_kernel(const uint64_t* uses, const uint64_t* pos, uint64_t n,
                                    uint32_t* out) {
  for (uint64_t i = global_thread(); i < n; i += global_stride())
    if (uses[i] != 0) out[pos[i]] = static_cast<uint32_t>(i);
}

/// The body ranges of the merged units: unit u of block b (merged units [first[b], first[b + 1]))
/// begins at body[b], the block's start in the merged body, plus its distance from the block's
/// first unit in its shard, and keeps its length.
struct BlockView {
  const uint64_t* first;  ///< nblocks + 1: the blocks' first merged units, then the units
  const uint32_t* src;    ///< the shard's unit of each block's first unit
  const uint32_t* part;
  const uint64_t* body;
  uint64_t n;
};

__global__ void unit_ranges_kernel(BlockView bl, const PartView* parts, uint64_t units,
                                   uint64_t* begin, uint64_t* end) {
  for (uint64_t u = global_thread(); u < units; u += global_stride()) {
    const uint64_t b = find_segment(bl.first, bl.n, u);
    const PartView& p = parts[bl.part[b]];
    const uint64_t src0 = bl.src[b], src = src0 + (u - bl.first[b]);
    const uint64_t at = bl.body[b] + (p.unit_begin[src] - p.unit_begin[src0]);
    begin[u] = at;
    end[u] = at + (p.unit_end[src] - p.unit_begin[src]);
  }
}

/// Where unit u of shard s begins in its body (u == units: the body's end), as the shard's
/// unit_begin has it: rules at their body, documents at their segment; the boundary after a
/// document belongs to its range.
uint64_t unit_offset(const GpuShard& s, uint64_t u) {
  if (u >= s.units) return s.S;
  if (u < s.inner) return s.g.rule_offsets[u];
  return s.g.doc_segment(static_cast<uint32_t>(u - s.inner)).first;
}

}  // namespace

std::unique_ptr<GpuShard> merge_shards(const std::vector<const GpuShard*>& shards,
                                       std::string* timings) {
  GTADOC_EXPECTS(!shards.empty(), "merge_shards: no shard");
  std::shared_ptr<DeviceContext> ctx = shards.front()->ctx;
  MemoryPool& pool = ctx->pool;
  cudaStream_t st = ctx->stream.get();
  PhaseLog phases(st);  // GTADOC_GPU_PHASES=1: where the build's time goes

  // 1. The plan (host): levels, maps, blocks.
  std::vector<std::vector<uint32_t>> inner_levels(shards.size());
  std::vector<BatchShardShape> shapes(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    const GpuShard& s = *shards[i];
    GTADOC_EXPECTS(s.ctx == ctx && s.batch_shards == 1, "merge_shards: foreign shard");
    inner_levels[i].assign(s.g.level_offsets.begin(), s.g.level_offsets.end() - 1);
    shapes[i] = {inner_levels[i], s.num_docs, s.g.first_doc, s.g.local_words};
  }
  BatchPlan plan = plan_batch(shapes);
  phases.mark("plan");

  auto out = std::make_unique<GpuShard>(ctx);
  GpuShard& m = *out;
  m.batch_shards = static_cast<uint32_t>(shards.size());
  m.inner = plan.inner;
  m.num_docs = plan.num_docs;
  m.units = plan.units();
  m.g.num_words = static_cast<uint32_t>(plan.words.size());
  m.g.local_words = std::move(plan.words);  // the union of the shards' words (not used below)
  m.g.num_docs = plan.num_docs;
  m.g.first_doc = plan.doc_ids.empty() ? shards.front()->g.first_doc : plan.doc_ids.front();
  m.g.level_offsets = plan.level_offsets;
  if (!plan.docs_contiguous) {
    m.h_doc_ids = std::move(plan.doc_ids);  // not used below
    m.doc_ids = DeviceBuffer<uint32_t>(m.h_doc_ids, pool);
  }
  {
    std::vector<std::span<const uint64_t>> lens(shards.size());
    for (size_t i = 0; i < shards.size(); ++i) lens[i] = shards[i]->h_body_len;
    m.h_body_len = gather_units<uint64_t>(plan, lens, true);
    std::vector<std::span<const uint64_t>> rl(shards.size());
    for (size_t i = 0; i < shards.size(); ++i)
      rl[i] = std::span<const uint64_t>(shards[i]->g.rule_length).first(shards[i]->inner);
    m.g.rule_length = gather_units<uint64_t>(plan, rl, false);
  }

  // 2. Placements of the per-unit arrays. The bodies' per-unit offsets are derived on the device
  // (unit_ranges_kernel); the CSRs' are kept on the host too (the selector's estimates).
  std::vector<uint64_t> body_start;  // each block's start in the merged body
  const std::vector<BatchSegment> body_segs = plan_block_segments(
      plan,
      [&](const BatchBlock& b) {
        const GpuShard& s = *shards[b.shard];
        return std::pair<uint64_t, uint64_t>{unit_offset(s, b.src_unit),
                                             unit_offset(s, uint64_t{b.src_unit} + b.count)};
      },
      body_start);
  std::vector<std::span<const uint64_t>> chs(shards.size()), tms(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    chs[i] = shards[i]->h_ch_off;
    tms[i] = shards[i]->h_tm_off;
  }
  const std::vector<BatchSegment> ch_segs = plan_segments(plan, chs, m.h_ch_off);
  const std::vector<BatchSegment> tm_segs = plan_segments(plan, tms, m.h_tm_off);
  m.S = body_start.back();
  // Inner rules: segments over rule ids (the rule blocks).
  std::vector<BatchSegment> rule_segs;
  for (const BatchBlock& b : plan.blocks)
    if (b.dst_unit < plan.inner) rule_segs.push_back({b.dst_unit, b.src_unit, b.count, b.shard, 0});

  phases.mark("placements");

  // 3. Device maps and views.
  std::vector<PartView> hparts(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    const GpuShard& s = *shards[i];
    hparts[i] = PartView{s.body.data(),
                         s.sym_unit.data(),
                         s.unit_begin.data(),
                         s.unit_end.data(),
                         {s.ch_unit.data(), s.tm_unit.data()},
                         {s.ch_item.data(), s.tm_item.data()},
                         {s.ch_cnt.data(), s.tm_cnt.data()},
                         s.root_uses.data(),
                         plan.rule_base[i],
                         plan.word_base[i]};
  }
  DeviceBuffer<PartView> parts(hparts, pool);
  DeviceBuffer<uint32_t> rule_map(plan.rule_map, pool), word_map(plan.word_map, pool);

  phases.mark("maps");

  // 4. Bodies, unit ranges, CSRs, root uses.
  m.unit_begin = DeviceBuffer<uint64_t>(m.units, pool);
  m.unit_end = DeviceBuffer<uint64_t>(m.units, pool);
  if (m.units > 0) {
    const size_t nb = plan.blocks.size();
    std::vector<uint64_t> first(nb + 1);
    std::vector<uint32_t> src(nb), part(nb);
    for (size_t b = 0; b < nb; ++b) {
      first[b] = plan.blocks[b].dst_unit;
      src[b] = plan.blocks[b].src_unit;
      part[b] = plan.blocks[b].shard;
    }
    first[nb] = m.units;
    const DeviceBuffer<uint64_t> d_first(first, pool), d_body(body_start, pool);
    const DeviceBuffer<uint32_t> d_src(src, pool), d_part(part, pool);
    const BlockView bl{d_first.data(), d_src.data(), d_part.data(), d_body.data(), nb};
    unit_ranges_kernel<<<grid_for(m.units), kBlock, 0, st>>>(
        bl, parts.data(), m.units, m.unit_begin.data(), m.unit_end.data());
    GTADOC_CHECK_LAUNCH();
    ctx->stream.synchronize();  // before the blocks are freed
  }
  m.body = DeviceBuffer<uint32_t>(m.S, pool);
  m.sym_unit = DeviceBuffer<uint32_t>(m.S, pool);
  if (m.S > 0) {
    const DeviceSegments sg = upload_segments(body_segs, pool);
    GTADOC_EXPECTS(sg.total == m.S, "merge_shards: body segments do not cover the body");
    gather_body_kernel<<<grid_for(m.S), kBlock, 0, st>>>(sg.view(), parts.data(), rule_map.data(),
                                                         word_map.data(), m.S, m.body.data(),
                                                         m.sym_unit.data());
    GTADOC_CHECK_LAUNCH();
    ctx->stream.synchronize();  // before the segments are freed (stream-ordered anyway)
  }
  auto gather_csr = [&](int which, const std::vector<BatchSegment>& segs,
                        const std::vector<uint64_t>& h_off, DeviceBuffer<uint64_t>& off,
                        DeviceBuffer<uint32_t>& unit, DeviceBuffer<uint32_t>& item,
                        DeviceBuffer<uint32_t>& cnt) {
    const uint64_t n = h_off.back();
    off = DeviceBuffer<uint64_t>(h_off, pool);
    unit = DeviceBuffer<uint32_t>(n, pool);
    item = DeviceBuffer<uint32_t>(n, pool);
    cnt = DeviceBuffer<uint32_t>(n, pool);
    if (n == 0) return;
    const DeviceSegments sg = upload_segments(segs, pool);
    GTADOC_EXPECTS(sg.total == n, "merge_shards: CSR segments do not cover the entries");
    gather_csr_kernel<<<grid_for(n), kBlock, 0, st>>>(sg.view(), parts.data(), which,
                                                      rule_map.data(), word_map.data(), n,
                                                      unit.data(), item.data(), cnt.data());
    GTADOC_CHECK_LAUNCH();
    ctx->stream.synchronize();
  };
  gather_csr(0, ch_segs, m.h_ch_off, m.ch_off, m.ch_unit, m.ch_item, m.ch_cnt);
  gather_csr(1, tm_segs, m.h_tm_off, m.tm_off, m.tm_unit, m.tm_item, m.tm_cnt);

  m.root_uses = DeviceBuffer<uint64_t>(m.inner, pool);
  if (m.inner > 0) {
    const DeviceSegments sg = upload_segments(rule_segs, pool);
    GTADOC_EXPECTS(sg.total == m.inner, "merge_shards: rule segments do not cover the rules");
    gather_root_uses_kernel<<<grid_for(m.inner), kBlock, 0, st>>>(sg.view(), parts.data(), m.inner,
                                                                  m.root_uses.data());
    GTADOC_CHECK_LAUNCH();
    DeviceBuffer<uint32_t> flags(m.inner, pool);
    DeviceBuffer<uint64_t> pos(uint64_t{m.inner} + 1, pool);
    used_flags_kernel<<<grid_for(m.inner), kBlock, 0, st>>>(m.root_uses.data(), m.inner,
                                                            flags.data());
    GTADOC_CHECK_LAUNCH();
    const uint64_t top = exclusive_offsets(flags.data(), m.inner, pos.data(), pool);
    m.top_rules = DeviceBuffer<uint32_t>(top, pool);
    if (top > 0) {
      compact_used_kernel<<<grid_for(m.inner), kBlock, 0, st>>>(m.root_uses.data(), pos.data(),
                                                                m.inner, m.top_rules.data());
      GTADOC_CHECK_LAUNCH();
    }
  }

  phases.mark("gathers");

  // 5. The level schedule of the merged levels.
  build_level_schedule(m, plan.level_offsets, nullptr, 0);
  ctx->stream.synchronize();
  phases.mark("schedule");
  if (phases.enabled() && timings != nullptr) *timings = phases.summary();
  return out;
}

}  // namespace gtadoc::gpu
