#include "coordinator/compress/spill.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "common/error.h"
#include "common/parallel.h"

namespace gtadoc {
namespace fs = std::filesystem;

// The helpers are named (not anonymous) because SpillWriter's pimpl derives from Writer.
namespace spill_io {

constexpr uint64_t kSpillMagic = 0x314C495053445447ull;  // "GTDSPIL1"
constexpr uint64_t kDictMagic = 0x3154434944445447ull;   // "GTDDICT1"

inline std::string io_error(const fs::path& file, const char* what) {
  return file.string() + ": " + what + " failed: " + std::strerror(errno);
}

/// Buffered writes to a new file; a writer destroyed before close() removes the file.
class Writer {
 public:
  explicit Writer(fs::path file) : file_(std::move(file)) {
    fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd_ < 0) throw InputError(io_error(file_, "create"));
    buf_.reserve(kBuffer);
  }
  ~Writer() {
    if (fd_ >= 0) {
      ::close(fd_);
      std::error_code ec;
      fs::remove(file_, ec);
    }
  }
  void put(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    if (buf_.size() + n > kBuffer) flush();
    if (n >= kBuffer) {
      raw(p, n);
      return;
    }
    buf_.insert(buf_.end(), p, p + n);
  }
  void put64(uint64_t v) { put(&v, 8); }
  /// Writes at a file offset, outside the buffered sequence (for sections whose place is known).
  void put_at(uint64_t pos, const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(pos));
      if (w < 0) {
        if (errno == EINTR) continue;
        throw InputError(io_error(file_, "write"));
      }
      p += w;
      pos += static_cast<uint64_t>(w);
      n -= static_cast<size_t>(w);
    }
  }
  template <class T>
  void put_array(std::span<const T> v) {
    put64(v.size());
    put(v.data(), v.size() * sizeof(T));
  }
  void close() {
    flush();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      std::error_code ec;
      fs::remove(file_, ec);
      throw InputError(io_error(file_, "write"));
    }
  }

 private:
  static constexpr size_t kBuffer = size_t{1} << 20;
  void flush() {
    raw(buf_.data(), buf_.size());
    buf_.clear();
  }
  void raw(const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        throw InputError(io_error(file_, "write"));
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  fs::path file_;
  int fd_ = -1;
  std::vector<char> buf_;
};

class Reader {
 public:
  explicit Reader(fs::path file) : file_(std::move(file)) {
    fd_ = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(io_error(file_, "open"));
  }
  ~Reader() {
    if (fd_ >= 0) ::close(fd_);
  }
  void get(void* data, size_t n) {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t r = ::read(fd_, p, n);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw InputError(io_error(file_, "read"));
      if (r == 0) throw InputError(file_.string() + ": spill file truncated");
      p += r;
      n -= static_cast<size_t>(r);
    }
  }
  uint64_t get64() {
    uint64_t v;
    get(&v, 8);
    return v;
  }
  uint64_t size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw InputError(io_error(file_, "stat"));
    return static_cast<uint64_t>(st.st_size);
  }
  /// Reads at an offset without moving the position.
  void get_at(uint64_t offset, void* data, size_t n) {
    const off_t here = ::lseek(fd_, 0, SEEK_CUR);
    if (here < 0 || ::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0)
      throw InputError(io_error(file_, "seek"));
    get(data, n);
    if (::lseek(fd_, here, SEEK_SET) < 0) throw InputError(io_error(file_, "seek"));
  }
  template <class T>
  void get_array(std::vector<T>& v, uint64_t limit) {
    const uint64_t n = get64();
    if (n > limit) throw InputError(file_.string() + ": spill file corrupted");
    v.resize(n);
    get(v.data(), n * sizeof(T));
  }
  /// Closes the file and removes it.
  void remove() {
    ::close(fd_);
    fd_ = -1;
    std::error_code ec;
    fs::remove(file_, ec);
  }

 private:
  fs::path file_;
  int fd_ = -1;
};

