// Sizes on the command line (docs/REFERENCE.md §2): digits, then optionally k/m/g/t in either case
// (powers of 1024), then optionally B or iB: "512m", "64K", "1MB", "1GiB", "100B". One parser for
// every tool.
#pragma once

#include <cstdint>
#include <string>

namespace gtadoc {

/// Parses `text` as a size in bytes. Throws UsageError naming `option`, the text and the accepted
/// forms when it is not a size, overflows 64 bits, or is zero without `allow_zero`.
uint64_t parse_size(const std::string& text, const char* option, bool allow_zero = false);

}  // namespace gtadoc
