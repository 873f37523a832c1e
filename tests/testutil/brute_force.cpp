#include "tests/testutil/brute_force.h"

namespace gtadoc::testutil {

BruteForceRecords brute_force(const ShardGrammar& g, const Normalization& norm,
                              const QueryOptions& q) {
  BruteForceRecords out;
  std::vector<WordId> raw;
  std::vector<uint32_t> words;
  for (uint32_t d = 0; d < g.num_docs; ++d) {
    raw.clear();
    expand_document(g, d, raw);
    words.clear();
    for (WordId w : raw) {
      const WordId r = norm.identity ? w : norm.remap[w];
      if (r != kDroppedWord) words.push_back(r);
    }
    const uint32_t doc = g.first_doc + d;
    switch (q.task) {
      case Task::kWordCount:
      case Task::kSort:
        for (uint32_t w : words) ++out[{w}];
        break;
      case Task::kInvertedIndex:
        for (uint32_t w : words) ++out[{w, doc}];
        break;
      case Task::kTermVector:
        for (uint32_t w : words) ++out[{doc, w}];
        break;
      case Task::kSequenceCount:
      case Task::kRankedInvertedIndex:
        for (size_t i = 0; i + q.n <= words.size(); ++i) {
          std::vector<uint32_t> key(words.begin() + i, words.begin() + i + q.n);
          if (q.task == Task::kRankedInvertedIndex) {
            key.push_back(doc);
          } else if (q.per_doc) {
            key.insert(key.begin(), doc);
          }
          ++out[key];
        }
        break;
    }
  }
  return out;
}

}  // namespace gtadoc::testutil
