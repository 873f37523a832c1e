// Global word tasks (word-count, sort) top-down in one pass over the grammar as stored: rules in
// descending id order (a valid topological order, the root first) push their weight to the
// rules they reference and add it to the words they hold. No load-time structures are needed,
// so a one-off query pays only for reading the shard. Counters are per local word: the pass and
// its memory are in proportion to the shard, whatever the size of the dictionary.
#include <algorithm>

#include "worker/cpu/cpu_internal.h"

namespace gtadoc::cpu {

RecordBatch word_count_direct(const ShardGrammar& g, const Normalization& norm) {
  const uint32_t L = g.num_words;
  const uint32_t R = g.num_rules();
  // Buffers of small shards are kept per thread from one shard to the next: a batch of many
  // small shards would otherwise fault fresh pages in for every shard (page faults were a third
  // of a 478-shard word count's time, dev VM). Large shards' buffers are not kept (a resident
  // process would hold them on every thread).
  constexpr size_t kKept = (size_t{8} << 20) / sizeof(uint64_t);
  thread_local std::vector<uint64_t> kept_weight, kept_count;
  std::vector<uint64_t> own_weight, own_count;
  std::vector<uint64_t>& weight = R <= kKept ? kept_weight : own_weight;
  std::vector<uint64_t>& count = L <= kKept ? kept_count : own_count;
  weight.assign(R, 0);
  count.assign(L, 0);
  weight[R - 1] = 1;
  const Symbol* sym = g.symbols.data();
  for (uint32_t r = R; r-- > 0;) {
    const uint64_t w = weight[r];
    if (w == 0) continue;
    for (uint64_t i = g.rule_offsets[r], e = g.rule_offsets[r + 1]; i < e; ++i) {
      const Symbol s = sym[i];
      if (s < L)
        count[s] += w;
      else if (!is_boundary(s))
        weight[s - L] += w;
    }
  }
  RecordBatch out;
  out.width = 1;
  if (norm.identity) {  // local ids ascend with the dictionary's: keys come out sorted
    for (uint32_t l = 0; l < L; ++l)
      if (count[l] != 0) {
        out.keys.push_back(g.local_words[l]);
        out.counts.push_back(count[l]);
      }
    return out;
  }
  // Normalized: words that normalize alike are summed (sorted by normalized id, then merged).
  std::vector<std::pair<WordId, uint64_t>> pairs;
  pairs.reserve(L);
  for (uint32_t l = 0; l < L; ++l) {
    const WordId n = norm.remap[g.local_words[l]];
    if (n != kDroppedWord && count[l] != 0) pairs.emplace_back(n, count[l]);
  }
  std::sort(pairs.begin(), pairs.end());
  for (size_t i = 0; i < pairs.size();) {
    uint64_t c = 0;
    size_t j = i;
    for (; j < pairs.size() && pairs[j].first == pairs[i].first; ++j) c += pairs[j].second;
    out.keys.push_back(pairs[i].first);
    out.counts.push_back(c);
    i = j;
  }
  return out;
}

}  // namespace gtadoc::cpu
