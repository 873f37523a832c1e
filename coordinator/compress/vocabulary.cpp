#include "coordinator/compress/vocabulary.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>

#include "common/big_alloc.h"
#include "common/error.h"
#include "common/parallel.h"

namespace gtadoc {
namespace {

// Words and positions live in blocks mapped from the kernel (not the heap), so that they neither
// fragment the heap nor stay resident once freed; a block's untouched pages cost no memory.
constexpr uint32_t kChunkBytes = 1 << 20;     ///< words are packed into chunks of this size
constexpr uint32_t kOwnChunkFrom = 64 << 10;  ///< longer words get a chunk of their own
constexpr unsigned kSegmentBits = 17;         ///< positions are kept in segments of 2^17 (1 MiB)
constexpr uint32_t kSegment = 1u << kSegmentBits;
constexpr uint64_t kEmptySlot = ~uint64_t{0};

/// Memory mapped anonymously (zero pages until touched), unmapped on destruction.
class Block {
 public:
  explicit Block(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<char*>(p);
  }
  Block(Block&& o) noexcept : data_(o.data_), bytes_(o.bytes_) { o.data_ = nullptr; }
  Block& operator=(Block&&) = delete;
  ~Block() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  char* data() const { return data_; }

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
};

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}
char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(0x80 | (v & 0x7F));
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

}  // namespace

struct Vocabulary::Partition {
  std::mutex mu;
  std::vector<Block> chunks;
  uint32_t current = 0;          ///< chunk that small words go to
  uint32_t used = kChunkBytes;   ///< bytes used in it (full: a new one is made first)
  std::vector<Block> positions;  ///< (chunk << 32 | offset) per word, kSegment per block
  uint32_t count = 0;
  std::vector<uint64_t> slots;  ///< (fingerprint << 32 | index); kEmptySlot when free
  uint64_t word_bytes = 0;
  uint64_t memory = 0;  ///< bytes touched in chunks and positions, plus the slots

  uint64_t& position(uint32_t local) const {
    return reinterpret_cast<uint64_t*>(
        positions[local >> kSegmentBits].data())[local & (kSegment - 1)];
  }

  std::string_view get(uint32_t local) const {
    const uint64_t pos = position(local);
    const auto* p = reinterpret_cast<const unsigned char*>(chunks[pos >> 32].data() +
                                                           static_cast<uint32_t>(pos));
    uint64_t len = 0;
    for (unsigned shift = 0;; shift += 7) {
      const unsigned char b = *p++;
      len |= uint64_t{b & 0x7Fu} << shift;
      if (b < 0x80) break;
    }
    return {reinterpret_cast<const char*>(p), static_cast<size_t>(len)};
  }

  size_t home(uint32_t fp) const { return (static_cast<uint64_t>(fp) * slots.size()) >> 32; }

  void prefetch(uint64_t h) const {
    if (!slots.empty()) __builtin_prefetch(&slots[home(static_cast<uint32_t>(h))]);
  }

  uint32_t intern(std::string_view w, uint64_t h) {
    if (slots.empty()) rehash(1024);
    const uint32_t fp = static_cast<uint32_t>(h);
    const size_t cap = slots.size();
    size_t i = home(fp);
    for (;;) {
      const uint64_t s = slots[i];
      if (s == kEmptySlot) break;
      if (static_cast<uint32_t>(s >> 32) == fp && get(static_cast<uint32_t>(s)) == w)
        return static_cast<uint32_t>(s);
      i = i + 1 == cap ? 0 : i + 1;
    }
    if (count >= kLocalMask) throw InputError("vocabulary too large");
    const uint32_t local = count++;
    store(local, w);
    slots[i] = (uint64_t{fp} << 32) | local;
    if (count > cap / 10 * 7) rehash(cap + cap / 2);
    return local;
  }

  void store(uint32_t local, std::string_view w) {
    const size_t need = varint_size(w.size()) + w.size();
    char* dst;
    uint64_t pos;
    if (need >= kOwnChunkFrom) {
      chunks.emplace_back(need);
      pos = uint64_t{static_cast<uint32_t>(chunks.size() - 1)} << 32;
      dst = chunks.back().data();
    } else {
      if (used + need > kChunkBytes) {
        chunks.emplace_back(kChunkBytes);
        current = static_cast<uint32_t>(chunks.size() - 1);
        used = 0;
      }
      pos = (uint64_t{current} << 32) | used;
      dst = chunks[current].data() + used;
      used += static_cast<uint32_t>(need);
    }
    char* p = put_varint(dst, w.size());
    if (!w.empty()) std::memcpy(p, w.data(), w.size());
    if ((local & (kSegment - 1)) == 0) positions.emplace_back(kSegment * sizeof(uint64_t));
    position(local) = pos;
    word_bytes += w.size();
    memory += need + sizeof(uint64_t);
  }

