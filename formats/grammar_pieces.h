// Document-range pieces of a shard grammar (docs/REFERENCE.md §7: "a shard larger than free GPU
// memory is processed in document-range pieces"). A piece holds the root segments of consecutive
// documents and exactly the rules and words they reach, renumbered and finalized like any shard
// grammar, so an engine loads and traverses it as a shard of its own. n-grams never cross
// documents, so every task's records over the pieces of a shard, reduced, equal the records of the
// whole shard. Rules shared by documents of different pieces are repeated in each piece.
#pragma once

#include <cstdint>
#include <vector>

#include "formats/grammar.h"

namespace gtadoc {

/// The piece of `g` holding its (shard-local) documents [begin, end): first_doc is
/// g.first_doc + begin, boundaries are renumbered from 0. Requires begin < end <= g.num_docs.
ShardGrammar slice_documents(const ShardGrammar& g, uint32_t begin, uint32_t end);

/// `g` cut into consecutive document ranges whose pieces hold at most `max_symbols` symbols each
/// (bodies of every rule, root included), halving ranges until they fit; a single document that
/// alone exceeds the bound is a piece of its own. Returns {g} unchanged (copied) when it fits.
std::vector<ShardGrammar> split_by_documents(const ShardGrammar& g, uint64_t max_symbols);

}  // namespace gtadoc
