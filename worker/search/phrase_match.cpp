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
  explicit Automaton(uint32_t words)
      : k(words), hit(uint64_t{1} << (words - 1)), keep(hit - 1) {}
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
    return true;
  }
  uint64_t mask(Symbol w) const {
    auto it = std::lower_bound(masks_.begin(), masks_.end(), std::pair<Symbol, uint64_t>{w, 0});
    return it != masks_.end() && it->first == w ? it->second : 0;
  }
  bool kept(Symbol w) const { return norm_.identity || norm_.map(g_.local_words[w]) != kDroppedWord; }
  const std::vector<std::pair<Symbol, uint64_t>>& words() const { return masks_; }

 private:
  const ShardGrammar& g_;
  const Normalization& norm_;
  std::vector<std::pair<Symbol, uint64_t>> masks_;
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
  uint32_t find(RuleId r) const {
    auto it = slot.find(r);
    return it == slot.end() ? kNoSlot : it->second;
  }
  void set(RuleId r, uint32_t s) { slot.emplace(r, s); }
};

/// Summaries of the rules that hold a phrase word, for one phrase (see the header). Rules must be
/// summarized children first (ascending ids); a rule without a slot holds no phrase word.
template <class Slots>
class RuleSummaries {
 public:
  RuleSummaries(const ShardGrammar& g, const Automaton& a, const WordMasks& w,
                const std::vector<uint8_t>& len, Slots slots)
      : g_(g), a_(a), w_(w), len_(len), slots_(std::move(slots)) {}

  /// Summarizes rule r (its children that hold phrase words summarized already).
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
    slots_.set(r, static_cast<uint32_t>(summaries_.size()));
    summaries_.push_back(s);
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
      const uint32_t slot = slots_.find(c);
      if (slot == kNoSlot) {  // holds no phrase word: matches nothing, ends every partial match
        if (len != 0) d = 0;
        if (prefix != nullptr)
          prefix->resize(std::min<size_t>(want, prefix->size() + len), 0);
        continue;
      }
      const Summary& sum = summaries_[slot];
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
  struct Summary {
    Count inner = 0;     ///< occurrences inside the rule's expansion
    uint64_t state = 0;  ///< automaton state after the expansion, started empty
    uint64_t prefix_at = 0;
    uint32_t prefix_size = 0;  ///< min(k-1, kept words)
  };

  const ShardGrammar& g_;
  const Automaton& a_;
  const WordMasks& w_;
  const std::vector<uint8_t>& len_;  ///< kept words of each rule, capped at 255
  Slots slots_;
  std::vector<Summary> summaries_;
  std::vector<uint64_t> prefix_;
  std::vector<uint64_t> scratch_;
};

/// Counts of the documents `docs` (shard-local, ascending) with `rules` summarized.
template <class Slots>
std::vector<DocCount> count_documents(const ShardGrammar& g, const RuleSummaries<Slots>& rules,
                                      const std::vector<uint32_t>& docs) {
  std::vector<DocCount> out;
  for (uint32_t d : docs) {
    const auto [begin, end] = g.doc_segment(d);
    uint64_t state = 0;
    const Count c = rules.scan(begin, end, state, nullptr);
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
  const Automaton a(static_cast<uint32_t>(phrase.words.size()));
  WordMasks masks(g, norm);
  if (!masks.build(phrase)) return {};  // a word of the phrase is not in this shard
  const std::vector<uint8_t> len = capped_rule_lengths(g, norm);
  // Which rules hold a phrase word: one pass over the bodies, children first.
  const uint32_t nw = g.num_words;
  std::vector<uint8_t> holds(g.num_rules(), 0);
  RuleSummaries<DenseSlots> rules(g, a, masks, len, DenseSlots(g.num_rules()));
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
  return count_documents(g, rules, docs);
}

std::vector<DocCount> count_phrase(const ShardGrammar& g, const ShardSearchIndex& index,
                                   const NormalizedPhrase& phrase, const Normalization& norm) {
  if (phrase.absent || phrase.words.empty() || g.num_docs == 0) return {};
  const Automaton a(static_cast<uint32_t>(phrase.words.size()));
  WordMasks masks(g, norm);
  if (!masks.build(phrase)) return {};
  // The rules above the phrase's words (their ancestors), and the documents holding any of them.
  std::unordered_set<RuleId> seen;
  std::vector<RuleId> holding;
  std::vector<Symbol> frontier;
  std::vector<uint32_t> docs;
  for (const auto& [w, m] : masks.words()) frontier.push_back(w);
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
  }
  std::sort(holding.begin(), holding.end());  // children first
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  const std::shared_ptr<const std::vector<uint8_t>> len = index.capped_lengths(g, norm);
  SparseSlots slots;
  slots.slot.reserve(holding.size());
  RuleSummaries<SparseSlots> rules(g, a, masks, *len, std::move(slots));
  for (RuleId r : holding) rules.summarize(r);
  return count_documents(g, rules, docs);
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