  void rehash(size_t cap) {
    std::vector<uint64_t> old(cap, kEmptySlot);
    old.swap(slots);
    memory += slots.size() * sizeof(uint64_t);
    memory -= old.size() * sizeof(uint64_t);
    for (uint64_t s : old) {
      if (s == kEmptySlot) continue;
      size_t i = home(static_cast<uint32_t>(s >> 32));
      while (slots[i] != kEmptySlot) i = i + 1 == cap ? 0 : i + 1;
      slots[i] = s;
    }
  }

  void drop_index() {
    memory -= slots.size() * sizeof(uint64_t);
    std::vector<uint64_t>().swap(slots);
  }
};

Vocabulary::Vocabulary() : parts_(new Partition[kPartitions]) {}
Vocabulary::~Vocabulary() = default;

std::vector<uint32_t> Vocabulary::fold(const StringTable& table) {
  const uint32_t n = table.size();
  std::vector<uint64_t> hashes(n);
  std::vector<uint32_t> begin(kPartitions + 1, 0);
  for (uint32_t i = 0; i < n; ++i) {
    hashes[i] = table.hash_of(i);  // computed when the shard interned it
    ++begin[(hashes[i] >> (64 - kPartitionBits)) + 1];
  }
  for (uint32_t p = 0; p < kPartitions; ++p) begin[p + 1] += begin[p];
  std::vector<uint32_t> order(n);
  {
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (uint32_t i = 0; i < n; ++i) order[fill[hashes[i] >> (64 - kPartitionBits)]++] = i;
  }
  std::vector<uint32_t> ids(n);
  // Concurrent folds start at different partitions, so they rarely wait for one another.
  const uint32_t start = next_start_.fetch_add(7, std::memory_order_relaxed);
  for (uint32_t k = 0; k < kPartitions; ++k) {
    const uint32_t p = (start + k) % kPartitions;
    if (begin[p] == begin[p + 1]) continue;
    Partition& part = parts_[p];
    std::lock_guard<std::mutex> lock(part.mu);
    const uint64_t before = part.memory;
    constexpr uint32_t kAhead = 4;
    for (uint32_t j = begin[p]; j < begin[p + 1]; ++j) {
      if (j + kAhead < begin[p + 1]) part.prefetch(hashes[order[j + kAhead]]);
      const uint32_t i = order[j];
      ids[i] = (p << kLocalBits) | part.intern(table.get(i), hashes[i]);
    }
    const uint64_t after = part.memory;
    if (after >= before)
      memory_.fetch_add(after - before, std::memory_order_relaxed);
    else
      memory_.fetch_sub(before - after, std::memory_order_relaxed);
  }
  return ids;
}

uint64_t Vocabulary::size() const {
  uint64_t n = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) n += parts_[p].count;
  return n;
}

std::string_view Vocabulary::get(uint32_t id) const {
  return parts_[id >> kLocalBits].get(id & kLocalMask);
}

uint64_t Vocabulary::word_bytes() const {
  uint64_t n = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) n += parts_[p].word_bytes;
  return n;
}

