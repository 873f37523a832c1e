// The query's normalization restricted to the words one shard uses: what both engines count as
// word "items" (dense ids of the distinct normalized words present, in normalized-id order,
// which is byte order). Built once per (shard, normalization); the GPU engine uploads it.
#pragma once

#include <cstdint>
#include <vector>

#include "common/types.h"
#include "worker/query.h"

namespace gtadoc::plan {

struct Vocab {
  std::vector<uint32_t> lnorm;    ///< local word -> item, or kNoItem when dropped
  std::vector<WordId> item_word;  ///< item -> normalized global word id (ascending)
  bool identity = true;           ///< lnorm[i] == i and item_word == local_words
  uint32_t size() const { return static_cast<uint32_t>(item_word.size()); }
};

/// `local_words`: the shard's local word -> global id (ascending), which norm.remap must cover
/// unless norm is the identity. Costs O(L log L) for the L local words, whatever the size of the
/// dictionary.
Vocab build_vocab(const std::vector<WordId>& local_words, const Normalization& norm);

}  // namespace gtadoc::plan
