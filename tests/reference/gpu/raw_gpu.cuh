// Raw-text GPU baseline (benchmarks, and a second reference in GPU tests): the six tasks of
// docs/REFERENCE.md §3-§4 computed on the uncompressed documents on the GPU, GreX-style, with the
// exact output bytes of docs/OUTPUT.md. No dictionary, no grammar: the text goes to the device and
//
//   parallel split  every byte is flagged as a word start / word end by looking at itself and
//                   its neighbour, over the whole concatenated buffer (so a word spanning any
//                   tile or block boundary is one word: GreX's "boundary merge" is implicit);
//                   stream compaction (flag + scan + scatter) yields the word offsets;
//   map             --lowercase over the bytes, --alnum trim per word, empty words compacted
//                   away, document id per word by binary search of the document offsets;
//   group           64-bit hash per word, radix sort, then a byte-for-byte check of every run
//                   of equal hashes; on any collision a merge sort by the bytes themselves
//                   groups the words instead, so results are always exact. Distinct words get
//                   their byte-order rank (merge sort of one representative per group);
//   reduce          (doc, word) pairs and n-gram windows (n consecutive kept words of one
//                   document) as tuples of ranks, sorted by stable LSD radix passes, runs of
//                   equal tuples counted (skew-free: the work per run does not depend on its
//                   length), then sorted into the output order (count desc etc.);
//   format          on the host, from the ordered rows and the distinct words.
//
// This header is plain C++ (the raw_gpu tool, query_bench and the tests include it); the CUDA
// lives in raw_gpu.cu, on the device layer (worker/device/).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tests/reference/raw_reference.h"
#include "worker/query.h"

namespace gtadoc {

/// Seconds per phase (wall clock, the device synchronized at each phase end) and sizes.
struct RawGpuTimings {
  double upload_s = 0;          ///< sort documents by name, concatenate, copy to the device
  double tokenize_s = 0;        ///< parallel split, normalization, compaction
  double group_s = 0;           ///< hash, sort, verify, byte-order ranks of the distinct words
  double reduce_s = 0;          ///< task tuples, sort, run counts, output order, download of rows
  double format_s = 0;          ///< host: word strings and output bytes
  uint64_t bytes = 0;           ///< text bytes uploaded (documents plus one separator each)
  uint64_t words = 0;           ///< kept words (after normalization)
  uint64_t distinct_words = 0;  ///< distinct normalized words
  uint64_t rows = 0;            ///< result rows downloaded
  bool hash_fallback = false;   ///< a hash collision made the grouping sort by bytes
};

/// The exact output (docs/OUTPUT.md) of the task in `q` over `docs`, computed on the current
/// CUDA device. Same contract as raw_reference_output: documents are sorted by name (byte
/// order, stable) inside, q.top is taken as given, UsageError when a sequence task has q.n
/// outside 2..8. Throws ResourceError when the device is out of memory or the input is beyond
/// the baseline's limits (2^32 - 2 words, a word of 4 GiB or more).
std::string raw_gpu_output(const std::vector<RawDocument>& docs, const QueryOptions& q,
                           OutputFormat fmt, RawGpuTimings* timings = nullptr);

namespace rawgpu {

/// Test hooks: degrade the hash to force collisions, or always group by bytes.
struct DebugOptions {
  uint64_t hash_mask = ~uint64_t{0};  ///< hashes are ANDed with this
  bool force_byte_grouping = false;   ///< skip the hash grouping, sort the words by bytes
};
std::string raw_gpu_output_debug(const std::vector<RawDocument>& docs, const QueryOptions& q,
                                 OutputFormat fmt, RawGpuTimings* timings,
                                 const DebugOptions& debug);

// ------------------------------------------------------------------ host side (unit-tested)

/// Result rows of a task, already in output order (before --top / --min-count cuts), as u32
/// fields: word fields are word ids = byte-order ranks of the distinct words, doc fields are
/// document ids. Layouts (width per row):
///   word-count, sort            [w]                counts: occurrences
///   inverted-index              [w, doc]           sorted by (w, doc); counts unused
///   term-vector                 [doc, w]           doc asc, count desc, w asc
///   sequence-count              [w1..wn]           count desc, sequence asc
///   sequence-count --per-doc    [doc, w1..wn]      doc asc, count desc, sequence asc
///   ranked-inverted-index       [w1..wn, doc]      sequence asc, count desc, doc asc
/// (sequence asc = joined-string byte order).
struct Rows {
  uint32_t width = 0;
  std::vector<uint32_t> fields;  ///< size() * width values, row-major
  std::vector<uint64_t> counts;  ///< one per row
  size_t size() const { return width == 0 ? 0 : fields.size() / width; }
};

/// The output bytes from ordered rows. `doc_names` are the names in id order; `words[w]` is
/// the normalized word with id w (only the ids that appear in `rows` are read).
std::string format_output(const std::vector<std::string_view>& doc_names,
                          const std::vector<std::string>& words, const Rows& rows,
                          const QueryOptions& q, OutputFormat fmt);

/// Indices of `docs` in id order: stable sort by name in byte order.
std::vector<size_t> sorted_doc_order(const std::vector<RawDocument>& docs);

/// `s` as a JSON string exactly as nlohmann's dump(-1, ' ', false, replace) writes it.
std::string json_string(std::string_view s);

/// A document name as a TSV field: tab -> "\t", newline -> "\n", backslash -> "\\".
std::string tsv_doc_name(std::string_view name);

/// LSD radix sort plan: the fields (bit widths, most significant first, each 1..32 bits) are
/// packed into 64-bit keys; chunks are returned least significant first, each covering the
/// fields [first, last] with `bits` = the sum of their widths (<= 64).
struct KeyChunk {
  int first = 0;
  int last = 0;
  int bits = 0;
};
std::vector<KeyChunk> plan_key_chunks(const std::vector<int>& field_bits);

}  // namespace rawgpu
}  // namespace gtadoc
