#include "worker/search/phrase_match.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "common/error.h"
#include "common/parallel.h"
#include "worker/search/shard_index.h"

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
  explicit Automaton(uint32_t words) : k(words), hit(uint64_t{1} << (words - 1)), keep(hit - 1) {}
};

/// The shard's words that match some phrase position, with the positions they match (sorted
/// by local id, a handful), and the normalization deciding which words stay in the stream.
class WordMasks {
 public:
  WordMasks(const ShardGrammar& g, const Normalization& norm) : g_(g), norm_(norm) {}
  /// Finds the local words of every position's members; false when a position has none here
  /// (the phrase cannot occur in this shard).
  bool build(const NormalizedPhrase& phrase) {
    if (phrase.members.size() != phrase.words.size())
      throw InternalError("phrase search: the phrase's members were not looked up");
    for (uint32_t j = 0; j < phrase.members.size(); ++j) {
      bool any = false;
      for (WordId w : phrase.members[j]) {
        auto it = std::lower_bound(g_.local_words.begin(), g_.local_words.end(), w);
        if (it == g_.local_words.end() || *it != w) continue;
        masks_.emplace_back(static_cast<Symbol>(it - g_.local_words.begin()), uint64_t{1} << j);
        any = true;
      }
      if (!any) return false;
    }
    std::sort(masks_.begin(), masks_.end());
    size_t out = 0;  // one entry per word, its positions ORed
    for (size_t i = 0; i < masks_.size(); ++i) {
      if (out != 0 && masks_[out - 1].first == masks_[i].first)
        masks_[out - 1].second |= masks_[i].second;
      else
        masks_[out++] = masks_[i];
    }
    masks_.resize(out);
    for (const auto& [w, m] : masks_) filter_[(w >> 6) & 63] |= uint64_t{1} << (w & 63);
    return true;
  }
  uint64_t mask(Symbol w) const {
    // Most words of a shard are none of the phrase's: one bit of a 4,096-bit filter says so.
    if ((filter_[(w >> 6) & 63] & (uint64_t{1} << (w & 63))) == 0) return 0;
    auto it = std::lower_bound(masks_.begin(), masks_.end(), std::pair<Symbol, uint64_t>{w, 0});
    return it != masks_.end() && it->first == w ? it->second : 0;
  }
  bool kept(Symbol w) const {
    return norm_.identity || norm_.map(g_.local_words[w]) != kDroppedWord;
  }
  const std::vector<std::pair<Symbol, uint64_t>>& words() const { return masks_; }

 private:
  const ShardGrammar& g_;
  const Normalization& norm_;
  std::vector<std::pair<Symbol, uint64_t>> masks_;
  uint64_t filter_[64] = {};
};

constexpr uint32_t kNoSlot = 0xFFFFFFFFu;

/// Summary slots of every rule of a shard (the full pass).
struct DenseSlots {
  std::vector<uint32_t> slot;
  explicit DenseSlots(size_t rules) : slot(rules, kNoSlot) {}
  uint32_t find(RuleId r) const { return slot[r]; }
  void set(RuleId r, uint32_t s) { slot[r] = s; }
};
/// Summary slots of the few rules a lookup visits (with an index).
struct SparseSlots {
  std::unordered_map<RuleId, uint32_t> slot;
  /// A bit per rule of the grammar: set for the rules with a slot. Most symbols a search scans
  /// have none, and a bit answers them without a hash lookup (a third of a one-word lookup's
  /// time went to the hash table).
  std::vector<uint64_t> has;
  explicit SparseSlots(uint32_t rules) : has((size_t{rules} + 63) / 64, 0) {}
  uint32_t find(RuleId r) const {
    if ((has[r >> 6] >> (r & 63) & 1) == 0) return kNoSlot;
    auto it = slot.find(r);
    return it == slot.end() ? kNoSlot : it->second;
  }
  void set(RuleId r, uint32_t s) {
    has[r >> 6] |= uint64_t{1} << (r & 63);
    slot.emplace(r, s);
  }
};

