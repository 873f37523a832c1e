// The global dictionary: every distinct word of the corpus as a byte string, stored as one byte
// buffer plus offsets. Ids are assigned in byte order of the words (`build` sorts), so ordering
// word ids is ordering words. A manifest's document names are held the same way (one buffer,
// no allocation per name, binary search by name).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"

namespace gtadoc {

class Dictionary {
 public:
  Dictionary();
  Dictionary(std::vector<char> bytes, std::vector<uint64_t> offsets);
  // Copies share the words (a copy costs no time and no memory); push_back on a dictionary whose
  // words are shared copies them first. A moved-from dictionary is empty.
  Dictionary(const Dictionary&) = default;
  Dictionary& operator=(const Dictionary&) = default;
  Dictionary(Dictionary&& o) noexcept;
  Dictionary& operator=(Dictionary&& o) noexcept;

  /// A dictionary of `size` words that `read` delivers, run now on a thread of its own (a
  /// manifest's dictionary read while shards load): size() answers at once, every other access
  /// waits for the words and rethrows the error `read` threw. `read` must return `size` words
  /// (InternalError otherwise).
  static Dictionary deferred(uint32_t size, std::function<Dictionary()> read);
  /// The same, but `read` runs at the first access that needs the words, on the thread making
  /// it (a manifest's document names, which most queries never print, are then never read).
  static Dictionary on_demand(uint32_t size, std::function<Dictionary()> read);
  /// The same as on_demand, with a reader of a few words by id: fetch() then makes those words
  /// readable without the whole read (a query that prints 100 rows needs 100 words).
  using ReadSome = std::function<std::vector<std::string>(std::span<const WordId>)>;
  static Dictionary on_demand(uint32_t size, std::function<Dictionary()> read, ReadSome read_some);
  /// Whether the words are delivered yet (false while a deferred or on-demand read is pending).
  bool ready() const { return !pending_ || pending_->done.load(std::memory_order_acquire); }
  /// Whether fetch() can read some words alone (an on-demand dictionary with a ReadSome whose
  /// words are not delivered yet).
  bool fetches_some() const { return pending_ && pending_->read_some && !ready(); }
  /// Reads the words `ids` (any order, repeats allowed; each < size()) alone, when fetches_some():
  /// operator[] then answers for them without reading the whole dictionary, and for any other
  /// id reads it whole, as before. Otherwise does nothing. Not concurrent with other accesses
  /// (call it before handing the dictionary to threads); a later fetch() replaces the words.
  void fetch(std::span<const WordId> ids) const;

  uint32_t size() const {
    return pending_ ? pending_->size : static_cast<uint32_t>(s_->offsets.size() - 1);
  }
  std::string_view operator[](WordId id) const {
    if (pending_ && pending_->some_fetched) return pending_word(id);
    const Storage& s = storage();
    return {s.bytes.data() + s.offsets[id], static_cast<size_t>(s.offsets[id + 1] - s.offsets[id])};
  }
  void push_back(std::string_view word);
  /// Binary search (ids are in byte order); returns size() when absent.
  WordId find(std::string_view word) const;
  bool is_sorted_unique() const;

  const std::vector<char>& bytes() const { return storage().bytes; }
  const std::vector<uint64_t>& offsets() const { return storage().offsets; }