constexpr uint64_t kLimit = uint64_t{1} << 40;  // sanity bound on array lengths

}  // namespace spill_io
using namespace spill_io;

fs::path spill_file(const fs::path& dir, uint32_t shard) {
  char name[32];
  std::snprintf(name, sizeof name, ".spill-%05u", shard);
  return dir / name;
}

fs::path dictionary_spill_file(const fs::path& dir) {
  return dir / ".spill-dictionary";
}

// A shard's spill file: the magic, then records (u64 kind, u64 count, count elements), and a
// trailer (total tokens, total gaps, the magic) so that a reader can size its arrays first.
enum : uint64_t { kTokens = 1, kGaps = 2, kWordIds = 3, kWhitespace = 4 };

class SpillWriter::File : public Writer {
 public:
  using Writer::Writer;
};

SpillWriter::SpillWriter(const fs::path& file) : file_(std::make_unique<File>(file)) {
  file_->put64(kSpillMagic);
  bytes_ = 8;
}

SpillWriter::~SpillWriter() = default;

void SpillWriter::tokens(std::span<const Symbol> piece) {
  if (piece.empty()) return;
  file_->put64(kTokens);
  file_->put_array(piece);
  tokens_ += piece.size();
  bytes_ += 16 + piece.size() * 4;
}

void SpillWriter::gaps(std::span<const uint32_t> piece) {
  if (piece.empty()) return;
  file_->put64(kGaps);
  file_->put_array(piece);
  gaps_ += piece.size();
  bytes_ += 16 + piece.size() * 4;
}

void SpillWriter::finish(const std::vector<uint32_t>& word_ids, const StringTable& ws) {
  file_->put64(kWordIds);
  file_->put_array(std::span<const uint32_t>(word_ids));
  bytes_ += 16 + word_ids.size() * 4;
  file_->put64(kWhitespace);
  file_->put64(ws.size());
  for (uint32_t i = 0; i < ws.size(); ++i) {
    const std::string_view s = ws.get(i);
    file_->put64(s.size());
    file_->put(s.data(), s.size());
    bytes_ += 8 + s.size();
  }
  file_->put64(tokens_);
  file_->put64(gaps_);
  file_->put64(kSpillMagic);
  bytes_ += 40;
  file_->close();
}

void write_spill(const fs::path& file, const ShardTokens& t) {
  SpillWriter w(file);
  w.tokens(t.tokens);
  w.gaps(t.gaps);
  w.finish(t.word_ids, t.ws);
}

ShardTokens read_spill(const fs::path& file) {
  Reader r(file);
  auto corrupted = [&] { return InputError(file.string() + ": spill file corrupted"); };
  if (r.get64() != kSpillMagic) throw InputError(file.string() + ": not a spill file");
  const uint64_t size = r.size();
  if (size < 32) throw corrupted();
  uint64_t trailer[3];
  r.get_at(size - 24, trailer, 24);
  if (trailer[2] != kSpillMagic || trailer[0] > kLimit || trailer[1] > kLimit) throw corrupted();
  ShardTokens t;
  t.tokens.reserve(trailer[0]);
  t.gaps.reserve(trailer[1]);
  for (bool done = false; !done;) {
    const uint64_t kind = r.get64(), n = r.get64();
    if (n > kLimit) throw corrupted();
    switch (kind) {
      case kTokens:
      case kGaps: {
        auto& v = kind == kTokens ? t.tokens : t.gaps;
        if (v.size() + n > v.capacity()) throw corrupted();
        const size_t at = v.size();
        v.resize(at + n);
        r.get(v.data() + at, n * 4);
        break;
      }
      case kWordIds:
        t.word_ids.resize(n);
        r.get(t.word_ids.data(), n * 4);
        break;
      case kWhitespace: {
        t.ws = StringTable(n);
        std::string s;
        for (uint64_t i = 0; i < n; ++i) {
          const uint64_t len = r.get64();
          if (len > kLimit) throw corrupted();
          s.resize(len);
          r.get(s.data(), len);
          // Interning in id order gives every run its id back (ids are first-seen order).
          if (t.ws.intern(s) != i) throw corrupted();
        }
        done = true;
        break;
      }
      default:
        throw corrupted();
    }
  }
  if (t.tokens.size() != trailer[0] || t.gaps.size() != trailer[1]) throw corrupted();
  r.remove();
  return t;
}

