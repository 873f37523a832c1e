// Phrase occurrences counted on a shard's grammar, without expanding it (`gtadoc grep`,
// `POST /v1/search`; docs/REFERENCE.md "Phrase search").
//
// A phrase of k normalized words (1..64) is matched by the shift-and automaton, whose state after
// any word is a k-bit set (bit j: the last j+1 words equal the phrase's first j+1). Every rule is
// summarized once per phrase in height order: its matches inside, the masks of its first k-1
// words and the state its last words leave. A body (and a document's root segment) is then
// scanned symbol by symbol: a sub-rule adds its own matches, the matches that start before it and
// end in its first k-1 words, and hands on its state. Rules that hold no phrase word are
// summarized by their (capped) length alone. Cost per shard and phrase: one pass over the rule
// bodies plus k-1 masks per rule that holds a phrase word; memory: a byte and a few words per
// rule, all sized by the shard. The engines are not involved: it reads the host grammar every
// engine keeps (LoadedShard::grammar()).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"
#include "formats/grammar.h"
#include "worker/query.h"

namespace gtadoc {

inline constexpr uint32_t kMaxPhraseWords = 64;

/// A phrase in normalized word ids (Normalization::dict), 1..kMaxPhraseWords words, with the
/// global words each normalizes from. `absent`: some word of it is in no document (it then
/// matches nowhere).
struct NormalizedPhrase {
  std::vector<WordId> words;
  std::vector<std::vector<WordId>> members;  ///< per word: global ids mapping to it, ascending
  bool absent = false;
};

/// Fills phrase.members from phrase.words: the word itself for the identity, else every global
/// word `norm` maps to it (one pass over the normalization's remap, on `threads` threads; 0 =
/// every usable CPU).
void find_members(NormalizedPhrase& phrase, const Normalization& norm, unsigned threads = 0);

/// Splits `text` into words (ASCII whitespace), normalizes each with `lowercase`/`alnum` and drops
/// the words normalization drops. Throws UsageError when none is left or more than 64 are
/// (`index` numbers the phrase in the messages, from 1).
std::vector<std::string> phrase_words(std::string_view text, bool lowercase, bool alnum,
                                      size_t index);

/// Looks up normalized words in `norm.dict` (binary search); a word not there makes the phrase
/// absent. Fills the members (find_members).
NormalizedPhrase lookup_phrase(const std::vector<std::string>& words, const Normalization& norm);

/// One document's count of one phrase (global document id).
struct DocCount {
  DocId doc = 0;
  Count count = 0;
};

/// The documents of `g` holding `phrase` (normalized with `norm`, members filled), in document
/// order, with their occurrence counts (overlapping occurrences count). Thread-safe on a shared
/// grammar. One pass over the bodies of a shard that holds every word of the phrase.
std::vector<DocCount> count_phrase(const ShardGrammar& g, const NormalizedPhrase& phrase,
                                   const Normalization& norm);

class ShardSearchIndex;
/// The share of a shard's rules above a phrase's anchor past which an indexed count takes the
/// full pass instead (docs/PERFORMANCE.md, "Phrase search").
inline constexpr double kFullPassShare = 1.0 / 64;
/// The same counts through the shard's index (worker/search/shard_index.h): only the rules above
/// the phrase's rarest word (every occurrence holds it), the documents holding them and the
/// first and last k-1 words of their other children are visited, in proportion to where that
/// word occurs, not to the shard. When those rules pass a quarter of the shard's, the whole
/// grammar is summarized instead, as above: past `full_pass_share` of the shard's rules (or 16
/// times that share of its documents; 0: never, as tests ask).
std::vector<DocCount> count_phrase(const ShardGrammar& g, const ShardSearchIndex& index,
                                   const NormalizedPhrase& phrase, const Normalization& norm,
                                   double full_pass_share = kFullPassShare);

/// Where the phrases occur in one document's normalized word stream: for each occurrence, the
/// positions (in the document's unnormalized word list, as expand_document gives it) of its first
/// and its last word. `words` are the document's global word ids in text order. Occurrences of
/// all the phrases, sorted by first then last position.
struct Occurrence {
  uint64_t first = 0, last = 0;
};
std::vector<Occurrence> locate_phrases(const std::vector<WordId>& words,
                                       const std::vector<NormalizedPhrase>& phrases,
                                       const Normalization& norm);

}  // namespace gtadoc
