// Per-query vocabulary of the CPU engine: the normalization remap restricted to the shard's
// words, compacted to dense "items" in normalized byte order; terminal bags remapped to items.
#include <algorithm>
#include <bit>
#include <numeric>

#include "common/error.h"
#include "worker/cpu/cpu_internal.h"

namespace gtadoc::cpu {

Vocab build_vocab(const CpuShard& s, const Normalization& norm, const Exec&) {
  Vocab v;
  const size_t nl = s.local_words.size();
  if (norm.identity) {
    v.identity = true;
    v.lnorm.resize(nl);
    std::iota(v.lnorm.begin(), v.lnorm.end(), uint32_t{0});
    v.item_word = s.local_words;
    return v;
  }
  GTADOC_EXPECTS(norm.remap.size() == s.g.num_words,
                 "normalization remap does not cover the shard's vocabulary");
  v.identity = false;
  uint64_t space = 0;
  for (WordId w : s.local_words)
    if (norm.remap[w] != kDroppedWord) space = std::max<uint64_t>(space, norm.remap[w] + 1ull);
  std::vector<uint64_t> bits((space + 63) / 64, 0);
  for (WordId w : s.local_words) {
    WordId r = norm.remap[w];
    if (r != kDroppedWord) bits[r >> 6] |= uint64_t{1} << (r & 63);
  }
  std::vector<uint32_t> rank(bits.size() + 1, 0);
  for (size_t i = 0; i < bits.size(); ++i)
    rank[i + 1] = rank[i] + static_cast<uint32_t>(std::popcount(bits[i]));
  v.item_word.reserve(rank.back());
  for (size_t i = 0; i < bits.size(); ++i)
    for (uint64_t b = bits[i]; b != 0; b &= b - 1)
      v.item_word.push_back(static_cast<WordId>(i * 64 + std::countr_zero(b)));
  v.lnorm.resize(nl);
  for (size_t i = 0; i < nl; ++i) {
    WordId r = norm.remap[s.local_words[i]];
    if (r == kDroppedWord) {
      v.lnorm[i] = kNoItem;
    } else {
      uint64_t m = bits[r >> 6] & ((uint64_t{1} << (r & 63)) - 1);
      v.lnorm[i] = rank[r >> 6] + static_cast<uint32_t>(std::popcount(m));
    }
  }
  return v;
}

void build_word_items(Query& Q) {
  Q.items.width = 1;
  Q.items.count = Q.vocab.size();
  Q.items.keys.clear();
  if (Q.vocab.identity) {
    Q.items.own = CsrView<uint32_t>::of(Q.s.terms);
    return;
  }
  const auto& terms = Q.s.terms;
  const auto& lnorm = Q.vocab.lnorm;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> scratch(Q.ex.threads);
  Q.items.own_store = build_csr<uint32_t>(
      Q.ex, Q.s.num_units(), 512, [&](unsigned tid, uint64_t u, auto& items, auto& cnts) {
        auto& sc = scratch[tid];
        sc.clear();
        for (uint64_t i = terms.off[u]; i < terms.off[u + 1]; ++i) {
          uint32_t it = lnorm[terms.item[i]];
          if (it != kNoItem) sc.emplace_back(it, terms.cnt[i]);
        }
        if (sc.size() > 1) std::sort(sc.begin(), sc.end());
        for (size_t i = 0; i < sc.size();) {
          uint64_t c = 0;
          size_t j = i;
          for (; j < sc.size() && sc[j].first == sc[i].first; ++j) c += sc[j].second;
          items.push_back(sc[i].first);
          cnts.push_back(static_cast<uint32_t>(c));
          i = j;
        }
      });
  Q.items.own = CsrView<uint32_t>::of(Q.items.own_store);
}

DocSlot Query::doc_slot() const {
  switch (q.task) {
    case Task::kWordCount:
    case Task::kSort:
      return DocSlot::kNone;
    case Task::kInvertedIndex:
      return DocSlot::kLast;
    case Task::kTermVector:
      return DocSlot::kFirst;
    case Task::kSequenceCount:
      return q.per_doc ? DocSlot::kFirst : DocSlot::kNone;
    case Task::kRankedInvertedIndex:
      return DocSlot::kLast;
  }
  return DocSlot::kNone;
}

void Query::write_key(uint32_t* dst, uint32_t item, DocId doc) const {
  DocSlot slot = doc_slot();
  if (slot == DocSlot::kFirst) *dst++ = doc;
  if (items.width == 1) {
    *dst++ = vocab.item_word[item];
  } else {
    const uint32_t* k = items.keys.data() + static_cast<size_t>(item) * items.width;
    for (uint32_t j = 0; j < items.width; ++j) *dst++ = vocab.item_word[k[j]];
  }
  if (slot == DocSlot::kLast) *dst = doc;
}

}  // namespace gtadoc::cpu