void write_dictionary_spill(const fs::path& file, uint64_t n, uint64_t bytes,
                            const std::function<std::string_view(uint64_t)>& word,
                            unsigned threads) {
  // Blocks of words gathered on the threads (word(i) is a random access into a large table: on
  // one thread, 35 M words took 9 s), then written in order; one block's buffers (~10-20 MB)
  // are the only memory held.
  constexpr uint64_t kBlock = uint64_t{1} << 18;  // words
  constexpr uint64_t kPart = uint64_t{1} << 12;   // words per task inside a block
  Writer w(file);
  w.put64(kDictMagic);
  w.put64(n);
  w.put64(bytes);
  const uint64_t text_start = (3 + n + 1) * 8;  // magic, n, bytes, then n + 1 offsets
  uint64_t offset = 0;
  w.put64(offset);
  std::vector<uint64_t> ends;  // end offsets of a block's words: within their part, then absolute
  std::vector<uint64_t> part_bytes;
  std::vector<char> text;
  for (uint64_t b = 0; b < n; b += kBlock) {
    const uint64_t count = std::min(kBlock, n - b);
    const uint64_t parts = (count + kPart - 1) / kPart;
    ends.resize(count);
    part_bytes.assign(parts, 0);
    parallel_for(parts, threads, [&](size_t p) {
      uint64_t sum = 0;
      for (uint64_t i = p * kPart; i < std::min(count, (p + 1) * kPart); ++i)
        ends[i] = sum += word(b + i).size();
      part_bytes[p] = sum;
    });
    uint64_t block_bytes = 0;
    for (uint64_t& v : part_bytes) block_bytes += std::exchange(v, block_bytes);  // part starts
    text.resize(block_bytes);
    parallel_for(parts, threads, [&](size_t p) {
      char* out = text.data() + part_bytes[p];
      for (uint64_t i = p * kPart; i < std::min(count, (p + 1) * kPart); ++i) {
        const std::string_view s = word(b + i);
        std::memcpy(out, s.data(), s.size());
        out += s.size();
      }
    });
    for (uint64_t i = 0; i < count; ++i) {
      ends[i] += offset + part_bytes[i / kPart];
      w.put64(ends[i]);
    }
    GTADOC_EXPECTS(offset + block_bytes <= bytes, "dictionary spill: size mismatch");
    w.put_at(text_start + offset, text.data(), text.size());  // the bytes follow every offset
    offset += block_bytes;
  }
  GTADOC_EXPECTS(offset == bytes, "dictionary spill: size mismatch");
  w.close();
}

Dictionary read_dictionary_spill(const fs::path& file) {
  Reader r(file);
  if (r.get64() != kDictMagic) throw InputError(file.string() + ": not a dictionary spill file");
  const uint64_t n = r.get64(), bytes = r.get64();
  if (n > kLimit || bytes > kLimit) throw InputError(file.string() + ": spill file corrupted");
  std::vector<uint64_t> offsets(n + 1);
  r.get(offsets.data(), (n + 1) * 8);
  std::vector<char> data(bytes);
  r.get(data.data(), bytes);
  if (offsets.front() != 0 || offsets.back() != bytes)
    throw InputError(file.string() + ": spill file corrupted");
  r.remove();
  return Dictionary(std::move(data), std::move(offsets));
}

}  // namespace gtadoc
