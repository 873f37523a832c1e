// Per-element logic of the raw-text GPU baseline, written once for the device kernels and the
// host unit tests (__host__ __device__ under nvcc, plain inline functions under a C++ compiler):
// the whitespace and --alnum byte classes, the word hash, and the two byte orders the grouping
// needs (plain byte order, and the order of "word + ' '" that sequences are sorted by).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define RAWGPU_HD __host__ __device__ __forceinline__
#else
#define RAWGPU_HD inline
#endif

namespace gtadoc::rawgpu {

/// ASCII whitespace of docs/REFERENCE.md §3: 0x20, 0x09 tab, 0x0A LF, 0x0B VT, 0x0C FF, 0x0D CR.
RAWGPU_HD bool is_ws(uint8_t c) {
  return c == 0x20 || (c >= 0x09 && c <= 0x0D);
}

/// Bytes --alnum keeps at the ends of a word: ASCII letters, ASCII digits, and bytes >= 0x80.
RAWGPU_HD bool is_alnum_kept(uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c >= 0x80;
}

/// --lowercase: ASCII A-Z to a-z, every other byte unchanged (whitespace stays whitespace, so
/// lowering the text before tokenizing gives the same words as lowering each word).
RAWGPU_HD uint8_t ascii_lower(uint8_t c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<uint8_t>(c - 'A' + 'a') : c;
}

/// --alnum on the word text[begin, end): moves begin/end inward past bytes that are not kept.
/// An all-punctuation word ends with begin == end (dropped).
RAWGPU_HD void alnum_trim(const uint8_t* text, uint64_t& begin, uint64_t& end) {
  while (begin < end && !is_alnum_kept(text[begin])) ++begin;
  while (end > begin && !is_alnum_kept(text[end - 1])) --end;
}

RAWGPU_HD uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

/// 64-bit hash of the bytes p[0, len), length mixed in. Only a grouping accelerator: equal
/// hashes are always verified byte for byte, so its quality affects speed, never results.
RAWGPU_HD uint64_t word_hash(const uint8_t* p, uint32_t len) {
  uint64_t h = 0x243F6A8885A308D3ull ^ (static_cast<uint64_t>(len) * 0x9E3779B97F4A7C15ull);
  uint32_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t c = 0;
    for (int k = 0; k < 8; ++k) c |= static_cast<uint64_t>(p[i + k]) << (8 * k);
    h = (h ^ c) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  if (i < len) {
    uint64_t c = 0;
    for (int k = 0; i + k < len; ++k) c |= static_cast<uint64_t>(p[i + k]) << (8 * k);
    h = (h ^ c) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 31;
  }
  return mix64(h);
}

/// Byte order of a[0, la) and b[0, lb): unsigned bytes, a proper prefix first. <0, 0 or >0.
RAWGPU_HD int bytes_compare(const uint8_t* a, uint32_t la, const uint8_t* b, uint32_t lb) {
  const uint32_t common = la < lb ? la : lb;
  for (uint32_t i = 0; i < common; ++i) {
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return la == lb ? 0 : (la < lb ? -1 : 1);
}

RAWGPU_HD bool bytes_equal(const uint8_t* a, uint32_t la, const uint8_t* b, uint32_t lb) {
  if (la != lb) return false;
  for (uint32_t i = 0; i < la; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

/// Byte order of (a + ' ') against (b + ' ') for two words (no whitespace inside).
///
/// Why sequences need it: a sequence is ordered by its joined string "w1 w2 ... wn". Two
/// sequences first differ at some word position k; when k < n the joined strings compare as
/// (a_k + ' ' + ...) against (b_k + ' ' + ...), and since words hold no space, (a_k + ' ')
/// and (b_k + ' ') differ within their common length, so they alone decide. When k == n, the
/// plain byte order of the last words decides. Hence sorting by the tuple
/// (space_rank(w1), ..., space_rank(w_{n-1}), plain_rank(wn)) is exactly the joined-string
/// order ("a\x01 b" < "a b" although "a" < "a\x01").
RAWGPU_HD bool space_less(const uint8_t* a, uint32_t la, const uint8_t* b, uint32_t lb) {
  const uint32_t common = la < lb ? la : lb;
  for (uint32_t i = 0; i < common; ++i) {
    if (a[i] != b[i]) return a[i] < b[i];
  }
  if (la == lb) return false;
  if (la < lb) return 0x20 < b[la];  // a + ' ' against b: ' ' meets b[la] (never a space)
  return a[lb] < 0x20;               // a against b + ' '
}

}  // namespace gtadoc::rawgpu
