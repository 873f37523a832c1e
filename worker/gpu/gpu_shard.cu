// Load-time work of the GPU engine, done once per shard and reused by every query: the plan
// layer's shard layout (worker/plan/shard_layout.h: the units, and with GTADOC_GPU_HOST_BAGS=1
// the re-encoded bodies, bags and root uses built on the host as the CPU engine builds them)
// uploaded, the vocabulary read from the grammar the shard keeps; the grammar's symbols re-encoded,
// the unit of every position and the bags derived on the device; and the per-level schedules of the
// static DAG grouped by workload class.
#include <algorithm>
#include <atomic>
#include <string>

#include "common/parallel.h"
#include "common/recycled_arrays.h"
#include "common/settings.h"

#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {
namespace {

int activate_device(int device) {
  CUDA_TRY(cudaSetDevice(device));
  apply_wait_policy();
  return device;
}

/// The units' ends from their beginnings: an inner rule ends where the next unit begins, a
/// document's root segment one symbol before (the boundary between documents), and the last unit
/// at `last_end`.
__global__ void unit_ends_kernel(const uint64_t* begin, uint64_t* end, uint64_t units,
                                 uint64_t inner, uint64_t last_end) {
  const uint64_t u = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (u < units) end[u] = u + 1 < units ? begin[u + 1] - (u >= inner ? 1 : 0) : last_end;
}

/// The grammar's symbols, uploaded into `body`, re-encoded there as the host layout would
/// (plan::layout_code).
__global__ void layout_codes_kernel(uint32_t* body, uint64_t n, uint32_t num_words) {
  for (uint64_t i = global_thread(); i < n; i += global_stride())
    body[i] = plan::layout_code(body[i], num_words);
}

/// Whether unit_ends_kernel gives `end` from `begin` (the layout's units, inner rules first).
bool ends_follow_begins(const std::vector<uint64_t>& begin, const std::vector<uint64_t>& end,
                        uint64_t inner) {
  for (size_t u = 0; u + 1 < begin.size(); ++u)
    if (end[u] + (u >= inner ? 1 : 0) != begin[u + 1]) return false;
  return true;
}

uint64_t next_serial() {
  static std::atomic<uint64_t> serial{0};
  return ++serial;
}

}  // namespace

void apply_wait_policy() {
  const std::string_view wait = settings::word("GTADOC_CUDA_WAIT");
  const unsigned flags = wait == "yield"   ? cudaDeviceScheduleYield
                         : wait == "block" ? cudaDeviceScheduleBlockingSync
                                           : cudaDeviceScheduleSpin;
  CUDA_TRY(cudaSetDeviceFlags(flags));  // the same flags again for each context of the device
}

void build_level_schedule(GpuShard& s, const std::vector<uint32_t>& level_offsets,
                          plan::LevelSchedules* prepared, unsigned threads) {
  GTADOC_EXPECTS(!level_offsets.empty() && level_offsets.back() == s.inner,
                 "gpu engine: bad level offsets");
  const uint32_t inner_levels = static_cast<uint32_t>(level_offsets.size() - 1);
  plan::LevelSchedules built;
  if (prepared == nullptr) {
    built = plan::build_level_schedules(s.h_body_len, level_offsets, s.inner, threads);
    prepared = &built;
  }
  GTADOC_EXPECTS(prepared->levels.size() == inner_levels && prepared->sched.size() == s.inner,
                 "gpu engine: the prepared level schedule is not this shard's");
  s.levels = prepared->levels;  // copied: a failed load leaves `prepared` whole for a retry
  const std::vector<uint32_t>& hsched = prepared->sched;
  MemoryPool& pool = s.ctx->pool;
  // The level of every rule, on the device from the level offsets (no host array).
  const std::vector<uint64_t> offsets(level_offsets.begin(), level_offsets.end());
  DeviceBuffer<uint64_t> d_offsets(offsets, pool);
  s.level_of = DeviceBuffer<uint32_t>(s.inner, pool);
  ranges_of_positions(d_offsets.data(), d_offsets.data() + 1, inner_levels, s.inner, 0,
                      s.level_of.data(), pool.stream());
  s.sched = DeviceBuffer<uint32_t>(hsched, pool);
}

const std::vector<uint32_t>& GpuShard::host_children() const {
  if (!have_h_ch_item) {
    h_ch_item = ch_item.to_host();
    have_h_ch_item = true;
  }
  return h_ch_item;
}

