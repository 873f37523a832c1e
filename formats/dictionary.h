// The global dictionary: every distinct word of the corpus as a byte string, stored as one byte
// buffer plus offsets. Ids are assigned in byte order of the words (`build` sorts), so ordering
// word ids is ordering words.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/types.h"

namespace gtadoc {

class Dictionary {
 public:
  Dictionary() = default;
  Dictionary(std::vector<char> bytes, std::vector<uint64_t> offsets);

  uint32_t size() const { return static_cast<uint32_t>(offsets_.size() - 1); }
  std::string_view operator[](WordId id) const {
    return {bytes_.data() + offsets_[id], static_cast<size_t>(offsets_[id + 1] - offsets_[id])};
  }
  void push_back(std::string_view word);
  /// Binary search (ids are in byte order); returns size() when absent.
  WordId find(std::string_view word) const;
  bool is_sorted_unique() const;

  const std::vector<char>& bytes() const { return bytes_; }
  const std::vector<uint64_t>& offsets() const { return offsets_; }

 private:
  std::vector<char> bytes_;
  std::vector<uint64_t> offsets_{0};
};

}  // namespace gtadoc
