// Shared integer vocabulary: word, document and rule ids, and how a grammar symbol encodes
// a word, a rule or a document boundary in one 32-bit value.
#pragma once

#include <cstdint>

namespace gtadoc {

using WordId = uint32_t;  ///< index into the global dictionary (byte order of the words)
using DocId = uint32_t;   ///< index into the document table (byte order of the names)
using RuleId = uint32_t;  ///< index of a rule inside one shard grammar
using Symbol = uint32_t;  ///< an element of a rule body, see below
using Count = uint64_t;   ///< exact occurrence counts

/// Symbol encoding inside a shard whose own vocabulary has V words (formats/grammar.h):
///   s <  V                          -> the shard's word s
///   V <= s < kBoundaryBit           -> rule s - V
///   s >= kBoundaryBit               -> boundary between documents (root only), low bits unique
inline constexpr Symbol kBoundaryBit = 0x80000000u;

constexpr bool is_boundary(Symbol s) {
  return (s & kBoundaryBit) != 0;
}
constexpr bool is_word(Symbol s, uint32_t num_words) {
  return s < num_words;
}
constexpr bool is_rule(Symbol s, uint32_t num_words) {
  return s >= num_words && !is_boundary(s);
}
constexpr RuleId rule_of(Symbol s, uint32_t num_words) {
  return s - num_words;
}
constexpr Symbol rule_symbol(RuleId r, uint32_t num_words) {
  return num_words + r;
}
constexpr Symbol boundary_symbol(uint32_t i) {
  return kBoundaryBit | i;
}

/// Format version written into every archive file. Version 3 stores a shard's symbols dense
/// (boundary i of the root as V + R + i) and packed to the bits the largest needs (HDF5's N-bit
/// filter); version 2 stored them as they are in memory, shuffled and deflated; both store
/// shard-local word ids (a shard's `local_words`); version 1 stored dictionary ids in every
/// shard. Readers take all three (docs/FORMAT.md) and reject any other value.
inline constexpr uint32_t kFormatVersion = 3;
/// The oldest format version readers take.
inline constexpr uint32_t kOldestFormatVersion = 1;

}  // namespace gtadoc
