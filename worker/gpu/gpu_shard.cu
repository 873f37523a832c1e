// Load-time work of the GPU engine, done once per shard and reused by every query: the shard's
// local vocabulary, bodies re-encoded and uploaded, the unit of every position, children and
// terms CSR (distinct symbols per unit with multiplicities, deduplicated on the device with a
// radix sort and reduce-by-key), the rules' uses in the root, and the per-level schedules of the
// static DAG grouped by workload class.
#include <algorithm>
#include <atomic>
#include <bit>
#include <string>

#include "worker/gpu/gpu_internal.h"
#include "worker/gpu/primitives.cuh"

namespace gtadoc::gpu {
namespace {

int activate_device(int device) {
  CUDA_TRY(cudaSetDevice(device));
  return device;
}

/// Key of position p for the CSR of child rules (rules = true) or of words: (unit << 32 | id);
/// positions of no interest get the sentinel (units << 32), which sorts last.
__global__ void csr_keys_kernel(const uint32_t* body, const uint32_t* sym_unit, uint64_t S,
                                bool rules, uint64_t sentinel, uint64_t* keys) {
  for (uint64_t p = global_thread(); p < S; p += global_stride()) {
    const uint32_t u = sym_unit[p];
    const uint32_t x = body[p];
    const bool is_rule = (x & kRuleFlag) != 0;
    const bool take = u != kNoUnit && is_rule == rules;
    keys[p] = take ? (static_cast<uint64_t>(u) << 32 | (x & ~kRuleFlag)) : sentinel;
  }
}

__global__ void csr_split_kernel(const uint64_t* keys, const uint32_t* lens, uint64_t n,
                                 uint32_t* unit, uint32_t* item, uint32_t* cnt, uint32_t* row_len) {
  for (uint64_t e = global_thread(); e < n; e += global_stride()) {
    const uint32_t u = static_cast<uint32_t>(keys[e] >> 32);
    unit[e] = u;
    item[e] = static_cast<uint32_t>(keys[e]);
    cnt[e] = lens[e];
    atomicAdd(row_len + u, 1u);
  }
}

__global__ void root_uses_kernel(const uint32_t* item, const uint32_t* cnt, uint64_t begin,
                                 uint64_t end, unsigned long long* root_uses) {
  for (uint64_t e = begin + global_thread(); e < end; e += global_stride())
    atomicAdd(root_uses + item[e], static_cast<unsigned long long>(cnt[e]));
}

struct CsrBuffers {
  DeviceBuffer<uint64_t> off;
  DeviceBuffer<uint32_t> unit, item, cnt;
};

/// Distinct child rules (rules = true) or words of every unit, with multiplicities.
CsrBuffers build_csr(const GpuShard& s, bool rules, uint64_t taken, MemoryPool& pool) {
  cudaStream_t st = pool.stream();
  CsrBuffers out;
  out.off = DeviceBuffer<uint64_t>(uint64_t{s.units} + 1, pool);
  DeviceBuffer<uint32_t> row_len(s.units, pool);
  row_len.memset_async(0);
  uint64_t n = 0;
  DeviceBuffer<uint64_t> uniq;
  DeviceBuffer<uint32_t> lens;
  if (taken > 0) {
    DeviceBuffer<uint64_t> keys(s.S, pool), alt(s.S, pool);
    const uint64_t sentinel = static_cast<uint64_t>(s.units) << 32;
    csr_keys_kernel<<<grid_for(s.S), kBlock, 0, st>>>(s.body.data(), s.sym_unit.data(), s.S, rules,
                                                      sentinel, keys.data());
    GTADOC_CHECK_LAUNCH();
    sort_keys(keys, alt, s.S, 32 + bits_for(s.units), pool);
    // Only the first `taken` sorted keys are real; the sentinels follow.
    uniq = std::move(alt);
    lens = DeviceBuffer<uint32_t>(taken, pool);
    n = run_length_encode(keys.data(), taken, uniq.data(), lens.data(), pool);
  }
  out.unit = DeviceBuffer<uint32_t>(n, pool);
  out.item = DeviceBuffer<uint32_t>(n, pool);
  out.cnt = DeviceBuffer<uint32_t>(n, pool);
  if (n > 0) {
    csr_split_kernel<<<grid_for(n), kBlock, 0, st>>>(uniq.data(), lens.data(), n, out.unit.data(),
                                                     out.item.data(), out.cnt.data(),
                                                     row_len.data());
    GTADOC_CHECK_LAUNCH();
  }
  const uint64_t total = exclusive_offsets(row_len.data(), s.units, out.off.data(), pool);
  GTADOC_EXPECTS(total == n, "gpu engine: CSR offsets do not add up");
  return out;
}

uint64_t next_serial() {
  static std::atomic<uint64_t> serial{0};
  return ++serial;
}

}  // namespace

void build_level_schedule(GpuShard& s, const std::vector<uint32_t>& level_offsets) {
  GTADOC_EXPECTS(!level_offsets.empty() && level_offsets.back() == s.inner,
                 "gpu engine: bad level offsets");
  const uint32_t inner_levels = static_cast<uint32_t>(level_offsets.size() - 1);
  const std::vector<uint64_t>& len = s.h_body_len;
  std::vector<uint32_t> hlevel(s.inner), hsched;
  hsched.reserve(s.inner);
  s.levels.assign(inner_levels, LevelSchedule{});
  for (uint32_t h = 0; h < inner_levels; ++h) {
    const uint32_t lo = level_offsets[h], hi = level_offsets[h + 1];
    GTADOC_EXPECTS(lo <= hi && hi <= s.inner, "gpu engine: bad level offsets");
    LevelSchedule& ls = s.levels[h];
    ls.begin = static_cast<uint32_t>(hsched.size());
    // Thread class: counting sort by body length.
    std::vector<uint32_t> by_len(kThreadMaxBody + 2, 0);
    for (uint32_t r = lo; r < hi; ++r) {
      hlevel[r] = h;
      if (len[r] <= kThreadMaxBody) ++by_len[len[r] + 1];
    }
    for (uint32_t i = 0; i <= kThreadMaxBody; ++i) by_len[i + 1] += by_len[i];
    ls.threads = by_len[kThreadMaxBody + 1];
    hsched.resize(hsched.size() + ls.threads);
    for (uint32_t r = lo; r < hi; ++r)
      if (len[r] <= kThreadMaxBody) hsched[ls.begin + by_len[len[r]]++] = r;
    for (uint32_t r = lo; r < hi; ++r)
      if (len[r] > kThreadMaxBody && len[r] <= kWarpMaxBody) {
        hsched.push_back(r);
        ++ls.warps;
      }
    for (uint32_t r = lo; r < hi; ++r)
      if (len[r] > kWarpMaxBody) {
        hsched.push_back(r);
        ++ls.blocks;
      }
  }
  GTADOC_EXPECTS(hsched.size() == s.inner, "gpu engine: level schedule does not cover the rules");
  MemoryPool& pool = s.ctx->pool;
  s.level_of = DeviceBuffer<uint32_t>(hlevel, pool);
  s.sched = DeviceBuffer<uint32_t>(hsched, pool);
}

const std::vector<uint32_t>& GpuShard::host_children() const {
  if (!have_h_ch_item) {
    h_ch_item = ch_item.to_host();
    have_h_ch_item = true;
  }
  return h_ch_item;
}

GpuShard::GpuShard(std::shared_ptr<DeviceContext> context)
    : ctx(std::move(context)), serial(next_serial()) {}

DeviceContext::DeviceContext(int dev)
    : device(activate_device(dev)), stream(), pool(dev, stream.get()) {}

void DeviceContext::activate() const {
  CUDA_TRY(cudaSetDevice(device));
}

GpuShard::GpuShard(ShardGrammar grammar, std::shared_ptr<DeviceContext> context)
    : ctx(std::move(context)), serial(next_serial()), g(std::move(grammar)) {
  ctx->activate();
  MemoryPool& pool = ctx->pool;
  cudaStream_t st = ctx->stream.get();

  GTADOC_EXPECTS(g.rule_offsets.size() >= 2, "gpu engine: grammar has no root rule");
  GTADOC_EXPECTS(g.rule_offsets.front() == 0 && g.rule_offsets.back() == g.symbols.size(),
                 "gpu engine: bad rule offsets");
  GTADOC_EXPECTS(g.num_rules() < kRuleFlag, "gpu engine: too many rules");
  GTADOC_EXPECTS(g.level_offsets.size() >= 2 && g.level_offsets.back() == g.num_rules(),
                 "gpu engine: bad level offsets");
  inner = g.num_rules() - 1;
  GTADOC_EXPECTS(g.level_offsets[g.num_levels() - 1] == inner,
                 "gpu engine: the root must be alone on the top level");
  num_docs = g.num_docs;
  GTADOC_EXPECTS(num_docs >= 1 && g.doc_root_offsets.size() == static_cast<size_t>(num_docs) + 1,
                 "gpu engine: bad document offsets");
  GTADOC_EXPECTS(static_cast<uint64_t>(inner) + num_docs < kNoUnit,
                 "gpu engine: too many rules and documents in one shard");
  units = inner + num_docs;
  S = g.symbols.size();
  const uint32_t V = g.num_words;
  GTADOC_EXPECTS(V < kRuleFlag, "gpu engine: vocabulary too large");

  // 1. Shard-local vocabulary: the distinct words the shard uses, in id order.
  std::vector<uint64_t> bits((static_cast<size_t>(V) + 63) / 64, 0);
  for (Symbol x : g.symbols)
    if (is_word(x, V)) bits[x >> 6] |= uint64_t{1} << (x & 63);
  std::vector<uint32_t> rank(bits.size() + 1, 0);
  for (size_t i = 0; i < bits.size(); ++i)
    rank[i + 1] = rank[i] + static_cast<uint32_t>(std::popcount(bits[i]));
  local_words.reserve(rank.back());
  for (size_t i = 0; i < bits.size(); ++i)
    for (uint64_t b = bits[i]; b != 0; b &= b - 1)
      local_words.push_back(static_cast<WordId>(i * 64 + std::countr_zero(b)));

  // 2. Bodies re-encoded, the unit of every position, unit ranges; structural checks.
  std::vector<uint32_t> hbody(S), hunit(S, kNoUnit);
  std::vector<uint64_t> ub(units), ue(units);
  uint64_t rule_positions = 0, word_positions = 0;
  auto encode = [&](uint64_t p, uint32_t unit, uint32_t child_limit) {
    const Symbol x = g.symbols[p];
    GTADOC_EXPECTS(!is_boundary(x), "gpu engine: boundary symbol inside a rule or document");
    hunit[p] = unit;
    if (is_word(x, V)) {
      const uint64_t m = bits[x >> 6] & ((uint64_t{1} << (x & 63)) - 1);
      hbody[p] = rank[x >> 6] + static_cast<uint32_t>(std::popcount(m));
      ++word_positions;
    } else {
      const RuleId c = rule_of(x, V);
      GTADOC_EXPECTS(c < child_limit, "gpu engine: rule references a rule of greater id");
      hbody[p] = kRuleFlag | c;
      ++rule_positions;
    }
  };
  for (uint32_t r = 0; r < inner; ++r) {
    ub[r] = g.rule_offsets[r];
    ue[r] = g.rule_offsets[r + 1];
    for (uint64_t p = ub[r]; p < ue[r]; ++p) encode(p, r, r);
  }
  const uint64_t root_begin = g.rule_offsets[inner];
  for (uint64_t p = root_begin; p < S; ++p) hbody[p] = kBoundaryCode;  // overwritten below
  for (uint32_t d = 0; d < num_docs; ++d) {
    auto [b, e] = g.doc_segment(d);
    GTADOC_EXPECTS(b <= e && e <= S && b >= root_begin, "gpu engine: bad document segment");
    ub[inner + d] = b;
    ue[inner + d] = e;
    for (uint64_t p = b; p < e; ++p) encode(p, inner + d, inner);
    if (d + 1 < num_docs)
      GTADOC_EXPECTS(e < S && is_boundary(g.symbols[e]),
                     "gpu engine: documents not separated by a boundary symbol");
  }
  for (uint64_t p = root_begin; p < S; ++p)
    GTADOC_EXPECTS(hunit[p] != kNoUnit || is_boundary(g.symbols[p]),
                   "gpu engine: root symbol outside every document");
  h_body_len.resize(units);
  for (uint32_t u = 0; u < units; ++u) h_body_len[u] = ue[u] - ub[u];

  body = DeviceBuffer<uint32_t>(hbody, pool);
  sym_unit = DeviceBuffer<uint32_t>(hunit, pool);
  unit_begin = DeviceBuffer<uint64_t>(ub, pool);
  unit_end = DeviceBuffer<uint64_t>(ue, pool);
  std::vector<uint32_t>().swap(hunit);
  std::vector<uint32_t>().swap(hbody);

  // 3. Children and terms CSR on the device.
  {
    CsrBuffers c = build_csr(*this, true, rule_positions, pool);
    ch_off = std::move(c.off);
    ch_unit = std::move(c.unit);
    ch_item = std::move(c.item);
    ch_cnt = std::move(c.cnt);
  }
  {
    CsrBuffers t = build_csr(*this, false, word_positions, pool);
    tm_off = std::move(t.off);
    tm_unit = std::move(t.unit);
    tm_item = std::move(t.item);
    tm_cnt = std::move(t.cnt);
  }
  h_ch_off = ch_off.to_host();
  h_tm_off = tm_off.to_host();

  // 4. Uses in the root (the root's segments split over many threads), and the rules it uses.
  root_uses = DeviceBuffer<uint64_t>(inner, pool);
  root_uses.memset_async(0);
  const uint64_t rb = h_ch_off[inner], re = h_ch_off[units];
  if (re > rb) {
    root_uses_kernel<<<grid_for(re - rb), kBlock, 0, st>>>(
        ch_item.data(), ch_cnt.data(), rb, re,
        reinterpret_cast<unsigned long long*>(root_uses.data()));
    GTADOC_CHECK_LAUNCH();
  }
  {
    const std::vector<uint64_t> uses = root_uses.to_host();
    std::vector<uint32_t> top;
    for (uint32_t r = 0; r < inner; ++r)
      if (uses[r] != 0) top.push_back(r);
    top_rules = DeviceBuffer<uint32_t>(top, pool);
  }

  // 5. Heights and the level schedules (workload classes by body length).
  build_level_schedule(*this,
                       std::vector<uint32_t>(g.level_offsets.begin(), g.level_offsets.end() - 1));
  ctx->stream.synchronize();
}

}  // namespace gtadoc::gpu
