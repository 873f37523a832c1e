// gtadoc_gen helpers: errors, hashing, the per-document PRNG, hash tables for strings and 64-bit
// keys, input listing and file reading. Header-only; the size parser, the tokenizer and mix64 are
// gtadoc's own (common/units.h, coordinator/tokenize.h, common/hash.h).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/hash.h"
#include "common/units.h"
#include "coordinator/tokenize.h"

namespace gtagen {

static_assert(std::endian::native == std::endian::little, "model files are little-endian");

/// A command-line mistake: one line on stderr, exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Anything else that stops a command: one line on stderr, exit 1.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A stop request (SIGINT, SIGTERM) ended the command: one line on stderr, exit 128 + signal.
struct Interrupted : Error {
  Interrupted(const std::string& what, int sig) : Error(what), signal(sig) {}
  int signal;
};

/// docs/REFERENCE.md §3 words and gaps, as gtadoc compress tokenizes them (coordinator/tokenize.h).
using gtadoc::tokenize;

/// A fast 64-bit hash of a byte string (8 bytes at a time, finalized with mix64). Deterministic
/// on every little-endian platform; not cryptographic.
inline uint64_t hash_bytes(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ (static_cast<uint64_t>(n) * 0xff51afd7ed558ccdULL);
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = (h ^ v) * 0x9fb21c651e98df25ULL;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t v = 0;
  std::memcpy(&v, p, n);
  h = (h ^ v) * 0x9fb21c651e98df25ULL;
  return gtadoc::mix64(h);
}

/// wyrand: a small, fast 64-bit PRNG. Each document gets its own, seeded from (seed, index), so
/// a document's text depends on nothing else (thread count, order of completion).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(gtadoc::mix64(seed ^ 0x243f6a8885a308d3ULL)) {}
  uint64_t next() {
    s_ += 0xa0761d6478bd642fULL;
    const __uint128_t m = static_cast<__uint128_t>(s_) * (s_ ^ 0xe7037ed1a0b428dbULL);
    return static_cast<uint64_t>(m >> 64) ^ static_cast<uint64_t>(m);
  }
  /// Uniform in [0, n) for n < 2^32 (multiply-shift; the bias is below 2^-32).
  uint32_t below32(uint32_t n) {
    return static_cast<uint32_t>(((next() & 0xffffffffULL) * n) >> 32);
  }
  /// Uniform in [0, n).
  uint64_t below64(uint64_t n) {
    return static_cast<uint64_t>((static_cast<__uint128_t>(next()) * n) >> 64);
  }
  /// Uniform in [0, 1) with 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t s_;
};

