#include "cluster/rows/render.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <type_traits>

#include "cluster/rows/parallel_sort.h"
#include "cluster/rows/text_format.h"
#include "common/big_alloc.h"
#include "common/error.h"
#include "common/parallel.h"

namespace gtadoc {

namespace {

constexpr uint64_t kBlockRows = 512;
/// A word of this many bytes or more is measured from the dictionary itself.
constexpr uint8_t kLongWord = 255;

/// Counts bytes (first pass).
struct Measure {
  uint64_t n = 0;
  void put(std::string_view s) { n += s.size(); }
  void put(char) { ++n; }
  void num(uint64_t v) { n += decimal_digits(v); }
  void json(std::string_view s) { n += json_escaped_size(s); }
};

/// Writes bytes (second pass).
struct Write {
  char* p;
  void put(std::string_view s) {
    // Most pieces are words and document names of a few to a few dozen bytes: copied by two
    // fixed-size, possibly overlapping moves within [s, s + n), not by a call to memcpy per piece
    // (perf: the calls were about half of rendering a ranked index's rows).
    const char* src = s.data();
    const size_t n = s.size();
    if (n >= 8 && n <= 16) {
      std::memcpy(p, src, 8);
      std::memcpy(p + n - 8, src + n - 8, 8);
    } else if (n > 16 && n <= 32) {
      std::memcpy(p, src, 16);
      std::memcpy(p + n - 16, src + n - 16, 16);
    } else if (n < 8) {
      for (size_t i = 0; i < n; ++i) p[i] = src[i];
    } else {
      std::memcpy(p, src, n);
    }
    p += n;
  }
  void put(char c) { *p++ = c; }
  void num(uint64_t v) { p = write_decimal(v, p); }
  void json(std::string_view s) { p = write_json_escaped(s, p); }
};

/// One task's row bytes, the same code for both passes.
class RowText {
 public:
  /// `word_sizes`: null, or the bytes of every word (kLongWord: look it up) for the TSV sizes of
  /// joined n-grams.
  RowText(const RecordBatch& r, const RowPlan& plan, const RenderContext& ctx, bool first_is_start,
          const uint8_t* word_sizes)
      : r_(r),
        plan_(plan),
        ctx_(ctx),
        json_(ctx.format != OutputFormat::kTsv),
        ndjson_(ctx.format == OutputFormat::kNdjson),
        first_is_start_(first_is_start),
        word_sizes_(word_sizes) {}