void GpuShard::rehome(std::shared_ptr<DeviceContext> to) {
  GTADOC_EXPECTS(to->device == ctx->device, "gpu engine: a shard moved to another device");
  GTADOC_EXPECTS(cache.vocab.empty() && cache.seq.empty(),
                 "gpu engine: a shard moved after a query");
  MemoryPool& pool = to->pool;
  auto move = [&](auto&... bufs) { (bufs.rehome(pool), ...); };
  move(body, sym_unit, unit_begin, unit_end, ch_off, ch_unit, ch_item, ch_cnt, tm_off, tm_unit,
       tm_item, tm_cnt, root_uses, level_of, sched, top_rules, doc_ids);
  ctx = std::move(to);
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

GpuShard::GpuShard(ShardGrammar& grammar, std::shared_ptr<plan::ShardLayout> prepared,
                   std::shared_ptr<DeviceContext> context, bool keep_symbols,
                   const std::optional<std::string>& bodies_unchecked)
    : ctx(std::move(context)), serial(next_serial()) {
  ctx->activate();
  MemoryPool& pool = ctx->pool;
  GTADOC_EXPECTS(grammar.num_docs >= 1, "gpu engine: a shard without documents");

  // 1. The plan layer's layout, built ahead (prepare_shard) or here on the host's threads (the
  // same as the CPU engine's).
  std::lock_guard<std::mutex> host_lock(ctx->host_mutex);
  PhaseLog phases(ctx->stream.get());
  auto mark = [&](const char* phase) {
    if (phases.enabled()) phases.mark(phase);
  };
  if (!prepared)
    prepared = std::make_shared<plan::ShardLayout>(plan::build_shard_layout(
        grammar, ctx->host_exec(), nullptr, plan::gpu_layout_parts()));
  plan::ShardLayout& layout = *prepared;
  // The bodies re-encoded on the host with the bags (LayoutParts::kAll), else here on the device.
  const bool encode_on_device = !layout.has_bags;
  GTADOC_EXPECTS(layout.body.size() == (encode_on_device ? 0 : grammar.symbols.size()) &&
                     layout.num_docs == grammar.num_docs,
                 "gpu engine: the prepared layout is not this shard's");
  mark("layout");
  inner = layout.num_inner;
  num_docs = layout.num_docs;
  units = inner + num_docs;
  S = grammar.symbols.size();
  const bool host_bags = layout.has_bags;
  // Bags built on the host read every body: the grammar must be checked whole first.
  if (host_bags && bodies_unchecked) validate_grammar(grammar, *bodies_unchecked);
  const bool check_bodies = !host_bags && bodies_unchecked;
  // Bodies the device rejects: the message the host's checks give (an unchecked grammar), else
  // (the host checked it) a disagreement between the two.
  auto rejected = [&] {
    if (bodies_unchecked) validate_grammar(grammar, *bodies_unchecked, 1);
    throw InternalError("gpu engine: the device rejects the bodies of a shard of " +
                        std::to_string(grammar.symbols.size()) +
                        " symbols that the host's checks accept");
  };

  // 2. Uploaded: bodies and unit ranges, and the bags, the rules' uses in the root and the rules
  // the root uses when the host built them (else they are built on the device from the bodies,
  // build_bags_on_device); every buffer allocated first, then filled through the pinned staging
  // slots. The unit of every position and of every bag entry are derived on the device.
  std::vector<HostCopy> uploads;
  auto alloc = [&]<class T>(DeviceBuffer<T>& buf, const std::vector<T>& host) {
    buf = DeviceBuffer<T>(host.size(), pool);
    uploads.push_back({buf.data(), host.data(), host.size() * sizeof(T)});
  };
  alloc(body, encode_on_device ? grammar.symbols : layout.body);
  alloc(unit_begin, layout.unit_begin);
  // The units' ends follow from their beginnings (the rules' bodies side by side, then the
  // documents' root segments, one boundary symbol apart): derived on the device, not uploaded.
  const bool derive_ends = ends_follow_begins(layout.unit_begin, layout.unit_end, layout.num_inner);
  if (derive_ends)
    unit_end = DeviceBuffer<uint64_t>(layout.unit_end.size(), pool);
  else
    alloc(unit_end, layout.unit_end);
  std::vector<uint32_t> top;
  if (host_bags) {
    for (uint32_t r = 0; r < inner; ++r)
      if (layout.root_uses[r] != 0) top.push_back(r);
    alloc(ch_off, layout.children.off);
    alloc(ch_item, layout.children.item);
    alloc(ch_cnt, layout.children.cnt);
    alloc(tm_off, layout.terms.off);
    alloc(tm_item, layout.terms.item);
    alloc(tm_cnt, layout.terms.cnt);
    alloc(root_uses, layout.root_uses);
    alloc(top_rules, top);
    ch_unit = DeviceBuffer<uint32_t>(layout.children.item.size(), pool);
    tm_unit = DeviceBuffer<uint32_t>(layout.terms.item.size(), pool);
  }
  // The stored rule metadata, for the body checks only (the shard keeps it on the host).
  DeviceBuffer<uint64_t> check_length;
  DeviceBuffer<uint32_t> check_uses;
  if (check_bodies) {
    alloc(check_length, grammar.rule_length);
    alloc(check_uses, grammar.rule_uses);
  }
  sym_unit = DeviceBuffer<uint32_t>(S, pool);
  mark("alloc");
  upload_host(*ctx, uploads);  // synchronous: the host arrays may change now
  if (encode_on_device && S != 0) {
    layout_codes_kernel<<<grid_for(S), kBlock, 0, pool.stream()>>>(body.data(), S,
                                                                   grammar.num_words);
    GTADOC_CHECK_LAUNCH();
  }
  if (derive_ends && !unit_end.empty()) {
    const uint64_t n = unit_end.size();
    unit_ends_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, pool.stream()>>>(
        unit_begin.data(), unit_end.data(), n, layout.num_inner, layout.unit_end.back());
    GTADOC_CHECK_LAUNCH();
  }
  mark("copy");
  // The body lengths kept on the host in the memory of the unit ends, already touched (first
  // touch of a fresh array costs ~0.6 ms per MiB on a VM); given back as they were if the load
  // fails below, so the caller can load the prepared shard again (after freeing memory).
  h_body_len = std::move(layout.unit_end);
  uint64_t positions = 0;
  for (uint32_t u = 0; u < units; ++u) {
    h_body_len[u] -= layout.unit_begin[u];
    positions += h_body_len[u];
  }
  struct GiveBackEnds {
    std::vector<uint64_t>& lengths;
    plan::ShardLayout& layout;
    bool loaded = false;
    ~GiveBackEnds() {
      if (loaded) return;
      for (size_t u = 0; u < lengths.size(); ++u) lengths[u] += layout.unit_begin[u];
      layout.unit_end = std::move(lengths);
    }
  } give_back{h_body_len, layout};
  ranges_of_positions(unit_begin.data(), unit_end.data(), units, S, plan::kNoUnit, sym_unit.data(),
                      pool.stream());
  if (host_bags) {
    ranges_of_positions(ch_off.data(), ch_off.data() + 1, units, ch_unit.size(), plan::kNoUnit,
                        ch_unit.data(), pool.stream());
    ranges_of_positions(tm_off.data(), tm_off.data() + 1, units, tm_unit.size(), plan::kNoUnit,
                        tm_unit.data(), pool.stream());
  } else if (!build_bags_on_device(*this, static_cast<uint32_t>(grammar.local_words.size()),
                                   positions)) {
    rejected();
  }
  mark("derive");

  // 3. Heights and the level schedules (workload classes by body length).
  build_level_schedule(
      *this, std::vector<uint32_t>(grammar.level_offsets.begin(), grammar.level_offsets.end() - 1),
      layout.has_schedule ? &layout.schedule : nullptr);
  if (check_bodies) {
    mark("levels");
    if (!bodies_valid_on_device(*this, grammar, check_length, check_uses)) rejected();
    mark("check");
  }
  ctx->stream.synchronize();
  give_back.loaded = true;
  // Loaded (nothing below throws): the grammar and the host arrays kept are the shard's, moved
  // rather than copied (first touch of a copy costs ~0.6 ms per MiB).
  if (host_bags) {
    h_ch_off = std::move(layout.children.off);
    h_tm_off = std::move(layout.terms.off);
  }
  g = std::move(grammar);
  // The symbols, the re-encoded bodies, the units' beginnings and the schedule are on the device
  // now: their memory goes to the next shard's read and layout (common/recycled_arrays.h).
  if (!keep_symbols) recycled::give(std::move(g.symbols));
  recycled::give(std::move(layout.body));
  recycled::give(std::move(layout.unit_begin));
  recycled::give(std::move(layout.schedule.sched));
  mark("schedule");
  if (phases.enabled()) load_phases = phases.summary();
}

}  // namespace gtadoc::gpu
