#include "cluster/rows/sequence_order.h"

#include "cluster/rows/parallel_sort.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string_view>

namespace gtadoc {

SequenceOrder::SequenceOrder(const Dictionary& dict, uint32_t n, unsigned threads) : n_(n) {
  const auto& bytes = dict.bytes();
  const bool low_byte = std::any_of(bytes.begin(), bytes.end(),
                                    [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (!low_byte || n_ < 2) return;
  // Token w + ' ': tokens are prefix-free (each ends in its only space), so comparing tokens is
  // comparing bytes; a word that is a prefix of another continues with ' '.
  std::vector<WordId> order(dict.size());
  std::iota(order.begin(), order.end(), WordId{0});
  auto token_less = [&](WordId x, WordId y) {
    std::string_view a = dict[x], b = dict[y];
    const size_t m = std::min(a.size(), b.size());
    const int c = std::memcmp(a.data(), b.data(), m);
    if (c != 0) return c < 0;
    const unsigned char ca = a.size() > m ? static_cast<unsigned char>(a[m]) : ' ';
    const unsigned char cb = b.size() > m ? static_cast<unsigned char>(b[m]) : ' ';
    return ca < cb;
  };
  parallel_sort(order.begin(), order.end(), token_less, threads);
  space_rank_.resize(dict.size());
  for (uint32_t i = 0; i < order.size(); ++i) space_rank_[order[i]] = i;
  word_of_rank_ = std::move(order);
}

}  // namespace gtadoc
