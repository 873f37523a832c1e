// Test helper: a dictionary (or a manifest's document names) with one entry replaced, for tests
// that craft manifests.
#pragma once

#include <cstdint>
#include <string_view>

#include "formats/dictionary.h"

namespace gtadoc::testutil {

/// `table` with entry `id` replaced by `entry` (the rest as they are, in their order).
inline Dictionary with_entry(const Dictionary& table, uint32_t id, std::string_view entry) {
  Dictionary out;
  for (uint32_t i = 0; i < table.size(); ++i) out.push_back(i == id ? entry : table[i]);
  return out;
}

}  // namespace gtadoc::testutil
