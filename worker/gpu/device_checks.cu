// The body checks of a grammar read with only its frame checked (formats/grammar.h,
// check_grammar_frame), made on the device from what the load builds there anyway: the bags
// (one row per distinct child or word of each unit, with its count, items ascending) give each
// rule's uses, its length and its largest child without another pass over the symbols, a thread
// per row (a long document's rows would keep one thread per unit busy for milliseconds), and the
// host never scans the bodies. The conditions checked before (build_bags_on_device: no boundary
// inside a unit, every child below its unit and below the root) make every row's item an index
// the arrays below can take.
#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {
namespace {

/// What the kernels report, in one small buffer read back once.
struct CheckSlots {
  unsigned long long bad;        ///< nonzero: a rule's uses, length or level, or a word unused
  unsigned long long root_len;   ///< the documents' lengths summed (modulo 2^64)
  unsigned long long carries;    ///< times that sum wrapped
  unsigned long long max_child;  ///< largest child of the root + 1 (0: none)
};

/// `length[u] += add`, flagging a wrap (the unit's true length is then 2^64 or more).
__device__ inline void add_length(unsigned long long* length, uint64_t add, CheckSlots* out) {
  const unsigned long long was = atomicAdd(length, static_cast<unsigned long long>(add));
  if (was + add < was) out->bad = 1;
}

/// One bag row per thread: the uses of each child, the words seen, and each unit's length as the
/// sum of its rows' (count x the child's stored length, or count).
__global__ void row_sums_kernel(UnitCsr ch, uint64_t n_ch, UnitCsr tm, uint64_t n_tm,
                                const uint64_t* rule_length, uint32_t* uses, uint8_t* word_seen,
                                unsigned long long* length, CheckSlots* out) {
  for (uint64_t i = global_thread(); i < n_ch; i += global_stride()) {
    const uint32_t c = ch.item[i];
    const uint64_t cnt = ch.cnt[i], child_length = rule_length[c];
    atomicAdd(&uses[c], static_cast<uint32_t>(cnt));  // modulo 2^32, as the stored counts are
    if (__umul64hi(cnt, child_length) != 0) out->bad = 1;
    add_length(&length[ch.unit[i]], cnt * child_length, out);
  }
  for (uint64_t i = global_thread(); i < n_tm; i += global_stride()) {
    word_seen[tm.item[i]] = 1;
    add_length(&length[tm.unit[i]], tm.cnt[i], out);
  }
}

__global__ void compare_uses_kernel(const uint32_t* uses, const uint32_t* rule_uses, uint32_t inner,
                                    const uint8_t* word_seen, uint32_t words, CheckSlots* out) {
  for (uint64_t i = global_thread(); i < inner; i += global_stride())
    if (uses[i] != rule_uses[i]) out->bad = 1;
  for (uint64_t i = global_thread(); i < words; i += global_stride())
    if (word_seen[i] == 0) out->bad = 1;
}

/// One unit per thread: a rule's length against the stored one and its largest child (the last
/// of its children rows) on the level below its own, none at level 0; a document's length summed
/// into the root's, its largest child into the root's.
__global__ void check_units_kernel(const uint64_t* ch_off, const uint32_t* ch_item,
                                   const unsigned long long* length, const uint64_t* rule_length,
                                   const uint32_t* level_of, const uint32_t* level_offsets,
                                   uint32_t inner, uint32_t units, CheckSlots* out) {
  for (uint64_t u = global_thread(); u < units; u += global_stride()) {
    const uint64_t first = ch_off[u], end = ch_off[u + 1];
    if (u < inner) {
      const uint32_t h = level_of[u];
      const bool level_ok = h == 0 ? first == end
                                   : first != end && ch_item[end - 1] >= level_offsets[h - 1] &&
                                         ch_item[end - 1] < level_offsets[h];
      if (!level_ok || length[u] != rule_length[u]) out->bad = 1;
    } else {
      const unsigned long long was = atomicAdd(&out->root_len, length[u]);
      if (was + length[u] < was) atomicAdd(&out->carries, 1ull);
      if (first != end) atomicMax(&out->max_child, ch_item[end - 1] + 1ull);
    }
  }
}

}  // namespace

bool bodies_valid_on_device(const GpuShard& s, const ShardGrammar& g,
                            const DeviceBuffer<uint64_t>& rule_length,
                            const DeviceBuffer<uint32_t>& rule_uses) {
  MemoryPool& pool = s.ctx->pool;
  cudaStream_t stream = pool.stream();
  const uint32_t words = g.num_words;
  GTADOC_EXPECTS(rule_length.size() == uint64_t{s.inner} + 1 && rule_uses.size() >= s.inner &&
                     g.level_offsets.size() >= 2,
                 "gpu engine: the stored rule metadata does not match the shard");
  DeviceBuffer<CheckSlots> slots(1, pool);
  slots.memset_async(0);
  DeviceBuffer<uint32_t> uses(s.inner, pool);
  uses.memset_async(0);
  DeviceBuffer<uint8_t> word_seen(words, pool);
  word_seen.memset_async(0);
  DeviceBuffer<unsigned long long> length(s.units, pool);
  length.memset_async(0);
  const DeviceBuffer<uint32_t> level_offsets(g.level_offsets, pool);
  const uint64_t n_ch = s.ch_item.size(), n_tm = s.tm_item.size();
  if (n_ch + n_tm != 0) {
    row_sums_kernel<<<grid_for(std::max(n_ch, n_tm)), kBlock, 0, stream>>>(
        s.children(), n_ch, s.terms(), n_tm, rule_length.data(), uses.data(), word_seen.data(),
        length.data(), slots.data());
    GTADOC_CHECK_LAUNCH();
  }
  if (std::max(s.inner, words) != 0) {
    compare_uses_kernel<<<grid_for(std::max(s.inner, words)), kBlock, 0, stream>>>(
        uses.data(), rule_uses.data(), s.inner, word_seen.data(), words, slots.data());
    GTADOC_CHECK_LAUNCH();
  }
  check_units_kernel<<<grid_for(s.units), kBlock, 0, stream>>>(
      s.ch_off.data(), s.ch_item.data(), length.data(), rule_length.data(), s.level_of.data(),
      level_offsets.data(), s.inner, s.units, slots.data());
  GTADOC_CHECK_LAUNCH();
  const CheckSlots got = slots.get(0);
  if (got.bad != 0 || got.carries != 0 || got.root_len != g.rule_length[s.inner]) return false;
  // The root, alone on the top level L - 1: its largest child on level L - 2, or none at all.
  const size_t L = g.level_offsets.size() - 1;
  if (L == 1) return got.max_child == 0;
  const uint64_t child = got.max_child - 1;
  return got.max_child != 0 && child >= g.level_offsets[L - 2] && child < g.level_offsets[L - 1];
}

}  // namespace gtadoc::gpu
