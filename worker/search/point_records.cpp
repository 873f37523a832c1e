#include "worker/search/point_records.h"

#include <algorithm>
#include <unordered_set>

#include "common/error.h"

namespace gtadoc {

namespace {

/// The local id of global word `w` in `g`, or nullopt.
std::optional<Symbol> local_word(const ShardGrammar& g, WordId w) {
  auto it = std::lower_bound(g.local_words.begin(), g.local_words.end(), w);
  if (it == g.local_words.end() || *it != w) return std::nullopt;
  return static_cast<Symbol>(it - g.local_words.begin());
}

NormalizedPhrase one_word(const PointWords& words, size_t i) {
  NormalizedPhrase p;
  p.words = {words.words[i]};
  p.members = {words.members[i]};
  return p;
}

/// word-count, sort: [w] with the grammar's occurrences of w's members.
RecordBatch word_totals(const ShardGrammar& g, const ShardSearchIndex& index,
                        const Normalization& norm, const PointWords& words) {
  RecordBatch out;
  out.width = 1;
  for (size_t i = 0; i < words.words.size(); ++i) {
    Count total = 0;
    bool counted = true;
    for (WordId m : words.members[i]) {
      const std::optional<Symbol> local = local_word(g, m);
      if (!local) continue;
      const std::optional<Count> c = index.word_count(*local);
      if (!c) {
        counted = false;
        break;
      }
      total += *c;
    }
    if (!counted) {  // counts that do not fit the index: through the rules above the word
      total = 0;
      for (const DocCount& d : count_phrase(g, index, one_word(words, i), norm)) total += d.count;
    }
    const uint32_t key = words.words[i];
    if (total != 0) out.push({&key, 1}, total);
  }
  return out;
}

/// inverted-index [w, doc], term-vector [doc, w]: each word's documents and counts.
RecordBatch word_postings(const ShardGrammar& g, const ShardSearchIndex& index,
                          const QueryOptions& q, const Normalization& norm,
                          const PointWords& words) {
  RecordBatch out;
  out.width = 2;
  const bool doc_first = q.task == Task::kTermVector;
  for (size_t i = 0; i < words.words.size(); ++i) {
    const uint32_t w = words.words[i];
    for (const DocCount& d : count_phrase(g, index, one_word(words, i), norm)) {
      const uint32_t doc = static_cast<uint32_t>(d.doc);
      const uint32_t key[2] = {doc_first ? doc : w, doc_first ? w : doc};
      out.push(key, d.count);
    }
  }
  return out;
}

/// Shard-local documents holding one of `symbols` (local words), ascending: the documents of the
/// rules above them. nullopt past the limits.
std::optional<std::vector<uint32_t>> holding_documents(const ShardGrammar& g,
                                                       const ShardSearchIndex& index,
                                                       std::vector<Symbol> frontier,
                                                       const PointLimits& limits) {
  constexpr double kNever = 1e300;
  const double rule_bound = limits.rule_share > 0 ? limits.rule_share * g.num_rules() + 64 : kNever;
  const double doc_bound = limits.doc_share > 0 ? limits.doc_share * g.num_docs + 8 : kNever;
  std::unordered_set<RuleId> seen;
  std::vector<uint32_t> docs;
  size_t rules = 0;
  while (!frontier.empty()) {
    const Symbol s = frontier.back();
    frontier.pop_back();
    const auto in_docs = index.documents(s);
    docs.insert(docs.end(), in_docs.begin(), in_docs.end());
    for (RuleId r : index.holders(s))
      if (seen.insert(r).second) {
        ++rules;
        frontier.push_back(rule_symbol(r, g.num_words));
      }
    if (static_cast<double>(rules) > rule_bound ||
        static_cast<double>(docs.size()) > 4 * doc_bound)
      return std::nullopt;
  }
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  if (static_cast<double>(docs.size()) > doc_bound) return std::nullopt;
  return docs;
}

/// sequence-count [w1..wn] / --per-doc [doc, w1..wn], ranked-inverted-index [w1..wn, doc]: the
/// n-grams of the documents holding a word that hold one, one record per occurrence.
std::optional<RecordBatch> ngram_records(const ShardGrammar& g, const ShardSearchIndex& index,
                                         const QueryOptions& q, const Normalization& norm,
                                         const PointWords& words, const PointLimits& limits) {
  const uint32_t n = q.n;
  RecordBatch out;
  out.width = key_layout(q).width;
  std::vector<Symbol> locals;
  for (const auto& members : words.members)
    for (WordId m : members)
      if (std::optional<Symbol> l = local_word(g, m)) locals.push_back(*l);
  if (locals.empty()) return out;
  const std::optional<std::vector<uint32_t>> docs =
      holding_documents(g, index, std::move(locals), limits);
  if (!docs) return std::nullopt;
  const uint32_t lead = q.task == Task::kSequenceCount && q.per_doc ? 1 : 0;
  const bool doc_last = q.task == Task::kRankedInvertedIndex;
  std::vector<WordId> text, stream;
  std::vector<uint32_t> key(out.width);
  for (uint32_t d : *docs) {
    text.clear();
    expand_document(g, d, text);
    stream.clear();
    for (WordId w : text)
      if (const WordId m = norm.map(w); m != kDroppedWord) stream.push_back(m);
    if (stream.size() < n) continue;
    const uint32_t doc = static_cast<uint32_t>(g.first_doc + d);
    if (lead) key[0] = doc;
    if (doc_last) key[n] = doc;
    // Each n-gram once: those starting at or after `next` that reach a filter word at p.
    size_t next = 0;
    for (size_t p = 0; p < stream.size(); ++p) {
      if (!std::binary_search(words.words.begin(), words.words.end(), stream[p])) continue;
      const size_t first = std::max(next, p + 1 >= n ? p + 1 - n : 0);
      const size_t last = std::min(p, stream.size() - n);  // starts [first, last]
      for (size_t s = first; s <= last; ++s) {
        std::copy(stream.begin() + static_cast<ptrdiff_t>(s),
                  stream.begin() + static_cast<ptrdiff_t>(s + n), key.begin() + lead);
        out.push(key, 1);
      }
      next = std::max(next, last + 1);
    }
  }
  return out;
}

}  // namespace

PointWords point_words(std::vector<WordId> words, const Normalization& norm, unsigned threads) {
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  NormalizedPhrase all;
  all.words = words;
  find_members(all, norm, threads);
  PointWords out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (all.members[i].empty()) continue;
    out.words.push_back(words[i]);
    out.members.push_back(std::move(all.members[i]));
  }
  return out;
}

std::optional<RecordBatch> point_records(const ShardGrammar& g, const ShardSearchIndex& index,
                                         const QueryOptions& q, const Normalization& norm,
                                         const PointWords& words, const PointLimits& limits) {
  require_bodies(g);
  switch (q.task) {
    case Task::kWordCount:
    case Task::kSort:
      return word_totals(g, index, norm, words);
    case Task::kInvertedIndex:
    case Task::kTermVector:
      return word_postings(g, index, q, norm, words);
    case Task::kSequenceCount:
    case Task::kRankedInvertedIndex:
      return ngram_records(g, index, q, norm, words, limits);
  }
  throw InternalError("point records: unknown task");
}

}  // namespace gtadoc
