// Where each symbol of a shard's grammar occurs, so that a lookup visits only what holds the
// words it asks for (worker/search/phrase_match.h, count_phrase with an index): for every word
// and rule, the rules whose bodies hold it and the documents whose root segments hold it, each
// once. Built once per resident shard, read by any number of searches at once.
//
// It also holds each word's occurrences in the shard (a word count of the shard, from one
// top-down pass over the bodies), so that a word's count is a lookup.
//
// Guarantees: built by three passes over the bodies (counting and filling the holders, then the
// word counts); memory 8 bytes per distinct (symbol, holder) pair plus 16 bytes per symbol value
// and 4 per word: at most about three times the grammar's own symbols, all sized by the shard.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "common/types.h"
#include "formats/grammar.h"
#include "worker/query.h"

namespace gtadoc {

class ShardSearchIndex {
 public:
  explicit ShardSearchIndex(const ShardGrammar& g);

  /// The rules (root excluded) whose bodies hold symbol `s` (a word or rule symbol), ascending.
  std::span<const RuleId> holders(Symbol s) const {
    return {rule_holders_.data() + rule_at_[s], rule_holders_.data() + rule_at_[s + 1]};
  }
  /// The shard-local documents whose root segments hold `s`, ascending.
  std::span<const uint32_t> documents(Symbol s) const {
    return {doc_holders_.data() + doc_at_[s], doc_holders_.data() + doc_at_[s + 1]};
  }
  /// Kept words of each rule's expansion under `norm`, capped at 255 (phrases compare lengths
  /// with k - 1 <= 63 only): computed once per normalization (Normalization::cache_key; a key of
  /// 0 is computed each time) and kept.
  std::shared_ptr<const std::vector<uint8_t>> capped_lengths(const ShardGrammar& g,
                                                             const Normalization& norm) const;
  /// Occurrences of local word `w` in the shard's documents; nullopt when the shard's word count
  /// does not fit the 32-bit counts kept (over 4 G words in one shard).
  std::optional<Count> word_count(Symbol w) const {
    if (word_counts_.size() != num_words_) return std::nullopt;
    return word_counts_[w];
  }
  uint64_t bytes() const;

 private:
  void count_words(const ShardGrammar& g);
  std::vector<uint64_t> rule_at_, doc_at_;  ///< symbol values + 1 entries each
  std::vector<RuleId> rule_holders_;
  std::vector<uint32_t> doc_holders_;
  uint32_t num_words_ = 0;
  std::vector<uint32_t> word_counts_;  ///< per local word; empty when they do not fit
  mutable std::mutex lengths_mutex_;
  mutable std::vector<std::pair<uint32_t, std::shared_ptr<const std::vector<uint8_t>>>>
      lengths_;  ///< by cache key
};

/// Throws InternalError unless `g` holds its rule bodies (an engine may drop them on the host).
void require_bodies(const ShardGrammar& g);

/// The most a shard's ShardSearchIndex::bytes() can be with the kept lengths of `normalizations`
/// normalizations, from the shard's sizes alone (`words` distinct local words, `rules` rules,
/// root included, `symbols` body symbols): holders at most one per symbol, two offsets per
/// symbol value, a count per word, a length per rule and normalization. What `gtadoc info`
/// reports before a service builds the indexes.
constexpr uint64_t search_index_bytes_bound(uint64_t words, uint64_t rules, uint64_t symbols,
                                            uint64_t normalizations = 1) {
  return 2 * sizeof(uint64_t) * (words + rules + 1) + sizeof(uint32_t) * symbols +
         sizeof(uint32_t) * words + normalizations * rules;
}

/// Kept words of each rule's expansion under `norm`, capped at 255 (one pass over the bodies).
std::vector<uint8_t> capped_rule_lengths(const ShardGrammar& g, const Normalization& norm);

}  // namespace gtadoc