/// Summaries of rules for one phrase (see the header). Rules must be summarized children first
/// (ascending ids). Without `boundaries`, a rule without a summary holds no phrase word. With
/// `boundaries` (an indexed search, which summarizes only the rules above one "anchor" word of
/// the phrase), a rule without one holds no occurrence, but its first and last k-1 words may
/// still extend occurrences across it: their masks are computed when first needed, from the
/// rule's own children (none of which holds the anchor either), and kept.
template <class Slots>
class RuleSummaries {
 public:
  /// `anchor`: the phrase position every summarized rule holds (indexed searches), else unused.
  RuleSummaries(const ShardGrammar& g, const Automaton& a, const WordMasks& w,
                const std::vector<uint8_t>& len, Slots slots, bool boundaries, uint32_t anchor = 0)
      : g_(g),
        a_(a),
        w_(w),
        len_(len),
        slots_(std::move(slots)),
        boundaries_(boundaries),
        anchor_(uint64_t{1} << anchor) {}

  /// Summarizes rule r (its children summarized already, or left to `boundaries`).
  void summarize(RuleId r) {
    if (boundaries_) return summarize_anchored(r);
    std::vector<uint64_t>& prefix = scratch_;  // reused: one summary per rule of the pass
    prefix.clear();
    uint64_t state = 0;
    Summary s;
    s.inner = scan(g_.body_begin(r), g_.body_end(r), state, &prefix);
    s.state = state;
    s.prefix_at = pool_.size();
    s.prefix_size = static_cast<uint32_t>(prefix.size());
    pool_.insert(pool_.end(), prefix.begin(), prefix.end());
    slots_.set(r, static_cast<uint32_t>(summaries_.size()));
    summaries_.push_back(s);
  }

  /// The occurrences inside body positions [begin, end) (a rule's body or a document's segment),
  /// indexed searches: only the windows of k-1 words around the symbols that hold the anchor
  /// are scanned, since every occurrence holds an anchor word.
  Count count_anchored(uint64_t begin, uint64_t end) {
    const uint32_t want = a_.k - 1;
    Count matches = 0;
    uint64_t covered = begin;  // the scanned windows end here
    for (uint64_t p = begin; p < end; ++p) {
      if (!bears_anchor(g_.symbols[p])) continue;
      uint64_t lo = p;
      for (uint32_t words = 0; lo > covered && words < want;) words += length(g_.symbols[--lo]);
      // k-1 words past the last anchor-bearing symbol the window reaches.
      uint64_t hi = p + 1;
      for (uint32_t words = 0; hi < end && words < want;) {
        const Symbol s = g_.symbols[hi++];
        words = bears_anchor(s) ? 0 : words + length(s);
      }
      // Windows that meet are scanned as one, so each occurrence is counted once, where it ends.
      uint64_t state = 0;
      if (lo == covered && covered != begin) state = last_state_;
      matches += scan(lo, hi, state, nullptr);
      last_state_ = state;
      covered = hi;
      p = hi - 1;
    }
    return matches;
  }

  /// Scans body positions [begin, end) from state `state`; returns the matches that end inside
  /// and leaves the final state (bits 0..k-2) in `state`. With `prefix`, the masks of the first
  /// k-1 kept words are appended to it.
  Count scan(uint64_t begin, uint64_t end, uint64_t& state, std::vector<uint64_t>* prefix) {
    const uint32_t nw = g_.num_words;
    const uint32_t want = a_.k - 1;
    Count matches = 0;
    uint64_t d = state;
    for (uint64_t i = begin; i < end; ++i) {
      const Symbol s = g_.symbols[i];
      if (is_word(s, nw)) {
        if (!w_.kept(s)) continue;
        const uint64_t m = w_.mask(s);
        if (prefix != nullptr && prefix->size() < want) prefix->push_back(m);
        d = ((d << 1) | 1) & m;
        matches += (d & a_.hit) != 0;
        d &= a_.keep;
        continue;
      }
      const RuleId c = rule_of(s, nw);
      const uint32_t len = len_[c];
      uint32_t slot = slots_.find(c);
      if (boundaries_ && (slot == kNoSlot || (!summaries_[slot].anchored &&
                                              (summaries_[slot].prefix_size == kUnknown ||
                                               summaries_[slot].suffix_size == kUnknown))))
        slot = boundary(c);
      if (slot == kNoSlot) {  // holds no phrase word: matches nothing, ends every partial match
        if (len != 0) d = 0;
        if (prefix != nullptr) prefix->resize(std::min<size_t>(want, prefix->size() + len), 0);
        continue;
      }
      const Summary& sum = summaries_[slot];
      // Occurrences that started before c and end in its first k-1 words.
      uint64_t carried = d;
      for (size_t t = 0; t < sum.prefix_size && carried != 0; ++t) {
        carried = (carried << 1) & pool_[sum.prefix_at + t];
        matches += (carried & a_.hit) != 0;
      }
      matches += sum.inner;
      // After c: the partial matches it started, and those from before it when it is shorter
      // than k-1 words (its prefix is then all of it).
      d = sum.state | (len < want ? carried & a_.keep : 0);
      if (prefix != nullptr)
        for (size_t t = 0; t < sum.prefix_size && prefix->size() < want; ++t)
          prefix->push_back(pool_[sum.prefix_at + t]);
    }
    state = d;
    return matches;
  }

