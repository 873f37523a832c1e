// HDF5's N-bit packing of unsigned little-endian integers at offset 0 (formats/h5.h: nbit_pack,
// nbit_unpack): the values' low `bits` bits, most significant first, as one big-endian bit
// stream. The filter (H5Znbit.c) walks a value's bytes from its most significant one down and
// fills each output byte from its high bit; for an integer at offset 0 that is exactly this
// stream. Its output for a chunk is (count * bits) / 8 + 1 bytes, the last one possibly unused.
// Into 32-bit values of up to 25 bits, groups of eight are unpacked with AVX2 where the processor
// has it (one byte shuffle and two shifts per group; the archive's symbols take about 19 bits),
// else, and for wider values, eight constant shifts of 8-byte loads per group.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>

#include "common/error.h"
#include "formats/h5.h"
#include "formats/h5_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GTADOC_NBIT_AVX2 1
#endif

namespace gtadoc::h5 {
namespace {

uint64_t load_be64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
  return v;
}

// The first `count` values of the stream into `out` (type M): 8 bytes loaded big-endian at the
// byte holding each value's first bit (a value of at most 32 bits starts at most 7 bits into
// them), while those 8 bytes lie inside `bytes`; the rest bit by bit.
template <class M>
void unpack_as(const unsigned char* packed, uint64_t bytes, uint64_t count, unsigned bits, M* out) {
  const uint64_t fast = bytes >= 8 ? ((bytes - 8) * 8) / bits + 1 : 0;  // values whose 8 bytes fit
  const uint64_t end_fast = fast < count ? fast : count;
  const unsigned drop = 64 - bits;
  uint64_t pos = 0;
  for (uint64_t i = 0; i < end_fast; ++i, pos += bits) {
    const uint64_t word = load_be64(packed + (pos >> 3));
    out[i] = static_cast<M>((word << (pos & 7)) >> drop);
  }
  for (uint64_t i = end_fast; i < count; ++i) {
    uint64_t v = 0;
    for (unsigned b = 0; b < bits; ++b, ++pos)
      v = (v << 1) | ((packed[pos >> 3] >> (7 - (pos & 7))) & 1u);
    out[i] = static_cast<M>(v);
  }
}

// unpack_as for a known bit count, into 32-bit values: eight values take exactly B bytes, so
// each group of eight starts on a byte and every shift is a constant. The groups whose 8-byte
// loads stay inside `bytes` go here, the rest to unpack_as.
template <unsigned B, size_t... K>
void unpack_groups(const unsigned char* packed, uint64_t bytes, uint64_t count, uint32_t* out,
                   std::index_sequence<K...>) {
  // Group g's last load starts at byte g * B + (7 * B) / 8 and reads 8 bytes.
  constexpr uint64_t kReach = (7 * B) / 8 + 8;
  const uint64_t groups = bytes >= kReach ? std::min(count / 8, (bytes - kReach) / B + 1) : 0;
  for (uint64_t g = 0; g < groups; ++g) {
    const unsigned char* q = packed + g * B;
    uint32_t* o = out + g * 8;
    ((o[K] = static_cast<uint32_t>((load_be64(q + (K * B) / 8) << ((K * B) % 8)) >> (64 - B))),
     ...);
  }
  const uint64_t done = groups * 8;
  if (done < count) {
    // The rest from the bit where they start: unpack_as reads whole bytes, so shift the first
    // value's offset (done * B is a multiple of 8) away by starting at its byte.
    unpack_as(packed + done * B / 8, bytes - done * B / 8, count - done, B, out + done);
  }
}

#if defined(GTADOC_NBIT_AVX2)
// AVX2 groups of eight B-bit values (B <= 25: a value and the up to 7 bits before it in its first
// byte fit 32 bits). The group's bytes are loaded as two 16-byte halves, values 0-3 from the
// group's first byte and values 4-7 from byte kHigh; a byte shuffle puts each value's four bytes
// big-endian into its 32-bit lane, a shift left by its bit offset drops the bits before it, and
// a shift right by 32 - B the bits after it.
template <unsigned B>
struct Avx2Group {
  static constexpr unsigned kHigh = (7 * B) / 8 + 4 > 16 ? (7 * B) / 8 + 4 - 16 : 0;
  static constexpr uint64_t kReach = kHigh + 16;  // bytes a group's loads read from its start
  static_assert(B <= 25 && (4 * B) / 8 >= kHigh, "four bytes per value, in their own half");
  static constexpr std::array<uint8_t, 32> shuffle() {
    std::array<uint8_t, 32> m{};
    for (unsigned k = 0; k < 8; ++k) {
      const unsigned first = (k * B) / 8 - (k < 4 ? 0 : kHigh);  // within its half
      for (unsigned j = 0; j < 4; ++j) m[4 * k + j] = static_cast<uint8_t>(first + 3 - j);
    }
    return m;
  }
  static constexpr std::array<uint32_t, 8> offsets() {
    std::array<uint32_t, 8> o{};
    for (unsigned k = 0; k < 8; ++k) o[k] = (k * B) % 8;
    return o;
  }
  static constexpr std::array<uint8_t, 32> kShuffle = shuffle();
  static constexpr std::array<uint32_t, 8> kOffsets = offsets();
};

/// The groups of eight whose loads stay inside `bytes`; returns how many values it wrote.
template <unsigned B>
__attribute__((target("avx2"))) uint64_t unpack_groups_avx2(const unsigned char* packed,
                                                            uint64_t bytes, uint64_t count,
                                                            uint32_t* out) {
  using G = Avx2Group<B>;
  const uint64_t groups = bytes >= G::kReach ? std::min(count / 8, (bytes - G::kReach) / B + 1) : 0;
  const __m256i shuffle = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(G::kShuffle.data()));
  const __m256i offsets = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(G::kOffsets.data()));
  for (uint64_t g = 0; g < groups; ++g) {
    const unsigned char* q = packed + g * B;
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + G::kHigh));
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    v = _mm256_shuffle_epi8(v, shuffle);
    v = _mm256_srli_epi32(_mm256_sllv_epi32(v, offsets), 32 - B);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + g * 8), v);
  }
  return groups * 8;
}

