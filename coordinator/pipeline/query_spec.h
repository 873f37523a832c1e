// What one query asks for, validated by one function (docs/REFERENCE.md §2, §4, §8), shared by
// `gtadoc run` (options from the command line) and `gtadoc serve` (a JSON body): the task and its
// options, the output format and the point filters of the service.
//
// Guarantees: validate_query() either throws UsageError with a one-line message naming the
// option and what is wrong, or leaves a spec whose every field is valid and whose task defaults
// are applied (term-vector --top 10). query_key() is the same string for queries that give the
// same rows and bytes (the service's cache key).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/search/search_spec.h"
#include "worker/query.h"

namespace gtadoc {

struct QuerySpec {
  std::string task;  ///< the task's name as given; validate_query sets q.task from it
  QueryOptions q;    ///< q.threads is not a query option (the process decides it)
  OutputFormat format = OutputFormat::kTsv;
  std::string traversal = "auto";
  /// Point filters (service): only rows of these words (normalized like the query's words; for
  /// sequences, n-grams containing one of them) / of these documents (by name, or by id).
  /// `words_given`/`docs_given` tell an empty list (no rows) from no filter.
  std::vector<std::string> words, docs;
  std::vector<uint64_t> doc_ids;
  bool words_given = false, docs_given = false;
  /// Which options the user gave (some defaults and checks depend on the task).
  bool n_given = false, top_given = false, min_count_given = false, format_given = false;
};

/// "tsv" | "json" | "ndjson" (ndjson only when `allow_ndjson`); UsageError otherwise.
OutputFormat parse_format(std::string_view name, bool allow_ndjson);
const char* format_name(OutputFormat f);

/// Checks every option against the task and applies the task's defaults. Throws UsageError.
void validate_query(QuerySpec& spec);

/// A service request body: {"task": "word-count", "top": 100, "lowercase": true, ...} with the
/// options of `gtadoc run` (names as on the command line without "--", '-' or '_'), plus
/// "format", "words", "docs". Unknown fields, wrong types and values out of range are
/// UsageErrors; options that only make sense for a process ("threads", "output", ...) too.
/// The result is validated.
QuerySpec query_from_json(std::string_view body);

/// Canonical JSON of a validated spec: every field explicit, filters sorted and deduplicated.
std::string query_key(const QuerySpec& spec);

/// Throws UsageError for no phrase, a phrase with no word or more than 64 (phrase_words).
void validate_search(const SearchSpec& spec);

/// A `POST /v1/search` body: {"phrases": ["of the", ...]} and the options of `gtadoc grep` by
/// name without dashes ("any", "all", "count", "lines", "lowercase", "alnum", "ids", "format":
/// tsv, json or ndjson). Unknown fields, wrong types, conflicting options and bad phrases are
/// UsageErrors. `format_given`: whether "format" was there (else the Accept header decides).
SearchSpec search_from_json(std::string_view body, bool* format_given);
/// The cache key of a validated search (never equal to a query_key).
std::string search_key(const SearchSpec& spec);

}  // namespace gtadoc
