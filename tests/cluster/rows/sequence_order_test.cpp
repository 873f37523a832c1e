// SequenceOrder's ranks against the joined strings themselves: random dictionaries (byte
// order, words that are prefixes of others with next bytes below and above ' '), n-grams
// compared by less() and by their joined bytes.
#include "cluster/rows/sequence_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace gtadoc {
namespace {

Dictionary dictionary_of(const std::set<std::string>& words) {
  std::vector<char> bytes;
  std::vector<uint64_t> offsets{0};
  for (const std::string& w : words) {
    bytes.insert(bytes.end(), w.begin(), w.end());
    offsets.push_back(bytes.size());
  }
  return Dictionary(std::move(bytes), std::move(offsets));
}

TEST(SequenceOrder, RanksOrderNgramsAsTheirJoinedBytes) {
  std::mt19937 rng(7);
  const std::string alphabet = std::string("\x01\x02\x1f") + "!abz~";
  for (int trial = 0; trial < 60; ++trial) {
    std::set<std::string> words;
    const int count = 5 + trial * 3;
    while (static_cast<int>(words.size()) < count) {
      std::string w;
      const int len = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < len; ++i) w += alphabet[rng() % alphabet.size()];
      words.insert(w);
    }
    const Dictionary dict = dictionary_of(words);
    const std::vector<std::string> list(words.begin(), words.end());
    const uint32_t n = 2;
    const SequenceOrder order(dict, n);
    // Every pair of bigrams over a sample of words: less() against the joined strings.
    for (int k = 0; k < 400; ++k) {
      const uint32_t a[2] = {static_cast<uint32_t>(rng() % list.size()),
                             static_cast<uint32_t>(rng() % list.size())};
      const uint32_t b[2] = {static_cast<uint32_t>(rng() % list.size()),
                             static_cast<uint32_t>(rng() % list.size())};
      const std::string ja = list[a[0]] + " " + list[a[1]], jb = list[b[0]] + " " + list[b[1]];
      EXPECT_EQ(order.less(a, b), ja < jb) << "trial " << trial;
      uint32_t ra[2] = {a[0], a[1]};
      order.to_ranks(ra);
      EXPECT_EQ(order.word_at(ra, 0), a[0]);
      EXPECT_EQ(order.word_at(ra, 1), a[1]);
    }
  }
}

TEST(SequenceOrder, IdentityWhenNoWordPrecedesAShorterOne) {
  // Low bytes, but never right after a word that is a prefix of another.
  EXPECT_TRUE(SequenceOrder(dictionary_of({"a", "ab", "b\x01", "c"}), 2).identity());
  EXPECT_TRUE(SequenceOrder(dictionary_of({"\x01", "a", "ab"}), 2).identity());
  const SequenceOrder moved(dictionary_of({"a", "a\x01", "a\x01z", "ab"}), 2);
  ASSERT_FALSE(moved.identity());
  // Tokens in order: "a\x01 ", "a\x01z ", "a ", "ab ".
  EXPECT_EQ(moved.space_ranks(), (std::vector<uint32_t>{2, 0, 1, 3}));
}

}  // namespace
}  // namespace gtadoc
