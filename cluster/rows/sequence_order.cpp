#include "cluster/rows/sequence_order.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace gtadoc {

SequenceOrder::SequenceOrder(const Dictionary& dict, uint32_t n, unsigned threads) : n_(n) {
  (void)threads;  // one linear pass: no thread pays off
  const auto& bytes = dict.bytes();
  const bool low_byte = std::any_of(bytes.begin(), bytes.end(),
                                    [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (!low_byte || n_ < 2) return;
  // The order of the tokens w + ' ' (prefix-free: each ends in its only space, so comparing
  // tokens is comparing the joined strings). Word ids are in byte order of the words, and a
  // token order differs from it only where a word `a` is a proper prefix of a word `b` whose
  // next byte is below ' ': then b's token comes first. The extensions of `a` follow it in byte
  // order, those with such a byte first (smallest next bytes first), so one pass in id order
  // puts each word after them: a word waits on a stack while the words that follow are its
  // extensions by a byte below ' ' (or extensions of those), and is written once one is not.
  const uint32_t size = dict.size();
  std::vector<WordId> order;
  order.reserve(size);
  std::vector<WordId> waiting;
  auto goes_before = [&](WordId t, std::string_view w) {  // w's token precedes t's
    const std::string_view a = dict[t];
    return w.size() > a.size() && static_cast<unsigned char>(w[a.size()]) < 0x20 &&
           std::memcmp(w.data(), a.data(), a.size()) == 0;
  };
  bool moved = false;
  for (WordId w = 0; w < size; ++w) {
    const std::string_view word = dict[w];
    while (!waiting.empty() && !goes_before(waiting.back(), word)) {
      order.push_back(waiting.back());
      waiting.pop_back();
    }
    moved = moved || !waiting.empty();
    waiting.push_back(w);
  }
  while (!waiting.empty()) {
    order.push_back(waiting.back());
    waiting.pop_back();
  }
  if (!moved) return;  // no word waited for another: the ids are the order
  space_rank_.resize(size);
  for (uint32_t i = 0; i < size; ++i) space_rank_[order[i]] = i;
  word_of_rank_ = std::move(order);
}

}  // namespace gtadoc
