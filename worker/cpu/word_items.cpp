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
  std::vector<std::vector<uint64_t>> scratch(Q.ex.threads), sort_tmp(Q.ex.threads);
  Q.items.own_store = build_csr<uint32_t>(
      Q.ex, Q.s.num_units(), 512, [&](unsigned tid, uint64_t u, auto& items, auto& cnts) {
        std::vector<uint64_t>& sc = scratch[tid];
        sc.clear();
        for (uint64_t i = terms.off[u]; i < terms.off[u + 1]; ++i) {
          const uint32_t it = lnorm[terms.item[i]];
          if (it != kNoItem) sc.push_back(uint64_t{it} << 32 | terms.cnt[i]);
        }
        append_summed(sc, sort_tmp[tid], items, cnts);
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
