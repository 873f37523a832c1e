// The byte order of sequences (n-grams) expressed on word ids, so sequence rows are ordered
// with integers only. docs/REFERENCE.md §4 orders sequences by their joined bytes "w1 w2 ... wn";
// word ids are in byte order of the words, but the joined string can order differently from the id
// tuple when a word is a proper prefix of another and the next byte is below 0x20
// ("a\x01 b" < "a b" although "a" < "a\x01"). Only then ranks differ from ids.
#pragma once

#include <cstdint>
#include <vector>

#include "formats/dictionary.h"

namespace gtadoc {

class SequenceOrder {
 public:
  /// `dict` is the (normalized) dictionary the word ids refer to, in byte order; n >= 1. The
  /// table, when needed, is one pass over the words (`threads` is not used).
  SequenceOrder(const Dictionary& dict, uint32_t n, unsigned threads = 1);
  /// The order of n-grams already rewritten into ranks (to_ranks): integer tuple order.
  static SequenceOrder of_ranks(uint32_t n) { return SequenceOrder(n); }

  /// True when the id tuple order already is the joined-bytes order.
  bool identity() const { return space_rank_.empty(); }
  uint32_t n() const { return n_; }
  /// Rank of word w followed by a space: comparing these for words 1..n-1 and the last word's
  /// id is comparing the joined strings.
  uint32_t space_rank(uint32_t w) const { return space_rank_.empty() ? w : space_rank_[w]; }
  uint32_t rank(const uint32_t* words, uint32_t i) const {
    return i + 1 == n_ ? words[i] : space_rank(words[i]);
  }
  /// Joined-bytes order of two n-grams given as word ids.
  bool less(const uint32_t* a, const uint32_t* b) const {
    for (uint32_t i = 0; i < n_; ++i) {
      const uint32_t x = rank(a, i), y = rank(b, i);
      if (x != y) return x < y;
    }
    return false;
  }
  /// The table of space ranks (empty when identity()).
  const std::vector<uint32_t>& space_ranks() const { return space_rank_; }
  /// Rewrites the n-gram at `words` into ranks (words 1..n-1 by space rank, the last kept), so
  /// comparing rewritten n-grams as integer tuples is comparing the joined strings.
  void to_ranks(uint32_t* words) const {
    if (space_rank_.empty()) return;
    for (uint32_t i = 0; i + 1 < n_; ++i) words[i] = space_rank_[words[i]];
  }
  /// Word i of an n-gram rewritten by to_ranks, as a word id again.
  uint32_t word_at(const uint32_t* ranks, uint32_t i) const {
    return i + 1 == n_ || word_of_rank_.empty() ? ranks[i] : word_of_rank_[ranks[i]];
  }
  /// Starts loading what word_at(ranks, i) reads besides `ranks` (nothing when the words are
  /// their own ids). Always inlined: GCC drops a call whose only effect is a prefetch.
  [[gnu::always_inline]] void prefetch_word_at(const uint32_t* ranks, uint32_t i) const {
    if (i + 1 != n_ && !word_of_rank_.empty()) __builtin_prefetch(&word_of_rank_[ranks[i]]);
  }

 private:
  explicit SequenceOrder(uint32_t n) : n_(n) {}

  uint32_t n_;
  std::vector<uint32_t> space_rank_;    ///< empty: the rank of w + ' ' is w
  std::vector<uint32_t> word_of_rank_;  ///< the inverse of space_rank_
};

}  // namespace gtadoc
