// Test helper: random acyclic grammars in Sequitur's raw form (formats/grammar.h RawGrammar), for
// the archive, validation and engine tests.
#pragma once

#include <cstdint>
#include <filesystem>

#include "formats/archive.h"
#include "formats/grammar.h"
#include "worker/query.h"

namespace gtadoc::testutil {

struct RandomGrammarOptions {
  uint32_t rule_one_in = 4;      ///< one symbol in this many is a rule (where one may be)
  uint32_t empty_doc = ~0u;      ///< this document (if < num_docs) gets an empty segment
  uint32_t boundary_stride = 1;  ///< boundary i is boundary_symbol(i * stride + offset)
  uint32_t boundary_offset = 0;
};

/// Rule i >= 1 references only words and rules with larger ids, every rule is used at least
/// twice, the root holds `num_docs` segments separated by boundary symbols. Deterministic in
/// `seed`.
RawGrammar random_raw_grammar(uint32_t num_words, uint32_t num_docs, uint32_t num_rules,
                              uint32_t max_segment, uint64_t seed,
                              const RandomGrammarOptions& options = {});

/// Writes `g` as shard 0 of an archive in `dir` (its layout: one space between words, deflate
/// level 4) and returns a manifest for it (archive id 1, `dict_words` words "w100000", ...), as
/// read_shard_grammar needs it; writes no manifest file. `layout`: where the layout goes.
Manifest write_one_shard(const std::filesystem::path& dir, const ShardGrammar& g,
                         uint32_t dict_words, ShardLayout* layout = nullptr);

/// Words 0..n-1 with 0 and 1 merged into normalized word 0, word 2 dropped, the others shifted
/// down by 2: a normalization that merges and drops words, for the search tests.
inline Normalization merging_normalization(uint32_t words, uint32_t cache_key) {
  Normalization norm;
  norm.identity = false;
  norm.cache_key = cache_key;
  for (uint32_t w = 0; w < words; ++w)
    norm.remap.push_back(w <= 1 ? 0 : w == 2 ? kDroppedWord : w - 2);
  return norm;
}

}  // namespace gtadoc::testutil
