// Tokenization (coordinator/tokenize.h): the block-wise tokenizer gives the runs of a byte-by-byte
// reference on edge cases and on random texts of every length around the 64-byte blocks, with
// every whitespace byte and bytes that only look like it (0x08, 0x0E, 0x1F, 0x21, 0x85, 0xA0).
#include "coordinator/tokenize.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace gtadoc {
namespace {

/// Runs as "g:" / "w:" strings, in order.
std::vector<std::string> runs_of(std::string_view text) {
  std::vector<std::string> out;
  tokenize(
      text, [&](std::string_view g) { out.push_back("g:" + std::string(g)); },
      [&](std::string_view w) { out.push_back("w:" + std::string(w)); });
  return out;
}

std::vector<std::string> reference_runs(std::string_view text) {
  std::vector<std::string> out;
  size_t p = 0;
  for (;;) {
    size_t g = p;
    while (p < text.size() && is_space_byte(static_cast<unsigned char>(text[p]))) ++p;
    out.push_back("g:" + std::string(text.substr(g, p - g)));
    if (p == text.size()) return out;
    size_t w = p;
    while (p < text.size() && !is_space_byte(static_cast<unsigned char>(text[p]))) ++p;
    out.push_back("w:" + std::string(text.substr(w, p - w)));
  }
}

TEST(Tokenize, EdgeCases) {
  EXPECT_EQ(runs_of(""), (std::vector<std::string>{"g:"}));
  EXPECT_EQ(runs_of("a"), (std::vector<std::string>{"g:", "w:a", "g:"}));
  EXPECT_EQ(runs_of(" "), (std::vector<std::string>{"g: "}));
  EXPECT_EQ(runs_of(" a\tb\r\n"),
            (std::vector<std::string>{"g: ", "w:a", "g:\t", "w:b", "g:\r\n"}));
  const std::string nul("a\0b \0", 5);
  EXPECT_EQ(runs_of(nul), reference_runs(nul));
  for (size_t n : {63, 64, 65, 127, 128, 129, 200}) {
    EXPECT_EQ(runs_of(std::string(n, 'x')), reference_runs(std::string(n, 'x'))) << n;
    EXPECT_EQ(runs_of(std::string(n, ' ')), reference_runs(std::string(n, ' '))) << n;
    EXPECT_EQ(runs_of(std::string(n, 'x') + " "), reference_runs(std::string(n, 'x') + " ")) << n;
    EXPECT_EQ(runs_of(" " + std::string(n, 'x')), reference_runs(" " + std::string(n, 'x'))) << n;
  }
}

TEST(Tokenize, MatchesByteByByteReferenceOnRandomTexts) {
  const std::string alphabet("\x20\x09\x0A\x0B\x0C\x0D\x08\x0E\x1F\x21\x85\xA0xy", 14);
  std::mt19937 rng(12345);
  for (int round = 0; round < 3000; ++round) {
    const size_t n = round < 300 ? static_cast<size_t>(round) : rng() % 1000;
    const unsigned space_bias = rng() % 4;  // from mostly words to mostly gaps
    std::string text(n, ' ');
    for (char& c : text) c = rng() % 4 < space_bias ? alphabet[rng() % 6] : alphabet[6 + rng() % 8];
    ASSERT_EQ(runs_of(text), reference_runs(text)) << "round " << round;
  }
}

}  // namespace
}  // namespace gtadoc
