// Word items of the CPU engine: terminal bags remapped to the query's vocabulary items (worker/
// plan/vocab.h), and how an item and a document become a record key.
#include <algorithm>

#include "common/error.h"
#include "worker/cpu/cpu_internal.h"

namespace gtadoc::cpu {

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
