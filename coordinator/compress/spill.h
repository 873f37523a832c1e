// What `gtadoc compress` keeps of a tokenized shard until the dictionary is known, in memory or,
// when the memory budget does not allow that, in a spill file inside the archive's temporary
// directory (so that a failure or a stop request removes it with the directory). The sorted
// dictionary can be set aside the same way while the shards are encoded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "common/types.h"
#include "coordinator/string_table.h"
#include "formats/dictionary.h"

namespace gtadoc {

/// A tokenized shard before its word ids are global.
struct ShardTokens {
  // On huge pages once large (common/big_alloc.h): first touch of 4 KiB pages was a fifth of
  // compression's page faults.
  BigVector<Symbol> tokens;        ///< local word ids and document boundaries, in text order
  BigVector<uint32_t> gaps;        ///< local whitespace ids, k + 1 per document of k words
  std::vector<uint32_t> word_ids;  ///< local word id -> Vocabulary id
  StringTable ws{64};              ///< the shard's whitespace runs by local id

  uint64_t memory_bytes() const {
    return tokens.capacity() * 4 + gaps.capacity() * 4 + word_ids.capacity() * 4 +
           ws.memory_bytes();
  }
};

/// Spill file names inside the archive's temporary directory (removed before the commit).
std::filesystem::path spill_file(const std::filesystem::path& dir, uint32_t shard);
std::filesystem::path dictionary_spill_file(const std::filesystem::path& dir);

/// A spill file written while its shard is tokenized: tokens and gaps in pieces, then the word
/// map and the whitespace runs. InputError naming the file on failure (a full disk included);
/// a file not finished is removed when the writer goes away.
class SpillWriter {
 public:
  explicit SpillWriter(const std::filesystem::path& file);  ///< the file must not exist
  ~SpillWriter();
  SpillWriter(const SpillWriter&) = delete;
  SpillWriter& operator=(const SpillWriter&) = delete;
  void tokens(std::span<const Symbol> piece);
  void gaps(std::span<const uint32_t> piece);
  void finish(const std::vector<uint32_t>& word_ids, const StringTable& ws);
  uint64_t bytes() const { return bytes_; }  ///< written so far

 private:
  class File;
  std::unique_ptr<File> file_;
  uint64_t tokens_ = 0, gaps_ = 0, bytes_ = 0;
};

/// Writes `t` to `file` (which must not exist) in one go.
void write_spill(const std::filesystem::path& file, const ShardTokens& t);
/// Reads a spill file back (arrays allocated once, at their final size) and removes it.
ShardTokens read_spill(const std::filesystem::path& file);

/// Writes `n` words, word(i) for i in [0, n), totalling `bytes` bytes, to `file`; word() is
/// called twice per word (lengths first, then bytes), concurrently from `threads` threads, on
/// blocks of 256 Ki words, so nothing but one block's buffers is held.
void write_dictionary_spill(const std::filesystem::path& file, uint64_t n, uint64_t bytes,
                            const std::function<std::string_view(uint64_t)>& word,
                            unsigned threads = 1);
/// Reads a dictionary spill file back and removes it.
Dictionary read_dictionary_spill(const std::filesystem::path& file);

}  // namespace gtadoc