std::vector<uint32_t> Vocabulary::sorted(unsigned threads) {
  uint32_t total = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    base_[p] = total;
    total += parts_[p].count;
    const uint64_t before = parts_[p].memory;
    parts_[p].drop_index();
    memory_.fetch_sub(before - parts_[p].memory, std::memory_order_relaxed);
  }
  // Buckets by the first two bytes (a missing second byte counts as 0: "a" and "a\0..." share a
  // bucket and the sort inside it orders them), then every bucket sorted on its own.
  constexpr uint32_t kBuckets = 1u << 16;
  auto bucket = [](std::string_view w) -> uint32_t {
    if (w.empty()) return 0;
    return (uint32_t{static_cast<unsigned char>(w[0])} << 8) |
           (w.size() > 1 ? static_cast<unsigned char>(w[1]) : 0u);
  };
  // Counted and filled on threads, each over its own range of partitions (partitions hold
  // about the same number of words): per-thread counts, then each (bucket, thread) pair's start.
  // The order inside a bucket does not matter: the words are distinct, the sort below orders
  // them fully.
  const unsigned parts_threads = std::min<unsigned>(resolve_threads(threads), kPartitions);
  auto parts_of = [&](unsigned t) {
    return std::pair<uint32_t, uint32_t>{t * kPartitions / parts_threads,
                                         (t + 1) * kPartitions / parts_threads};
  };
  std::vector<uint32_t> counts(size_t{parts_threads} * kBuckets, 0);
  std::vector<uint16_t> bucket_of(total);  // by dense position: words are decoded once
  run_on_threads(parts_threads, [&](unsigned t) {
    uint32_t* c = counts.data() + size_t{t} * kBuckets;
    const auto [first, last] = parts_of(t);
    for (uint32_t p = first; p < last; ++p)
      for (uint32_t l = 0; l < parts_[p].count; ++l) {
        const uint32_t b = bucket(parts_[p].get(l));
        bucket_of[base_[p] + l] = static_cast<uint16_t>(b);
        ++c[b];
      }
  });
  std::vector<uint32_t> begin(kBuckets + 1, 0);
  uint32_t running = 0;
  for (uint32_t b = 0; b < kBuckets; ++b) {
    begin[b] = running;
    for (unsigned t = 0; t < parts_threads; ++t) {
      const uint32_t c = counts[size_t{t} * kBuckets + b];
      counts[size_t{t} * kBuckets + b] = running;
      running += c;
    }
  }
  begin[kBuckets] = running;
  std::vector<uint32_t> order(total);
  run_on_threads(parts_threads, [&](unsigned t) {
    uint32_t* fill = counts.data() + size_t{t} * kBuckets;
    const auto [first, last] = parts_of(t);
    for (uint32_t p = first; p < last; ++p)
      for (uint32_t l = 0; l < parts_[p].count; ++l)
        order[fill[bucket_of[base_[p] + l]]++] = (p << kLocalBits) | l;
  });
  std::vector<uint16_t>().swap(bucket_of);
  std::vector<uint32_t>().swap(counts);
  // Inside a bucket: by the next 8 bytes as a big-endian integer (zero padded), then, among
  // equal keys, by the whole words (which also orders "ab" before "ab\0").
  struct Keyed {
    uint64_t key;
    uint32_t id;
  };
  parallel_for(kBuckets, threads, [&](size_t b) {
    const uint32_t n = begin[b + 1] - begin[b];
    if (n < 2) return;
    thread_local std::vector<Keyed> keyed;
    keyed.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t id = order[begin[b] + i];
      const std::string_view w = get(id);
      uint64_t key = 0;
      for (size_t k = 2; k < 10; ++k)
        key = (key << 8) | (k < w.size() ? static_cast<unsigned char>(w[k]) : 0u);
      keyed[i] = {key, id};
    }
    std::sort(keyed.begin(), keyed.end(), [&](const Keyed& x, const Keyed& y) {
      if (x.key != y.key) return x.key < y.key;
      return get(x.id) < get(y.id);
    });
    for (uint32_t i = 0; i < n; ++i) order[begin[b] + i] = keyed[i].id;
    if (keyed.capacity() > (size_t{1} << 16)) std::vector<Keyed>().swap(keyed);
  });
  return order;
}

Dictionary Vocabulary::dictionary(std::span<const uint32_t> order, unsigned threads) const {
  // Lengths, offsets, then every block's words copied in parallel (the words are scattered over
  // the chunks, so the copy is bound by memory latency, not bandwidth).
  const size_t n = order.size();
  constexpr size_t kBlock = size_t{1} << 16;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<uint64_t> offsets;
  resize_on_huge_pages(offsets, n + 1);  // first touch of 4 KiB pages costs 4x more on a VM
  parallel_for(blocks, threads, [&](size_t b) {
    for (size_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i)
      offsets[i + 1] = get(order[i]).size();
  });
  for (size_t i = 0; i < n; ++i) offsets[i + 1] += offsets[i];
  std::vector<char> bytes;
  resize_on_huge_pages(bytes, offsets[n]);
  parallel_for(blocks, threads, [&](size_t b) {
    for (size_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) {
      const std::string_view w = get(order[i]);
      if (!w.empty()) std::memcpy(bytes.data() + offsets[i], w.data(), w.size());
    }
  });
  return Dictionary(std::move(bytes), std::move(offsets));
}

void Vocabulary::release_words() {
  for (uint32_t p = 0; p < kPartitions; ++p) {
    Partition& part = parts_[p];
    part.drop_index();
    std::vector<Block>().swap(part.chunks);
    std::vector<Block>().swap(part.positions);
    part.used = kChunkBytes;
    part.memory = 0;
  }
  memory_.store(0, std::memory_order_relaxed);
}

// ------------------------------------------------------------------------------ WordList

WordList::WordList(std::span<const uint8_t> bytes) : data_(bytes.data()) {
  GTADOC_EXPECTS(bytes.size() >= 16, "word list: truncated");
  std::memcpy(&n_, data_, 8);
  GTADOC_EXPECTS(n_ < (bytes.size() - 8) / 8, "word list: bad count");
  const uint64_t header = 8 + (n_ + 1) * 8;
  GTADOC_EXPECTS(offset(0) == 0 && header + offset(n_) == bytes.size(), "word list: bad offsets");
  bytes_ = reinterpret_cast<const char*>(data_ + header);
}

