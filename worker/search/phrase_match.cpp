#include "worker/search/phrase_match.h"

#include <algorithm>
#include <utility>

#include "common/error.h"

namespace gtadoc {

namespace {

bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/// The shift-and automaton of one phrase of k words: bit j of a state means "the last j+1 words
/// are the phrase's first j+1".
struct Automaton {
  uint32_t k = 0;
  uint64_t hit = 0;   ///< bit k-1: a whole occurrence ends here
  uint64_t keep = 0;  ///< bits 0..k-2: what later words can extend
  explicit Automaton(uint32_t words)
      : k(words), hit(uint64_t{1} << (words - 1)), keep(hit - 1) {}
};

/// Per word of a shard: the phrase positions it matches, and whether it stays in the normalized
/// stream (normalization may drop it).
struct WordMasks {
  std::vector<uint64_t> mask;  ///< num_words entries
  std::vector<uint8_t> kept;   ///< empty: every word is kept (no word dropped)
};

/// The masks of the shard's words; empty masks when some word of the phrase is not in the shard
/// (nothing can match: found without a pass over the shard's vocabulary when no word is dropped).
WordMasks word_masks(const ShardGrammar& g, const NormalizedPhrase& phrase,
                     const Normalization& norm) {
  WordMasks m;
  if (norm.identity) {
    // Normalized ids are global ids: each phrase word is one local word, if the shard has it.
    std::vector<uint32_t> local(phrase.words.size());
    for (uint32_t j = 0; j < phrase.words.size(); ++j) {
      auto it = std::lower_bound(g.local_words.begin(), g.local_words.end(), phrase.words[j]);
      if (it == g.local_words.end() || *it != phrase.words[j]) return m;
      local[j] = static_cast<uint32_t>(it - g.local_words.begin());
    }
    m.mask.assign(g.num_words, 0);
    for (uint32_t j = 0; j < phrase.words.size(); ++j) m.mask[local[j]] |= uint64_t{1} << j;
    return m;
  }
  m.mask.assign(g.num_words, 0);
  // The phrase's distinct words with the positions they take, for a binary search per word.
  std::vector<std::pair<WordId, uint64_t>> positions;
  for (uint32_t j = 0; j < phrase.words.size(); ++j) positions.emplace_back(phrase.words[j], 0);
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  for (uint32_t j = 0; j < phrase.words.size(); ++j)
    std::lower_bound(positions.begin(), positions.end(), std::pair<WordId, uint64_t>{phrase.words[j], 0})
        ->second |= uint64_t{1} << j;
  m.kept.assign(g.num_words, 1);
  for (uint32_t w = 0; w < g.num_words; ++w) {
    const WordId n = norm.map(g.local_words[w]);
    if (n == kDroppedWord) {
      m.kept[w] = 0;
      continue;
    }
    auto it = std::lower_bound(positions.begin(), positions.end(),
                               std::pair<WordId, uint64_t>{n, 0});
    if (it != positions.end() && it->first == n) m.mask[w] = it->second;
  }
  return m;
}

/// Summaries of a shard's rules for one phrase (see the header).
class RuleSummaries {
 public:
  RuleSummaries(const ShardGrammar& g, const Automaton& a, const WordMasks& w)
      : g_(g), a_(a), w_(w), len_(g.num_rules(), 0), slot_(g.num_rules(), kNone) {
    const uint32_t nw = g.num_words;
    std::vector<uint8_t> relevant(g.num_rules(), 0);
    for (RuleId r = 0; r < g.root(); ++r) {  // children come first (ids by height)
      uint32_t len = 0;
      bool rel = false;
      for (uint64_t i = g.body_begin(r); i < g.body_end(r); ++i) {
        const Symbol s = g.symbols[i];
        if (is_word(s, nw)) {
          len += kept(s);
          rel = rel || w.mask[s] != 0;
        } else {
          const RuleId c = rule_of(s, nw);
          len += len_[c];
          rel = rel || relevant[c];
        }
        len = std::min<uint32_t>(len, kLenCap);
      }
      len_[r] = static_cast<uint8_t>(len);
      relevant[r] = rel;
      if (rel) summarize(r);
    }
  }

  /// Scans body positions [begin, end) from state `state`; returns the matches that end inside
  /// and leaves the final state (bits 0..k-2) in `state`. With `prefix`, the masks of the first
  /// k-1 kept words are appended to it.
  Count scan(uint64_t begin, uint64_t end, uint64_t& state, std::vector<uint64_t>* prefix) const {
    const uint32_t nw = g_.num_words;
    const uint32_t want = a_.k - 1;
    Count matches = 0;
    uint64_t d = state;
    for (uint64_t i = begin; i < end; ++i) {
      const Symbol s = g_.symbols[i];
      if (is_word(s, nw)) {
        if (!kept(s)) continue;
        const uint64_t m = w_.mask[s];
        if (prefix != nullptr && prefix->size() < want) prefix->push_back(m);
        d = ((d << 1) | 1) & m;
        matches += (d & a_.hit) != 0;
        d &= a_.keep;
        continue;
      }
      const RuleId c = rule_of(s, nw);
      const uint32_t len = len_[c];
      if (slot_[c] == kNone) {  // holds no phrase word: matches nothing, ends every partial match
        if (len != 0) d = 0;
        if (prefix != nullptr)
          prefix->resize(std::min<size_t>(want, prefix->size() + len), 0);
        continue;
      }
      const Summary& sum = summaries_[slot_[c]];
      // Occurrences that started before c and end in its first k-1 words.
      uint64_t carried = d;
      for (size_t t = 0; t < sum.prefix_size && carried != 0; ++t) {
        carried = (carried << 1) & prefix_[sum.prefix_at + t];
        matches += (carried & a_.hit) != 0;
      }
      matches += sum.inner;
      // After c: the partial matches it started, and those from before it when it is shorter
      // than k-1 words (its prefix is then all of it).
      d = sum.state | (len < want ? carried & a_.keep : 0);
      if (prefix != nullptr)
        for (size_t t = 0; t < sum.prefix_size && prefix->size() < want; ++t)
          prefix->push_back(prefix_[sum.prefix_at + t]);
    }
    state = d;
    return matches;
  }

