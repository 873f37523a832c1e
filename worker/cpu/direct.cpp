// Global word tasks (word-count, sort) top-down in one pass over the grammar as stored: rules in
// descending id order (a valid topological order, the root first) push their weight to the
// rules they reference and add it to the words they hold. No load-time structures are needed,
// so a one-off query pays only for reading the shard.
#include "worker/cpu/cpu_internal.h"

namespace gtadoc::cpu {

RecordBatch word_count_direct(const ShardGrammar& g, const Normalization& norm) {
  const uint32_t V = g.num_words;
  const uint32_t R = g.num_rules();
  const uint32_t out_words = norm.identity ? V : norm.dict.size();
  std::vector<uint64_t> weight(R, 0);
  std::vector<uint64_t> count(out_words, 0);
  weight[R - 1] = 1;
  const Symbol* sym = g.symbols.data();
  for (uint32_t r = R; r-- > 0;) {
    const uint64_t w = weight[r];
    if (w == 0) continue;
    for (uint64_t i = g.rule_offsets[r], e = g.rule_offsets[r + 1]; i < e; ++i) {
      const Symbol s = sym[i];
      if (s < V) {
        const WordId n = norm.identity ? s : norm.remap[s];
        if (n != kDroppedWord) count[n] += w;
      } else if (!is_boundary(s)) {
        weight[s - V] += w;
      }
    }
  }
  RecordBatch out;
  out.width = 1;
  for (WordId n = 0; n < out_words; ++n)
    if (count[n] != 0) {
      out.keys.push_back(n);
      out.counts.push_back(count[n]);
    }
  return out;
}

}  // namespace gtadoc::cpu
