// The HTTP rules of `gtadoc serve` that decide on untrusted header bytes alone: bearer-token
// authentication (the scheme in any case, the token compared in constant time), strict
// message framing (what may delimit a request body), the percent-decoding of a path segment and
// the one byte range a Range header may ask for. Header-only (the request fuzzer uses it too).
#pragma once

#include <algorithm>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/fields.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gtadoc {

inline std::string_view http_trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// ASCII case-insensitive equality.
inline bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) {
      return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

/// Compares in time that depends only on the lengths, not on where the strings differ.
inline bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

/// Whether an Authorization value is `Bearer <token>`: the scheme in any case (RFC 9110 11.1),
/// then spaces, then exactly the token (compared in constant time).
inline bool bearer_matches(std::string_view auth, std::string_view token) {
  constexpr std::string_view scheme = "bearer";
  if (auth.size() <= scheme.size() || !ascii_iequals(auth.substr(0, scheme.size()), scheme) ||
      (auth[scheme.size()] != ' ' && auth[scheme.size()] != '\t'))
    return false;
  return constant_time_equal(http_trim(auth.substr(scheme.size())), token);
}

/// Why a request's message framing is refused (RFC 9112 6.1-6.3, strictly), or empty: at most one
/// Content-Length, of digits only; a Transfer-Encoding only in HTTP/1.1, only once, only
/// `chunked` and never with a Content-Length. Anything else could be read differently by a
/// proxy in front (request smuggling), so it is a 400 and the connection closes.
inline std::string framing_error(const boost::beast::http::fields& fields, unsigned version) {
  size_t lengths = 0, encodings = 0;
  std::string_view encoding;
  for (const auto& f : fields) {
    if (f.name() == boost::beast::http::field::content_length) {
      ++lengths;
      const std::string_view v = http_trim(std::string_view(f.value().data(), f.value().size()));
      if (v.empty() || v.find_first_not_of("0123456789") != std::string_view::npos)
        return "Content-Length is not a number";
    } else if (f.name() == boost::beast::http::field::transfer_encoding) {
      ++encodings;
      encoding = http_trim(std::string_view(f.value().data(), f.value().size()));
    }
  }
  if (lengths > 1) return "more than one Content-Length";
  if (encodings == 0) return {};
  if (lengths > 0) return "both Content-Length and Transfer-Encoding";
  if (encodings > 1) return "more than one Transfer-Encoding";
  if (version < 11) return "Transfer-Encoding in an HTTP/1.0 request";
  if (!ascii_iequals(encoding, "chunked")) return "Transfer-Encoding other than chunked";
  return {};
}

/// `text` with every %XX (two hex digits, either case) replaced by its byte; nullopt when a '%'
/// is not followed by two hex digits. '+' stays '+' (a path, not a form).
inline std::optional<std::string> percent_decode(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hex(text[i + 1]), lo = hex(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

/// What a Range header asks of a representation of `size` bytes (RFC 9110 14.1-14.2):
/// - kWhole: send it all (200): no header, another unit than `bytes`, more than one range, a
///   malformed one (a server may ignore any Range header), or a suffix range of an empty one
///   (satisfiable, but a 206 cannot describe zero bytes);
/// - kPart: bytes [begin, end) (206);
/// - kUnsatisfiable: a first byte at or beyond the end, or `bytes=-0` (416).
struct ByteRange {
  enum Kind { kWhole, kPart, kUnsatisfiable } kind = kWhole;
  uint64_t begin = 0, end = 0;
};
inline ByteRange parse_byte_range(std::string_view header, uint64_t size) {
  ByteRange whole;
  whole.end = size;
  header = http_trim(header);
  constexpr std::string_view unit = "bytes=";
  if (header.size() < unit.size() || !ascii_iequals(header.substr(0, unit.size()), unit))
    return whole;
  const std::string_view spec = http_trim(header.substr(unit.size()));
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos || spec.find('-', dash + 1) != std::string_view::npos)
    return whole;  // also every list: a second range has its own dash
  // Digits as a number, saturating at 2^64 - 1; nullopt when empty or not only digits.
  const auto number = [](std::string_view d) -> std::optional<uint64_t> {
    if (d.empty() || d.find_first_not_of("0123456789") != std::string_view::npos)
      return std::nullopt;
    uint64_t v = 0;
    for (char c : d) {
      const uint64_t digit = static_cast<uint64_t>(c - '0');
      if (v > (~uint64_t{0} - digit) / 10) return ~uint64_t{0};
      v = v * 10 + digit;
    }
    return v;
  };
  const std::string_view first_text = spec.substr(0, dash), last_text = spec.substr(dash + 1);
  ByteRange r;
  r.kind = ByteRange::kPart;
  if (first_text.empty()) {  // bytes=-N: the last N bytes
    const std::optional<uint64_t> n = number(last_text);
    if (!n) return whole;
    if (*n == 0) return {ByteRange::kUnsatisfiable, 0, 0};
    if (size == 0) return whole;
    r.begin = size - std::min(*n, size);
    r.end = size;
    return r;
  }
  const std::optional<uint64_t> first = number(first_text);
  if (!first) return whole;
  std::optional<uint64_t> last;
  if (!last_text.empty()) {
    last = number(last_text);
    if (!last || *last < *first) return whole;  // invalid: ignored
  }
  if (*first >= size) return {ByteRange::kUnsatisfiable, 0, 0};
  r.begin = *first;
  r.end = last && *last < size ? *last + 1 : size;
  return r;
}

}  // namespace gtadoc
