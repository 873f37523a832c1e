// The gtadoc_gen model: what `train` learns from a real corpus and `generate` samples from.
//
// A document is modelled as gtadoc tokenizes it (docs/REFERENCE.md §3): gap word ... word gap.
//  - Tokens: words, plus "gap tokens" for every gap between two words that is not a single
//    space: "\n", "\n\n", "\n    ", "\n\t\t", " \r\n", "  " ... So line breaks, blank-line
//    paragraphs, the indentation of the next line and alignment runs are part of the phrase
//    model: a line ends where real lines end after such words, a code block's indentation
//    follows "::" or "{", a table's padding follows its cells. Two words in a row are separated
//    by one space. Token ids: 0 = BOS (the context at a document start), 1 = UNK (a word outside
//    the capped vocabulary), then every kept token in descending order of count. A document's
//    leading and trailing gaps have their own distributions.
//  - Phrases: an order-2 Markov chain over tokens with Witten-Bell backoff to order 1 and to the
//    unigram distribution. Successor lists are pruned (top-K per context, order-2 contexts seen
//    at least `min_context_count` times, at most `max_contexts` of them, and within a budget of
//    `max_entries` successors in all, successors seen fewer than t times dropped for the
//    smallest t that fits); pruned mass is backoff.
//  - Document lengths: the empirical distribution of words per document (up to 65,536 samples).
//  - The vocabulary tail: Heaps' law V(N) = K N^beta fitted on the training corpus, and a sample
//    of rare word types. When generating, rare words (count <= rare_max_count) are replaced by
//    novel words at the rate that keeps the distinct word count on K N^beta at every corpus size
//    N; a novel word is the head of one rare type joined to the tail of another where both have
//    the same character (so every character pair in it occurs in real words): ":func:`spl" +
//    "itlines`" (generate.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gtagen {

inline constexpr uint32_t kBos = 0;
inline constexpr uint32_t kUnk = 1;
inline constexpr uint32_t kMaxVocab = 2000000;  ///< ids must fit 21 bits (trigram keys)

/// A discrete distribution over byte strings (gaps): strings and cumulative counts.
struct StringDist {
  std::vector<std::string> values;
  std::vector<uint64_t> cum;  ///< cum[i] = count of values[0..i]
};

/// One successor in a list: cumulative count and token id.
struct Entry {
  uint32_t cum, id;
};

/// A successor list in a pool: entries [begin, begin + count); a draw u in [0, total) picks the
/// first entry with cum > u when u < kept (= the last cum), and backs off otherwise.
struct Context {
  uint32_t begin, count, total, kept;
};

/// Statistics of the training corpus, recorded in the model.
struct TrainInfo {
  uint64_t documents = 0, bytes = 0, words = 0, distinct_words = 0;
  double heaps_k = 0, heaps_beta = 0;
  double doc_words_mean = 0;
};

struct TrainOptions {
  uint32_t max_vocab = 1000000;     ///< words kept by count; the rest are UNK
  uint32_t max_gaps = 1024;         ///< gap tokens kept; the rest become "\n" or " "
  int order = 2;                    ///< 1 or 2
  uint32_t min_context_count = 2;   ///< order-2 contexts seen fewer times are dropped
  uint32_t max_contexts = 4000000;  ///< order-2 contexts kept (most frequent first)
  uint32_t max_successors1 = 1024;  ///< successors kept per order-1 context
  uint32_t max_successors2 = 64;    ///< successors kept per order-2 context
  uint64_t max_entries = 8000000;   ///< successors kept in all (rarer ones pruned first)
  uint32_t rare_max_count = 2;      ///< words this rare may be replaced by novel words
  bool progress = false;
};

struct Model {
  TrainInfo info;
  uint32_t rare_max_count = 2;
  int32_t order = 2;
  uint64_t min_successor_count = 1;  ///< successors seen fewer times were pruned (size budget)

  // Tokens (ids as above).
  std::vector<char> token_bytes;
  std::vector<uint64_t> token_off;  ///< size V+1
  std::vector<uint64_t> unigram;    ///< count of each token in the training stream

  std::vector<Entry> succ;       ///< successor lists of both orders
  std::vector<Context> o1;       ///< per token: its successors
  std::vector<uint64_t> o2_key;  ///< order-2 contexts (a << 32) | b, sorted
  std::vector<Context> o2;       ///< their successors

  StringDist lead_gaps, trail_gaps;
  std::vector<uint32_t> doc_words;  ///< sorted sample of words per document

  // Rare word types (count <= rare_max_count, or outside the vocabulary): a sample of at most
  // 16,384, concatenated; novel words are spliced from two of them (generate.cpp).
  std::vector<char> tail_bytes;
  std::vector<uint64_t> tail_off;  ///< size tail words + 1

  uint32_t tokens() const { return static_cast<uint32_t>(token_off.size() - 1); }
  std::string_view token(uint32_t id) const {
    return std::string_view(token_bytes.data() + token_off[id], token_off[id + 1] - token_off[id]);
  }
  /// A gap token (whitespace; words never start with whitespace).
  bool is_gap(uint32_t id) const {
    if (id <= kUnk || token_off[id + 1] == token_off[id]) return false;
    const unsigned char c = static_cast<unsigned char>(token_bytes[token_off[id]]);
    return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  }
};

/// Reads every regular file below `inputs` and builds the model.
Model train(const std::vector<std::string>& inputs, const TrainOptions& opt);

/// UsageError unless `path` is absent or a previous model (what save_model may replace).
void check_model_output(const std::string& path);
void save_model(const Model& m, const std::string& path);
Model load_model(const std::string& path);

}  // namespace gtagen