 private:
  struct Storage {
    std::vector<char> bytes;
    std::vector<uint64_t> offsets{0};
  };
  /// Words still being read: resolved once, by the first access that needs them.
  struct Pending {
    uint32_t size = 0;
    std::shared_future<std::shared_ptr<Storage>> content;
    std::once_flag once;
    std::shared_ptr<Storage> resolved;
    std::atomic<bool> done{false};
    const Storage& get();
    ReadSome read_some;             ///< on_demand's reader of a few words, if any
    bool some_fetched = false;      ///< fetch() read some: `some_ids` hold in `some`
    std::vector<WordId> some_ids;   ///< sorted, unique
    std::shared_ptr<Storage> some;  ///< their words, in that order
  };
  /// operator[] once some words are fetched: one of them, else the whole read's.
  std::string_view pending_word(WordId id) const;
  static Dictionary pending(std::launch policy, uint32_t size, std::function<Dictionary()> read);
  const Storage& storage() const { return pending_ ? pending_->get() : *s_; }
  std::shared_ptr<Storage> storage_ptr();
  static std::shared_ptr<Storage> empty_storage();
  std::shared_ptr<Storage> s_;  ///< never null; shared by copies, written only when not shared
  std::shared_ptr<Pending> pending_;  ///< set while the words come from a deferred read
};

/// A dictionary as the archive stores it (docs/FORMAT.md, /dictionary): word i is the first
/// prefix_lengths[i] bytes of word i-1 followed by suffix i (suffix_lengths[i] bytes of
/// suffix_bytes, the suffixes concatenated in word order).
struct FrontCoded {
  std::vector<uint64_t> prefix_lengths;
  std::vector<char> suffix_bytes;
  std::vector<uint64_t> suffix_lengths;
};

/// Front-codes `dict` (each word shares with the previous one the longest common prefix), on
/// `threads` threads (0: every usable CPU): prefix and suffix lengths per block of words, then
/// the block's suffix bytes copied to their offset; the same arrays for every thread count.
FrontCoded front_code(const Dictionary& dict, unsigned threads = 1);

/// Words decoded per block by decode_front_coded (a block is decoded by one thread).
inline constexpr size_t kFrontCodedBlock = size_t{1} << 14;

/// Rebuilds the words of a front-coded dictionary. `suffix_lengths` must have the size of
/// `prefix_lengths` and add up to the size of `suffix_bytes`. Throws InputError
/// "/dictionary/prefix_lengths[i] is longer than the previous word" for the first such i (word 0
/// has no previous word: its prefix length must be 0). Stores in `*sorted_unique` (when given)
/// whether the words are in strictly increasing byte order.
///
/// Works on blocks of `block_words` words on `threads` threads (0: every hardware thread):
/// block sums and each block's last word (as bytes of the previous block's last word plus
/// suffix bytes of its own words) first, then the last words in block order, then every block's
/// other words from the previous block's last word, each block on its own.
Dictionary decode_front_coded(std::span<const uint64_t> prefix_lengths,
                              std::span<const char> suffix_bytes,
                              std::span<const uint64_t> suffix_lengths,
                              bool* sorted_unique = nullptr, unsigned threads = 0,
                              size_t block_words = kFrontCodedBlock);

/// Words `ids` (sorted, unique, each < the word count) of a front-coded dictionary, decoded alone:
/// each from its suffix and, walking back, the previous words' suffixes until its prefix is
/// covered; no other word is built. Checks what it reads as decode_front_coded and
/// check_dictionary_words do, with their messages (lengths adding up to the suffix bytes, no
/// prefix longer than the previous word along the way, no empty word or whitespace byte in the
/// words returned); sortedness is not checked (only a whole read can). With no ids, only the
/// lengths are checked.
std::vector<std::string> decode_front_coded_words(std::span<const uint64_t> prefix_lengths,
                                                  std::span<const char> suffix_bytes,
                                                  std::span<const uint64_t> suffix_lengths,
                                                  std::span<const WordId> ids);

/// Checks that every word of `dict` is a word as the tokenizer makes them (docs/REFERENCE.md §3):
/// not empty and free of the six ASCII whitespace bytes (0x20, 0x09-0x0D), so that no word can
/// split a row of TSV output. One pass over the bytes, in blocks of kFrontCodedBlock words on
/// `threads` threads (0: every hardware thread). Throws InputError "/dictionary: word N is empty"
/// or "/dictionary: word N holds whitespace byte 0xNN" for the first such word.
void check_dictionary_words(const Dictionary& dict, unsigned threads = 0);

}  // namespace gtadoc