 private:
  struct Summary {
    Count inner = 0;     ///< occurrences inside the rule's expansion
    uint64_t state = 0;  ///< automaton state after the expansion, started empty
    uint64_t prefix_at = 0;
    uint32_t prefix_size = 0;  ///< min(k-1, kept words)
    uint64_t suffix_at = 0;    ///< boundary summaries: masks of the last k-1 kept words
    uint32_t suffix_size = 0;
    bool anchored = false;  ///< a rule above the anchor (indexed searches)
  };

  /// The slot of a rule that holds no occurrence (no anchor word), its first and last k-1 kept
  /// words' masks (and the state they leave) computed from its children's and kept: each side
  /// follows only that side's children, so a boundary costs the depth, not the rule's size.
  uint32_t boundary(RuleId r) {
    const uint32_t slot = slot_of(r);
    prefix_of(r, slot);
    suffix_of(r, slot);
    return slot;
  }
  uint32_t slot_of(RuleId r) {
    uint32_t slot = slots_.find(r);
    if (slot != kNoSlot) return slot;
    slot = static_cast<uint32_t>(summaries_.size());
    slots_.set(r, slot);
    summaries_.push_back(Summary{});
    summaries_.back().prefix_size = kUnknown;
    summaries_.back().suffix_size = kUnknown;
    return slot;
  }
  void prefix_of(RuleId r, uint32_t slot) {
    if (summaries_[slot].prefix_size != kUnknown) return;
    const uint32_t nw = g_.num_words;
    const size_t want = a_.k - 1;
    uint64_t prefix[kMaxPhraseWords];
    size_t n = 0;
    for (uint64_t i = g_.body_begin(r); i < g_.body_end(r) && n < want; ++i) {
      const Symbol s = g_.symbols[i];
      if (is_word(s, nw)) {
        if (w_.kept(s)) prefix[n++] = w_.mask(s);
        continue;
      }
      const RuleId c = rule_of(s, nw);
      const uint32_t cs = slot_of(c);
      prefix_of(c, cs);
      const Summary& sum = summaries_[cs];
      for (size_t t = 0; t < sum.prefix_size && n < want; ++t)
        prefix[n++] = pool_[sum.prefix_at + t];
    }
    Summary& b = summaries_[slot];
    b.prefix_at = pool_.size();
    b.prefix_size = static_cast<uint32_t>(n);
    pool_.insert(pool_.end(), prefix, prefix + n);
  }
  void suffix_of(RuleId r, uint32_t slot) {
    if (summaries_[slot].suffix_size != kUnknown) return;
    const uint32_t nw = g_.num_words;
    const size_t want = a_.k - 1;
    uint64_t suffix[kMaxPhraseWords];  // last word first
    size_t n = 0;
    for (uint64_t i = g_.body_end(r); i > g_.body_begin(r) && n < want; --i) {
      const Symbol s = g_.symbols[i - 1];
      if (is_word(s, nw)) {
        if (w_.kept(s)) suffix[n++] = w_.mask(s);
        continue;
      }
      const RuleId c = rule_of(s, nw);
      const uint32_t cs = slot_of(c);
      suffix_of(c, cs);
      const Summary& sum = summaries_[cs];
      for (size_t t = sum.suffix_size; t > 0 && n < want; --t)
        suffix[n++] = pool_[sum.suffix_at + t - 1];
    }
    Summary& b = summaries_[slot];
    b.suffix_at = pool_.size();
    b.suffix_size = static_cast<uint32_t>(n);
    b.state = 0;
    for (size_t t = n; t > 0; --t) {  // stored in text order
      pool_.push_back(suffix[t - 1]);
      b.state = ((b.state << 1) | 1) & suffix[t - 1] & a_.keep;
    }
  }