/// Interned byte strings with dense ids in order of first insertion.
class StringTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  StringTable() { rehash(1024); }

  /// The id of `s` (h = hash_bytes(s)), inserting it when new; second = inserted.
  std::pair<uint32_t, bool> intern(std::string_view s, uint64_t h) {
    size_t i = h & mask_;
    for (;;) {
      Slot& slot = slots_[i];
      if (slot.id1 == 0) break;
      if (slot.hash == h && equal(slot.id1 - 1, s)) return {slot.id1 - 1, false};
      i = (i + 1) & mask_;
    }
    const uint32_t id = size();
    if (id == kNone - 1) throw Error("more than 4 billion distinct strings");
    arena_.insert(arena_.end(), s.begin(), s.end());
    off_.push_back(arena_.size());
    hashes_.push_back(h);
    slots_[i] = Slot{h, id + 1};
    if (static_cast<size_t>(size()) * 2 > slots_.size()) rehash(slots_.size() * 2);
    return {id, true};
  }
  std::pair<uint32_t, bool> intern(std::string_view s) { return intern(s, hash_bytes(s)); }

  uint32_t find(std::string_view s, uint64_t h) const {
    size_t i = h & mask_;
    for (;;) {
      const Slot& slot = slots_[i];
      if (slot.id1 == 0) return kNone;
      if (slot.hash == h && equal(slot.id1 - 1, s)) return slot.id1 - 1;
      i = (i + 1) & mask_;
    }
  }
  uint32_t find(std::string_view s) const { return find(s, hash_bytes(s)); }

  std::string_view str(uint32_t id) const {
    return std::string_view(arena_.data() + off_[id], off_[id + 1] - off_[id]);
  }
  uint64_t hash(uint32_t id) const { return hashes_[id]; }
  uint32_t size() const { return static_cast<uint32_t>(off_.size() - 1); }
  size_t bytes() const { return arena_.size(); }
  /// Empties the table, keeping its memory (for reuse on the next document).
  void clear() {
    std::fill(slots_.begin(), slots_.end(), Slot{0, 0});
    arena_.clear();
    off_.assign(1, 0);
    hashes_.clear();
  }
  void reserve_bytes(size_t n) { arena_.reserve(n); }

 private:
  struct Slot {
    uint64_t hash;
    uint32_t id1;  ///< id + 1; 0 = empty
  };
  bool equal(uint32_t id, std::string_view s) const {
    const size_t len = off_[id + 1] - off_[id];
    return len == s.size() && std::memcmp(arena_.data() + off_[id], s.data(), len) == 0;
  }
  void rehash(size_t n) {
    std::vector<Slot> fresh(n, Slot{0, 0});
    const size_t mask = n - 1;
    for (uint32_t id = 0; id < size(); ++id) {
      size_t i = hashes_[id] & mask;
      while (fresh[i].id1 != 0) i = (i + 1) & mask;
      fresh[i] = Slot{hashes_[id], id + 1};
    }
    slots_ = std::move(fresh);
    mask_ = mask;
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  std::vector<char> arena_;
  std::vector<uint64_t> off_{0};
  std::vector<uint64_t> hashes_;
};

/// Open-addressing counter from 64-bit keys (any value but UINT64_MAX) to 64-bit counts.
class KeyCounter {
 public:
  static constexpr uint64_t kEmpty = UINT64_MAX;
  KeyCounter() { rehash(1024); }
  void add(uint64_t key, uint64_t n = 1) {
    size_t i = gtadoc::mix64(key) & mask_;
    for (;;) {
      if (keys_[i] == key) {
        vals_[i] += n;
        return;
      }
      if (keys_[i] == kEmpty) break;
      i = (i + 1) & mask_;
    }
    keys_[i] = key;
    vals_[i] = n;
    if (++size_ * 2 > keys_.size()) rehash(keys_.size() * 2);
  }
  size_t size() const { return size_; }
  /// f(key, count) for every key, in table order.
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] != kEmpty) f(keys_[i], vals_[i]);
  }
  void clear() {
    std::vector<uint64_t>().swap(keys_);
    std::vector<uint64_t>().swap(vals_);
    size_ = 0;
    rehash(1024);
  }

 private:
  void rehash(size_t n) {
    std::vector<uint64_t> keys(n, kEmpty), vals(n, 0);
    const size_t mask = n - 1;
    for (size_t j = 0; j < keys_.size(); ++j) {
      if (keys_[j] == kEmpty) continue;
      size_t i = gtadoc::mix64(keys_[j]) & mask;
      while (keys[i] != kEmpty) i = (i + 1) & mask;
      keys[i] = keys_[j];
      vals[i] = vals_[j];
    }
    keys_ = std::move(keys);
    vals_ = std::move(vals);
    mask_ = mask;
  }
  std::vector<uint64_t> keys_, vals_;
  size_t mask_ = 0, size_ = 0;
};

/// One input document: its path on disk and its name (path relative to the input directory, or
/// the base name of a file given directly).
struct InputFile {
  std::string path;
  std::string name;
};

