// A filtered query's records from one grammar's search index (worker/search/shard_index.h)
// instead of a traversal: the service's "words" filter (docs/SERVICE.md "Point queries"). The
// records are exactly those the engines produce for the grammar (key layouts in worker/query.h)
// restricted to the keys that hold one of the words, so the pipeline that follows (shuffle,
// reduce, rows) gives the same bytes.
//
// Cost per grammar, for the words asked:
//   word-count, sort                 a lookup per member word (the index's word counts);
//   inverted-index, term-vector      the rules above the words and the documents holding them
//                                    (count_phrase of a one-word phrase, which takes one pass
//                                    over the grammar when those pass its share);
//   sequence-count, ranked-inverted  the root segments of the documents holding a word, the rules
//                                    above the words along them, and the first and last n-1
//                                    words of the other rules met (while within PointLimits).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "formats/grammar.h"
#include "worker/query.h"
#include "worker/records.h"
#include "worker/search/phrase_match.h"
#include "worker/search/shard_index.h"

namespace gtadoc {

/// The words of a filter, in normalized ids (ascending, distinct), with the global words each
/// normalizes from (find_members). Words in no document are left out.
struct PointWords {
  std::vector<WordId> words;
  std::vector<std::vector<WordId>> members;  ///< per word, ascending
};
/// Looks up the members of `words` (normalized ids, any order, repeats allowed) under `norm`.
PointWords point_words(std::vector<WordId> words, const Normalization& norm, unsigned threads);

/// When the n-gram tasks give up on the index (they walk the documents holding the words): past
/// `doc_share` of a grammar's documents or `rule_share` of its rules above the words. 0: never.
struct PointLimits {
  double doc_share = 1.0 / 4;
  double rule_share = 1.0 / 8;
};

/// The records of `q` over `g` whose keys hold one of `words` (for n-grams: any of their words),
/// unreduced, in no particular order. nullopt when an n-gram task passes `limits` on this grammar
/// (the caller then traverses). Thread-safe on a shared grammar and index.
std::optional<RecordBatch> point_records(const ShardGrammar& g, const ShardSearchIndex& index,
                                         const QueryOptions& q, const Normalization& norm,
                                         const PointWords& words, const PointLimits& limits = {});

}  // namespace gtadoc
