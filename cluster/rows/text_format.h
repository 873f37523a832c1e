// Byte-level formatting for the columnar row renderer: JSON strings, TSV names, decimals.
// Guarantees: bytes equal nlohmann::json dump (replace), escape_tsv_name and std::to_string.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace gtadoc {

// Each writer writes exactly the size its *_size / decimal_digits function reports into a
// caller-sized buffer, never past it, and allocates nothing.

/// Number of bytes write_json_escaped writes for `s`.
size_t json_escaped_size(std::string_view s);

/// Writes the JSON string contents of `s` (no surrounding quotes) to `out`, which must have room
/// for json_escaped_size(s) bytes; returns the end of what was written. `"` `\` and \b \f \n \r \t
/// are escaped with a backslash, other bytes below 0x20 as \u00xx (lowercase hex), valid UTF-8
/// (and 0x7F) is copied, invalid UTF-8 is replaced by U+FFFD (EF BF BD) as nlohmann::json does.
char* write_json_escaped(std::string_view s, char* out);

/// True when the escaped form of `s` equals `s` (valid UTF-8 with no byte that needs escaping),
/// so a caller may copy it verbatim.
bool json_plain(std::string_view s);

/// Number of bytes write_tsv_escaped writes for `name`.
size_t tsv_escaped_size(std::string_view name);

/// Writes `name` with tab, newline and backslash as `\t`, `\n` and `\\` (every other byte is
/// copied); `out` must have room for tsv_escaped_size(name) bytes. Returns the end.
char* write_tsv_escaped(std::string_view name, char* out);

namespace text_format_detail {
inline constexpr uint64_t kPow10[20] = {1ull,
                                        10ull,
                                        100ull,
                                        1000ull,
                                        10000ull,
                                        100000ull,
                                        1000000ull,
                                        10000000ull,
                                        100000000ull,
                                        1000000000ull,
                                        10000000000ull,
                                        100000000000ull,
                                        1000000000000ull,
                                        10000000000000ull,
                                        100000000000000ull,
                                        1000000000000000ull,
                                        10000000000000000ull,
                                        100000000000000000ull,
                                        1000000000000000000ull,
                                        10000000000000000000ull};
inline constexpr char kDigitPairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";
}  // namespace text_format_detail

/// Number of decimal digits of `v` (1 for 0, 20 for UINT64_MAX).
inline unsigned decimal_digits(uint64_t v) {
  // v | 1 has as many digits as v (and 0 counts as one digit): a power of ten >= 10 is even.
  const uint64_t w = v | 1;
  const unsigned t = static_cast<unsigned>(std::bit_width(w)) * 1233u >> 12;  // ~log10(w)
  return t + 1 - (w < text_format_detail::kPow10[t]);
}

/// Writes `v` in decimal (no sign, no leading zeros) to `out`, which must have room for
/// decimal_digits(v) bytes; returns the end.
inline char* write_decimal(uint64_t v, char* out) {
  char* const end = out + decimal_digits(v);
  char* p = end;
  while (v >= 100) {
    const unsigned pair = static_cast<unsigned>(v % 100) * 2;
    v /= 100;
    p -= 2;
    std::memcpy(p, text_format_detail::kDigitPairs + pair, 2);
  }
  if (v >= 10) {
    std::memcpy(p - 2, text_format_detail::kDigitPairs + v * 2, 2);
  } else {
    p[-1] = static_cast<char>('0' + v);
  }
  return end;
}

}  // namespace gtadoc
