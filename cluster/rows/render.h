// Rendering rows to the exact output bytes of docs/REFERENCE.md §4 / docs/OUTPUT.md, GreX/libcudf
// style: one function per task, run twice — first to measure every block of rows, then (after an
// exclusive scan of the sizes) to write each block at its offset — in parallel, into one buffer,
// with no per-row allocation. Output can be produced in chunks so a large result never sits whole
// in memory.
//
// Framing: TSV rows end in '\n'. A JSON result is "[\n" row (",\n" row)* "\n]\n" ("[\n]\n" when
// empty); each JSON row is rendered with its leading "[\n" (the result's first row) or ",\n",
// and the trailer comes from json_trailer(). A rank rendering a slice of a distributed result
// says whether its first row is the result's first row.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/rows/row_plan.h"
#include "cluster/rows/sequence_order.h"
#include "common/big_alloc.h"
#include "formats/archive.h"
#include "formats/dictionary.h"
#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc {

/// Every document as it appears inside a row: its id (--ids), else its name TSV-escaped (TSV) or
/// as a quoted JSON string (JSON). Built once per query, in parallel.
class DocText {
 public:
  /// No documents: for queries whose rows show none (rows_show_documents).
  DocText() = default;
  /// `names` are the manifest's document names; with `ids` they are not read.
  DocText(const Dictionary& names, bool ids, OutputFormat format, unsigned threads);
  std::string_view operator[](DocId d) const {
    return {bytes_.data() + offsets_[d], static_cast<size_t>(offsets_[d + 1] - offsets_[d])};
  }
  /// Start loading what operator[](d) reads: its offsets, then (once they are loaded) its bytes.
  /// Always inlined: a call whose only effect is a prefetch is dropped as dead code.
  [[gnu::always_inline]] void prefetch_offsets(DocId d) const {
    __builtin_prefetch(offsets_.data() + d);
  }
  [[gnu::always_inline]] void prefetch_bytes(DocId d) const {
    __builtin_prefetch(bytes_.data() + offsets_[d]);
  }

 private:
  std::vector<char> bytes_;
  std::vector<uint64_t> offsets_{0};
};

/// Whether `q`'s rows name documents (inverted-index, term-vector, ranked-inverted-index,
/// sequence-count --per-doc): only those need the document names.
inline bool rows_show_documents(const QueryOptions& q) {
  return q.task == Task::kInvertedIndex || q.task == Task::kTermVector ||
         q.task == Task::kRankedInvertedIndex || (q.task == Task::kSequenceCount && q.per_doc);
}

struct RenderContext {
  const QueryOptions& q;
  const Dictionary& dict;  ///< the normalized dictionary the record word ids refer to
  const DocText& docs;
  OutputFormat format = OutputFormat::kTsv;
  /// Sequence tasks whose n-grams were rewritten into ranks (SequenceOrder::to_ranks): the
  /// order that maps them back to word ids; null when keys hold word ids.
  const SequenceOrder* ranked_ngrams = nullptr;
};

/// The rows of a plan as bytes. Rows are split into blocks; block_offsets() are known before
/// anything is written, so ranks and threads can place their bytes independently.
class RowRenderer {
 public:
  /// `first_is_result_start`: this slice's first row is the whole result's first row (JSON
  /// framing); records, plan and context must outlive the renderer. Measures every block.
  RowRenderer(const RecordBatch& records, const RowPlan& plan, const RenderContext& ctx,
              bool first_is_result_start, unsigned threads);

  uint64_t rows() const { return plan_.rows(); }
  /// The threads that render (and write) the rows.
  unsigned threads() const { return threads_; }
  /// Total bytes of all rows (without any JSON trailer).
  uint64_t bytes() const { return block_offsets_.back(); }

  /// Renders every row in order, handing consecutive pieces of about `chunk_bytes` (at least one
  /// block) to `sink(data, size)`. Rendering of the next piece overlaps the sink of the previous
  /// one (the sink runs on another thread, one call at a time, in order).
  void render(uint64_t chunk_bytes,
              const std::function<void(const char* data, size_t size)>& sink) const;
  /// Renders every row into pieces of about `chunk_bytes` (at least one block), several pieces
  /// at once on the renderer's threads, each handed with its offset in this slice to
  /// `sink(offset, data, size)` — from several threads at a time, in no particular order (for
  /// writers at offsets: pwrite). Every byte is handed over exactly once.
  void render_placed(
      uint64_t chunk_bytes,
      const std::function<void(uint64_t offset, const char* data, size_t size)>& sink) const;
  /// Renders every row into `dst` (bytes() long: a mapped range of the output file) in pieces of
  /// about `chunk_bytes` (at least one block), each thread taking the next piece as it finishes
  /// one (no thread waits for the others); `done(size)` after each, from the thread that wrote
  /// it.
  void render_into(char* dst, uint64_t chunk_bytes,
                   const std::function<void(size_t size)>& done) const;
  /// All rows as one string (small results, tests).
  std::string render_all() const;

 private:
  void render_blocks(uint64_t first_block, uint64_t last_block, char* dst, unsigned threads) const;
  /// Blocks [first, e) of about chunk_bytes from block `first`: e.
  uint64_t chunk_end(uint64_t first, uint64_t chunk_bytes) const;
  /// Runs piece(first_block, end_block, buffer) for every piece of about chunk_bytes, on the
  /// renderer's threads, each taking the next piece as it finishes one; `buffer` is the
  /// thread's own, kept between its pieces.
  void for_each_piece(uint64_t chunk_bytes,
                      const std::function<void(uint64_t first, uint64_t end,
                                               UninitVector<char>& buffer)>& piece) const;

  const RecordBatch& records_;
  const RowPlan& plan_;
  const RenderContext& ctx_;
  bool first_is_start_;
  unsigned threads_;
  std::vector<uint64_t> block_offsets_;  ///< blocks + 1 byte offsets
};

/// The bytes after the last row of a whole result: "\n]\n" for JSON with rows, "[\n]\n" for
/// JSON without rows, nothing for TSV.
std::string_view json_trailer(OutputFormat format, uint64_t result_rows);

}  // namespace gtadoc
