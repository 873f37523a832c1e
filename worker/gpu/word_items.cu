// Own entries of the word tasks: every unit's terminal words with multiplicities. With the
// identity normalization they are the shard's load-time terms CSR as is; otherwise the terms
// are remapped to items and dropped words are filtered out (count, scan, scatter: exact sizes).
#include "worker/device/primitives.cuh"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {
namespace {

__global__ void keep_flags_kernel(const uint32_t* item, const uint32_t* lnorm, uint64_t n,
                                  uint32_t* keep) {
  for (uint64_t e = global_thread(); e < n; e += global_stride())
    keep[e] = lnorm[item[e]] != kNoItem ? 1u : 0u;
}

__global__ void filter_kernel(UnitCsr in, const uint32_t* lnorm, const uint64_t* pos, uint64_t n,
                              uint32_t* unit, uint32_t* item, uint32_t* cnt) {
  for (uint64_t e = global_thread(); e < n; e += global_stride()) {
    const uint32_t it = lnorm[in.item[e]];
    if (it == kNoItem) continue;
    const uint64_t at = pos[e];
    unit[at] = in.unit[e];
    item[at] = it;
    cnt[at] = in.cnt[e];
  }
}

__global__ void remap_offsets_kernel(const uint64_t* old_off, const uint64_t* pos, uint64_t n,
                                     uint64_t* off) {
  for (uint64_t u = global_thread(); u < n; u += global_stride()) off[u] = pos[old_off[u]];
}

}  // namespace

OwnSet word_own_set(Query& Q) {
  const GpuShard& s = Q.s;
  OwnSet own;
  own.items = Q.vocab().size();
  if (Q.vocab().identity) {
    own.csr = s.terms();
    own.h_off = s.h_tm_off;
    return own;
  }
  const uint64_t n = s.h_tm_off.back();
  DeviceBuffer<uint32_t> keep(n, Q.pool);
  DeviceBuffer<uint64_t> pos(n + 1, Q.pool);
  if (n > 0) {
    keep_flags_kernel<<<grid_for(n), kBlock, 0, Q.stream>>>(s.tm_item.data(), Q.lnorm, n,
                                                            keep.data());
    GTADOC_CHECK_LAUNCH();
  }
  const uint64_t kept = exclusive_offsets(keep.data(), n, pos.data(), Q.pool);
  keep.reset();
  own.unit_store = DeviceBuffer<uint32_t>(kept, Q.pool);
  own.item_store = DeviceBuffer<uint32_t>(kept, Q.pool);
  own.cnt_store = DeviceBuffer<uint32_t>(kept, Q.pool);
  own.off_store = DeviceBuffer<uint64_t>(uint64_t{s.units} + 1, Q.pool);
  if (n > 0) {
    filter_kernel<<<grid_for(n), kBlock, 0, Q.stream>>>(
        s.terms(), Q.lnorm, pos.data(), n, own.unit_store.data(), own.item_store.data(),
        own.cnt_store.data());
    GTADOC_CHECK_LAUNCH();
  }
  remap_offsets_kernel<<<grid_for(uint64_t{s.units} + 1), kBlock, 0, Q.stream>>>(
      s.tm_off.data(), pos.data(), uint64_t{s.units} + 1, own.off_store.data());
  GTADOC_CHECK_LAUNCH();
  own.csr = {own.off_store.data(), own.unit_store.data(), own.item_store.data(),
             own.cnt_store.data()};
  own.h_off_store = own.off_store.to_host();
  own.h_off = own.h_off_store;
  Q.mark("own words");
  return own;
}

}  // namespace gtadoc::gpu
