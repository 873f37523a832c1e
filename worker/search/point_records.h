// A filtered query's records from one grammar's search index (worker/search/shard_index.h)
// instead of a traversal: the service's "words" filter (docs/SERVICE.md "Point queries"). The
// records are those the engines produce for the grammar (key layouts in worker/query.h)
// restricted to the keys that hold one of the words, so the pipeline that follows (shuffle,
// reduce, rows) gives the same bytes; inverted-index's carry count 1 (its rows show none).
//
// Cost per grammar, for the words asked:
//   word-count, sort                 a lookup per member word (the index's word counts);
//   inverted-index                   the rules above the words and the documents holding them,
//                                    from the index alone;
//   term-vector                      the same, and the counts along the holding documents'
//                                    segments (count_phrase of a one-word phrase, which takes
//                                    one pass over the grammar when those pass its share);
//   sequence-count, ranked-inverted  the root segments of the documents holding a word, the rules
//                                    above the words along them, and the first and last n-1
//                                    words of the other rules met.
#pragma once

#include <cstdint>
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

/// What a lookup of `words` costs on `g` against one pass over `g`, both in index entries: per word
/// (and task), the rules and documents directly above its members times kPointFanOut (the rules
/// above those fan out), at most a pass; a pass is the grammar's rules and documents. Zero when
/// `g` holds none of the words (a few binary searches of its words).
inline constexpr double kPointFanOut = 8;
struct PointCost {
  double lookup = 0, pass = 0;
};
PointCost point_cost(const ShardGrammar& g, const ShardSearchIndex& index, const PointWords& words);

/// The records of `q` over `g` whose keys hold one of `words` (for n-grams: any of their words),
/// unreduced, in no particular order. Thread-safe on a shared grammar and index.
RecordBatch point_records(const ShardGrammar& g, const ShardSearchIndex& index,
                          const QueryOptions& q, const Normalization& norm,
                          const PointWords& words);

}  // namespace gtadoc
