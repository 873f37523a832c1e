// Least-significant-digit radix sort of unsigned integers by a range of their bits: the sort the
// plan layer's per-shard structures use (bags of long bodies, a normalized vocabulary), linear in
// the values sorted where a comparison sort costs a logarithm more.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace gtadoc::plan {

/// Sorts `v` by bits [lo, lo + bits) of each value, stably (values equal there keep their
/// order), 11 bits per pass; `tmp` is scratch (resized to v's size).
template <class T>
void radix_sort_bits(std::vector<T>& v, std::vector<T>& tmp, unsigned lo, unsigned bits) {
  static_assert(std::is_unsigned_v<T>);
  constexpr unsigned kDigitBits = 11;
  constexpr uint32_t kDigits = 1u << kDigitBits;
  const size_t n = v.size();
  if (n < 2 || bits == 0) return;
  tmp.resize(n);
  T* src = v.data();
  T* dst = tmp.data();
  for (unsigned shift = lo; shift < lo + bits; shift += kDigitBits) {
    uint32_t count[kDigits] = {};
    for (size_t i = 0; i < n; ++i) ++count[(src[i] >> shift) & (kDigits - 1)];
    uint32_t sum = 0;
    for (uint32_t d = 0; d < kDigits; ++d) {
      const uint32_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; ++i) dst[count[(src[i] >> shift) & (kDigits - 1)]++] = src[i];
    std::swap(src, dst);
  }
  if (src != v.data()) std::copy_n(src, n, v.data());
}

/// Bits needed to hold `max` (at least 1).
inline unsigned bits_of(uint64_t max) {
  return max == 0 ? 1 : 64 - static_cast<unsigned>(__builtin_clzll(max));
}

/// Sorts `v` ascending by its values' bits from `lo` up (values equal there in any order):
/// radix sort from a hundred values on (cheaper there, measured with gtadoc_layout_bench),
/// std::sort of the whole values below; `tmp` is scratch.
template <class T>
void sort_ids(std::vector<T>& v, std::vector<T>& tmp, unsigned lo = 0) {
  constexpr size_t kRadixFrom = 96;
  if (v.size() < kRadixFrom) {
    std::sort(v.begin(), v.end());
    return;
  }
  T max = 0;
  for (T x : v) max = std::max(max, x);
  radix_sort_bits(v, tmp, lo, bits_of(max >> lo));
}

}  // namespace gtadoc::plan