  /// Whether rows name n-grams, whose words prefetch() can load ahead: sequence tasks over a
  /// dictionary already read (a word-count's few fetched words are not prefetched).
  bool ngram_rows() const {
    return (ctx_.q.task == Task::kRankedInvertedIndex ||
            (ctx_.q.task == Task::kSequenceCount && !ctx_.q.per_doc)) &&
           ctx_.dict.ready();
  }
  /// Where prefetch() loads a row's words from: the dictionary's offsets and bytes (writing), or
  /// one byte per word (measuring: `sizes`, with offsets and bytes null).
  struct WordTables {
    const uint64_t* offsets = nullptr;
    const char* bytes = nullptr;
    const uint8_t* sizes = nullptr;
  };
  static constexpr int kPrefetchStages = 4;
  /// Starts loading what row `row` of an ngram_rows() plan reads, one stage at a time, each
  /// reading only what an earlier stage loaded: 0, its first record's key; 1, the words of its
  /// ranks (n-grams rewritten into ranks); 2, each word's entry in `t` (size, or dictionary
  /// offset) and a ranked index's first postings' document offsets; 3, a written word's bytes
  /// and those documents' names. Called for rows some distance ahead, each stage nearer
  /// than the one before, so that a row's dependent cache misses overlap other rows' work instead
  /// of following one another (perf: most of rendering an n-gram row was waiting on its second
  /// and third words). Always inlined: GCC drops a call to a function with no result and no
  /// effect it can see (a prefetch has none) as dead code.
  [[gnu::always_inline]] void prefetch(uint64_t row, int stage, const WordTables& t) const {
    const uint64_t i = ctx_.q.task == Task::kRankedInvertedIndex
                           ? plan_.record_at(plan_.row_range(row).first)
                           : plan_.record_at(row);
    const uint32_t* k = key(i);
    const SequenceOrder* ranks = ctx_.ranked_ngrams;
    switch (stage) {
      case 0:
        __builtin_prefetch(k);
        return;
      case 1:
        if (ranks != nullptr)
          for (uint32_t j = 0; j < ctx_.q.n; ++j) ranks->prefetch_word_at(k, j);
        return;
      case 2:
        for (uint32_t j = 0; j < ctx_.q.n; ++j) {
          if (t.sizes != nullptr)
            __builtin_prefetch(t.sizes + ngram_word(k, j));
          else
            __builtin_prefetch(t.offsets + ngram_word(k, j));
        }
        for_first_postings(row, [&](DocId d) { ctx_.docs.prefetch_offsets(d); });
        return;
      default:
        if (t.bytes == nullptr) return;
        for (uint32_t j = 0; j < ctx_.q.n; ++j)
          __builtin_prefetch(t.bytes + t.offsets[ngram_word(k, j)]);
        for_first_postings(row, [&](DocId d) { ctx_.docs.prefetch_bytes(d); });
    }
  }
  /// Postings a row's stages load ahead; a longer row loads the rest ahead as it is rendered.
  static constexpr uint64_t kPostingsAhead = 8;
  /// f(document) for the first kPostingsAhead postings of a ranked index's row.
  template <typename F>
  [[gnu::always_inline]] void for_first_postings(uint64_t row, F&& f) const {
    if (ctx_.q.task != Task::kRankedInvertedIndex) return;
    const auto [b, e] = plan_.row_range(row);
    for (uint64_t p = b; p < std::min(e, b + kPostingsAhead); ++p)
      f(key(plan_.record_at(p))[ctx_.q.n]);
  }
  /// Runs each(row) for rows [lo, hi) (of rows < end), with prefetch()'s stages run ahead when
  /// `ahead` (ngram_rows()): stage s for the row 8 * (4 - s) rows on. `first` says that no
  /// call for the rows just before lo ran them already (the first rows' stages run first).
  template <typename Each>
  [[gnu::always_inline]] void rows_ahead(uint64_t lo, uint64_t hi, uint64_t end, bool ahead,
                                         bool first, const WordTables& t, Each&& each) const {
    constexpr uint64_t kDistance = 8;
    auto distance = [](int s) { return kDistance * static_cast<uint64_t>(kPrefetchStages - s); };
    if (ahead && first)  // the first rows' stages; the loop below runs the later rows'
      for (int s = 0; s < kPrefetchStages; ++s)
        for (uint64_t r = lo; r < std::min(end, lo + distance(s)); ++r) prefetch(r, s, t);
    for (uint64_t r = lo; r < hi; ++r) {
      if (ahead)
        for (int s = 0; s < kPrefetchStages; ++s)
          if (r + distance(s) < end) prefetch(r + distance(s), s, t);
      each(r);
    }
  }

  template <typename Out>
  void row(uint64_t row, Out& o) const {
    if (json_ && !ndjson_) o.put(row == 0 && first_is_start_ ? "[\n" : ",\n");
    switch (ctx_.q.task) {
      case Task::kWordCount:
      case Task::kSort:
        word_row(row, o);
        break;
      case Task::kInvertedIndex:
        inverted_row(row, o);
        break;
      case Task::kTermVector:
        term_vector_row(row, o);
        break;
      case Task::kSequenceCount:
        sequence_row(row, o);
        break;
      case Task::kRankedInvertedIndex:
        ranked_row(row, o);
        break;
    }
    if (!json_ || ndjson_) o.put('\n');
  }

 private:
  std::string_view word(uint32_t w) const { return ctx_.dict[w]; }
  /// Word i of the n-gram at `words` (word ids, or ranks: ctx_.ranked_ngrams).
  uint32_t ngram_word(const uint32_t* words, uint32_t i) const {
    return ctx_.ranked_ngrams != nullptr ? ctx_.ranked_ngrams->word_at(words, i) : words[i];
  }
  const uint32_t* key(uint64_t record) const { return r_.keys.data() + record * r_.width; }

  template <typename Out>
  void json_word(uint32_t w, Out& o) const {
    o.put('"');
    o.json(word(w));
    o.put('"');
  }
  /// n words joined by one space (JSON: escaped, without the quotes).
  template <typename Out>
  void joined(const uint32_t* words, Out& o) const {
    for (uint32_t i = 0; i < ctx_.q.n; ++i) {
      if (i) o.put(' ');
      const uint32_t w = ngram_word(words, i);
      if constexpr (std::is_same_v<Out, Measure>) {
        // One byte per word, where the dictionary's offsets are 8 and their words' bytes far
        // apart: measuring millions of n-grams waited on their cache misses.
        if (word_sizes_ != nullptr && word_sizes_[w] != kLongWord) {
          o.n += word_sizes_[w];
          continue;
        }
      }
      if (json_)
        o.json(word(w));
      else
        o.put(word(w));
    }
  }

