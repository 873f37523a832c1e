// Task names, key layouts and query-time normalization of the dictionary (SPEC §3).
#include "worker/query.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string_view>
#include <thread>

#include "common/error.h"

namespace gtadoc {
namespace {

struct TaskEntry {
  Task task;
  const char* name;
};
constexpr TaskEntry kTasks[] = {
    {Task::kWordCount, "word-count"},
    {Task::kSort, "sort"},
    {Task::kInvertedIndex, "inverted-index"},
    {Task::kTermVector, "term-vector"},
    {Task::kSequenceCount, "sequence-count"},
    {Task::kRankedInvertedIndex, "ranked-inverted-index"},
};

bool is_ascii_alnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
/// Bytes that --alnum keeps at the ends of a word: ASCII letters/digits and every byte >= 0x80.
bool is_kept_edge(unsigned char c) { return c >= 0x80 || is_ascii_alnum(c); }

/// A normalized word to sort: its first 8 bytes big-endian (zero padded) and its index.
struct SortItem {
  uint64_t prefix;
  uint32_t id;
};

uint64_t big_endian_prefix(std::string_view s) {
  unsigned char b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(b, s.data(), std::min<size_t>(8, s.size()));
  uint64_t v = 0;
  for (unsigned char c : b) v = (v << 8) | c;
  return v;
}

/// Sorts `items` by their words (byte order), on several threads when the input is large.
template <class Less>
void parallel_sort(std::vector<SortItem>& items, Less less) {
  const size_t n = items.size();
  unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  if (n < (1u << 20) || threads == 1) {
    std::sort(items.begin(), items.end(), less);
    return;
  }
  // Sort `threads` chunks concurrently, then merge neighbouring runs pairwise.
  std::vector<size_t> bounds(threads + 1);
  for (unsigned t = 0; t <= threads; ++t) bounds[t] = n * t / threads;
  {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        std::sort(items.begin() + bounds[t], items.begin() + bounds[t + 1], less);
      });
    for (auto& th : pool) th.join();
  }
  std::vector<SortItem> tmp(n);
  while (bounds.size() > 2) {
    std::vector<size_t> next;
    std::vector<std::thread> pool;
    for (size_t i = 0; i + 1 < bounds.size(); i += 2) {
      next.push_back(bounds[i]);
      if (i + 2 < bounds.size()) {
        size_t lo = bounds[i], mid = bounds[i + 1], hi = bounds[i + 2];
        pool.emplace_back([&, lo, mid, hi] {
          std::merge(items.begin() + lo, items.begin() + mid, items.begin() + mid,
                     items.begin() + hi, tmp.begin() + lo, less);
        });
      } else {  // odd run out: carried over unchanged
        size_t lo = bounds[i], hi = bounds[i + 1];
        pool.emplace_back([&, lo, hi] {
          std::copy(items.begin() + lo, items.begin() + hi, tmp.begin() + lo);
        });
      }
    }
    next.push_back(n);
    for (auto& th : pool) th.join();
    items.swap(tmp);
    bounds.swap(next);
  }
}

}  // namespace

Task parse_task(const std::string& name) {
  for (const auto& e : kTasks)
    if (name == e.name) return e.task;
  std::string expected;
  for (const auto& e : kTasks) {
    if (!expected.empty()) expected += ", ";
    expected += e.name;
  }
  throw UsageError("unknown task '" + name + "' (expected one of: " + expected + ")");
}

const char* task_name(Task t) {
  for (const auto& e : kTasks)
    if (e.task == t) return e.name;
  return "unknown";
}

const char* traversal_name(Traversal t) {
  switch (t) {
    case Traversal::kAuto: return "auto";
    case Traversal::kTopDown: return "top-down";
    case Traversal::kBottomUp: return "bottom-up";
  }
  return "unknown";
}

KeyLayout key_layout(const QueryOptions& q) {
  switch (q.task) {
    case Task::kWordCount: return {1, 1, false};
    case Task::kSort: return {1, 1, true};
    case Task::kInvertedIndex: return {2, 1, false};
    case Task::kTermVector: return {2, 1, false};
    case Task::kSequenceCount:
      return q.per_doc ? KeyLayout{q.n + 1, 1, false} : KeyLayout{q.n, q.n, false};
    case Task::kRankedInvertedIndex: return {q.n + 1, q.n, false};
  }
  GTADOC_FAIL("key_layout: unknown task");
}

Normalization normalize_dictionary(const Dictionary& dict, bool lowercase, bool alnum) {
  Normalization out;
  const uint32_t num_words = dict.size();
  if (!lowercase && !alnum) {
    out.identity = true;
    out.remap.resize(num_words);
    std::iota(out.remap.begin(), out.remap.end(), WordId{0});
    out.dict = dict;
    return out;
  }
  out.identity = false;

  // 1. Normalize every word into one buffer (empty = dropped).
  const std::vector<char>& src = dict.bytes();
  std::vector<char> buf(src.size());
  std::vector<uint64_t> off(static_cast<size_t>(num_words) + 1, 0);
  uint64_t pos = 0;
  for (uint32_t w = 0; w < num_words; ++w) {
    std::string_view s = dict[w];
    size_t b = 0, e = s.size();
    if (alnum) {
      while (b < e && !is_kept_edge(static_cast<unsigned char>(s[b]))) ++b;
      while (e > b && !is_kept_edge(static_cast<unsigned char>(s[e - 1]))) --e;
    }
    char* dst = buf.data() + pos;
    if (lowercase) {
      for (size_t i = b; i < e; ++i) {
        char c = s[i];
        dst[i - b] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
      }
    } else if (e > b) {
      std::memcpy(dst, s.data() + b, e - b);
    }
    pos += e - b;
    off[w + 1] = pos;
  }
  auto word = [&](uint32_t w) {
    return std::string_view(buf.data() + off[w], static_cast<size_t>(off[w + 1] - off[w]));
  };

  // 2. Sort the surviving words by bytes (8-byte prefix first, full comparison on ties).
  std::vector<SortItem> items;
  items.reserve(num_words);
  for (uint32_t w = 0; w < num_words; ++w)
    if (off[w + 1] > off[w]) items.push_back({big_endian_prefix(word(w)), w});
  auto less = [&](const SortItem& a, const SortItem& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    std::string_view x = word(a.id), y = word(b.id);
    if (x.size() <= 8 && y.size() <= 8) return x.size() < y.size();
    return x < y;
  };
  parallel_sort(items, less);

  // 3. Distinct words get consecutive ids; build the normalized dictionary and the remap.
  out.remap.assign(num_words, kDroppedWord);
  std::vector<char> nbytes;
  std::vector<uint64_t> noffsets{0};
  nbytes.reserve(pos);
  noffsets.reserve(items.size() + 1);
  WordId next = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string_view s = word(items[i].id);
    bool fresh = i == 0 || items[i].prefix != items[i - 1].prefix || s != word(items[i - 1].id);
    if (fresh) {
      nbytes.insert(nbytes.end(), s.begin(), s.end());
      noffsets.push_back(nbytes.size());
      ++next;
    }
    out.remap[items[i].id] = next - 1;
  }
  out.dict = Dictionary(std::move(nbytes), std::move(noffsets));
  return out;
}

}  // namespace gtadoc