 private:
  static constexpr uint32_t kLenCap = 255;  ///< lengths are compared with k-1 <= 63 only
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  struct Summary {
    Count inner = 0;     ///< occurrences inside the rule's expansion
    uint64_t state = 0;  ///< automaton state after the expansion, started empty
    uint64_t prefix_at = 0;
    uint32_t prefix_size = 0;  ///< min(k-1, kept words)
  };

  uint32_t kept(Symbol word) const { return w_.kept.empty() ? 1 : w_.kept[word]; }

  void summarize(RuleId r) {
    std::vector<uint64_t>& prefix = scratch_;
    prefix.clear();
    uint64_t state = 0;
    Summary s;
    s.inner = scan(g_.body_begin(r), g_.body_end(r), state, &prefix);
    s.state = state;
    s.prefix_at = prefix_.size();
    s.prefix_size = static_cast<uint32_t>(prefix.size());
    prefix_.insert(prefix_.end(), prefix.begin(), prefix.end());
    slot_[r] = static_cast<uint32_t>(summaries_.size());
    summaries_.push_back(s);
  }

  const ShardGrammar& g_;
  const Automaton& a_;
  const WordMasks& w_;
  std::vector<uint8_t> len_;    ///< kept words of each rule's expansion, capped at kLenCap
  std::vector<uint32_t> slot_;  ///< index into summaries_, or kNone (no phrase word inside)
  std::vector<Summary> summaries_;
  std::vector<uint64_t> prefix_;
  std::vector<uint64_t> scratch_;
};

}  // namespace

std::vector<std::string> phrase_words(std::string_view text, bool lowercase, bool alnum,
                                      size_t index) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(static_cast<unsigned char>(text[i]))) ++i;
    const size_t start = i;
    while (i < text.size() && !is_space(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) break;
    std::string w = normalize_word(text.substr(start, i - start), lowercase, alnum);
    if (!w.empty()) words.push_back(std::move(w));
  }
  if (words.empty())
    throw UsageError("phrase " + std::to_string(index) + " ('" + std::string(text) +
                     "') has no words");
  if (words.size() > kMaxPhraseWords)
    throw UsageError("phrase " + std::to_string(index) + " has " + std::to_string(words.size()) +
                     " words; a phrase holds at most " + std::to_string(kMaxPhraseWords));
  return words;
}

NormalizedPhrase lookup_phrase(const std::vector<std::string>& words, const Normalization& norm) {
  NormalizedPhrase p;
  for (const std::string& w : words) {
    const WordId id = norm.dict.find(w);
    if (id >= norm.dict.size()) p.absent = true;
    p.words.push_back(id);
  }
  return p;
}

std::vector<DocCount> count_phrase(const ShardGrammar& g, const NormalizedPhrase& phrase,
                                   const Normalization& norm) {
  std::vector<DocCount> out;
  if (phrase.absent || phrase.words.empty() || g.num_docs == 0) return out;
  const Automaton a(static_cast<uint32_t>(phrase.words.size()));
  const WordMasks masks = word_masks(g, phrase, norm);
  if (masks.mask.empty()) return out;
  uint64_t seen = 0;  // the phrase positions some word of the shard matches
  for (uint64_t m : masks.mask) seen |= m;
  if (seen != (a.hit | a.keep)) return out;  // a word of the phrase is not in this shard
  const RuleSummaries rules(g, a, masks);
  for (uint32_t d = 0; d < g.num_docs; ++d) {
    const auto [begin, end] = g.doc_segment(d);
    uint64_t state = 0;
    const Count c = rules.scan(begin, end, state, nullptr);
    if (c != 0) out.push_back({g.first_doc + d, c});
  }
  return out;
}

std::vector<Occurrence> locate_phrases(const std::vector<WordId>& words,
                                       const std::vector<NormalizedPhrase>& phrases,
                                       const Normalization& norm) {
  // The normalized stream, with each word's position in `words`.
  std::vector<WordId> stream;
  std::vector<uint64_t> at;
  for (uint64_t i = 0; i < words.size(); ++i) {
    const WordId n = norm.map(words[i]);
    if (n == kDroppedWord) continue;
    stream.push_back(n);
    at.push_back(i);
  }
  std::vector<Occurrence> out;
  for (const NormalizedPhrase& p : phrases) {
    if (p.absent || p.words.empty()) continue;
    const size_t k = p.words.size();
    for (size_t i = 0; i + k <= stream.size(); ++i)
      if (std::equal(p.words.begin(), p.words.end(), stream.begin() + static_cast<ptrdiff_t>(i)))
        out.push_back({at[i], at[i + k - 1]});
  }
  std::sort(out.begin(), out.end(), [](const Occurrence& x, const Occurrence& y) {
    return x.first != y.first ? x.first < y.first : x.last < y.last;
  });
  return out;
}

}  // namespace gtadoc
