// Lossless tokenization (docs/REFERENCE.md §3): a document is gap word gap word ... word gap, where
// a word is a maximal run of non-whitespace bytes and a gap a (possibly empty) run of ASCII
// whitespace (0x20, 0x09-0x0D). A document with k words has exactly k+1 gaps; concatenating them in
// order gives the document back byte for byte.
//
// The text is classified 64 bytes at a time into a whitespace bit mask (SSE2 where available);
// the bits where the class changes are the run boundaries, visited without a branch per byte.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gtadoc {

namespace detail {
constexpr std::array<bool, 256> make_space_table() {
  std::array<bool, 256> t{};
  t[0x20] = t[0x09] = t[0x0A] = t[0x0B] = t[0x0C] = t[0x0D] = true;
  return t;
}
inline constexpr std::array<bool, 256> kIsSpace = make_space_table();

/// Bit i set when p[i] is whitespace, for the 64 bytes at p.
inline uint64_t space_mask64(const char* p) {
#if defined(__SSE2__)
  const __m128i blank = _mm_set1_epi8(0x20), nine = _mm_set1_epi8(0x09), four = _mm_set1_epi8(4);
  uint64_t mask = 0;
  for (int k = 0; k < 4; ++k) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i off = _mm_sub_epi8(c, nine);  // 0x09..0x0D -> 0..4 (unsigned)
    const __m128i ctrl = _mm_cmpeq_epi8(_mm_min_epu8(off, four), off);
    const __m128i sp = _mm_or_si128(ctrl, _mm_cmpeq_epi8(c, blank));
    mask |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(sp))} << (16 * k);
  }
  return mask;
#else
  uint64_t mask = 0;
  for (int i = 0; i < 64; ++i) mask |= uint64_t{kIsSpace[static_cast<unsigned char>(p[i])]} << i;
  return mask;
#endif
}
}  // namespace detail

inline bool is_space_byte(unsigned char c) {
  return detail::kIsSpace[c];
}

/// Calls on_gap(gap) and on_word(word) alternately, starting and ending with a gap.
template <typename OnGap, typename OnWord>
void tokenize(std::string_view text, OnGap&& on_gap, OnWord&& on_word) {
  const char* base = text.data();
  const size_t n = text.size();
  size_t start = 0;    // where the current run begins
  bool in_gap = true;  // the current run is a gap (the text opens with one, maybe empty)
  uint64_t carry = 1;  // whether the byte before the block is whitespace (before the text: yes)
  for (size_t block = 0; block < n; block += 64) {
    const size_t len = n - block < 64 ? n - block : 64;
    uint64_t space;
    if (len == 64) {
      space = detail::space_mask64(base + block);
    } else {
      char tail[64] = {};  // zero bytes are not whitespace; bits past the end are masked below
      std::memcpy(tail, base + block, len);
      space = detail::space_mask64(tail);
    }
    uint64_t change = space ^ ((space << 1) | carry);
    if (len < 64) change &= (uint64_t{1} << len) - 1;
    carry = space >> 63;
    while (change != 0) {
      const size_t at = block + static_cast<size_t>(__builtin_ctzll(change));
      change &= change - 1;
      const std::string_view run(base + start, at - start);
      if (in_gap)
        on_gap(run);
      else
        on_word(run);
      in_gap = !in_gap;
      start = at;
    }
  }
  const std::string_view last(base + start, n - start);
  if (in_gap) {
    on_gap(last);
  } else {
    on_word(last);
    on_gap(std::string_view(base + n, 0));
  }
}

}  // namespace gtadoc
