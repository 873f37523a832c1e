#include "tests/testutil/grammars.h"

#include <random>
#include <string>
#include <vector>

namespace gtadoc::testutil {

RawGrammar random_raw_grammar(uint32_t num_words, uint32_t num_docs, uint32_t num_rules,
                              uint32_t max_segment, uint64_t seed,
                              const RandomGrammarOptions& options) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  std::vector<std::vector<Symbol>> bodies(num_rules + 1);
  std::vector<uint32_t> uses(num_rules + 1, 0);
  auto random_symbol = [&](uint32_t min_rule) -> Symbol {
    if (min_rule <= num_rules && pick(options.rule_one_in) == 0) {
      uint32_t r = min_rule + pick(num_rules - min_rule + 1);
      ++uses[r];
      return num_words + r;
    }
    return pick(num_words);
  };
  for (uint32_t i = num_rules; i >= 1; --i) {
    uint32_t len = 2 + pick(3);
    for (uint32_t k = 0; k < len; ++k) bodies[i].push_back(random_symbol(i + 1));
  }
  std::vector<std::vector<Symbol>> segments(num_docs);
  for (uint32_t d = 0; d < num_docs; ++d) {
    if (d == options.empty_doc) continue;
    uint32_t len = pick(max_segment + 1);
    for (uint32_t k = 0; k < len; ++k) segments[d].push_back(random_symbol(1));
  }
  const uint32_t last = num_docs - 1 == options.empty_doc ? 0 : num_docs - 1;
  for (uint32_t r = 1; r <= num_rules; ++r)
    while (uses[r] < 2) {
      segments[last].push_back(num_words + r);
      ++uses[r];
    }
  for (uint32_t d = 0; d < num_docs; ++d) {
    bodies[0].insert(bodies[0].end(), segments[d].begin(), segments[d].end());
    if (d + 1 < num_docs)
      bodies[0].push_back(boundary_symbol(d * options.boundary_stride + options.boundary_offset));
  }
  RawGrammar raw;
  for (const auto& b : bodies) {
    raw.symbols.insert(raw.symbols.end(), b.begin(), b.end());
    raw.offsets.push_back(raw.symbols.size());
  }
  return raw;
}

Manifest write_one_shard(const std::filesystem::path& dir, const ShardGrammar& g,
                         uint32_t dict_words, ShardLayout* layout) {
  ShardLayout own;
  ShardLayout& l = layout != nullptr ? *layout : own;
  l.ws_dict = {" "};
  l.gaps.assign(g.rule_length[g.root()] + g.num_docs, 0);
  write_shard_file(dir / shard_file_name(0), 1, 0, g, l, {4});
  Manifest m;
  m.archive_id = 1;
  for (uint32_t w = 0; w < dict_words; ++w) m.dict.push_back("w" + std::to_string(100000 + w));
  ShardEntry e;
  e.first_doc = g.first_doc;
  e.num_docs = g.num_docs;
  e.words = g.rule_length[g.root()];
  e.rules = g.num_rules();
  e.symbols = g.symbols.size();
  e.depth = dag_depth(g);
  m.shards = {e};
  return m;
}

}  // namespace gtadoc::testutil
