#include "cluster/rows/text_format.h"

#include <bit>
#include <cstring>

namespace gtadoc {
namespace {

// The JSON side follows nlohmann::json's serializer (dump_escaped, ensure_ascii = false,
// error_handler_t::replace), whose UTF-8 check is Hoehrmann's DFA, i.e. strict UTF-8: no
// overlong forms, no surrogates (ED A0..BF), nothing above U+10FFFF. On an invalid byte the
// bytes of the unfinished sequence are dropped and one U+FFFD (EF BF BD) is written; when the
// invalid byte was not the first of its sequence it starts the next one (it is read again). A
// sequence cut off by the end of the string gives one U+FFFD.

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHigh = 0x8080808080808080ull;
constexpr bool kLittle = std::endian::native == std::endian::little;

inline uint64_t load8(const unsigned char* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  return x;
}

// High bit set in each byte of x equal to b. Bytes more significant than a true match may be
// flagged too (borrow), never bytes below the first match: on little-endian the lowest set bit
// marks the first match.
inline uint64_t bytes_equal(uint64_t x, unsigned char b) {
  const uint64_t y = x ^ (kOnes * b);
  return (y - kOnes) & ~y & kHigh;
}

// Nonzero when one of the 8 bytes is not copied verbatim by the JSON fast path: < 0x20, '"',
// '\\' or >= 0x80. Same ordering property as bytes_equal.
inline uint64_t json_special(uint64_t x) {
  const uint64_t below_space = (x - kOnes * 0x20) & ~x;
  return ((below_space | x) & kHigh) | bytes_equal(x, '"') | bytes_equal(x, '\\');
}

// High bit set in exactly the bytes of x equal to b (no carries between bytes).
inline uint64_t exact_equal(uint64_t x, unsigned char b) {
  const uint64_t y = x ^ (kOnes * b);
  const uint64_t low7 = ~kHigh;
  return ~(((y & low7) + low7) | y) & kHigh;
}

inline uint64_t tsv_special(uint64_t x) {
  return bytes_equal(x, '\t') | bytes_equal(x, '\n') | bytes_equal(x, '\\');
}

// Index (0..7) of the first flagged byte of a nonzero mask (little-endian only).
inline unsigned first_flagged(uint64_t mask) {
  return static_cast<unsigned>(std::countr_zero(mask)) >> 3;
}

// Letter of the two-byte escape of an ASCII byte, or 0 when it has none.
inline char short_escape(unsigned char c) {
  switch (c) {
    case '\b':
      return 'b';
    case '\t':
      return 't';
    case '\n':
      return 'n';
    case '\f':
      return 'f';
    case '\r':
      return 'r';
    case '"':
      return '"';
    case '\\':
      return '\\';
    default:
      return 0;
  }
}

// Bytes written for an ASCII byte c that is < 0x20, '"' or '\\'.
inline size_t ascii_escape_size(unsigned char c) {
  return short_escape(c) ? 2 : 6;
}

inline char* write_ascii_escape(unsigned char c, char* out) {
  if (const char e = short_escape(c)) {
    out[0] = '\\';
    out[1] = e;
    return out + 2;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::memcpy(out, "\\u00", 4);
  out[4] = kHex[c >> 4];
  out[5] = kHex[c & 15];
  return out + 6;
}

inline bool ascii_plain(unsigned char c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

struct Utf8Step {
  size_t len;  // bytes consumed (1..4)
  bool valid;  // a whole valid sequence (copied) or an invalid one (one U+FFFD)
};

// One step of the UTF-8 check at p (p < end, *p >= 0x80).
inline Utf8Step utf8_step(const unsigned char* p, const unsigned char* end) {
  const unsigned c = p[0];
  unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  size_t len;
  if (c < 0xC2) {
    return {1, false};  // stray continuation byte, or C0/C1 (always overlong)
  } else if (c < 0xE0) {
    len = 2;
  } else if (c < 0xF0) {
    len = 3;
    if (c == 0xE0)
      lo = 0xA0;  // overlong below
    else if (c == 0xED)
      hi = 0x9F;  // surrogates above
  } else if (c < 0xF5) {
    len = 4;
    if (c == 0xF0)
      lo = 0x90;  // overlong below
    else if (c == 0xF4)
      hi = 0x8F;  // above U+10FFFF
  } else {
    return {1, false};
  }
  const size_t avail = static_cast<size_t>(end - p);
  if (avail < 2) return {avail, false};  // cut off at the end
  if (p[1] < lo || p[1] > hi) return {1, false};
  for (size_t i = 2; i < len; ++i) {
    if (i >= avail) return {avail, false};         // cut off at the end
    if ((p[i] & 0xC0) != 0x80) return {i, false};  // p[i] starts the next sequence
  }
  return {len, true};
}

constexpr char kReplacement[3] = {'\xEF', '\xBF', '\xBD'};

/// Copies the run of plain bytes at p (no byte flagged by `special`) 8 bytes at a time and stops
/// at the first flagged byte or when fewer than 8 bytes remain. Stores whole words: callers
/// guarantee room, as output is never shorter than input.
template <typename Special>
inline void copy_plain_run(const unsigned char*& p, const unsigned char* end, char*& out,
                           Special special) {
  if constexpr (kLittle) {
    while (end - p >= 8) {
      const uint64_t x = load8(p);
      const uint64_t m = special(x);
      std::memcpy(out, &x, 8);
      if (m) {
        const unsigned k = first_flagged(m);
        p += k;
        out += k;
        return;
      }
      p += 8;
      out += 8;
    }
  }
}

}  // namespace

size_t json_escaped_size(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* const end = p + s.size();
  size_t size = s.size();
  while (p < end) {
    if constexpr (kLittle) {
      while (end - p >= 8) {
        const uint64_t m = json_special(load8(p));
        if (m) {
          p += first_flagged(m);
          break;
        }
        p += 8;
      }
      if (p == end) break;
    }
    const unsigned char c = *p;
    if (c < 0x80) {
      if (!ascii_plain(c)) size += ascii_escape_size(c) - 1;
      ++p;
    } else {
      const Utf8Step st = utf8_step(p, end);
      if (!st.valid) size += 3 - st.len;  // len <= 3 for an invalid step
      p += st.len;
    }
  }
  return size;
}

char* write_json_escaped(std::string_view s, char* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* const end = p + s.size();
  // Every step writes at least as many bytes as it reads, so while 8 input bytes remain there
  // is room for 8 output bytes: the fast path stores whole words and advances past the plain
  // prefix only.
  while (p < end) {
    copy_plain_run(p, end, out, json_special);
    if (p == end) break;
    const unsigned char c = *p;
    if (c < 0x80) {
      if (ascii_plain(c)) {
        *out++ = static_cast<char>(c);
      } else {
        out = write_ascii_escape(c, out);
      }
      ++p;
    } else {
      const Utf8Step st = utf8_step(p, end);
      if (st.valid) {
        std::memcpy(out, p, st.len);
        out += st.len;
      } else {
        std::memcpy(out, kReplacement, 3);
        out += 3;
      }
      p += st.len;
    }
  }
  return out;
}

bool json_plain(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* const end = p + s.size();
  while (p < end) {
    if constexpr (kLittle) {
      while (end - p >= 8) {
        const uint64_t m = json_special(load8(p));
        if (m) {
          p += first_flagged(m);
          break;
        }
        p += 8;
      }
      if (p == end) break;
    }
    if (*p < 0x80) {
      if (!ascii_plain(*p)) return false;
      ++p;
    } else {
      const Utf8Step st = utf8_step(p, end);
      if (!st.valid) return false;
      p += st.len;
    }
  }
  return true;
}

size_t tsv_escaped_size(std::string_view name) {
  const auto* p = reinterpret_cast<const unsigned char*>(name.data());
  const auto* const end = p + name.size();
  size_t size = name.size();
  for (; end - p >= 8; p += 8) {
    const uint64_t x = load8(p);
    size += static_cast<size_t>(
        std::popcount(exact_equal(x, '\t') | exact_equal(x, '\n') | exact_equal(x, '\\')));
  }
  for (; p < end; ++p) size += *p == '\t' || *p == '\n' || *p == '\\';
  return size;
}

char* write_tsv_escaped(std::string_view name, char* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(name.data());
  const auto* const end = p + name.size();
  // As in write_json_escaped: output is never shorter than input, so word stores fit.
  while (p < end) {
    copy_plain_run(p, end, out, tsv_special);
    if (p == end) break;
    const unsigned char c = *p++;
    if (c == '\t') {
      std::memcpy(out, "\\t", 2);
      out += 2;
    } else if (c == '\n') {
      std::memcpy(out, "\\n", 2);
      out += 2;
    } else if (c == '\\') {
      std::memcpy(out, "\\\\", 2);
      out += 2;
    } else {
      *out++ = static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace gtadoc
