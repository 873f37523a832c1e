#include "formats/dictionary.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "common/big_alloc.h"
#include "common/error.h"
#include "common/parallel.h"

namespace gtadoc {

std::shared_ptr<Dictionary::Storage> Dictionary::empty_storage() {
  // Shared by every empty dictionary; push_back never writes it (it is always shared).
  static const std::shared_ptr<Storage> empty = std::make_shared<Storage>();
  return empty;
}

Dictionary::Dictionary() : s_(empty_storage()) {}

Dictionary::Dictionary(std::vector<char> bytes, std::vector<uint64_t> offsets)
    : s_(std::make_shared<Storage>(Storage{std::move(bytes), std::move(offsets)})) {
  GTADOC_EXPECTS(
      !s_->offsets.empty() && s_->offsets.front() == 0 && s_->offsets.back() == s_->bytes.size(),
      "dictionary offsets do not match its bytes");
}

Dictionary::Dictionary(Dictionary&& o) noexcept
    : s_(std::exchange(o.s_, empty_storage())), pending_(std::move(o.pending_)) {}

Dictionary& Dictionary::operator=(Dictionary&& o) noexcept {
  if (this != &o) {
    s_ = std::exchange(o.s_, empty_storage());
    pending_ = std::move(o.pending_);
  }
  return *this;
}

Dictionary Dictionary::deferred(uint32_t size, std::function<Dictionary()> read) {
  return pending(std::launch::async, size, std::move(read));
}

Dictionary Dictionary::on_demand(uint32_t size, std::function<Dictionary()> read) {
  return pending(std::launch::deferred, size, std::move(read));
}

Dictionary Dictionary::pending(std::launch policy, uint32_t size,
                               std::function<Dictionary()> read) {
  Dictionary d;
  d.pending_ = std::make_shared<Pending>();
  d.pending_->size = size;
  d.pending_->content = std::async(policy, [size, read = std::move(read)] {
                          Dictionary words = read();
                          GTADOC_EXPECTS(words.size() == size,
                                         "deferred dictionary: the words read are not the "
                                         "words announced");
                          return std::shared_ptr<Storage>(words.storage_ptr());
                        }).share();
  return d;
}

Dictionary Dictionary::on_demand(uint32_t size, std::function<Dictionary()> read,
                                 ReadSome read_some) {
  Dictionary d = pending(std::launch::deferred, size, std::move(read));
  d.pending_->read_some = std::move(read_some);
  return d;
}

void Dictionary::fetch(std::span<const WordId> ids) const {
  if (!fetches_some()) return;
  std::vector<WordId> sorted(ids.begin(), ids.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (WordId id : sorted)
    GTADOC_EXPECTS(id < pending_->size, "dictionary: fetch of a word beyond its size");
  const std::vector<std::string> words = pending_->read_some(sorted);
  GTADOC_EXPECTS(words.size() == sorted.size(), "dictionary: fetch read other words than asked");
  auto some = std::make_shared<Storage>();
  for (const std::string& w : words) {
    some->bytes.insert(some->bytes.end(), w.begin(), w.end());
    some->offsets.push_back(some->bytes.size());
  }
  pending_->some_ids = std::move(sorted);
  pending_->some = std::move(some);
  pending_->some_fetched = true;
}

std::string_view Dictionary::pending_word(WordId id) const {
  const std::vector<WordId>& ids = pending_->some_ids;
  const auto it = std::lower_bound(ids.begin(), ids.end(), id);
  if (it != ids.end() && *it == id) {
    const Storage& s = *pending_->some;
    const size_t k = static_cast<size_t>(it - ids.begin());
    return {s.bytes.data() + s.offsets[k], static_cast<size_t>(s.offsets[k + 1] - s.offsets[k])};
  }
  const Storage& s = pending_->get();
  return {s.bytes.data() + s.offsets[id], static_cast<size_t>(s.offsets[id + 1] - s.offsets[id])};
}

std::shared_ptr<Dictionary::Storage> Dictionary::storage_ptr() {
  if (pending_) {
    pending_->get();
    return pending_->resolved;
  }
  return s_;
}

const Dictionary::Storage& Dictionary::Pending::get() {
  // An error leaves the flag unset: the next access gets it again from the shared future.
  std::call_once(once, [this] {
    resolved = content.get();
    done.store(true, std::memory_order_release);
  });
  return *resolved;
}

void Dictionary::push_back(std::string_view word) {
  if (pending_) {
    s_ = std::make_shared<Storage>(storage());
    pending_.reset();
  }
  if (s_.use_count() > 1) s_ = std::make_shared<Storage>(*s_);
  s_->bytes.insert(s_->bytes.end(), word.begin(), word.end());
  s_->offsets.push_back(s_->bytes.size());
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

FrontCoded front_code(const Dictionary& dict, unsigned threads) {
  FrontCoded f;
  const size_t n = dict.size();
  constexpr size_t kBlock = size_t{1} << 16;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  resize_on_huge_pages(f.prefix_lengths, n);
  resize_on_huge_pages(f.suffix_lengths, n);
  std::vector<uint64_t> block_bytes(blocks + 1, 0);  // suffix bytes per block, then offsets
  parallel_for(blocks, threads, [&](size_t b) {
    const size_t end = std::min(n, (b + 1) * kBlock);
    uint64_t bytes = 0;
    for (size_t w = b * kBlock; w < end; ++w) {
      const std::string_view word = dict[static_cast<WordId>(w)];
      size_t k = 0;
      if (w > 0) {
        const std::string_view prev = dict[static_cast<WordId>(w - 1)];
        const size_t limit = std::min(word.size(), prev.size());
        while (k < limit && word[k] == prev[k]) ++k;
      }
      f.prefix_lengths[w] = k;
      f.suffix_lengths[w] = word.size() - k;
      bytes += word.size() - k;
    }
    block_bytes[b + 1] = bytes;
  });
  for (size_t b = 0; b < blocks; ++b) block_bytes[b + 1] += block_bytes[b];
  resize_on_huge_pages(f.suffix_bytes, block_bytes[blocks]);
  parallel_for(blocks, threads, [&](size_t b) {
    const size_t end = std::min(n, (b + 1) * kBlock);
    char* out = f.suffix_bytes.data() + block_bytes[b];
    for (size_t w = b * kBlock; w < end; ++w) {
      const std::string_view word = dict[static_cast<WordId>(w)];
      const size_t len = f.suffix_lengths[w];
      if (len > 0) std::memcpy(out, word.data() + (word.size() - len), len);
      out += len;
    }
  });
  return f;
}

namespace {

// memcpy for the short copies of decoding (a word's prefix or suffix: mostly a few bytes), inline:
// a call per copy costs more than the copy. Writes exactly [dst, dst + n).
inline void copy_short(char* dst, const char* src, uint64_t n) {
  if (n >= 8) {
    if (n > 16) {
      std::memcpy(dst, src, n);
      return;
    }
    uint64_t a, b;
    std::memcpy(&a, src, 8);
    std::memcpy(&b, src + n - 8, 8);
    std::memcpy(dst, &a, 8);
    std::memcpy(dst + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, src, 4);
    std::memcpy(&b, src + n - 4, 4);
    std::memcpy(dst, &a, 4);
    std::memcpy(dst + n - 4, &b, 4);
  } else {
    for (uint64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

}  // namespace

Dictionary decode_front_coded(std::span<const uint64_t> prefix, std::span<const char> suffixes,
                              std::span<const uint64_t> suffix_len, bool* sorted_unique,
                              unsigned threads, size_t block_words) {
  const size_t n = prefix.size();
  GTADOC_EXPECTS(suffix_len.size() == n && block_words > 0,
                 "decode_front_coded: arrays of different sizes");
  if (sorted_unique) *sorted_unique = true;
  if (n == 0) return Dictionary();
  const size_t blocks = (n - 1) / block_words + 1;
  auto block_begin = [&](size_t t) { return t * block_words; };
  auto block_end = [&](size_t t) { return std::min(n, (t + 1) * block_words); };
  auto word_length = [&](size_t i) { return prefix[i] + suffix_len[i]; };
  constexpr size_t kNone = ~size_t{0};

  // Bytes [begin, end) of a block's last word are suffix bytes of one of its words, starting at
  // `suffix` (relative to the block's first suffix byte).
  struct Piece {
    uint64_t begin, end, suffix;
  };
  struct Block {
    uint64_t suffix_bytes = 0, word_bytes = 0;
    uint64_t inherited = 0;  ///< leading bytes of the last word that come from the previous block
    size_t bad = kNone;      ///< first word whose prefix is longer than the previous word
    bool overflow = false;
    bool sorted = true;
    std::vector<Piece> last_word;
  };
  std::vector<Block> info(blocks);

  // 1. Per block: validity of the prefix lengths, byte counts, and where the last word's bytes
  //    come from. Byte k of word i is suffix byte k - prefix[i] of word i when k >= prefix[i],
  //    else byte k of word i-1; so byte k of the last word comes from the last word j of the block
  //    with prefix[j] <= k, or from the previous block when k < min(prefix over the block).
  parallel_for(blocks, threads, [&](size_t t) {
    Block& blk = info[t];
    const size_t b = block_begin(t), e = block_end(t);
    uint64_t suffix_bytes = 0, word_bytes = 0;  // locals: neighbouring blocks share cache lines
    bool overflow = false;
    for (size_t i = b; i < e; ++i) {
      // Invalid earlier lengths may wrap here; the first bad index is found before them anyway.
      const uint64_t previous = i == 0 ? 0 : word_length(i - 1);
      if (prefix[i] > previous) {
        blk.bad = i;
        return;
      }
      overflow |= __builtin_add_overflow(suffix_bytes, suffix_len[i], &suffix_bytes);
      overflow |= __builtin_add_overflow(word_bytes, word_length(i), &word_bytes);
    }
    blk.suffix_bytes = suffix_bytes;
    blk.word_bytes = word_bytes;
    blk.overflow = overflow;
    if (overflow) return;
    uint64_t unresolved = word_length(e - 1);
    uint64_t suffix = blk.suffix_bytes;
    for (size_t i = e; i-- > b;) {
      suffix -= suffix_len[i];
      if (prefix[i] < unresolved) {
        blk.last_word.push_back({prefix[i], unresolved, suffix});
        unresolved = prefix[i];
      }
    }
    blk.inherited = unresolved;
  });

  // 2. In block order: the first invalid prefix, the blocks' positions, and their last words.
  for (const Block& blk : info)
    if (blk.bad != kNone)
      throw InputError("/dictionary/prefix_lengths[" + std::to_string(blk.bad) +
                       "] is longer than the previous word");
  std::vector<uint64_t> suffix_base(blocks + 1, 0), byte_base(blocks + 1, 0);
  for (size_t t = 0; t < blocks; ++t) {
    bool overflow = info[t].overflow;
    overflow |= __builtin_add_overflow(suffix_base[t], info[t].suffix_bytes, &suffix_base[t + 1]);
    overflow |= __builtin_add_overflow(byte_base[t], info[t].word_bytes, &byte_base[t + 1]);
    if (overflow || byte_base[t + 1] > std::numeric_limits<size_t>::max() / 2)
      throw InputError("dictionary too large");
  }
  GTADOC_EXPECTS(suffix_base[blocks] == suffixes.size(),
                 "decode_front_coded: suffix lengths do not add up to the suffix bytes");
  std::vector<char> bytes;
  std::vector<uint64_t> offsets;
  resize_on_huge_pages(bytes, byte_base[blocks]);
  resize_on_huge_pages(offsets, n + 1);
  offsets[0] = 0;
  for (size_t t = 0; t < blocks; ++t) {
    const size_t b = block_begin(t), e = block_end(t);
    char* last = bytes.data() + byte_base[t + 1] - word_length(e - 1);
    if (info[t].inherited > 0)  // t > 0: word 0 has no prefix
      std::memcpy(last, bytes.data() + byte_base[t] - word_length(b - 1), info[t].inherited);
    for (const Piece& p : info[t].last_word)
      std::memcpy(last + p.begin, suffixes.data() + suffix_base[t] + p.suffix, p.end - p.begin);
  }

  // 3. Every block's other words, each from the one before (the first from the previous block's
  //    last word), checking on the way that each word is greater than the one before: the first
  //    prefix[i] bytes are equal, the rest decides.
  parallel_for(blocks, threads, [&](size_t t) {
    const size_t b = block_begin(t), e = block_end(t);
    char* out = bytes.data();
    uint64_t pos = byte_base[t];
    const char* suffix = suffixes.data() + suffix_base[t];
    const char* prev = b == 0 ? nullptr : out + pos - word_length(b - 1);
    uint64_t prev_length = b == 0 ? 0 : word_length(b - 1);
    bool sorted = true;
    for (size_t i = b; i < e; ++i) {
      const uint64_t p = prefix[i], s = suffix_len[i], length = p + s;
      char* word = out + pos;
      if (i + 1 != e) {  // the last word is already in place
        copy_short(word, prev, p);
        copy_short(word + p, suffix, s);
      }
      if (i > 0 && sorted) {
        const uint64_t common = std::min(length, prev_length) - p;
        int c = 0;
        if (common > 0) {
          // Front coding shares the longest common prefix, so the next byte usually decides.
          const auto x = static_cast<unsigned char>(word[p]),
                     y = static_cast<unsigned char>(prev[p]);
          c = x != y ? (x < y ? -1 : 1) : std::memcmp(word + p, prev + p, common);
        }
        sorted = c > 0 || (c == 0 && length > prev_length);
      }
      pos += length;
      suffix += s;
      offsets[i + 1] = pos;
      prev = word;
      prev_length = length;
    }
    info[t].sorted = sorted;
  });
  if (sorted_unique)
    *sorted_unique = std::all_of(info.begin(), info.end(), [](const Block& b) { return b.sorted; });
  return Dictionary(std::move(bytes), std::move(offsets));
}

namespace {

/// The message check_dictionary_words gives for word `id` (`w`), or empty when it is a word.
std::string word_problem(std::string_view w, uint64_t id) {
  if (w.empty()) return "/dictionary: word " + std::to_string(id) + " is empty";
  for (char ch : w) {
    if (ch == ' ' || (ch >= '\t' && ch <= '\r')) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(ch));
      return "/dictionary: word " + std::to_string(id) + " holds whitespace byte " + hex;
    }
  }
  return {};
}

}  // namespace

std::vector<std::string> decode_front_coded_words(std::span<const uint64_t> prefix_lengths,
                                                  std::span<const char> suffix_bytes,
                                                  std::span<const uint64_t> suffix_lengths,
                                                  std::span<const WordId> ids) {
  const size_t n = suffix_lengths.size();
  GTADOC_EXPECTS(prefix_lengths.size() == n, "front-coded dictionary: lengths of unequal size");
  uint64_t total = 0;  // the lengths add up to the bytes, as a whole read checks
  for (uint64_t len : suffix_lengths)
    if (__builtin_add_overflow(total, len, &total) || total > suffix_bytes.size())
      throw InputError("string lengths in suffix_lengths exceed suffix_bytes");
  if (total != suffix_bytes.size())
    throw InputError("string lengths in suffix_lengths do not add up to suffix_bytes");
  std::vector<std::string> out;
  out.reserve(ids.size());
  if (ids.empty()) return out;
  GTADOC_EXPECTS(std::is_sorted(ids.begin(), ids.end()) && ids.back() < n,
                 "front-coded dictionary: ids unsorted or beyond the words");
  uint64_t at = 0, next = 0;  // suffix offset of word `next`
  for (const WordId id : ids) {
    for (; next < id; ++next) at += suffix_lengths[next];
    const uint64_t p = prefix_lengths[id], sl = suffix_lengths[id];
    std::string w(p + sl, '\0');
    std::memcpy(w.data() + p, suffix_bytes.data() + at, sl);
    // Bytes [0, need) come from the words before: word j holds its own suffix from byte
    // prefix_lengths[j] on, and the rest from word j - 1.
    uint64_t need = p, off = at;
    for (size_t j = id; need > 0;) {
      if (j == 0)
        throw InputError("/dictionary/prefix_lengths[0] is longer than the previous word");
      --j;
      off -= suffix_lengths[j];
      const uint64_t pj = prefix_lengths[j], sj = suffix_lengths[j];
      if (pj + sj < need)
        throw InputError("/dictionary/prefix_lengths[" + std::to_string(j + 1) +
                         "] is longer than the previous word");
      if (pj < need) std::memcpy(w.data() + pj, suffix_bytes.data() + off, need - pj);
      need = std::min(need, pj);
    }
    const std::string problem = word_problem(w, id);
    if (!problem.empty()) throw InputError(problem);
    out.push_back(std::move(w));
  }
  return out;
}

void check_dictionary_words(const Dictionary& dict, unsigned threads) {
  const size_t n = dict.size();
  if (n == 0) return;
  const std::vector<char>& bytes = dict.bytes();
  const std::vector<uint64_t>& offsets = dict.offsets();
  auto is_space = [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  };
  const size_t blocks = (n - 1) / kFrontCodedBlock + 1;
  constexpr size_t kNone = ~size_t{0};
  // Per block: its first empty word and its first word holding a whitespace byte.
  std::vector<size_t> empty(blocks, kNone), spaced(blocks, kNone);
  parallel_for(blocks, threads, [&](size_t t) {
    const size_t b = t * kFrontCodedBlock, e = std::min(n, b + kFrontCodedBlock);
    for (size_t i = b; i < e; ++i)
      if (offsets[i + 1] == offsets[i]) {
        empty[t] = i;
        break;
      }
    const char* first = bytes.data() + offsets[b];
    const char* last = bytes.data() + offsets[e];
    const char* space = std::find_if(first, last, is_space);
    if (space != last) {
      // The word holding the byte: the last i with offsets[i] <= its position.
      const uint64_t k = static_cast<uint64_t>(space - bytes.data());
      spaced[t] = static_cast<size_t>(
          std::upper_bound(offsets.begin() + b, offsets.begin() + e + 1, k) - offsets.begin() - 1);
    }
  });
  for (size_t t = 0; t < blocks; ++t) {
    const size_t word = std::min(empty[t], spaced[t]);
    if (word == kNone) continue;
    if (word == empty[t])
      throw InputError("/dictionary: word " + std::to_string(word) + " is empty");
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x",
                  static_cast<unsigned char>(*std::find_if(
                      bytes.data() + offsets[word], bytes.data() + offsets[word + 1], is_space)));
    throw InputError("/dictionary: word " + std::to_string(word) + " holds whitespace byte " + hex);
  }
}

}  // namespace gtadoc
