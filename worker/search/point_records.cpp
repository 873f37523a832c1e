#include "worker/search/point_records.h"

#include <algorithm>
#include <memory>

#include "common/error.h"

namespace gtadoc {

namespace {

/// The local id of global word `w` in `g`, or nullopt.
std::optional<Symbol> local_word(const ShardGrammar& g, WordId w) {
  auto it = std::lower_bound(g.local_words.begin(), g.local_words.end(), w);
  if (it == g.local_words.end() || *it != w) return std::nullopt;
  return static_cast<Symbol>(it - g.local_words.begin());
}

/// The local ids of the `members` (global ids) that `g` holds, appended to `out`.
void append_locals(const ShardGrammar& g, const std::vector<WordId>& members,
                   std::vector<Symbol>& out) {
  for (WordId m : members)
    if (const std::optional<Symbol> local = local_word(g, m)) out.push_back(*local);
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

/// The rules above some of `symbols` (local words), marked in `holds` (one byte per rule of the
/// grammar: only grammars holding a word asked for get one), and the shard-local documents holding
/// them (ascending).
struct Holding {
  std::vector<uint8_t> holds;
  std::vector<uint32_t> docs;
};
Holding holding(const ShardGrammar& g, const ShardSearchIndex& index,
                std::vector<Symbol> frontier) {
  Holding h;
  h.holds.assign(g.num_rules(), 0);
  while (!frontier.empty()) {
    const Symbol s = frontier.back();
    frontier.pop_back();
    const auto in_docs = index.documents(s);
    h.docs.insert(h.docs.end(), in_docs.begin(), in_docs.end());
    for (RuleId r : index.holders(s))
      if (h.holds[r] == 0) {
        h.holds[r] = 1;
        frontier.push_back(rule_symbol(r, g.num_words));
      }
  }
  std::sort(h.docs.begin(), h.docs.end());
  h.docs.erase(std::unique(h.docs.begin(), h.docs.end()), h.docs.end());
  return h;
}

/// inverted-index [w, doc], term-vector [doc, w]: each word's documents and counts. The rows of
/// inverted-index show no counts: its records are the documents holding the word's members
/// (the rules above them and the documents whose segments hold one, from the index alone, no
/// segment read), each with count 1.
RecordBatch word_postings(const ShardGrammar& g, const ShardSearchIndex& index,
                          const QueryOptions& q, const Normalization& norm,
                          const PointWords& words) {
  RecordBatch out;
  out.width = 2;
  const bool doc_first = q.task == Task::kTermVector;
  for (size_t i = 0; i < words.words.size(); ++i) {
    const uint32_t w = words.words[i];
    if (q.task == Task::kInvertedIndex) {
      std::vector<Symbol> members;
      append_locals(g, words.members[i], members);
      if (members.empty()) continue;
      for (uint32_t d : holding(g, index, std::move(members)).docs) {
        const uint32_t key[2] = {w, static_cast<uint32_t>(g.first_doc + d)};
        out.push(key, 1);
      }
      continue;
    }
    for (const DocCount& d : count_phrase(g, index, one_word(words, i), norm)) {
      const uint32_t doc = static_cast<uint32_t>(d.doc);
      const uint32_t key[2] = {doc_first ? doc : w, doc_first ? w : doc};
      out.push(key, d.count);
    }
  }
  return out;
}

/// The n-grams of documents that hold a filter word, one record per occurrence, from a walk over
/// each document's segment that descends only into the rules above a filter word (and rules of
/// at most 2(n-1) words); of any other rule it takes the first n-1 kept words (while an n-gram
/// holding a filter word is still open) and the last n-1 (the context of what follows): an
/// n-gram holding a filter word outside such a rule reaches no further into it.
class NgramWalk {
 public:
  NgramWalk(const ShardGrammar& g, const QueryOptions& q, const Normalization& norm,
            const PointWords& words, const Holding& holding, const std::vector<uint8_t>& len,
            RecordBatch& out)
      : g_(g),
        norm_(norm),
        words_(words),
        holding_(holding),
        len_(len),
        out_(out),
        n_(q.n),
        lead_(q.task == Task::kSequenceCount && q.per_doc ? 1 : 0),
        doc_last_(q.task == Task::kRankedInvertedIndex),
        key_(out.width) {}

  void document(uint32_t d) {
    const uint32_t doc = static_cast<uint32_t>(g_.first_doc + d);
    if (lead_) key_[0] = doc;
    if (doc_last_) key_[n_] = doc;
    count_ = gap_at_ = last_hit_ = 0;
    const auto [begin, end] = g_.doc_segment(d);
    std::vector<std::pair<uint64_t, uint64_t>> stack{{begin, end}};
    const uint32_t nw = g_.num_words;
    while (!stack.empty()) {
      auto& [i, stop] = stack.back();
      if (i == stop) {
        stack.pop_back();
        continue;
      }
      const Symbol s = g_.symbols[i++];
      if (is_word(s, nw)) {
        push_global(g_.local_words[s]);
        continue;
      }
      const RuleId r = rule_of(s, nw);
      if (len_[r] <= 2 * (n_ - 1) || holding_.holds[r] != 0) {
        stack.emplace_back(g_.body_begin(r), g_.body_end(r));  // invalidates i, stop
        continue;
      }
      Edge e;
      if (open()) {
        edge(r, true, e);
        for (uint32_t t = 0; t < e.size && open(); ++t) push(e.words[t]);
      }
      count_ += 1;  // a word that is in no n-gram asked for: n-grams across it are not
      gap_at_ = count_;
      e.size = 0;
      edge(r, false, e);
      for (uint32_t t = e.size; t > 0; --t) push(e.words[t - 1]);
    }
  }

 private:
  static constexpr uint32_t kMaxEdge = 8;
  struct Edge {
    WordId words[kMaxEdge];  ///< normalized, heads in text order, tails last word first
    uint32_t size = 0;
  };

  void push_global(WordId w) {
    const WordId m = norm_.map(w);
    if (m != kDroppedWord) push(m);
  }
  /// An n-gram holding a filter word has begun and not ended.
  bool open() const { return last_hit_ != 0 && last_hit_ + n_ - 1 > count_; }
  void push(WordId m) {
    ring_[count_ % n_] = m;
    ++count_;
    if (std::binary_search(words_.words.begin(), words_.words.end(), m)) last_hit_ = count_;
    // The n-gram ending here, when it is whole since the last gap and holds a filter word.
    if (count_ - gap_at_ < n_ || last_hit_ + n_ <= count_) return;
    for (uint32_t t = 0; t < n_; ++t) key_[lead_ + t] = ring_[(count_ - n_ + t) % n_];
    out_.push(key_, 1);
  }
  /// Appends the first (head) or last (tail: last word first) n-1 kept words of rule r, normalized,
  /// to `e` (up to n-1 in all), along r's first or last children only.
  void edge(RuleId r, bool head, Edge& e) const {
    const uint32_t want = n_ - 1, nw = g_.num_words;
    const uint64_t b = g_.body_begin(r), en = g_.body_end(r);
    for (uint64_t k = 0; k < en - b && e.size < want; ++k) {
      const Symbol s = g_.symbols[head ? b + k : en - 1 - k];
      if (!is_word(s, nw)) {
        edge(rule_of(s, nw), head, e);
        continue;
      }
      const WordId m = norm_.map(g_.local_words[s]);
      if (m != kDroppedWord) e.words[e.size++] = m;
    }
  }

  const ShardGrammar& g_;
  const Normalization& norm_;
  const PointWords& words_;
  const Holding& holding_;
  const std::vector<uint8_t>& len_;
  RecordBatch& out_;
  const uint32_t n_, lead_;
  const bool doc_last_;
  std::vector<uint32_t> key_;
  WordId ring_[kMaxEdge] = {};
  uint64_t count_ = 0, gap_at_ = 0, last_hit_ = 0;  ///< words pushed; at the last gap; last hit
};

/// sequence-count [w1..wn] / --per-doc [doc, w1..wn], ranked-inverted-index [w1..wn, doc].
RecordBatch ngram_records(const ShardGrammar& g, const ShardSearchIndex& index,
                          const QueryOptions& q, const Normalization& norm,
                          const PointWords& words) {
  RecordBatch out;
  out.width = key_layout(q).width;
  if (q.n < 2 || q.n > 8) throw InternalError("point records: n-grams of 2..8 words");
  std::vector<Symbol> locals;
  for (const auto& members : words.members) append_locals(g, members, locals);
  if (locals.empty()) return out;
  const Holding h = holding(g, index, std::move(locals));
  const std::shared_ptr<const std::vector<uint8_t>> len = index.capped_lengths(g, norm);
  NgramWalk walk(g, q, norm, words, h, *len, out);
  for (uint32_t d : h.docs) walk.document(d);
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

PointCost point_cost(const ShardGrammar& g, const ShardSearchIndex& index,
                     const PointWords& words) {
  PointCost c;
  c.pass = static_cast<double>(g.num_rules()) + g.num_docs;
  for (const auto& members : words.members) {
    double spread = 0;
    for (WordId m : members)
      if (std::optional<Symbol> l = local_word(g, m))
        spread += 1 + static_cast<double>(index.holders(*l).size() + index.documents(*l).size());
    c.lookup += std::min(c.pass, kPointFanOut * spread);
  }
  return c;
}

RecordBatch point_records(const ShardGrammar& g, const ShardSearchIndex& index,
                          const QueryOptions& q, const Normalization& norm,
                          const PointWords& words) {
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
      return ngram_records(g, index, q, norm, words);
  }
  throw InternalError("point records: unknown task");
}

}  // namespace gtadoc
