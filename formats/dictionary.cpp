#include "formats/dictionary.h"

#include <algorithm>

#include "common/error.h"

namespace gtadoc {

Dictionary::Dictionary(std::vector<char> bytes, std::vector<uint64_t> offsets)
    : bytes_(std::move(bytes)), offsets_(std::move(offsets)) {
  GTADOC_EXPECTS(!offsets_.empty() && offsets_.front() == 0 && offsets_.back() == bytes_.size(),
                 "dictionary offsets do not match its bytes");
}

void Dictionary::push_back(std::string_view word) {
  bytes_.insert(bytes_.end(), word.begin(), word.end());
  offsets_.push_back(bytes_.size());
}

WordId Dictionary::find(std::string_view word) const {
  uint32_t lo = 0, hi = size();
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if ((*this)[mid] < word)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (lo < size() && (*this)[lo] == word) ? lo : size();
}

bool Dictionary::is_sorted_unique() const {
  for (uint32_t i = 1; i < size(); ++i)
    if (!((*this)[i - 1] < (*this)[i])) return false;
  return true;
}

}  // namespace gtadoc