bool cpu_has_avx2() {
  __builtin_cpu_init();  // idempotent; needed where this runs before libgcc's own constructor
  return __builtin_cpu_supports("avx2") != 0;
}

std::atomic<bool> g_use_avx2{cpu_has_avx2()};
#endif

/// 32-bit values of B bits: the AVX2 groups where they apply, then the scalar groups and the
/// tail from where they stopped (a multiple of eight values, so on a byte).
template <unsigned B>
void unpack_u32(const unsigned char* p, uint64_t n, uint64_t c, uint32_t* o) {
  uint64_t done = 0;
#if defined(GTADOC_NBIT_AVX2)
  if constexpr (B <= 25) {
    if (g_use_avx2.load(std::memory_order_relaxed)) done = unpack_groups_avx2<B>(p, n, c, o);
  }
#endif
  const uint64_t skip = done * B / 8;
  unpack_groups<B>(p + skip, n - skip, c - done, o + done, std::make_index_sequence<8>{});
}

template <unsigned... B>
constexpr auto group_unpackers(std::integer_sequence<unsigned, B...>) {
  using Fn = void (*)(const unsigned char*, uint64_t, uint64_t, uint32_t*);
  return std::array<Fn, sizeof...(B)>{&unpack_u32<B + 1>...};
}

}  // namespace

void nbit_pack(const void* values, uint64_t count, Width mem, unsigned bits, unsigned char* out) {
  GTADOC_EXPECTS(bits >= 1 && bits <= 32, "nbit_pack: bits must be 1..32");
  const uint64_t bytes = (count * bits) / 8 + 1;
  std::memset(out, 0, bytes);
  uint64_t acc = 0;   // pending bits, right-aligned
  unsigned held = 0;  // how many
  uint64_t at = 0;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (uint64_t i = 0; i < count; ++i) {
    acc = (acc << bits) | (load_uint(values, i, mem) & mask);
    held += bits;
    while (held >= 8) {
      held -= 8;
      out[at++] = static_cast<unsigned char>(acc >> held);
    }
    acc &= (uint64_t{1} << held) - 1;
  }
  if (held > 0) out[at] = static_cast<unsigned char>(acc << (8 - held));
}

bool nbit_simd(bool on) {
#if defined(GTADOC_NBIT_AVX2)
  const bool had = g_use_avx2.load();
  g_use_avx2.store(on && cpu_has_avx2());
  return had;
#else
  (void)on;
  return false;
#endif
}

bool nbit_unpack(const unsigned char* packed, uint64_t packed_bytes, uint64_t count, unsigned bits,
                 Width mem, void* out) {
  if (bits < 1 || bits > 32 || packed_bytes < (count * bits + 7) / 8) return false;
  switch (mem) {
    case Width::kU8:
      unpack_as(packed, packed_bytes, count, bits, static_cast<uint8_t*>(out));
      return true;
    case Width::kU16:
      unpack_as(packed, packed_bytes, count, bits, static_cast<uint16_t*>(out));
      return true;
    case Width::kU32: {
      static constexpr auto kByBits =
          group_unpackers(std::make_integer_sequence<unsigned, 32>{});  // [b - 1]: b bits
      kByBits[bits - 1](packed, packed_bytes, count, static_cast<uint32_t*>(out));
      return true;
    }
    case Width::kU64:
      unpack_as(packed, packed_bytes, count, bits, static_cast<uint64_t*>(out));
      return true;
  }
  return false;
}

}  // namespace gtadoc::h5
