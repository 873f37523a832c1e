// build_vocab (worker/plan/vocab.h): the surviving normalized ids of the shard's words, sorted.
#include "worker/plan/vocab.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"
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
  // The normalized ids of the shard's words, sorted and made unique: work in the shard's
  // vocabulary, never in the dictionary's.
  std::vector<WordId> normalized(nl);
  for (size_t i = 0; i < nl; ++i) normalized[i] = norm.remap[local_words[i]];
  v.item_word.reserve(nl);
  for (WordId r : normalized)
    if (r != kDroppedWord) v.item_word.push_back(r);
  std::sort(v.item_word.begin(), v.item_word.end());
  v.item_word.erase(std::unique(v.item_word.begin(), v.item_word.end()), v.item_word.end());
  v.lnorm.resize(nl);
  for (size_t i = 0; i < nl; ++i) {
    const WordId r = normalized[i];
    v.lnorm[i] = r == kDroppedWord ? kNoItem
                                   : static_cast<uint32_t>(std::lower_bound(v.item_word.begin(),
                                                                            v.item_word.end(), r) -
                                                           v.item_word.begin());
  }
  return v;
}

}  // namespace gtadoc::plan