/// Every regular file below each input (a directory, recursively) or the input itself (a file),
/// inputs in the order given, files of one directory sorted by name (byte order).
inline std::vector<InputFile> list_inputs(const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::vector<InputFile> all;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) throw Error(in + ": no such file or directory");
    if (fs::is_regular_file(st)) {
      all.push_back({in, fs::path(in).filename().string()});
      continue;
    }
    if (!fs::is_directory(st)) throw Error(in + ": not a regular file or directory");
    std::vector<InputFile> files;
    fs::recursive_directory_iterator it(in, ec), end;
    if (ec) throw Error(in + ": " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) throw Error(in + ": " + ec.message());
      std::error_code e2;
      if (it->is_regular_file(e2))
        files.push_back({it->path().string(), it->path().lexically_relative(in).generic_string()});
    }
    if (ec) throw Error(in + ": " + ec.message());
    std::sort(files.begin(), files.end(),
              [](const InputFile& a, const InputFile& b) { return a.name < b.name; });
    all.insert(all.end(), files.begin(), files.end());
  }
  return all;
}

/// The whole file, into `out` (reused between calls).
inline void read_file(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(path + ": " + std::strerror(e));
  }
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  for (;;) {
    if (got == out.size()) out.resize(out.size() * 2 + 4096);  // the file grew: keep reading
    const ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      throw Error(path + ": " + std::strerror(e));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  out.resize(got);
}

/// A size as every gtadoc command reads it (common/units.h), positive; a bad one is a UsageError.
inline uint64_t parse_size(const std::string& text, const char* option) {
  try {
    return gtadoc::parse_size(text, option);
  } catch (const gtadoc::UsageError& e) {
    throw UsageError(e.what());
  }
}

/// Least-squares slope and intercept of y on x.
inline std::pair<double, double> fit_line(const std::vector<double>& x,
                                          const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  if (x.size() < 2) return {NAN, NAN};
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double den = n * sxx - sx * sx;
  if (den == 0) return {NAN, NAN};
  const double slope = (n * sxy - sx * sy) / den;
  return {slope, (sy - slope * sx) / n};
}

/// Zipf exponent s of f(r) ~ r^-s fitted on ranks lo..hi (1-based) of counts sorted in
/// descending order: least squares of ln f on ln r over 64 log-spaced ranks (each decade weighs
/// the same). NaN when fewer than 20 ranks are there.
inline double zipf_exponent(const std::vector<uint64_t>& sorted_desc, size_t lo = 10,
                            size_t hi = 10000) {
  hi = std::min(hi, sorted_desc.size());
  if (hi < lo + 10) return NAN;
  std::vector<double> x, y;
  size_t last = 0;
  const int points = 64;
  for (int i = 0; i < points; ++i) {
    const double r =
        static_cast<double>(lo) * std::pow(static_cast<double>(hi) / static_cast<double>(lo),
                                           static_cast<double>(i) / (points - 1));
    const size_t rank = std::min(hi, static_cast<size_t>(std::llround(r)));
    if (rank == last) continue;
    last = rank;
    x.push_back(std::log(static_cast<double>(rank)));
    y.push_back(std::log(static_cast<double>(sorted_desc[rank - 1])));
  }
  return -fit_line(x, y).first;
}

/// Heaps' law V(N) = K N^beta fitted on (N, V) checkpoints: least squares of ln V on ln N over
/// the checkpoints with N >= min_n (all of them when fewer than 4 are that large).
inline std::pair<double, double> heaps_fit(const std::vector<std::pair<uint64_t, uint64_t>>& cps,
                                           uint64_t min_n) {
  std::vector<double> x, y;
  for (const auto& [n, v] : cps)
    if (n >= min_n && v > 0) {
      x.push_back(std::log(static_cast<double>(n)));
      y.push_back(std::log(static_cast<double>(v)));
    }
  if (x.size() < 4) {
    x.clear();
    y.clear();
    for (const auto& [n, v] : cps)
      if (n > 0 && v > 0) {
        x.push_back(std::log(static_cast<double>(n)));
        y.push_back(std::log(static_cast<double>(v)));
      }
  }
  const auto [slope, icept] = fit_line(x, y);
  return {std::exp(icept), slope};  // K, beta
}

}  // namespace gtagen
