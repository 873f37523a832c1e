// Baseline for benchmarks: a hand-optimized word counter on raw text (what a careful C
// programmer would write): files read whole, words split with a byte table, counted in an
// open-addressing hash table over an arena, output in gtadoc's word-count order (count desc,
// word asc) so its result can be checked against `gtadoc run ... word-count`.
//
// With --threads N (default: every hardware thread), N std::threads take the files one at a
// time from the list sorted by size, largest first, each counting into its own table; the
// tables are then merged on N threads (each owns the words whose hash falls in its share),
// each share sorted on its thread, and the sorted shares merged into the output. --threads 1
// is the single-threaded counter (one table, one sort). The output is the same for every N.
// Usage: raw_wordcount [--threads N] DIR_OR_FILE... > counts.tsv
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

bool g_space[256];

struct Entry {
  uint64_t hash;
  uint32_t offset, length;
  uint64_t count;
};

uint64_t hash_word(const char* p, uint32_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    std::memcpy(&v, p + i, 8);
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  uint64_t v = 0;
  std::memcpy(&v, p + i, n - i);
  h = (h ^ v) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 32);
}

class Counter {
 public:
  Counter() : slots_(1 << 16) {}
  void add(const char* p, uint32_t n) { add(p, n, hash_word(p, n), 1); }
  /// Adds `count` occurrences of the word p[0, n) whose hash is h.
  void add(const char* p, uint32_t n, uint64_t h, uint64_t count) {
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Entry& e = slots_[i];
      if (e.count == 0) {
        if (arena_.size() + n > UINT32_MAX) {
          std::fprintf(stderr, "raw_wordcount: more than 4 GiB of distinct words in one table\n");
          std::exit(1);
        }
        e = {h, static_cast<uint32_t>(arena_.size()), n, count};
        arena_.insert(arena_.end(), p, p + n);
        if (++used_ * 2 > slots_.size()) grow();
        return;
      }
      if (e.hash == h && e.length == n && std::memcmp(arena_.data() + e.offset, p, n) == 0) {
        e.count += count;
        return;
      }
    }
  }
  std::vector<Entry> entries() const {
    std::vector<Entry> out;
    out.reserve(used_);
    for (const Entry& e : slots_)
      if (e.count) out.push_back(e);
    return out;
  }
  const std::vector<Entry>& slots() const { return slots_; }
  std::string_view word(const Entry& e) const { return {arena_.data() + e.offset, e.length}; }

 private:
  void grow() {
    std::vector<Entry> old(slots_.size() * 2);
    old.swap(slots_);
    size_t mask = slots_.size() - 1;
    for (const Entry& e : old) {
      if (!e.count) continue;
      size_t i = e.hash & mask;
      while (slots_[i].count) i = (i + 1) & mask;
      slots_[i] = e;
    }
  }
  std::vector<Entry> slots_;
  std::vector<char> arena_;
  size_t used_ = 0;
};

