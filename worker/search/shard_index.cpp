#include "worker/search/shard_index.h"

#include <algorithm>

#include "common/error.h"

namespace gtadoc {

namespace {

/// Calls f(symbol value, holder) once per distinct (value, holder) pair, holders ascending:
/// rules by their bodies (root excluded), documents by their root segments. `seen` (symbol values
/// entries) remembers the last holder each value was reported for.
template <class RuleF, class DocF>
void for_each_holder(const ShardGrammar& g, std::vector<uint64_t>& seen, RuleF&& rule_f,
                     DocF&& doc_f) {
  std::fill(seen.begin(), seen.end(), ~uint64_t{0});
  for (RuleId r = 0; r < g.root(); ++r)
    for (uint64_t i = g.body_begin(r); i < g.body_end(r); ++i) {
      const Symbol s = g.symbols[i];
      if (seen[s] == r) continue;
      seen[s] = r;
      rule_f(s, r);
    }
  std::fill(seen.begin(), seen.end(), ~uint64_t{0});
  for (uint32_t d = 0; d < g.num_docs; ++d) {
    const auto [begin, end] = g.doc_segment(d);
    for (uint64_t i = begin; i < end; ++i) {
      const Symbol s = g.symbols[i];
      if (seen[s] == d) continue;
      seen[s] = d;
      doc_f(s, d);
    }
  }
}

}  // namespace

ShardSearchIndex::ShardSearchIndex(const ShardGrammar& g) {
  require_bodies(g);
  const size_t values = size_t{g.num_words} + g.num_rules();
  std::vector<uint64_t> seen(values);
  rule_at_.assign(values + 1, 0);
  doc_at_.assign(values + 1, 0);
  for_each_holder(
      g, seen, [&](Symbol s, RuleId) { ++rule_at_[s + 1]; },
      [&](Symbol s, uint32_t) { ++doc_at_[s + 1]; });
  for (size_t v = 0; v < values; ++v) {
    rule_at_[v + 1] += rule_at_[v];
    doc_at_[v + 1] += doc_at_[v];
  }
  rule_holders_.resize(rule_at_[values]);
  doc_holders_.resize(doc_at_[values]);
  std::vector<uint64_t> rule_fill(rule_at_.begin(), rule_at_.end() - 1);
  std::vector<uint64_t> doc_fill(doc_at_.begin(), doc_at_.end() - 1);
  for_each_holder(
      g, seen, [&](Symbol s, RuleId r) { rule_holders_[rule_fill[s]++] = r; },
      [&](Symbol s, uint32_t d) { doc_holders_[doc_fill[s]++] = d; });
  count_words(g);
}

void ShardSearchIndex::count_words(const ShardGrammar& g) {
  num_words_ = g.num_words;
  // The shard's words (the root's expansion); past 32 bits, counts go through the rules instead.
  if (g.rule_length[g.root()] > UINT32_MAX) return;
  // Occurrences of each rule in the documents, parents before children (descending ids), then
  // each word's: the occurrences of the bodies and segments that hold it.
  const uint32_t nw = g.num_words;
  std::vector<uint32_t> uses(g.num_rules(), 0);
  word_counts_.assign(nw, 0);
  auto add = [&](Symbol s, uint32_t times) {
    if (is_word(s, nw))
      word_counts_[s] += times;
    else
      uses[rule_of(s, nw)] += times;
  };
  for (uint32_t d = 0; d < g.num_docs; ++d) {
    const auto [begin, end] = g.doc_segment(d);
    for (uint64_t i = begin; i < end; ++i) add(g.symbols[i], 1);
  }
  for (RuleId r = g.root(); r-- > 0;) {
    if (uses[r] == 0) continue;
    for (uint64_t i = g.body_begin(r); i < g.body_end(r); ++i) add(g.symbols[i], uses[r]);
  }
}

std::shared_ptr<const std::vector<uint8_t>> ShardSearchIndex::capped_lengths(
    const ShardGrammar& g, const Normalization& norm) const {
  if (norm.cache_key == 0)
    return std::make_shared<const std::vector<uint8_t>>(capped_rule_lengths(g, norm));
  std::lock_guard lock(lengths_mutex_);
  for (const auto& [key, lengths] : lengths_)
    if (key == norm.cache_key) return lengths;
  auto made = std::make_shared<const std::vector<uint8_t>>(capped_rule_lengths(g, norm));
  lengths_.emplace_back(norm.cache_key, made);
  return made;
}

uint64_t ShardSearchIndex::bytes() const {
  uint64_t lengths = 0;
  {
    std::lock_guard lock(lengths_mutex_);
    for (const auto& l : lengths_) lengths += l.second->size();
  }
  return (rule_at_.size() + doc_at_.size()) * sizeof(uint64_t) +
         word_counts_.size() * sizeof(uint32_t) +
         rule_holders_.size() * sizeof(RuleId) + doc_holders_.size() * sizeof(uint32_t) + lengths;
}

void require_bodies(const ShardGrammar& g) {
  if (g.rule_offsets.empty() || g.symbols.size() != g.rule_offsets.back())
    throw InternalError("phrase search: a resident grammar without its rule bodies (its engine "
                        "was not told to keep them: Engine::keep_host_grammars)");
}

std::vector<uint8_t> capped_rule_lengths(const ShardGrammar& g, const Normalization& norm) {
  std::vector<uint8_t> len(g.num_rules(), 0);
  const uint32_t nw = g.num_words;
  for (RuleId r = 0; r < g.root(); ++r) {
    if (norm.identity) {
      len[r] = static_cast<uint8_t>(std::min<uint64_t>(g.rule_length[r], 255));
      continue;
    }
    uint32_t n = 0;
    for (uint64_t i = g.body_begin(r); i < g.body_end(r) && n < 255; ++i) {
      const Symbol s = g.symbols[i];
      n += is_word(s, nw) ? (norm.map(g.local_words[s]) != kDroppedWord ? 1 : 0)
                          : len[rule_of(s, nw)];
    }
    len[r] = static_cast<uint8_t>(std::min<uint32_t>(n, 255));
  }
  return len;
}

}  // namespace gtadoc
