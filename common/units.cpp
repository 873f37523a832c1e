#include "common/units.h"

#include <cctype>

#include "common/error.h"

namespace gtadoc {

uint64_t parse_size(const std::string& text, const char* option, bool allow_zero) {
  auto bad = [&](const std::string& why) {
    return UsageError(std::string(option) + ": '" + text + "' " + why +
                      " (sizes: digits, then k/m/g/t and B or iB if wanted, e.g. 512m, 1GiB)");
  };
  size_t pos = 0;
  uint64_t value = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    const uint64_t digit = static_cast<uint64_t>(text[pos] - '0');
    if (value > (UINT64_MAX - digit) / 10) throw bad("is too large");
    value = value * 10 + digit;
    ++pos;
  }
  if (pos == 0) throw bad("is not a size");
  std::string suffix;
  for (char ch : text.substr(pos))
    suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  unsigned shift = 0;
  if (!suffix.empty() && std::string("kmgt").find(suffix[0]) != std::string::npos) {
    shift = 10 * (1 + static_cast<unsigned>(std::string("kmgt").find(suffix[0])));
    suffix.erase(0, 1);
    if (suffix == "ib" || suffix == "b") suffix.clear();
  } else if (suffix == "b") {
    suffix.clear();
  }
  if (!suffix.empty()) throw bad("is not a size");
  if (shift > 0 && value > (UINT64_MAX >> shift)) throw bad("is too large");
  value <<= shift;
  if (value == 0 && !allow_zero) throw bad("must be positive");
  return value;
}

}  // namespace gtadoc
