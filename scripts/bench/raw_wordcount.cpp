// Baseline for benchmarks: a hand-optimized single-threaded word counter on raw text (what a
// careful C programmer would write): files read whole, words split with a byte table, counted
// in an open-addressing hash table over an arena, output in gtadoc's word-count order
// (count desc, word asc) so its result can be checked against `gtadoc run ... word-count`.
// Usage: raw_wordcount DIR_OR_FILE... > counts.tsv
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

namespace {

bool g_space[256];

struct Entry {
  uint64_t hash;
  uint32_t offset, length;
  uint64_t count;
};

class Counter {
 public:
  Counter() : slots_(1 << 16) {}
  void add(const char* p, uint32_t n) {
    uint64_t h = hash(p, n);
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Entry& e = slots_[i];
      if (e.count == 0) {
        e = {h, static_cast<uint32_t>(arena_.size()), n, 1};
        arena_.insert(arena_.end(), p, p + n);
        if (++used_ * 2 > slots_.size()) grow();
        return;
      }
      if (e.hash == h && e.length == n && std::memcmp(arena_.data() + e.offset, p, n) == 0) {
        ++e.count;
        return;
      }
    }
  }
  std::vector<Entry> entries() const {
    std::vector<Entry> out;
    for (const Entry& e : slots_)
      if (e.count) out.push_back(e);
    return out;
  }
  std::string_view word(const Entry& e) const { return {arena_.data() + e.offset, e.length}; }

 private:
  static uint64_t hash(const char* p, uint32_t n) {
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

}  // namespace

int main(int argc, char** argv) {
  for (unsigned char ch : {0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D}) g_space[ch] = true;
  Counter counter;
  std::vector<char> buf;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path root(argv[i]);
    if (std::filesystem::is_directory(root)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(root))
        if (e.is_regular_file()) count_file(e.path().c_str(), counter, buf);
    } else {
      count_file(argv[i], counter, buf);
    }
  }
  std::vector<Entry> entries = counter.entries();
  std::sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
    return a.count != b.count ? a.count > b.count : counter.word(a) < counter.word(b);
  });
  std::string out;
  for (const Entry& e : entries) {
    out.append(counter.word(e));
    out += '\t';
    out += std::to_string(e.count);
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
