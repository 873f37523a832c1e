#include "formats/grammar_pieces.h"

#include <string>

#include "common/error.h"

namespace gtadoc {

ShardGrammar slice_documents(const ShardGrammar& g, uint32_t begin, uint32_t end) {
  GTADOC_EXPECTS(begin < end && end <= g.num_docs, "slice_documents: bad document range");
  const uint32_t V = g.num_words;
  const uint32_t root = g.root();
  const uint64_t seg_begin = g.doc_segment(begin).first;
  const uint64_t seg_end = g.doc_segment(end - 1).second;

  // Rules reachable from the segments. Children have smaller heights, hence smaller ids, so one
  // pass from the top rule down marks every rule below a marked one.
  std::vector<uint8_t> reached(root, 0);
  for (uint64_t i = seg_begin; i < seg_end; ++i)
    if (is_rule(g.symbols[i], V)) reached[rule_of(g.symbols[i], V)] = 1;
  for (uint32_t r = root; r-- > 0;) {
    if (!reached[r]) continue;
    for (uint64_t i = g.body_begin(r); i < g.body_end(r); ++i)
      if (is_rule(g.symbols[i], V)) reached[rule_of(g.symbols[i], V)] = 1;
  }
  // Raw ids: 0 is the new root, reachable rules 1.. in their old order.
  std::vector<uint32_t> raw_id(root, 0);
  uint32_t next = 1;
  for (uint32_t r = 0; r < root; ++r)
    if (reached[r]) raw_id[r] = next++;
  auto map = [&](Symbol s) { return is_rule(s, V) ? rule_symbol(raw_id[rule_of(s, V)], V) : s; };

  RawGrammar raw;
  for (uint32_t d = begin; d < end; ++d) {
    if (d > begin) raw.symbols.push_back(boundary_symbol(d - begin - 1));
    auto [b, e] = g.doc_segment(d);
    for (uint64_t i = b; i < e; ++i) raw.symbols.push_back(map(g.symbols[i]));
  }
  raw.offsets = {0, raw.symbols.size()};
  for (uint32_t r = 0; r < root; ++r) {
    if (!reached[r]) continue;
    for (uint64_t i = g.body_begin(r); i < g.body_end(r); ++i)
      raw.symbols.push_back(map(g.symbols[i]));
    raw.offsets.push_back(raw.symbols.size());
  }
  // The piece numbers the words it uses among the shard's local ones; mapped to the dictionary.
  ShardGrammar piece = finalize_grammar(V, g.first_doc + begin, end - begin, raw);
  for (WordId& w : piece.local_words) w = g.local_words[w];
  return piece;
}

namespace {

void split_range(const ShardGrammar& g, uint32_t begin, uint32_t end, uint64_t max_symbols,
                 std::vector<ShardGrammar>& out) {
  ShardGrammar piece = slice_documents(g, begin, end);
  if (piece.symbols.size() <= max_symbols || end - begin == 1) {
    out.push_back(std::move(piece));
    return;
  }
  piece = ShardGrammar{};
  // Halve by root symbols, so that long and short documents weigh what they hold.
  const uint64_t lo = g.doc_root_offsets[begin], hi = g.doc_root_offsets[end];
  uint32_t mid = begin + 1;
  while (mid + 1 < end && g.doc_root_offsets[mid] - lo < (hi - lo) / 2) ++mid;
  split_range(g, begin, mid, max_symbols, out);
  split_range(g, mid, end, max_symbols, out);
}

}  // namespace

std::vector<ShardGrammar> split_by_documents(const ShardGrammar& g, uint64_t max_symbols) {
  std::vector<ShardGrammar> out;
  if (g.symbols.size() <= max_symbols || g.num_docs <= 1) {
    out.push_back(g);
    return out;
  }
  split_range(g, 0, g.num_docs, max_symbols, out);
  return out;
}

}  // namespace gtadoc