  static constexpr uint32_t kUnknown = 0xFFFFFFFFu;

  /// A rule above the anchor, indexed searches: its occurrences by windows, its first k-1 words
  /// along its first children (prefix_of), its final state from a scan of its last k-1 words.
  void summarize_anchored(RuleId r) {
    const uint32_t slot = slot_of(r);
    prefix_of(r, slot);
    const Count inner = count_anchored(g_.body_begin(r), g_.body_end(r));
    uint64_t lo = g_.body_end(r);
    for (uint32_t words = 0; lo > g_.body_begin(r) && words < a_.k - 1;)
      words += length(g_.symbols[--lo]);
    uint64_t state = 0;
    scan(lo, g_.body_end(r), state, nullptr);
    Summary& s = summaries_[slot];
    s.inner = inner;
    s.state = state;
    s.suffix_size = 0;  // never needed: rules that are not above the anchor hold no such rule
    s.anchored = true;
  }
  /// Kept words of a symbol (rules: capped).
  uint32_t length(Symbol s) const {
    const uint32_t nw = g_.num_words;
    return is_word(s, nw) ? (w_.kept(s) ? 1 : 0) : len_[rule_of(s, nw)];
  }
  /// Whether a symbol is an anchor word or a rule above one.
  bool bears_anchor(Symbol s) const {
    const uint32_t nw = g_.num_words;
    if (is_word(s, nw)) return (w_.mask(s) & anchor_) != 0;
    const uint32_t slot = slots_.find(rule_of(s, nw));
    return slot != kNoSlot && summaries_[slot].anchored;
  }
  const ShardGrammar& g_;
  const Automaton& a_;
  const WordMasks& w_;
  const std::vector<uint8_t>& len_;  ///< kept words of each rule, capped at 255
  Slots slots_;
  bool boundaries_;
  uint64_t anchor_;
  uint64_t last_state_ = 0;  ///< count_anchored: the state where the last window ended
  std::vector<Summary> summaries_;
  std::vector<uint64_t> pool_;  ///< prefix and suffix masks of the summaries
  std::vector<uint64_t> scratch_;
};

/// Counts of the documents `docs` (shard-local, ascending) with `rules` summarized.
template <class Slots>
std::vector<DocCount> count_documents(const ShardGrammar& g, RuleSummaries<Slots>& rules,
                                      const std::vector<uint32_t>& docs, bool anchored) {
  std::vector<DocCount> out;
  for (uint32_t d : docs) {
    const auto [begin, end] = g.doc_segment(d);
    uint64_t state = 0;
    const Count c =
        anchored ? rules.count_anchored(begin, end) : rules.scan(begin, end, state, nullptr);
    if (c != 0) out.push_back({g.first_doc + d, c});
  }
  return out;
}

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

void find_members(NormalizedPhrase& phrase, const Normalization& norm, unsigned threads) {
  phrase.members.assign(phrase.words.size(), {});
  if (norm.identity) {
    for (size_t j = 0; j < phrase.words.size(); ++j) phrase.members[j] = {phrase.words[j]};
    return;
  }
  std::vector<WordId> wanted(phrase.words);
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  // Global words whose normalized id is wanted, in chunks of the remap, ascending.
  constexpr size_t kChunk = size_t{1} << 20;
  const size_t n = norm.remap.size(), chunks = (n + kChunk - 1) / kChunk;
  std::vector<std::vector<std::pair<WordId, WordId>>> found(chunks);  // (normalized, global)
  parallel_for(chunks, threads, [&](size_t c) {
    for (size_t w = c * kChunk; w < std::min(n, (c + 1) * kChunk); ++w) {
      const WordId to = norm.remap[w];
      if (to != kDroppedWord && std::binary_search(wanted.begin(), wanted.end(), to))
        found[c].emplace_back(to, static_cast<WordId>(w));
    }
  });
  for (const auto& chunk : found)
    for (const auto& [to, w] : chunk)
      for (size_t j = 0; j < phrase.words.size(); ++j)
        if (phrase.words[j] == to) phrase.members[j].push_back(w);
}

NormalizedPhrase lookup_phrase(const std::vector<std::string>& words, const Normalization& norm) {
  NormalizedPhrase p;
  for (const std::string& w : words) {
    const WordId id = norm.dict.find(w);
    if (id >= norm.dict.size()) p.absent = true;
    p.words.push_back(id);
  }
  if (!p.absent) find_members(p, norm);
  return p;
}

