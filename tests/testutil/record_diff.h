// Test helper: the difference between two record sets (key values -> count, as the brute force
// gives them: testutil::BruteForceRecords) in one line for a failed comparison, "" when they are
// equal. The engine tests (CPU and GPU) compare their records with it.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testutil/brute_force.h"

namespace gtadoc::testutil {

/// "[1,2,3]": a record key for a message.
inline std::string key_string(const std::vector<uint32_t>& k) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < k.size(); ++i) os << (i ? "," : "") << k[i];
  os << "]";
  return os.str();
}

/// "" when equal, else a description of the first differences.
inline std::string record_diff(const BruteForceRecords& want, const BruteForceRecords& got) {
  if (want == got) return "";
  std::ostringstream os;
  os << want.size() << " expected records, " << got.size() << " returned;";
  int shown = 0;
  for (const auto& [k, c] : want) {
    auto it = got.find(k);
    if (it == got.end() || it->second != c) {
      os << " " << key_string(k) << " want " << c << " got "
         << (it == got.end() ? std::string("none") : std::to_string(it->second)) << ";";
      if (++shown == 5) return os.str();
    }
  }
  for (const auto& [k, c] : got)
    if (!want.count(k)) {
      os << " unexpected " << key_string(k) << " = " << c << ";";
      if (++shown == 5) break;
    }
  return os.str();
}

}  // namespace gtadoc::testutil
