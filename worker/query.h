// A query as every engine sees it: the task, its options, and the query-time normalization
// (a remap of global word ids computed once on the dictionary; the grammar is never rewritten).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"
#include "formats/dictionary.h"

namespace gtadoc {

enum class Task {
  kWordCount,
  kSort,
  kInvertedIndex,
  kTermVector,
  kSequenceCount,
  kRankedInvertedIndex
};
enum class Traversal { kAuto, kTopDown, kBottomUp };
/// kNdjson: one JSON row per line (the rows of kJson without the array framing; service only).
enum class OutputFormat { kTsv, kJson, kNdjson };

/// "word-count" <-> Task::kWordCount, etc. parse_task throws UsageError on an unknown name.
Task parse_task(const std::string& name);
const char* task_name(Task t);
const char* traversal_name(Traversal t);

struct QueryOptions {
  Task task = Task::kWordCount;
  uint32_t n = 3;          ///< sequence length for sequence tasks, 2..8
  bool per_doc = false;    ///< sequence-count --per-doc
  bool lowercase = false;  ///< map ASCII A-Z to a-z
  bool alnum = false;      ///< trim non-alphanumeric ASCII at both ends, drop empty words
  uint64_t top = 0;        ///< 0 = all; term-vector default is 10 (set by the CLI)
  uint64_t min_count = 1;  ///< term-vector
  bool ids = false;        ///< print document ids instead of names
  Traversal traversal = Traversal::kAuto;
  unsigned threads = 0;  ///< 0 = all hardware threads
};

inline constexpr WordId kDroppedWord = 0xFFFFFFFFu;

/// Normalized vocabulary: `dict` holds the distinct normalized words in byte order, and
/// remap[w] is the normalized id of global word w (or kDroppedWord). Identity when neither
/// option is set: then `remap` is empty (every id maps to itself: an archive of 100 million words
/// pays nothing for it) and dict equals the archive's dictionary.
struct Normalization {
  std::vector<WordId> remap;  ///< empty for the identity; see map()
  /// The normalized id of global word w (or kDroppedWord).
  WordId map(WordId w) const { return identity ? w : remap[w]; }
  Dictionary dict;
  bool identity = true;
  /// Names the options it was made with (normalize_dictionary: 1 + lowercase + 2 x alnum), so an
  /// engine may keep per-shard preparations across queries keyed by it; 0 (a hand-made remap)
  /// means "never reuse". Shards and normalizations must come from the same archive.
  uint32_t cache_key = 0;
};
Normalization normalize_dictionary(const Dictionary& dict, bool lowercase, bool alnum);
/// One word as normalize_dictionary normalizes it (empty when --alnum drops it).
std::string normalize_word(std::string_view word, bool lowercase, bool alnum);

/// True for tasks whose records carry n-grams.
constexpr bool is_sequence_task(Task t) {
  return t == Task::kSequenceCount || t == Task::kRankedInvertedIndex;
}

/// Where a record key holds the global document id: nowhere (word-count, sort, global
/// sequence-count), first (term-vector, sequence-count --per-doc) or last (the inverted indexes).
enum class DocSlot { kNone, kFirst, kLast };
DocSlot doc_slot(const QueryOptions& q);
/// Words in a record key: n for the sequence tasks, else 1.
inline uint32_t key_words(const QueryOptions& q) {
  return is_sequence_task(q.task) ? q.n : 1;
}
/// Throws UsageError when a sequence task's n is outside 2..8 (what every engine accepts).
void check_sequence_length(const QueryOptions& q);

/// The key layout of the records a task produces (all ids are u32):
///   word-count              [w]               hash of w
///   sort                    [w]               range of w
///   inverted-index          [w, doc]          range of w              (count = occurrences)
///   term-vector             [doc, w]          range of doc
///   sequence-count          [w1..wn]          hash of the n-gram
///   sequence-count per-doc  [doc, w1..wn]     range of doc
///   ranked-inverted-index   [w1..wn, doc]     range of w1 (in the sequences' byte order)
/// Range partitioning follows the output order, so an owner's rows are one contiguous range of
/// the result; count-ordered results (hash partitioned) are re-ranged after the reduce
/// (cluster/rows/rank_rows.h).
/// `doc` is the global document id.
struct KeyLayout {
  uint32_t width;            ///< u32 values per key
  uint32_t partition_width;  ///< leading key values that decide the owner rank
  bool range_partition;      ///< owners hold increasing ranges of the first key value
};
KeyLayout key_layout(const QueryOptions& q);

}  // namespace gtadoc
