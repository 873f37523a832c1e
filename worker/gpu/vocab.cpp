// Per-query vocabulary of the GPU engine (host side, O(local words)): the normalization remap
// restricted to the words the shard uses, compacted to dense items in normalized-id order.
// The result is uploaded as the device remap (local word -> item) used by every kernel, and kept
// in the shard's QueryCache for the next query with the same normalization.
#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "worker/gpu/gpu_internal.h"

namespace gtadoc::gpu {
namespace {

Vocab build_vocab(const GpuShard& s, const Normalization& norm) {
  Vocab v;
  const size_t nl = s.local_words.size();
  if (norm.identity) {  // the remap may be empty for the identity
    v.identity = true;
    v.lnorm.resize(nl);
    std::iota(v.lnorm.begin(), v.lnorm.end(), uint32_t{0});
    v.item_word = s.local_words;
    return v;
  }
  GTADOC_EXPECTS(norm.remap.size() == s.g.num_words,
                 "normalization remap does not cover the shard's vocabulary");
  v.identity = false;
  // Items: the distinct surviving normalized ids, ascending; lnorm by binary search.
  v.item_word.reserve(nl);
  for (WordId w : s.local_words)
    if (norm.remap[w] != kDroppedWord) v.item_word.push_back(norm.remap[w]);
  std::sort(v.item_word.begin(), v.item_word.end());
  v.item_word.erase(std::unique(v.item_word.begin(), v.item_word.end()), v.item_word.end());
  v.lnorm.resize(nl);
  for (size_t i = 0; i < nl; ++i) {
    const WordId r = norm.remap[s.local_words[i]];
    v.lnorm[i] =
        r == kDroppedWord
            ? kNoItem
            : static_cast<uint32_t>(std::lower_bound(v.item_word.begin(), v.item_word.end(), r) -
                                    v.item_word.begin());
  }
  return v;
}

}  // namespace

std::shared_ptr<const PreparedVocab> prepared_vocab(const GpuShard& s, const Normalization& norm,
                                                    MemoryPool& pool) {
  const bool cacheable = norm.identity || norm.cache_key != 0;
  const uint32_t key = norm.identity ? 0 : norm.cache_key;
  if (cacheable) {
    auto it = s.cache.vocab.find(key);
    if (it != s.cache.vocab.end()) return it->second;
  }
  auto pv = std::make_shared<PreparedVocab>();
  pv->vocab = build_vocab(s, norm);
  pv->lnorm = DeviceBuffer<uint32_t>(pv->vocab.lnorm, pool);
  pv->item_word = DeviceBuffer<uint32_t>(pv->vocab.item_word, pool);
  if (cacheable) {
    if (s.cache.vocab.size() >= QueryCache::kMaxEntries) s.cache.vocab.erase(s.cache.vocab.begin());
    s.cache.vocab[key] = pv;
  }
  return pv;
}

}  // namespace gtadoc::gpu
