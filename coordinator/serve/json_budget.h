// A bound on what parsing a request body as JSON may cost, checked before the body is parsed:
// nesting at most kMaxJsonDepth arrays/objects deep, and at most max_json_values(max_body)
// values (each array element, object member and scalar counts), so that the parsed document's
// memory is bounded by a fixed multiple of --max-body whatever the body holds. The scan is one
// pass over the bytes, strings skipped (escapes included); it does not validate the JSON, which
// the parser does afterwards. Header-only (the request fuzzer uses it too).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

namespace gtadoc {

inline constexpr size_t kMaxJsonDepth = 64;

/// The values a body may hold with `max_body` as the largest body: one per 8 bytes of it, at
/// least 4096.
inline uint64_t max_json_values(uint64_t max_body) {
  return std::max<uint64_t>(4096, max_body / 8);
}

/// Empty when `body` is within the budget, else why not (one line, for a 400).
inline std::string json_over_budget(std::string_view body, uint64_t max_values) {
  size_t depth = 0;
  uint64_t values = 1;  // the top-level value
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character (a \uXXXX's digits are plain characters)
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > kMaxJsonDepth)
          return "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
        ++values;  // its first element, if any
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      case ',':
        ++values;
        break;
      default:
        break;
    }
    if (values > max_values) return "JSON with more than " + std::to_string(max_values) + " values";
  }
  return {};
}

}  // namespace gtadoc
