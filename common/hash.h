// Stable 64-bit hashing of u32 key values. The cluster uses it to pick the owner rank of a
// record (hash partitioning), so every rank must compute the same value for the same key.
// Guarantees: pure integer arithmetic on fixed-width types (no std::hash, no pointer values, no
// endianness or platform dependence), constexpr, identical on every rank, compiler and platform;
// golden values are pinned in tests/cluster/hash_test.cpp and must never change (changing them
// changes which rank owns which key). Order-sensitive and length-aware. Not cryptographic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace gtadoc {

/// Default seed of hash_u32s; an arbitrary fixed odd constant.
inline constexpr uint64_t kKeyHashSeed = 0x67746164'6f63a5c3ULL;

/// A bijective 64-bit finalizer: alternating xor-shifts and odd multiplications, so every input
/// bit affects every output bit.
constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ULL;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 32;
  return x;
}

/// Hash of a sequence of u32 values. Values are consumed two at a time as one 64-bit word (low
/// half first); the length is folded into the initial state, so [a] and [a, 0] differ.
constexpr uint64_t hash_u32s(std::span<const uint32_t> values, uint64_t seed = kKeyHashSeed) {
  const size_t n = values.size();
  uint64_t h = seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(n) + 1);
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const uint64_t word =
        static_cast<uint64_t>(values[i]) | (static_cast<uint64_t>(values[i + 1]) << 32);
    h = mix64(h ^ word) + 0x632be59bd9b4e019ULL;
  }
  if (i < n) h = mix64(h ^ static_cast<uint64_t>(values[i])) + 0x632be59bd9b4e019ULL;
  return mix64(h);
}

/// Convenience overload for a single value; equals hash_u32s of a one-element span.
constexpr uint64_t hash_u32(uint32_t value, uint64_t seed = kKeyHashSeed) {
  const uint32_t one[1] = {value};
  return hash_u32s(std::span<const uint32_t>(one, 1), seed);
}

}  // namespace gtadoc