void count_file(const char* path, Counter& c, std::vector<char>& buf) {
  int fd = ::open(path, O_RDONLY);
  if (fd < 0) {
    std::perror(path);
    std::exit(1);
  }
  struct stat st;
  ::fstat(fd, &st);
  buf.resize(static_cast<size_t>(st.st_size) + 1);
  size_t got = 0;
  while (got < static_cast<size_t>(st.st_size)) {
    ssize_t r = ::read(fd, buf.data() + got, static_cast<size_t>(st.st_size) - got);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  const char* p = buf.data();
  const char* end = p + got;
  while (p < end) {
    while (p < end && g_space[static_cast<unsigned char>(*p)]) ++p;
    const char* w = p;
    while (p < end && !g_space[static_cast<unsigned char>(*p)]) ++p;
    if (p > w) c.add(w, static_cast<uint32_t>(p - w));
  }
}

/// One counted word of a table: its entry and the table holding its bytes.
struct Row {
  const Entry* e;
  const Counter* c;
  std::string_view word() const { return c->word(*e); }
};

/// count desc, word asc (gtadoc's word-count order).
bool before(const Row& a, const Row& b) {
  return a.e->count != b.e->count ? a.e->count > b.e->count : a.word() < b.word();
}

void append_row(std::string& out, const Row& r) {
  out.append(r.word());
  out += '\t';
  out += std::to_string(r.e->count);
  out += '\n';
}

int usage() {
  std::fprintf(stderr, "usage: raw_wordcount [--threads N] DIR_OR_FILE... > counts.tsv\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  for (unsigned char ch : {0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D}) g_space[ch] = true;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    if (a == "--threads" && i + 1 < argc) {
      value = argv[++i];
    } else if (a.rfind("--threads=", 0) == 0) {
      value = a.substr(10);
    } else if (a == "--threads" || a == "-h" || a == "--help") {
      return usage();
    } else {
      inputs.push_back(std::move(a));
      continue;
    }
    char* end = nullptr;
    const unsigned long n = std::strtoul(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || n == 0 || n > 4096) return usage();
    threads = static_cast<unsigned>(n);
  }
  if (inputs.empty()) return usage();

  // The files, in walk order; with several threads, largest first.
  std::vector<std::pair<std::string, uint64_t>> files;
  for (const std::string& in : inputs) {
    std::filesystem::path root(in);
    if (std::filesystem::is_directory(root)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(root))
        if (e.is_regular_file()) files.emplace_back(e.path().string(), e.file_size());
    } else {
      files.emplace_back(in, 0);
    }
  }

  std::string out;
  if (threads == 1) {
    Counter counter;
    std::vector<char> buf;
    for (const auto& f : files) count_file(f.first.c_str(), counter, buf);
    std::vector<Entry> entries = counter.entries();
    std::sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
      return a.count != b.count ? a.count > b.count : counter.word(a) < counter.word(b);
    });
    for (const Entry& e : entries) append_row(out, {&e, &counter});
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }

  std::stable_sort(files.begin(), files.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  const unsigned n = threads;
  auto on_threads = [n](auto&& body) {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < n; ++t) pool.emplace_back(body, t);
    for (std::thread& th : pool) th.join();
  };

  // 1. Count: each thread takes the next file (largest first) into its own table.
  std::vector<Counter> local(n);
  std::atomic<size_t> next{0};
  on_threads([&](unsigned t) {
    std::vector<char> buf;
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < files.size();)
      count_file(files[i].first.c_str(), local[t], buf);
  });

  // 2. Merge: share p holds the words whose hash's high bits pick p; its thread reads every
  //    table and adds their words of share p to its own table, then sorts them.
  auto share_of = [n](uint64_t h) {
    return static_cast<unsigned>(((h >> 32) * static_cast<uint64_t>(n)) >> 32);
  };
  std::vector<Counter> shares(n);
  std::vector<std::vector<Row>> sorted(n);
  on_threads([&](unsigned p) {
    Counter& mine = shares[p];
    for (const Counter& c : local)
      for (const Entry& e : c.slots())
        if (e.count && share_of(e.hash) == p) {
          const std::string_view w = c.word(e);
          mine.add(w.data(), e.length, e.hash, e.count);
        }
    for (const Entry& e : mine.slots())
      if (e.count) sorted[p].push_back({&e, &mine});
    std::sort(sorted[p].begin(), sorted[p].end(), before);
  });
  std::vector<Counter>().swap(local);

  // 3. The sorted shares merged (a heap of each share's next row) into the output.
  std::vector<std::pair<size_t, unsigned>> heap;  // (index in share, share)
  auto later = [&](const std::pair<size_t, unsigned>& a, const std::pair<size_t, unsigned>& b) {
    return before(sorted[b.second][b.first], sorted[a.second][a.first]);
  };
  for (unsigned p = 0; p < n; ++p)
    if (!sorted[p].empty()) heap.emplace_back(0, p);
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    auto& [i, p] = heap.back();
    append_row(out, sorted[p][i]);
    if (out.size() >= (1u << 24)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
    if (++i < sorted[p].size())
      std::push_heap(heap.begin(), heap.end(), later);
    else
      heap.pop_back();
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
