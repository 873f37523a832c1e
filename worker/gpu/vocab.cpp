// The query's vocabulary on the GPU: plan::build_vocab's remap (local word -> item) uploaded for
// every kernel, and kept in the shard's QueryCache for the next query with the same
// normalization.
#include "common/error.h"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {

std::shared_ptr<const PreparedVocab> prepared_vocab(const GpuShard& s, const Normalization& norm,
                                                    MemoryPool& pool, plan::Vocab* built) {
  const bool cacheable = norm.identity || norm.cache_key != 0;
  const uint32_t key = norm.identity ? 0 : norm.cache_key;
  if (cacheable) {
    auto it = s.cache.vocab.find(key);
    if (it != s.cache.vocab.end()) return it->second;
  }
  auto pv = std::make_shared<PreparedVocab>();
  pv->vocab = built != nullptr ? std::move(*built) : plan::build_vocab(s.g.local_words, norm);
  pv->lnorm = DeviceBuffer<uint32_t>(pv->vocab.lnorm, pool);
  pv->item_word = DeviceBuffer<uint32_t>(pv->vocab.item_word, pool);
  if (cacheable) {
    if (s.cache.vocab.size() >= QueryCache::kMaxEntries) s.cache.vocab.erase(s.cache.vocab.begin());
    s.cache.vocab[key] = pv;
  }
  return pv;
}

}  // namespace gtadoc::gpu