  template <typename Out>
  void word_row(uint64_t row, Out& o) const {
    const uint64_t i = plan_.record_at(row);
    if (json_) {
      o.put("{\"word\":");
      json_word(*key(i), o);
      o.put(",\"count\":");
      o.num(r_.counts[i]);
      o.put('}');
    } else {
      o.put(word(*key(i)));
      o.put('\t');
      o.num(r_.counts[i]);
    }
  }

  template <typename Out>
  void inverted_row(uint64_t row, Out& o) const {
    const auto [b, e] = plan_.row_range(row);
    const uint32_t w = key(plan_.record_at(b))[0];
    if (json_) {
      o.put("{\"word\":");
      json_word(w, o);
      o.put(",\"docs\":[");
    } else {
      o.put(word(w));
      o.put('\t');
    }
    for (uint64_t p = b; p < e; ++p) {
      if (p > b) o.put(',');
      o.put(ctx_.docs[key(plan_.record_at(p))[1]]);
    }
    if (json_) o.put("]}");
  }

  template <typename Out>
  void term_vector_row(uint64_t row, Out& o) const {
    const auto [b, e] = plan_.row_range(row);
    const DocId d = plan_.row_doc[row];
    if (json_) {
      o.put("{\"doc\":");
      o.put(ctx_.docs[d]);
      o.put(",\"terms\":[");
    } else {
      o.put(ctx_.docs[d]);
      o.put('\t');
    }
    for (uint64_t p = b; p < e; ++p) {
      const uint64_t i = plan_.record_at(p);
      if (json_) {
        o.put(p > b ? ",{\"word\":" : "{\"word\":");
        json_word(key(i)[1], o);
        o.put(",\"count\":");
        o.num(r_.counts[i]);
        o.put('}');
      } else {
        if (p > b) o.put(' ');
        o.put(word(key(i)[1]));
        o.put(':');
        o.num(r_.counts[i]);
      }
    }
    if (json_) o.put("]}");
  }

  template <typename Out>
  void sequence_row(uint64_t row, Out& o) const {
    const uint64_t i = plan_.record_at(row);
    const uint32_t* k = key(i);
    const bool per_doc = ctx_.q.per_doc;
    if (json_) {
      if (per_doc) {
        o.put("{\"doc\":");
        o.put(ctx_.docs[k[0]]);
        o.put(",\"sequence\":\"");
      } else {
        o.put("{\"sequence\":\"");
      }
      joined(k + (per_doc ? 1 : 0), o);
      o.put("\",\"count\":");
      o.num(r_.counts[i]);
      o.put('}');
    } else {
      if (per_doc) {
        o.put(ctx_.docs[k[0]]);
        o.put('\t');
      }
      joined(k + (per_doc ? 1 : 0), o);
      o.put('\t');
      o.num(r_.counts[i]);
    }
  }

  template <typename Out>
  void ranked_row(uint64_t row, Out& o) const {
    const auto [b, e] = plan_.row_range(row);
    const uint32_t n = ctx_.q.n;
    if (json_) {
      o.put("{\"sequence\":\"");
      joined(key(plan_.record_at(b)), o);
      o.put("\",\"docs\":[");
    } else {
      joined(key(plan_.record_at(b)), o);
      o.put('\t');
    }
    const bool long_row = e - b > kPostingsAhead;
    for (uint64_t p = b; p < e; ++p) {
      const uint64_t i = plan_.record_at(p);
      if (long_row) {  // postings past the first ones, loaded ahead as for rows (prefetch())
        if (p + 2 * kPostingsAhead < e)
          ctx_.docs.prefetch_offsets(key(plan_.record_at(p + 2 * kPostingsAhead))[n]);
        if constexpr (!std::is_same_v<Out, Measure>)
          if (p + kPostingsAhead < e)
            ctx_.docs.prefetch_bytes(key(plan_.record_at(p + kPostingsAhead))[n]);
      }
      if (json_) {
        o.put(p > b ? ",{\"doc\":" : "{\"doc\":");
        o.put(ctx_.docs[key(i)[n]]);
        o.put(",\"count\":");
        o.num(r_.counts[i]);
        o.put('}');
      } else {
        if (p > b) o.put(' ');
        o.put(ctx_.docs[key(i)[n]]);
        o.put(':');
        o.num(r_.counts[i]);
      }
    }
    if (json_) o.put("]}");
  }

