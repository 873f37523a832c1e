// Lossless tokenization (SPEC §3): a document is gap word gap word ... word gap, where a word is
// a maximal run of non-whitespace bytes and a gap a (possibly empty) run of ASCII whitespace
// (0x20, 0x09-0x0D). A document with k words has exactly k+1 gaps; concatenating them in order
// gives the document back byte for byte.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace gtadoc {

namespace detail {
constexpr std::array<bool, 256> make_space_table() {
  std::array<bool, 256> t{};
  t[0x20] = t[0x09] = t[0x0A] = t[0x0B] = t[0x0C] = t[0x0D] = true;
  return t;
}
inline constexpr std::array<bool, 256> kIsSpace = make_space_table();
}  // namespace detail

inline bool is_space_byte(unsigned char c) {
  return detail::kIsSpace[c];
}

/// Calls on_gap(gap) and on_word(word) alternately, starting and ending with a gap.
template <typename OnGap, typename OnWord>
void tokenize(std::string_view text, OnGap&& on_gap, OnWord&& on_word) {
  const char* p = text.data();
  const char* end = p + text.size();
  for (;;) {
    const char* g = p;
    while (p < end && is_space_byte(static_cast<unsigned char>(*p))) ++p;
    on_gap(std::string_view(g, static_cast<size_t>(p - g)));
    if (p == end) return;
    const char* w = p;
    while (p < end && !is_space_byte(static_cast<unsigned char>(*p))) ++p;
    on_word(std::string_view(w, static_cast<size_t>(p - w)));
  }
}

}  // namespace gtadoc
