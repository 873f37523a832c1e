// A loaded shard's bags built on the device (build_bags_on_device, gpu_internal.h): every body
// position of a unit becomes one 64-bit key (kind, unit, item) — kind 0 for a child rule, 1 for
// a word — the keys are radix sorted and run-length encoded, and the runs are the children rows
// (kind 0) then the terms rows (kind 1), each row's items ascending with their multiplicities:
// the arrays the host layout builds (worker/plan/shard_layout.cpp), from an upload of the bodies
// alone. The rules' uses in the root and the rules the root uses follow from the children rows
// of the document units.
#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {
namespace {

/// Field widths of a bag key: item in bits [0, ibits), unit in [ibits, ibits + ubits), kind
/// at bit ibits + ubits. 2^ubits > units, so the all-ones key (positions outside every unit)
/// sorts after every real key.
struct KeyBits {
  int ibits = 0, ubits = 0;
  __host__ __device__ uint64_t imask() const { return (uint64_t{1} << ibits) - 1; }
  __host__ __device__ uint64_t umask() const { return (uint64_t{1} << ubits) - 1; }
  __host__ __device__ int kind_shift() const { return ibits + ubits; }
};

__global__ void bag_keys_kernel(const uint32_t* body, const uint32_t* sym_unit, uint64_t n,
                                uint32_t inner, KeyBits kb, uint64_t* keys, uint32_t* bad) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const uint32_t u = sym_unit[i];
    const uint32_t x = body[i];
    uint64_t key = ~uint64_t{0};
    if (u != kNoUnit) {
      if (x == kBoundaryCode) {
        *bad = 1;  // a boundary symbol inside a unit
      } else if (x & kRuleFlag) {
        const uint32_t c = x & ~kRuleFlag;
        if (c >= (u < inner ? u : inner)) *bad = 1;  // a rule of its own id or greater
        key = (uint64_t{u} << kb.ibits) | c;
      } else {
        key = (uint64_t{1} << kb.kind_shift()) | (uint64_t{u} << kb.ibits) | x;
      }
    }
    keys[i] = key;
  }
}

/// *split = the first run of kind 1 (left as initialized, the number of runs, when none is).
__global__ void first_term_kernel(const uint64_t* runs_key, uint64_t runs, int kind_shift,
                                  uint64_t* split) {
  for (uint64_t i = global_thread(); i < runs; i += global_stride())
    if ((runs_key[i] >> kind_shift) != 0 && (i == 0 || (runs_key[i - 1] >> kind_shift) == 0))
      *split = i;
}

__global__ void bag_rows_kernel(const uint64_t* runs_key, const uint32_t* runs_len, uint64_t runs,
                                uint64_t split, KeyBits kb, uint32_t* ch_unit, uint32_t* ch_item,
                                uint32_t* ch_cnt, uint32_t* tm_unit, uint32_t* tm_item,
                                uint32_t* tm_cnt) {
  for (uint64_t i = global_thread(); i < runs; i += global_stride()) {
    const uint64_t key = runs_key[i];
    const uint32_t u = static_cast<uint32_t>((key >> kb.ibits) & kb.umask());
    const uint32_t item = static_cast<uint32_t>(key & kb.imask());
    if (i < split) {
      ch_unit[i] = u;
      ch_item[i] = item;
      ch_cnt[i] = runs_len[i];
    } else {
      const uint64_t j = i - split;
      tm_unit[j] = u;
      tm_item[j] = item;
      tm_cnt[j] = runs_len[i];
    }
  }
}

/// off[r] = the first entry of row r (entries' rows ascending), for r in [0, rows]: a binary
/// search per row, so long runs of empty rows cost nothing more.
__global__ void row_offsets_kernel(const uint32_t* row, uint64_t n, uint64_t rows, uint64_t* off) {
  for (uint64_t r = global_thread(); r <= rows; r += global_stride()) {
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (row[mid] < r) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    off[r] = lo;
  }
}

__global__ void root_uses_kernel(const uint32_t* unit, const uint32_t* item, const uint32_t* cnt,
                                 uint64_t n, uint32_t inner, unsigned long long* root_uses) {
  for (uint64_t j = global_thread(); j < n; j += global_stride())
    if (unit[j] >= inner) atomicAdd(&root_uses[item[j]], static_cast<unsigned long long>(cnt[j]));
}

__global__ void used_flags_kernel(const uint64_t* uses, uint64_t n, uint32_t* flags) {
  for (uint64_t r = global_thread(); r < n; r += global_stride()) flags[r] = uses[r] != 0;
}

__global__ void scatter_flagged_kernel(const uint32_t* flags, const uint64_t* pos, uint64_t n,
                                       uint32_t* out) {
  for (uint64_t r = global_thread(); r < n; r += global_stride())
    if (flags[r] != 0) out[pos[r]] = static_cast<uint32_t>(r);
}

void row_offsets(const DeviceBuffer<uint32_t>& row, uint64_t n, uint64_t rows,
                 DeviceBuffer<uint64_t>& off, cudaStream_t stream) {
  row_offsets_kernel<<<grid_for(rows + 1), kBlock, 0, stream>>>(row.data(), n, rows, off.data());
  GTADOC_CHECK_LAUNCH();
}

}  // namespace

