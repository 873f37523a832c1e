// Phrase search over an archive (`gtadoc grep`, `POST /v1/search`; docs/REFERENCE.md "Phrase
// search", bytes in docs/OUTPUT.md): the request, each rank's hits over its grammars
// (worker/search/phrase_match.h), the lines of matching documents, and the output rank 0 renders
// from every rank's hits. The same code answers the command line (grammars read and dropped shard
// by shard) and the service (grammars resident).
//
// Guarantees: the output depends only on the archive and the request, never on ranks, threads or
// how shards are split into pieces; documents by id, rows in the documented order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/types.h"
#include "formats/archive.h"
#include "formats/grammar.h"
#include "coordinator/search/search_spec.h"
#include "worker/query.h"
#include "worker/search/phrase_match.h"
#include "worker/search/shard_index.h"

namespace gtadoc {

class Comm;


/// The phrases of a request in the normalization's word ids, with their printed forms.
struct PreparedSearch {
  SearchSpec spec;
  std::vector<NormalizedPhrase> phrases;
  std::vector<std::string> printed;  ///< normalized words joined by one space
  /// Indexed counts: the share of a shard's rules past which it takes the full pass (benches).
  double full_pass_share = kFullPassShare;
};
PreparedSearch prepare_search(const SearchSpec& spec, const Normalization& norm);

/// Selected documents (ascending ids) with one count per phrase; with --lines, each document's
/// rendered line rows (no separators).
struct SearchHits {
  std::vector<DocId> docs;
  std::vector<Count> counts;  ///< docs.size() x phrases, row by row
  std::vector<std::vector<std::string>> lines;  ///< kLines: rows per document of `docs`
  void append(SearchHits&& other);
};

/// The selected documents of one grammar (a shard or a document-range piece of one); with its
/// search index (worker/search/shard_index.h) only the rules and documents above the phrases'
/// words are visited, else the whole grammar once per phrase.
SearchHits search_grammar(const ShardGrammar& g, const ShardSearchIndex* index,
                          const PreparedSearch& search, const Normalization& norm);

/// Adds the line rows of `hits`' documents (all in shard `shard`, whose grammar or a piece of it
/// holding them is `g`): reads the shard's whitespace layout and rebuilds those documents only.
/// Throws InputError when the grammar, layout and manifest disagree (a corrupted archive).
void add_line_rows(const std::filesystem::path& archive, const Manifest& manifest, uint32_t shard,
                   const ShardGrammar& g, const PreparedSearch& search, const Normalization& norm,
                   SearchHits& hits);

/// A resident grammar to search: a shard or a document-range piece of one, and its index (or
/// null).
struct SearchTarget {
  uint32_t shard = 0;
  const ShardGrammar* grammar = nullptr;
  const ShardSearchIndex* index = nullptr;
};
/// The hits of resident grammars (in any order), searched `threads` at a time (0: every usable
/// CPU); with --lines, each grammar's line rows (add_line_rows).
SearchHits search_grammars(const std::filesystem::path& archive, const Manifest& manifest,
                           std::vector<SearchTarget> targets, const PreparedSearch& search,
                           const Normalization& norm, unsigned threads);

/// Collective: gathers every rank's hits (each rank's documents ascending) on rank 0 and returns
/// the whole output there (empty elsewhere).
std::string gather_search_output(Comm& comm, const Manifest& manifest,
                                 const PreparedSearch& search, SearchHits mine);

/// The output of `search` given all its hits (documents ascending).
std::string render_search(const Manifest& manifest, const PreparedSearch& search,
                          const SearchHits& hits);

}  // namespace gtadoc