uint64_t WordList::offset(uint64_t i) const {
  uint64_t v;
  std::memcpy(&v, data_ + 8 + i * 8, 8);
  return v;
}

std::string_view WordList::operator[](uint64_t i) const {
  const uint64_t a = offset(i), b = offset(i + 1);
  return {bytes_ + a, static_cast<size_t>(b - a)};
}

namespace {

/// A word list of `n` words and `bytes` bytes, filled by put(word) in order.
class WordListWriter {
 public:
  WordListWriter(uint64_t n, uint64_t bytes) : out_(8 + (n + 1) * 8 + bytes), n_(n) {
    std::memcpy(out_.data(), &n, 8);
    put_offset(0, 0);
  }
  void put(std::string_view w) {
    char* dst = reinterpret_cast<char*>(out_.data()) + 8 + (n_ + 1) * 8 + at_;
    if (!w.empty()) std::memcpy(dst, w.data(), w.size());
    at_ += w.size();
    put_offset(++i_, at_);
  }
  std::vector<uint8_t> finish() {
    GTADOC_EXPECTS(i_ == n_ && 8 + (n_ + 1) * 8 + at_ == out_.size(), "word list: size mismatch");
    return std::move(out_);
  }

 private:
  void put_offset(uint64_t i, uint64_t v) { std::memcpy(out_.data() + 8 + i * 8, &v, 8); }
  std::vector<uint8_t> out_;
  uint64_t n_, i_ = 0, at_ = 0;
};

}  // namespace

std::vector<uint8_t> WordList::from_vocabulary(const Vocabulary& v,
                                               std::span<const uint32_t> order) {
  WordListWriter out(order.size(), v.word_bytes());
  for (uint32_t id : order) out.put(v.get(id));
  return out.finish();
}

std::vector<uint8_t> WordList::from_dictionary(const Dictionary& d) {
  WordListWriter out(d.size(), d.bytes().size());
  for (uint32_t i = 0; i < d.size(); ++i) out.put(d[i]);
  return out.finish();
}

Dictionary WordList::to_dictionary() const {
  std::vector<char> bytes(bytes_, bytes_ + offset(n_));
  std::vector<uint64_t> offsets(n_ + 1);
  std::memcpy(offsets.data(), data_ + 8, (n_ + 1) * 8);
  return Dictionary(std::move(bytes), std::move(offsets));
}

std::vector<uint8_t> merge_word_lists(const WordList& a, const WordList& b) {
  // First the size of the union, then the union itself (no growth, no copy).
  uint64_t n = 0, bytes = 0;
  auto walk = [&](auto&& emit) {
    uint64_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      std::string_view w;
      if (j == b.size() || (i < a.size() && a[i] < b[j])) {
        w = a[i++];
      } else if (i == a.size() || b[j] < a[i]) {
        w = b[j++];
      } else {
        w = a[i++];
        ++j;
      }
      emit(w);
    }
  };
  walk([&](std::string_view w) { ++n, bytes += w.size(); });
  WordListWriter out(n, bytes);
  walk([&](std::string_view w) { out.put(w); });
  return out.finish();
}

std::vector<uint32_t> positions_in(const WordList& part, const WordList& whole, unsigned threads) {
  const uint64_t n = part.size(), m = whole.size();
  std::vector<uint32_t> pos(n);
  constexpr uint64_t kBlock = 1 << 14;
  parallel_for((n + kBlock - 1) / kBlock, threads, [&](size_t blk) {
    const uint64_t begin = blk * kBlock, end = std::min(n, begin + kBlock);
    // Binary search for the block's first word, then gallop forward for each next one.
    uint64_t lo = 0, hi = m;
    const std::string_view first = part[begin];
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (whole[mid] < first)
        lo = mid + 1;
      else
        hi = mid;
    }
    uint64_t g = lo;
    for (uint64_t i = begin; i < end; ++i) {
      const std::string_view w = part[i];
      if (g < m && whole[g] < w) {
        uint64_t step = 1, prev = g;
        while (g + step < m && whole[g + step] < w) prev = g + step, step *= 2;
        uint64_t a = prev + 1, b = std::min(m, g + step);
        while (a < b) {
          const uint64_t mid = a + (b - a) / 2;
          if (whole[mid] < w)
            a = mid + 1;
          else
            b = mid;
        }
        g = a;
      }
      GTADOC_EXPECTS(g < m && whole[g] == w, "dictionary merge: a word is missing");
      pos[i] = static_cast<uint32_t>(g);
    }
  });
  return pos;
}

}  // namespace gtadoc