  const RecordBatch& r_;
  const RowPlan& plan_;
  const RenderContext& ctx_;
  bool json_;
  bool ndjson_;
  bool first_is_start_;
  const uint8_t* word_sizes_;
};

}  // namespace

DocText::DocText(const Dictionary& names, bool ids, OutputFormat format, unsigned threads) {
  const bool json = format != OutputFormat::kTsv;
  if (!ids) (void)names.bytes();  // names read on demand are read here, not inside the blocks
  offsets_.assign(size_t{names.size()} + 1, 0);
  auto measure = [&](DocId d) -> uint64_t {
    if (ids) return decimal_digits(d);
    return json ? json_escaped_size(names[d]) + 2 : tsv_escaped_size(names[d]);
  };
  parallel_blocks(
      names.size(), threads,
      [&](uint64_t lo, uint64_t hi) {
        for (uint64_t d = lo; d < hi; ++d) offsets_[d] = measure(static_cast<DocId>(d));
      },
      4096);
  offsets_.back() = 0;
  bytes_.resize(exclusive_scan_in_place(offsets_));
  offsets_.back() = bytes_.size();
  parallel_blocks(
      names.size(), threads,
      [&](uint64_t lo, uint64_t hi) {
        for (uint64_t d = lo; d < hi; ++d) {
          char* p = bytes_.data() + offsets_[d];
          if (ids) {
            write_decimal(d, p);
          } else if (json) {
            *p++ = '"';
            p = write_json_escaped(names[static_cast<DocId>(d)], p);
            *p = '"';
          } else {
            write_tsv_escaped(names[static_cast<DocId>(d)], p);
          }
        }
      },
      4096);
}

RowRenderer::RowRenderer(const RecordBatch& records, const RowPlan& plan, const RenderContext& ctx,
                         bool first_is_result_start, unsigned threads)
    : records_(records),
      plan_(plan),
      ctx_(ctx),
      first_is_start_(first_is_result_start),
      threads_(threads) {
  const uint64_t rows = plan.rows();
  const uint64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  block_offsets_.assign(blocks + 1, 0);
  // TSV n-grams that name more words than the dictionary holds (a ranked index, a whole
  // sequence count): their words' sizes in one byte each, measured from the offsets once.
  std::vector<uint8_t> word_sizes;
  if (ctx.format == OutputFormat::kTsv && is_sequence_task(ctx.q.task) &&
      rows * ctx.q.n >= uint64_t{ctx.dict.size()} && ctx.dict.size() > 0) {
    const std::vector<uint64_t>& off = ctx.dict.offsets();
    word_sizes.resize(ctx.dict.size());
    parallel_blocks(
        word_sizes.size(), threads_,
        [&](uint64_t lo, uint64_t hi) {
          for (uint64_t w = lo; w < hi; ++w)
            word_sizes[w] =
                static_cast<uint8_t>(std::min<uint64_t>(off[w + 1] - off[w], kLongWord));
        },
        uint64_t{1} << 16);
  }
  const RowText text(records_, plan_, ctx_, first_is_start_,
                     word_sizes.empty() ? nullptr : word_sizes.data());
  const bool ahead = !word_sizes.empty() && text.ngram_rows();
  const RowText::WordTables sizes{nullptr, nullptr, word_sizes.data()};
  parallel_blocks(
      blocks, threads_,
      [&](uint64_t lo, uint64_t hi) {
        const uint64_t end = std::min(rows, hi * kBlockRows);
        for (uint64_t b = lo; b < hi; ++b) {
          Measure m;
          text.rows_ahead(b * kBlockRows, std::min(rows, (b + 1) * kBlockRows), end, ahead, b == lo,
                          sizes, [&](uint64_t r) { text.row(r, m); });
          block_offsets_[b] = m.n;
        }
      },
      16);
  block_offsets_.back() = 0;
  block_offsets_.back() = exclusive_scan_in_place(block_offsets_);
}

void RowRenderer::render_blocks(uint64_t first, uint64_t last, char* dst, unsigned threads) const {
  const uint64_t rows = plan_.rows();
  const RowText text(records_, plan_, ctx_, first_is_start_, nullptr);
  const uint64_t base = block_offsets_[first];
  const bool ahead = text.ngram_rows();
  RowText::WordTables words;
  if (ahead) words = {ctx_.dict.offsets().data(), ctx_.dict.bytes().data(), nullptr};
  parallel_blocks(
      last - first, threads,
      [&](uint64_t lo, uint64_t hi) {
        const uint64_t end = std::min(rows, (first + hi) * kBlockRows);
        for (uint64_t b = first + lo; b < first + hi; ++b) {
          Write w{dst + (block_offsets_[b] - base)};
          text.rows_ahead(b * kBlockRows, std::min(rows, (b + 1) * kBlockRows), end, ahead,
                          b == first + lo, words, [&](uint64_t r) { text.row(r, w); });
          GTADOC_EXPECTS(w.p == dst + (block_offsets_[b + 1] - base),
                         "row rendering wrote a different size than it measured");
        }
      },
      4);
}

void RowRenderer::render(uint64_t chunk_bytes,
                         const std::function<void(const char*, size_t)>& sink) const {
  const uint64_t blocks = block_offsets_.size() - 1;
  UninitVector<char> buf[2];
  std::future<void> pending;
  int which = 0;
  for (uint64_t b = 0; b < blocks;) {
    const uint64_t e = chunk_end(b, chunk_bytes);
    const uint64_t size = block_offsets_[e] - block_offsets_[b];
    UninitVector<char>& out = buf[which];
    if (out.size() < size) out.resize(size);
    render_blocks(b, e, out.data(), threads_);
    if (pending.valid()) pending.get();  // the sink of the previous chunk (rethrows its error)
    pending =
        std::async(std::launch::async, [&sink, data = out.data(), size] { sink(data, size); });
    which ^= 1;
    b = e;
  }
  if (pending.valid()) pending.get();
}

uint64_t RowRenderer::chunk_end(uint64_t b, uint64_t chunk_bytes) const {
  const uint64_t blocks = block_offsets_.size() - 1;
  uint64_t e = b + 1;  // at least one block, up to about chunk_bytes
  while (e < blocks && block_offsets_[e + 1] - block_offsets_[b] <= chunk_bytes) ++e;
  return e;
}

void RowRenderer::for_each_piece(
    uint64_t chunk_bytes,
    const std::function<void(uint64_t, uint64_t, UninitVector<char>&)>& piece) const {
  const uint64_t blocks = block_offsets_.size() - 1;
  std::vector<uint64_t> starts;  // the pieces' first blocks, then `blocks`
  for (uint64_t b = 0; b < blocks; b = chunk_end(b, chunk_bytes)) starts.push_back(b);
  starts.push_back(blocks);
  const size_t pieces = starts.size() - 1;
  const unsigned workers = static_cast<unsigned>(std::min<size_t>(std::max(1u, threads_), pieces));
  std::atomic<size_t> next{0};
  parallel_for(workers, workers, [&](size_t) {
    UninitVector<char> buffer;
    for (size_t k = next++; k < pieces; k = next++) piece(starts[k], starts[k + 1], buffer);
  });
}

void RowRenderer::render_placed(
    uint64_t chunk_bytes, const std::function<void(uint64_t, const char*, size_t)>& sink) const {
  for_each_piece(chunk_bytes, [&](uint64_t b, uint64_t e, UninitVector<char>& buf) {
    const uint64_t size = block_offsets_[e] - block_offsets_[b];
    if (buf.size() < size) buf.resize(size);
    render_blocks(b, e, buf.data(), 1);
    sink(block_offsets_[b], buf.data(), size);
  });
}

void RowRenderer::render_into(char* dst, uint64_t chunk_bytes,
                              const std::function<void(size_t)>& done) const {
  for_each_piece(chunk_bytes, [&](uint64_t b, uint64_t e, UninitVector<char>&) {
    render_blocks(b, e, dst + block_offsets_[b], 1);
    done(block_offsets_[e] - block_offsets_[b]);
  });
}

std::string RowRenderer::render_all() const {
  std::string out;
  out.resize(bytes());
  const uint64_t blocks = block_offsets_.size() - 1;
  if (blocks > 0) render_blocks(0, blocks, out.data(), threads_);
  return out;
}

std::string_view json_trailer(OutputFormat format, uint64_t result_rows) {
  if (format != OutputFormat::kJson) return {};
  return result_rows == 0 ? "[\n]\n" : "\n]\n";
}

}  // namespace gtadoc