std::vector<DocCount> count_phrase(const ShardGrammar& g, const NormalizedPhrase& phrase,
                                   const Normalization& norm) {
  if (phrase.absent || phrase.words.empty() || g.num_docs == 0) return {};
  require_bodies(g);
  const Automaton a(static_cast<uint32_t>(phrase.words.size()));
  WordMasks masks(g, norm);
  if (!masks.build(phrase)) return {};  // a word of the phrase is not in this shard
  const std::vector<uint8_t> len = capped_rule_lengths(g, norm);
  // Which rules hold a phrase word: one pass over the bodies, children first.
  const uint32_t nw = g.num_words;
  std::vector<uint8_t> holds(g.num_rules(), 0);
  RuleSummaries<DenseSlots> rules(g, a, masks, len, DenseSlots(g.num_rules()), false);
  for (RuleId r = 0; r < g.root(); ++r) {
    bool h = false;
    for (uint64_t i = g.body_begin(r); i < g.body_end(r) && !h; ++i) {
      const Symbol s = g.symbols[i];
      h = is_word(s, nw) ? masks.mask(s) != 0 : holds[rule_of(s, nw)] != 0;
    }
    holds[r] = h;
    if (h) rules.summarize(r);
  }
  std::vector<uint32_t> docs(g.num_docs);
  for (uint32_t d = 0; d < g.num_docs; ++d) docs[d] = d;
  return count_documents(g, rules, docs, false);
}

std::vector<DocCount> count_phrase(const ShardGrammar& g, const ShardSearchIndex& index,
                                   const NormalizedPhrase& phrase, const Normalization& norm,
                                   double full_pass_share) {
  if (phrase.absent || phrase.words.empty() || g.num_docs == 0) return {};
  const Automaton a(static_cast<uint32_t>(phrase.words.size()));
  WordMasks masks(g, norm);
  if (!masks.build(phrase)) return {};
  // The anchor: the phrase position whose words are held by the fewest rules and documents.
  // Every occurrence holds it, so only the rules above it hold occurrences.
  std::vector<uint64_t> spread(phrase.words.size(), 0);
  for (const auto& [w, m] : masks.words())
    for (uint32_t j = 0; j < phrase.words.size(); ++j)
      if (m & (uint64_t{1} << j)) spread[j] += index.holders(w).size() + index.documents(w).size();
  const uint32_t anchor =
      static_cast<uint32_t>(std::min_element(spread.begin(), spread.end()) - spread.begin());
  // Those rules (the anchor's words' ancestors) and the documents holding any of them. Past a
  // share of the shard's rules, or 16 times that share of its documents, one pass over the
  // whole grammar costs less (hash lookups per symbol against array reads).
  const bool bounded = full_pass_share > 0;
  const double rule_bound = full_pass_share * g.num_rules() + 64;
  const double doc_bound = std::min(1.0, 16 * full_pass_share) * g.num_docs + 64;
  std::unordered_set<RuleId> seen;
  std::vector<RuleId> holding;
  std::vector<Symbol> frontier;
  std::vector<uint32_t> docs;
  for (const auto& [w, m] : masks.words())
    if (m & (uint64_t{1} << anchor)) frontier.push_back(w);
  while (!frontier.empty()) {
    const Symbol s = frontier.back();
    frontier.pop_back();
    const auto in_docs = index.documents(s);
    docs.insert(docs.end(), in_docs.begin(), in_docs.end());
    for (RuleId r : index.holders(s))
      if (seen.insert(r).second) {
        holding.push_back(r);
        frontier.push_back(rule_symbol(r, g.num_words));
      }
    if (bounded && (static_cast<double>(holding.size()) > rule_bound ||
                    static_cast<double>(docs.size()) > doc_bound))
      return count_phrase(g, phrase, norm);
  }
  std::sort(holding.begin(), holding.end());  // children first
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  const std::shared_ptr<const std::vector<uint8_t>> len = index.capped_lengths(g, norm);
  SparseSlots slots(g.num_rules());
  slots.slot.reserve(holding.size() * 2);
  RuleSummaries<SparseSlots> rules(g, a, masks, *len, std::move(slots), true, anchor);
  for (RuleId r : holding) rules.summarize(r);
  return count_documents(g, rules, docs, true);
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
