// The body checks of a grammar read with only its frame checked (formats/grammar.h,
// check_grammar_frame), made on the device from what the load builds there anyway: the bags
// (one row per distinct child or word of each unit, with its count, items ascending) give each
// rule's uses, its length and its largest child without another pass over the symbols, and the
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
  unsigned long long carries;    ///< times that sum wrapped, or a document's length overflowed
  unsigned long long max_child;  ///< largest child of the root + 1 (0: none)
};

__global__ void count_uses_kernel(const uint32_t* ch_item, const uint32_t* ch_cnt, uint64_t n_ch,
                                  const uint32_t* tm_item, uint64_t n_tm, uint32_t* uses,
                                  uint8_t* word_seen) {
  for (uint64_t i = global_thread(); i < n_ch; i += global_stride())
    atomicAdd(&uses[ch_item[i]], ch_cnt[i]);  // modulo 2^32, as the stored counts are
  for (uint64_t i = global_thread(); i < n_tm; i += global_stride()) word_seen[tm_item[i]] = 1;
}

__global__ void compare_uses_kernel(const uint32_t* uses, const uint32_t* rule_uses,
                                    uint32_t inner, const uint8_t* word_seen, uint32_t words,
                                    CheckSlots* out) {
  for (uint64_t i = global_thread(); i < inner; i += global_stride())
    if (uses[i] != rule_uses[i]) out->bad = 1;
  for (uint64_t i = global_thread(); i < words; i += global_stride())
    if (word_seen[i] == 0) out->bad = 1;
}

/// One unit per thread: its length from its rows (overflow-checked), compared with the stored one
/// for a rule, summed into the root's for a document; a rule's largest child on the level below
/// its own (none at level 0); the root's largest child kept.
__global__ void check_units_kernel(UnitCsr ch, UnitCsr tm, const uint64_t* rule_length,
                                   const uint32_t* level_of, const uint32_t* level_offsets,
                                   uint32_t inner, uint32_t units, CheckSlots* out) {
  for (uint64_t u = global_thread(); u < units; u += global_stride()) {
    bool overflow = false;
    uint64_t length = 0;
    for (uint64_t j = tm.off[u]; j < tm.off[u + 1]; ++j) {
      const uint64_t add = tm.cnt[j];
      overflow |= length + add < length;
      length += add;
    }
    const uint64_t first = ch.off[u], end = ch.off[u + 1];
    for (uint64_t j = first; j < end; ++j) {
      const uint64_t cnt = ch.cnt[j], child_length = rule_length[ch.item[j]];
      const uint64_t add = cnt * child_length;
      overflow |= __umul64hi(cnt, child_length) != 0 || length + add < length;
      length += add;
    }
    if (u < inner) {
      const uint32_t h = level_of[u];
      const bool level_ok =
          h == 0 ? first == end
                 : first != end && ch.item[end - 1] >= level_offsets[h - 1] &&
                       ch.item[end - 1] < level_offsets[h];
      if (overflow || !level_ok || length != rule_length[u]) out->bad = 1;
    } else {
      const unsigned long long was = atomicAdd(&out->root_len, length);
      if (overflow || was + length < was) atomicAdd(&out->carries, 1ull);
      if (first != end) atomicMax(&out->max_child, ch.item[end - 1] + 1ull);
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
  const DeviceBuffer<uint32_t> level_offsets(g.level_offsets, pool);
  const uint64_t n_ch = s.ch_item.size(), n_tm = s.tm_item.size();
  if (n_ch + n_tm != 0) {
    count_uses_kernel<<<grid_for(std::max(n_ch, n_tm)), kBlock, 0, stream>>>(
        s.ch_item.data(), s.ch_cnt.data(), n_ch, s.tm_item.data(), n_tm, uses.data(),
        word_seen.data());
    GTADOC_CHECK_LAUNCH();
  }
  if (std::max(s.inner, words) != 0) {
    compare_uses_kernel<<<grid_for(std::max(s.inner, words)), kBlock, 0, stream>>>(
        uses.data(), rule_uses.data(), s.inner, word_seen.data(), words, slots.data());
    GTADOC_CHECK_LAUNCH();
  }
  check_units_kernel<<<grid_for(s.units), kBlock, 0, stream>>>(
      s.children(), s.terms(), rule_length.data(), s.level_of.data(), level_offsets.data(),
      s.inner, s.units, slots.data());
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