bool build_bags_on_device(GpuShard& s, uint32_t num_local, uint64_t positions) {
  MemoryPool& pool = s.ctx->pool;
  cudaStream_t stream = pool.stream();
  KeyBits kb;
  kb.ibits = bits_for(std::max<uint64_t>({s.inner, num_local, 1}));
  kb.ubits = bits_for(s.units);
  GTADOC_EXPECTS(kb.kind_shift() < 64, "gpu engine: too many units and items for bag keys");

  // Keys of every position (positions outside the units, the boundaries, get the all-ones key
  // and sort last), sorted; the first `positions` are the units' symbols.
  DeviceBuffer<uint64_t> keys(std::max<uint64_t>(s.S, 1), pool);
  DeviceBuffer<uint32_t> bad(1, pool);
  bad.memset_async(0);
  if (s.S != 0) {
    bag_keys_kernel<<<grid_for(s.S), kBlock, 0, stream>>>(s.body.data(), s.sym_unit.data(), s.S,
                                                          s.inner, kb, keys.data(), bad.data());
    GTADOC_CHECK_LAUNCH();
  }
  DeviceBuffer<uint64_t> runs_key(std::max<uint64_t>(s.S, 1), pool);
  sort_keys(keys, runs_key, s.S, kb.kind_shift() + 1, pool);
  DeviceBuffer<uint32_t> runs_len(std::max<uint64_t>(positions, 1), pool);
  const uint64_t runs =
      run_length_encode(keys.data(), positions, runs_key.data(), runs_len.data(), pool);
  keys = DeviceBuffer<uint64_t>();
  if (bad.get(0) != 0) return false;  // before anything indexes by the items

  // Children rows are the runs of kind 0, terms rows those of kind 1.
  DeviceBuffer<uint64_t> d_split(std::vector<uint64_t>{runs}, pool);
  if (runs != 0) {
    first_term_kernel<<<grid_for(runs), kBlock, 0, stream>>>(runs_key.data(), runs,
                                                             kb.kind_shift(), d_split.data());
    GTADOC_CHECK_LAUNCH();
  }
  const uint64_t n_ch = d_split.get(0), n_tm = runs - n_ch;
  s.ch_unit = DeviceBuffer<uint32_t>(n_ch, pool);
  s.ch_item = DeviceBuffer<uint32_t>(n_ch, pool);
  s.ch_cnt = DeviceBuffer<uint32_t>(n_ch, pool);
  s.tm_unit = DeviceBuffer<uint32_t>(n_tm, pool);
  s.tm_item = DeviceBuffer<uint32_t>(n_tm, pool);
  s.tm_cnt = DeviceBuffer<uint32_t>(n_tm, pool);
  if (runs != 0) {
    bag_rows_kernel<<<grid_for(runs), kBlock, 0, stream>>>(
        runs_key.data(), runs_len.data(), runs, n_ch, kb, s.ch_unit.data(), s.ch_item.data(),
        s.ch_cnt.data(), s.tm_unit.data(), s.tm_item.data(), s.tm_cnt.data());
    GTADOC_CHECK_LAUNCH();
  }
  runs_key = DeviceBuffer<uint64_t>();
  runs_len = DeviceBuffer<uint32_t>();
  s.ch_off = DeviceBuffer<uint64_t>(uint64_t{s.units} + 1, pool);
  s.tm_off = DeviceBuffer<uint64_t>(uint64_t{s.units} + 1, pool);
  row_offsets(s.ch_unit, n_ch, s.units, s.ch_off, stream);
  row_offsets(s.tm_unit, n_tm, s.units, s.tm_off, stream);

  // Uses in the root: the children rows of the document units; the rules used there.
  s.root_uses = DeviceBuffer<uint64_t>(s.inner, pool);
  s.root_uses.memset_async(0);
  if (n_ch != 0) {
    root_uses_kernel<<<grid_for(n_ch), kBlock, 0, stream>>>(
        s.ch_unit.data(), s.ch_item.data(), s.ch_cnt.data(), n_ch, s.inner,
        reinterpret_cast<unsigned long long*>(s.root_uses.data()));
    GTADOC_CHECK_LAUNCH();
  }
  DeviceBuffer<uint32_t> used(s.inner, pool);
  DeviceBuffer<uint64_t> pos(uint64_t{s.inner} + 1, pool);
  if (s.inner != 0) {
    used_flags_kernel<<<grid_for(s.inner), kBlock, 0, stream>>>(s.root_uses.data(), s.inner,
                                                                used.data());
    GTADOC_CHECK_LAUNCH();
  }
  const uint64_t top = exclusive_offsets(used.data(), s.inner, pos.data(), pool);
  s.top_rules = DeviceBuffer<uint32_t>(top, pool);
  if (top != 0) {
    scatter_flagged_kernel<<<grid_for(s.inner), kBlock, 0, stream>>>(used.data(), pos.data(),
                                                                     s.inner, s.top_rules.data());
    GTADOC_CHECK_LAUNCH();
  }
  s.h_ch_off = s.ch_off.to_host();
  s.h_tm_off = s.tm_off.to_host();
  return true;
}

}  // namespace gtadoc::gpu
