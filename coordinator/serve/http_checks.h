// The HTTP rules of `gtadoc serve` that decide on untrusted header bytes alone: bearer-token
// authentication (the scheme in any case, the token compared in constant time) and strict
// message framing (what may delimit a request body). Header-only (the request fuzzer uses it
// too).
#pragma once

#include <algorithm>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/fields.hpp>
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

}  // namespace gtadoc
