#include "coordinator/pipeline/query_spec.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "worker/search/phrase_match.h"

namespace gtadoc {

namespace {

using json = nlohmann::json;

/// "per-doc" and "per_doc" name the same field.
std::string field_name(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

bool get_bool(const json& v, const std::string& name) {
  if (!v.is_boolean()) throw UsageError("\"" + name + "\" must be true or false");
  return v.get<bool>();
}

uint64_t get_count(const json& v, const std::string& name, uint64_t lo, uint64_t hi) {
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
    throw UsageError("\"" + name + "\" must be a non-negative integer");
  const uint64_t x = v.get<uint64_t>();
  if (x < lo || x > hi)
    throw UsageError("\"" + name + "\" " + std::to_string(x) + " is out of range (" +
                     std::to_string(lo) + ".." + std::to_string(hi) + ")");
  return x;
}

std::string get_string(const json& v, const std::string& name) {
  if (!v.is_string()) throw UsageError("\"" + name + "\" must be a string");
  return v.get<std::string>();
}

/// An array of strings (and of non-negative integers into `ids` when given).
std::vector<std::string> get_strings(const json& v, const std::string& name,
                                     std::vector<uint64_t>* ids) {
  const std::string what = ids ? "document names (strings) or ids (integers)" : "strings";
  if (!v.is_array()) throw UsageError("\"" + name + "\" must be an array of " + what);
  std::vector<std::string> out;
  for (const json& e : v) {
    if (e.is_string())
      out.push_back(e.get<std::string>());
    else if (ids != nullptr && e.is_number_unsigned())
      ids->push_back(e.get<uint64_t>());
    else
      throw UsageError("\"" + name + "\" must be an array of " + what);
  }
  return out;
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

OutputFormat parse_format(std::string_view name, bool allow_ndjson) {
  if (name == "tsv") return OutputFormat::kTsv;
  if (name == "json") return OutputFormat::kJson;
  if (name == "ndjson" && allow_ndjson) return OutputFormat::kNdjson;
  throw UsageError("--format: unknown format '" + one_line(name, 80) + "' (expected tsv" +
                   (allow_ndjson ? ", json or ndjson)" : " or json)"));
}

const char* format_name(OutputFormat f) {
  switch (f) {
    case OutputFormat::kTsv:
      return "tsv";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kNdjson:
      return "ndjson";
  }
  return "tsv";
}

void validate_query(QuerySpec& s) {
  s.q.task = parse_task(s.task);
  const Task t = s.q.task;
  if (s.n_given && !is_sequence_task(t))
    throw UsageError("--n applies only to sequence-count and ranked-inverted-index");
  if (s.q.n < 2 || s.q.n > 8)
    throw UsageError("--n " + std::to_string(s.q.n) + " is out of range (2..8)");
  if (s.q.per_doc && t != Task::kSequenceCount)
    throw UsageError("--per-doc applies only to sequence-count");
  if (s.min_count_given && t != Task::kTermVector)
    throw UsageError("--min-count applies only to term-vector");
  if (s.top_given && t != Task::kWordCount && t != Task::kTermVector && t != Task::kSequenceCount)
    throw UsageError(std::string("--top does not apply to ") + task_name(t));
  if (t == Task::kTermVector && !s.top_given) s.q.top = 10;
  if (s.traversal == "auto")
    s.q.traversal = Traversal::kAuto;
  else if (s.traversal == "top-down")
    s.q.traversal = Traversal::kTopDown;
  else if (s.traversal == "bottom-up")
    s.q.traversal = Traversal::kBottomUp;
  else
    throw UsageError("--traversal: unknown traversal '" + one_line(s.traversal, 80) +
                     "' (expected auto, top-down or bottom-up)");
  // Point filters: documents only where rows carry documents.
  const bool has_docs = t == Task::kInvertedIndex || t == Task::kTermVector ||
                        t == Task::kRankedInvertedIndex ||
                        (t == Task::kSequenceCount && s.q.per_doc);
  if (s.docs_given && !has_docs)
    throw UsageError(std::string("\"docs\" does not apply to ") + task_name(t) +
                     (t == Task::kSequenceCount ? " without per-doc" : "") +
                     " (its rows carry no documents)");
  for (const std::string& d : s.docs)
    if (d.empty()) throw UsageError("\"docs\": empty document name");
}

QuerySpec query_from_json(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw UsageError("malformed JSON");
  if (!j.is_object()) throw UsageError("the query must be a JSON object");
  QuerySpec s;
  bool have_task = false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string name = field_name(it.key());
    const json& v = it.value();
    if (name == "task") {
      s.task = get_string(v, name);
      have_task = true;
    } else if (name == "n") {
      s.q.n = static_cast<uint32_t>(get_count(v, name, 2, 8));
      s.n_given = true;
    } else if (name == "top") {
      s.q.top = get_count(v, name, 0, UINT64_MAX);
      s.top_given = true;
    } else if (name == "min-count") {
      s.q.min_count = get_count(v, name, 0, UINT64_MAX);
      s.min_count_given = true;
    } else if (name == "per-doc") {
      s.q.per_doc = get_bool(v, name);
    } else if (name == "ids") {
      s.q.ids = get_bool(v, name);
    } else if (name == "lowercase") {
      s.q.lowercase = get_bool(v, name);
    } else if (name == "alnum") {
      s.q.alnum = get_bool(v, name);
    } else if (name == "traversal") {
      s.traversal = get_string(v, name);
    } else if (name == "format") {
      s.format = parse_format(get_string(v, name), true);
      s.format_given = true;
    } else if (name == "words") {
      s.words = get_strings(v, name, nullptr);
      s.words_given = true;
    } else if (name == "docs") {
      s.docs = get_strings(v, name, &s.doc_ids);
      s.docs_given = true;
    } else if (name == "threads" || name == "output" || name == "o" || name == "partitioned" ||
               name == "force" || name == "stats" || name == "engine" || name == "progress") {
      throw UsageError(user_text(it.key()) +
                       " is an option of the gtadoc process, not of a query (set it when "
                       "starting gtadoc serve)");
    } else {
      throw UsageError("unknown field " + user_text(it.key()));
    }
  }
  if (!have_task) throw UsageError("missing \"task\"");
  validate_query(s);
  return s;
}

std::string query_key(const QuerySpec& s) {
  nlohmann::ordered_json j;
  j["task"] = task_name(s.q.task);
  j["n"] = is_sequence_task(s.q.task) ? s.q.n : 0;
  j["per_doc"] = s.q.per_doc;
  j["top"] = s.q.top;
  j["min_count"] = s.q.task == Task::kTermVector ? s.q.min_count : 1;
  j["ids"] = s.q.ids;
  j["lowercase"] = s.q.lowercase;
  j["alnum"] = s.q.alnum;
  j["format"] = format_name(s.format);
  std::vector<std::string> words = s.words, docs = s.docs;
  sort_unique(words);
  sort_unique(docs);
  if (s.words_given) j["words"] = words;
  if (s.docs_given) {
    std::vector<uint64_t> ids = s.doc_ids;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    j["docs"] = docs;
    j["doc_ids"] = ids;
  }
  // The traversal does not change the result (every traversal gives the same bytes).
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace gtadoc

namespace gtadoc {

void validate_search(const SearchSpec& spec) {
  if (spec.phrases.empty()) throw UsageError("give at least one phrase to search for");
  for (size_t i = 0; i < spec.phrases.size(); ++i)
    phrase_words(spec.phrases[i], spec.lowercase, spec.alnum, i + 1);
}

SearchSpec search_from_json(std::string_view body, bool* format_given) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw UsageError("malformed JSON");
  if (!j.is_object()) throw UsageError("the search must be a JSON object");
  SearchSpec s;
  bool have_phrases = false, all = false, count = false, lines = false;
  if (format_given != nullptr) *format_given = false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string name = field_name(it.key());
    const json& v = it.value();
    if (name == "phrases") {
      s.phrases = get_strings(v, name, nullptr);
      have_phrases = true;
    } else if (name == "all") {
      all = get_bool(v, name);
    } else if (name == "any") {
      s.any = get_bool(v, name);
    } else if (name == "count") {
      count = get_bool(v, name);
    } else if (name == "lines") {
      lines = get_bool(v, name);
    } else if (name == "lowercase") {
      s.lowercase = get_bool(v, name);
    } else if (name == "alnum") {
      s.alnum = get_bool(v, name);
    } else if (name == "ids") {
      s.ids = get_bool(v, name);
    } else if (name == "format") {
      s.format = parse_format(get_string(v, name), true);
      if (format_given != nullptr) *format_given = true;
    } else {
      throw UsageError("unknown field " + user_text(it.key()));
    }
  }
  if (!have_phrases) throw UsageError("missing \"phrases\"");
  if (all && s.any) throw UsageError("\"all\" and \"any\" exclude each other");
  if (count && lines) throw UsageError("\"count\" and \"lines\" exclude each other");
  s.mode = count ? SearchSpec::Mode::kCount : lines ? SearchSpec::Mode::kLines : SearchSpec::Mode::kDocs;
  validate_search(s);
  return s;
}

std::string search_key(const SearchSpec& s) {
  nlohmann::ordered_json j;
  j["search"] = s.phrases;
  j["any"] = s.any;
  j["mode"] = static_cast<int>(s.mode);
  j["ids"] = s.ids;
  j["lowercase"] = s.lowercase;
  j["alnum"] = s.alnum;
  j["format"] = format_name(s.format);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace gtadoc
