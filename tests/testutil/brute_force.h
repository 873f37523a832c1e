// Test helper: the brute-force records of a query on one shard grammar, the slow obvious way
// (expand every document, normalize its words, count every key with std::map). The engine tests
// (CPU and GPU) compare engine records against it; it shares no code with the engines.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "formats/grammar.h"
#include "worker/query.h"

namespace gtadoc::testutil {

/// Record key (worker/query.h KeyLayout) -> count.
using BruteForceRecords = std::map<std::vector<uint32_t>, uint64_t>;

/// Every record of `q` (task, n, per_doc) over `g`'s documents, word ids normalized with `norm`
/// (an identity normalization may leave its remap empty). Document ids are global
/// (g.first_doc + local index). Keys: word-count, sort [w]; inverted-index [w, doc];
/// term-vector [doc, w]; sequence-count [w1..wn] or, per document, [doc, w1..wn];
/// ranked-inverted-index [w1..wn, doc].
BruteForceRecords brute_force(const ShardGrammar& g, const Normalization& norm,
                              const QueryOptions& q);

}  // namespace gtadoc::testutil
