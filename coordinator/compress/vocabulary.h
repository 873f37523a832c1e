// The vocabulary of the shards one process compresses, gathered while they are read: every
// distinct word once, in a hash set split into 64 partitions by hash so that threads fold their
// shards' words in concurrently (a shard is tokenized into its own small table, then its distinct
// words are folded in here, one partition lock at a time, and the shard's table is freed). Then
// sorted once: the byte order of the words is the global word id order (the dictionary).
//
// Memory per word: its bytes plus a one-byte length (in 64 KiB chunks), an 8-byte position, and
// 8-byte hash slots at a load of 0.47..0.7 (freed before sorting). Ids are stable: a word keeps
// the id it got when first folded in (partition << 26 | index in the partition).
//
// Also the sorted word lists exchanged between MPI ranks: n, n + 1 offsets, the bytes.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "coordinator/string_table.h"
#include "formats/dictionary.h"

namespace gtadoc {

class Vocabulary {
 public:
  static constexpr unsigned kPartitionBits = 6;
  static constexpr uint32_t kPartitions = 1u << kPartitionBits;
  static constexpr unsigned kLocalBits = 32 - kPartitionBits;
  static constexpr uint32_t kLocalMask = (1u << kLocalBits) - 1;

  Vocabulary();
  ~Vocabulary();
  Vocabulary(const Vocabulary&) = delete;
  Vocabulary& operator=(const Vocabulary&) = delete;

  /// Adds the words of `table` (a shard's own vocabulary) and returns their ids, indexed by the
  /// table's ids. Thread-safe (concurrent folds lock one partition at a time). Throws InputError
  /// "vocabulary too large" when a partition would hold 2^26 words.
  std::vector<uint32_t> fold(const StringTable& table);

  /// Number of words; the word of an id. Not concurrently with fold().
  uint64_t size() const;
  std::string_view get(uint32_t id) const;
  /// Total bytes of the words (without lengths).
  uint64_t word_bytes() const;
  /// Bytes held (chunks, positions, hash slots); thread-safe.
  uint64_t memory_bytes() const { return memory_.load(std::memory_order_relaxed); }

  /// Position of an id in 0..size()-1 (partitions in turn), for arrays indexed by word.
  uint32_t dense(uint32_t id) const { return base_[id >> kLocalBits] + (id & kLocalMask); }

  /// The ids in byte order of their words, sorted on `threads` threads (buckets by the first two
  /// bytes, each bucket sorted on its own). Frees the hash index first: no fold() afterwards.
  std::vector<uint32_t> sorted(unsigned threads);

  /// The words of `order` (ids in byte order) as a dictionary, built on `threads` threads.
  Dictionary dictionary(std::span<const uint32_t> order, unsigned threads) const;

  /// Frees the words and the index; size() and dense() stay valid (after sorted()).
  void release_words();

 private:
  struct Partition;
  std::unique_ptr<Partition[]> parts_;
  std::array<uint32_t, kPartitions> base_{};
  std::atomic<uint64_t> memory_{0};
  std::atomic<uint32_t> next_start_{0};
};

/// A sorted word list as sent between ranks: n (u64), n + 1 offsets (u64), then the bytes.
class WordList {
 public:
  /// Validates the layout; throws InternalError on a malformed buffer. `bytes` must outlive this.
  explicit WordList(std::span<const uint8_t> bytes);
  uint64_t size() const { return n_; }
  std::string_view operator[](uint64_t i) const;

  static std::vector<uint8_t> from_vocabulary(const Vocabulary& v, std::span<const uint32_t> order);
  static std::vector<uint8_t> from_dictionary(const Dictionary& d);
  Dictionary to_dictionary() const;

 private:
  uint64_t offset(uint64_t i) const;
  const uint8_t* data_ = nullptr;
  uint64_t n_ = 0;
  const char* bytes_ = nullptr;
};

/// Union of two sorted word lists, sorted.
std::vector<uint8_t> merge_word_lists(const WordList& a, const WordList& b);

/// For every word of `part` (sorted), its index in `whole` (sorted, holding every word of part),
/// found on `threads` threads by galloping forward through `whole`.
std::vector<uint32_t> positions_in(const WordList& part, const WordList& whole, unsigned threads);

}  // namespace gtadoc
