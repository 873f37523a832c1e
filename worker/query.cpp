// Task names, key layouts and query-time normalization of the dictionary (docs/REFERENCE.md §3).
#include "worker/query.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <numeric>
#include <string_view>
#include <thread>

#include "common/big_alloc.h"
#include "common/error.h"
#include "common/parallel.h"

namespace gtadoc {
namespace {

struct TaskEntry {
  Task task;
  const char* name;
};
constexpr TaskEntry kTasks[] = {
    {Task::kWordCount, "word-count"},         {Task::kSort, "sort"},
    {Task::kInvertedIndex, "inverted-index"}, {Task::kTermVector, "term-vector"},
    {Task::kSequenceCount, "sequence-count"}, {Task::kRankedInvertedIndex, "ranked-inverted-index"},
};

bool is_ascii_alnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
/// Bytes that --alnum keeps at the ends of a word: ASCII letters/digits and every byte >= 0x80.
bool is_kept_edge(unsigned char c) {
  return c >= 0x80 || is_ascii_alnum(c);
}

/// Normalized word to sort: its first 8 bytes big-endian (zero padded) and its global id.
struct SortItem {
  uint64_t prefix;
  uint32_t id;
};

uint64_t big_endian_prefix(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | (i < n ? static_cast<unsigned char>(p[i]) : 0u);
  return v;
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
  throw UsageError("unknown task '" + one_line(name, 80) + "' (expected one of: " + expected + ")");
}

const char* task_name(Task t) {
  for (const auto& e : kTasks)
    if (e.task == t) return e.name;
  return "unknown";
}

const char* traversal_name(Traversal t) {
  switch (t) {
    case Traversal::kAuto:
      return "auto";
    case Traversal::kTopDown:
      return "top-down";
    case Traversal::kBottomUp:
      return "bottom-up";
  }
  return "unknown";
}

DocSlot doc_slot(const QueryOptions& q) {
  switch (q.task) {
    case Task::kWordCount:
    case Task::kSort:
      return DocSlot::kNone;
    case Task::kInvertedIndex:
    case Task::kRankedInvertedIndex:
      return DocSlot::kLast;
    case Task::kTermVector:
      return DocSlot::kFirst;
    case Task::kSequenceCount:
      return q.per_doc ? DocSlot::kFirst : DocSlot::kNone;
  }
  GTADOC_FAIL("doc_slot: unknown task");
}

void check_sequence_length(const QueryOptions& q) {
  if (is_sequence_task(q.task) && (q.n < 2 || q.n > 8))
    throw UsageError("--n must be between 2 and 8 (got " + std::to_string(q.n) + ")");
}

KeyLayout key_layout(const QueryOptions& q) {
  switch (q.task) {
    case Task::kWordCount:
      return {1, 1, false};
    case Task::kSort:
      return {1, 1, true};
    case Task::kInvertedIndex:
      return {2, 1, true};
    case Task::kTermVector:
      return {2, 1, true};
    case Task::kSequenceCount:
      return q.per_doc ? KeyLayout{q.n + 1, 1, true} : KeyLayout{q.n, q.n, false};
    case Task::kRankedInvertedIndex:
      return {q.n + 1, 1, true};
  }
  GTADOC_FAIL("key_layout: unknown task");
}

std::string normalize_word(std::string_view word, bool lowercase, bool alnum) {
  size_t b = 0, e = word.size();
  if (alnum) {
    while (b < e && !is_kept_edge(static_cast<unsigned char>(word[b]))) ++b;
    while (e > b && !is_kept_edge(static_cast<unsigned char>(word[e - 1]))) --e;
  }
  std::string out(word.substr(b, e - b));
  if (lowercase)
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

Normalization normalize_dictionary(const Dictionary& dict, bool lowercase, bool alnum) {
  Normalization out;
  out.cache_key = 1u + (lowercase ? 1u : 0u) + (alnum ? 2u : 0u);
  const uint32_t num_words = dict.size();
  if (!lowercase && !alnum) {
    // The copy shares the words with `dict` (no bytes are copied); no remap is written.
    out.identity = true;
    out.dict = dict;
    return out;
  }
  out.identity = false;
  out.remap.assign(num_words, kDroppedWord);
  const unsigned threads = num_words < (1u << 16)
                               ? 1u
                               : std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  auto range = [&](unsigned t, uint64_t n) {
    return std::pair<uint64_t, uint64_t>{n * t / threads, n * (t + 1) / threads};
  };

  // 1. Normalize every word in place of the original (never longer): word w becomes
  //    buf[src_off[w], src_off[w] + nlen[w]). Each thread keeps its surviving words' sort items
  //    and counts them per bucket of the first two bytes.
  constexpr size_t kBuckets = 1 << 16;
  const std::vector<uint64_t>& src_off = dict.offsets();
  const char* src = dict.bytes().data();
  std::unique_ptr<char[]> buf = std::make_unique_for_overwrite<char[]>(dict.bytes().size() + 1);
  std::vector<uint32_t> nlen(num_words);
  std::vector<std::vector<SortItem>> local(threads);
  std::vector<std::vector<uint64_t>> bucket_count(threads, std::vector<uint64_t>(kBuckets + 1, 0));
  run_on_threads(threads, [&](unsigned t) {
    auto [lo, hi] = range(t, num_words);
    auto& items = local[t];
    items.reserve(hi - lo);
    for (uint64_t w = lo; w < hi; ++w) {
      const char* s = src + src_off[w];
      size_t b = 0, e = src_off[w + 1] - src_off[w];
      if (alnum) {
        while (b < e && !is_kept_edge(static_cast<unsigned char>(s[b]))) ++b;
        while (e > b && !is_kept_edge(static_cast<unsigned char>(s[e - 1]))) --e;
      }
      char* dst = buf.get() + src_off[w];
      for (size_t i = b; i < e; ++i) {
        char c = s[i];
        dst[i - b] = (lowercase && c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
      }
      nlen[w] = static_cast<uint32_t>(e - b);
      if (e > b) {
        uint64_t prefix = big_endian_prefix(dst, e - b);
        items.push_back({prefix, static_cast<uint32_t>(w)});
        ++bucket_count[t][prefix >> 48];
      }
    }
  });
  auto word = [&](uint32_t w) { return std::string_view(buf.get() + src_off[w], nlen[w]); };
  auto less = [&](const SortItem& a, const SortItem& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    if (nlen[a.id] <= 8 && nlen[b.id] <= 8) return nlen[a.id] < nlen[b.id];
    return word(a.id) < word(b.id);
  };
  auto same = [&](const SortItem& a, const SortItem& b) {
    return a.prefix == b.prefix && word(a.id) == word(b.id);
  };

  // 2. Scatter by bucket (MSD radix on the first two bytes), then sort every bucket.
  std::vector<uint64_t> bucket_begin(kBuckets + 1, 0);
  {
    uint64_t pos = 0;
    for (size_t k = 0; k < kBuckets; ++k) {
      bucket_begin[k] = pos;
      for (unsigned t = 0; t < threads; ++t) {
        uint64_t c = bucket_count[t][k];
        bucket_count[t][k] = pos;  // becomes thread t's write cursor in bucket k
        pos += c;
      }
    }
    bucket_begin[kBuckets] = pos;
  }
  const uint64_t total = bucket_begin[kBuckets];
  std::vector<SortItem> items(total);
  run_on_threads(threads, [&](unsigned t) {
    auto& cursor = bucket_count[t];
    for (const SortItem& it : local[t]) items[cursor[it.prefix >> 48]++] = it;
    std::vector<SortItem>().swap(local[t]);
  });
  std::atomic<size_t> next_bucket{0};
  run_on_threads(threads, [&](unsigned) {
    for (size_t k; (k = next_bucket.fetch_add(64)) < kBuckets;)
      for (size_t j = k; j < std::min(kBuckets, k + 64); ++j)
        if (bucket_begin[j + 1] - bucket_begin[j] > 1)
          std::sort(items.begin() + bucket_begin[j], items.begin() + bucket_begin[j + 1], less);
  });

  // 3. Distinct words get consecutive ids: mark the first of each run, count per thread range,
  //    then number, remap and copy the bytes in parallel.
  std::vector<uint64_t> fresh_before(threads + 1, 0), bytes_before(threads + 1, 0);
  run_on_threads(threads, [&](unsigned t) {
    auto [lo, hi] = range(t, total);
    uint64_t f = 0, b = 0;
    for (uint64_t i = lo; i < hi; ++i)
      if (i == 0 || !same(items[i], items[i - 1])) {
        ++f;
        b += nlen[items[i].id];
      }
    fresh_before[t + 1] = f;
    bytes_before[t + 1] = b;
  });
  for (unsigned t = 0; t < threads; ++t) {
    fresh_before[t + 1] += fresh_before[t];
    bytes_before[t + 1] += bytes_before[t];
  }
  std::vector<char> nbytes(bytes_before[threads]);
  std::vector<uint64_t> noffsets(fresh_before[threads] + 1, 0);
  noffsets.back() = nbytes.size();
  run_on_threads(threads, [&](unsigned t) {
    auto [lo, hi] = range(t, total);
    uint64_t id = fresh_before[t], at = bytes_before[t];
    for (uint64_t i = lo; i < hi; ++i) {
      const uint32_t w = items[i].id;
      if (i == 0 || !same(items[i], items[i - 1])) {
        noffsets[id] = at;
        std::memcpy(nbytes.data() + at, buf.get() + src_off[w], nlen[w]);
        at += nlen[w];
        ++id;
      }
      out.remap[w] = static_cast<WordId>(id - 1);
    }
  });
  out.dict = Dictionary(std::move(nbytes), std::move(noffsets));
  return out;
}

}  // namespace gtadoc
