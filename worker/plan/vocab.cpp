// build_vocab (worker/plan/vocab.h): the surviving normalized ids of the shard's words, sorted.
#include "worker/plan/vocab.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "worker/plan/radix_sort.h"
#include "worker/plan/shard_layout.h"

namespace gtadoc::plan {

Vocab build_vocab(const std::vector<WordId>& local_words, const Normalization& norm) {
  Vocab v;
  const size_t nl = local_words.size();
  if (norm.identity) {  // the remap may be empty for the identity
    v.identity = true;
    v.lnorm.resize(nl);
    std::iota(v.lnorm.begin(), v.lnorm.end(), uint32_t{0});
    v.item_word = local_words;
    return v;
  }
  GTADOC_EXPECTS(local_words.empty() || local_words.back() < norm.remap.size(),
                 "normalization remap does not cover the shard's vocabulary");
  v.identity = false;
  // The normalized ids of the shard's words, sorted with their local indices (one radix sort of
  // (id, index) pairs) and numbered as items in that order: work in the shard's vocabulary,
  // never in the dictionary's.
  v.lnorm.assign(nl, kNoItem);
  std::vector<uint64_t> pairs, tmp;
  pairs.reserve(nl);
  v.item_word.reserve(nl);
  WordId max = 0;
  for (size_t i = 0; i < nl; ++i) {
    const WordId r = norm.remap[local_words[i]];
    if (r == kDroppedWord) continue;
    pairs.push_back(uint64_t{r} << 32 | i);
    max = std::max(max, r);
  }
  radix_sort_bits(pairs, tmp, 32, bits_of(max));
  for (const uint64_t p : pairs) {
    const WordId r = static_cast<WordId>(p >> 32);
    if (v.item_word.empty() || v.item_word.back() != r) v.item_word.push_back(r);
    v.lnorm[static_cast<uint32_t>(p)] = static_cast<uint32_t>(v.item_word.size() - 1);
  }
  return v;
}

}  // namespace gtadoc::plan
