// Load-time work of the GPU engine, done once per shard and reused by every query: the plan
// layer's shard layout (worker/plan/shard_layout.h: local vocabulary, re-encoded bodies, children
// and terms bags, root uses; built on the host's threads, as the CPU engine builds it) uploaded,
// with the unit of every position and of every bag entry, and the per-level schedules of the
// static DAG grouped by workload class.
#include <algorithm>
#include <atomic>
#include <string>

#include "common/parallel.h"

#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {
namespace {

int activate_device(int device) {
  CUDA_TRY(cudaSetDevice(device));
  return device;
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

plan::Exec DeviceContext::host_exec() {
  const unsigned threads = resolve_threads(0);
  if (threads <= 1) return plan::Exec{nullptr, 1};
  if (!host_pool_) host_pool_ = std::make_unique<plan::ThreadPool>(threads);
  return plan::Exec{host_pool_.get(), host_pool_->size()};
}

GpuShard::GpuShard(ShardGrammar grammar, std::shared_ptr<DeviceContext> context)
    : ctx(std::move(context)), serial(next_serial()), g(std::move(grammar)) {
  ctx->activate();
  MemoryPool& pool = ctx->pool;
  GTADOC_EXPECTS(g.num_docs >= 1, "gpu engine: a shard without documents");

  // 1. The plan layer's layout, built on the host's threads (the same as the CPU engine's).
  std::lock_guard<std::mutex> host_lock(ctx->host_mutex);
  const plan::Exec ex = ctx->host_exec();
  plan::ShardLayout layout = plan::build_shard_layout(g, ex);
  inner = layout.num_inner;
  num_docs = layout.num_docs;
  units = inner + num_docs;
  S = g.symbols.size();
  h_body_len.resize(units);
  for (uint32_t u = 0; u < units; ++u) h_body_len[u] = layout.body_length(u);

  // 2. Uploaded: bodies, the unit of every position, unit ranges, the bags with the unit of each
  // entry, the rules' uses in the root and the rules the root uses.
  body = DeviceBuffer<uint32_t>(layout.body, pool);
  sym_unit = DeviceBuffer<uint32_t>(plan::unit_of_positions(layout, ex), pool);
  unit_begin = DeviceBuffer<uint64_t>(layout.unit_begin, pool);
  unit_end = DeviceBuffer<uint64_t>(layout.unit_end, pool);
  ch_off = DeviceBuffer<uint64_t>(layout.children.off, pool);
  ch_unit = DeviceBuffer<uint32_t>(plan::row_of_entries(layout.children, ex), pool);
  ch_item = DeviceBuffer<uint32_t>(layout.children.item, pool);
  ch_cnt = DeviceBuffer<uint32_t>(layout.children.cnt, pool);
  tm_off = DeviceBuffer<uint64_t>(layout.terms.off, pool);
  tm_unit = DeviceBuffer<uint32_t>(plan::row_of_entries(layout.terms, ex), pool);
  tm_item = DeviceBuffer<uint32_t>(layout.terms.item, pool);
  tm_cnt = DeviceBuffer<uint32_t>(layout.terms.cnt, pool);
  root_uses = DeviceBuffer<uint64_t>(layout.root_uses, pool);
  std::vector<uint32_t> top;
  for (uint32_t r = 0; r < inner; ++r)
    if (layout.root_uses[r] != 0) top.push_back(r);
  top_rules = DeviceBuffer<uint32_t>(top, pool);
  h_ch_off = std::move(layout.children.off);
  h_tm_off = std::move(layout.terms.off);
  local_words = std::move(layout.local_words);

  // 3. Heights and the level schedules (workload classes by body length).
  build_level_schedule(*this,
                       std::vector<uint32_t>(g.level_offsets.begin(), g.level_offsets.end() - 1));
  ctx->stream.synchronize();
}

}  // namespace gtadoc::gpu
