// build_vocab (worker/plan/vocab.h): the surviving normalized ids as a RankedIdSet.
#include "worker/plan/vocab.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "worker/plan/id_set.h"
#include "worker/plan/shard_layout.h"

namespace gtadoc::plan {

Vocab build_vocab(const std::vector<WordId>& local_words, uint32_t num_words,
                  const Normalization& norm) {
  Vocab v;
  const size_t nl = local_words.size();
  if (norm.identity) {  // the remap may be empty for the identity
    v.identity = true;
    v.lnorm.resize(nl);
    std::iota(v.lnorm.begin(), v.lnorm.end(), uint32_t{0});
    v.item_word = local_words;
    return v;
  }
  GTADOC_EXPECTS(norm.remap.size() == num_words,
                 "normalization remap does not cover the shard's vocabulary");
  v.identity = false;
  uint64_t space = 0;
  for (WordId w : local_words)
    if (norm.remap[w] != kDroppedWord) space = std::max<uint64_t>(space, norm.remap[w] + 1ull);
  RankedIdSet items(space);
  for (WordId w : local_words)
    if (norm.remap[w] != kDroppedWord) items.insert(norm.remap[w]);
  items.rank();
  v.item_word = items.members();
  v.lnorm.resize(nl);
  for (size_t i = 0; i < nl; ++i) {
    const WordId r = norm.remap[local_words[i]];
    v.lnorm[i] = r == kDroppedWord ? kNoItem : items.rank_of(r);
  }
  return v;
}

}  // namespace gtadoc::plan
