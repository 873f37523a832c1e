// How fast one file fills from several threads (docs/PERFORMANCE.md, "End to end"): `pwrite` of
// 4 MiB pieces against a shared mapping of the file (after `fallocate` or only `ftruncate`; with
// map-populate each piece's pages are first made present by one madvise(MADV_POPULATE_WRITE)
// instead of a page fault each), the ways a result file can be written (formats/output_mapping.h).
// Each thread takes the next piece and writes it from a buffer of its own; the time runs from
// creating the file to closing it. The file is then read back and checked, piece by piece, so a
// wrong write fails the run (exit 1).
//
//   gtadoc_write_bench FILE MIB THREADS pwrite|map|map-populate|map-fallocate
// prints one JSON line: {"mode", "mib", "threads", "seconds", "gbps", "prepare_s", "unmap_s"}.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace {

constexpr size_t kPiece = size_t{4} << 20;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The bytes of piece `p`: a fixed pattern (made once per buffer) with the piece's number in
/// its first 8 bytes, so that a misplaced piece shows and the writing, not the making, is timed.
void fill_pattern(std::vector<char>& buf) {
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>('a' + (i * 7) % 26);
}
void stamp_piece(std::vector<char>& buf, uint64_t p) {
  std::memcpy(buf.data(), &p, sizeof p);
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "gtadoc_write_bench: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr,
                 "usage: gtadoc_write_bench FILE MIB THREADS pwrite|map|map-populate|"
                 "map-fallocate\n");
    return 2;
  }
  const std::string path = argv[1], mode = argv[4];
  const size_t bytes = std::strtoull(argv[2], nullptr, 10) << 20;
  const int threads = std::max(1, std::atoi(argv[3]));
  const bool populate = mode == "map-populate";
  if (bytes == 0 || (mode != "pwrite" && mode != "map" && !populate && mode != "map-fallocate")) {
    std::fprintf(stderr, "gtadoc_write_bench: bad size or mode\n");
    return 2;
  }
  const size_t pieces = (bytes + kPiece - 1) / kPiece;
  std::vector<std::vector<char>> src(static_cast<size_t>(threads), std::vector<char>(kPiece));
  for (std::vector<char>& buf : src) fill_pattern(buf);
  ::unlink(path.c_str());

  const double t0 = now();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) die("cannot create " + path);
  double prepare_s = 0, unmap_s = 0;
  char* map = nullptr;
  if (mode != "pwrite") {
    if (mode == "map-fallocate" ? ::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0
                                : ::ftruncate(fd, static_cast<off_t>(bytes)) != 0)
      die("cannot size " + path);
    prepare_s = now() - t0;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) die("cannot map " + path);
    map = static_cast<char*>(p);
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<char>& buf = src[static_cast<size_t>(t)];
      for (size_t p = next++; p < pieces; p = next++) {
        const size_t n = std::min(kPiece, bytes - p * kPiece);
        stamp_piece(buf, p);
        if (map != nullptr) {
          if (populate && ::madvise(map + p * kPiece, n, MADV_POPULATE_WRITE) != 0) failed = true;
          std::memcpy(map + p * kPiece, buf.data(), n);
        } else if (::pwrite(fd, buf.data(), n, static_cast<off_t>(p * kPiece)) !=
                   static_cast<ssize_t>(n)) {
          failed = true;
        }
      }
    });
  for (std::thread& th : pool) th.join();
  if (failed) die("cannot write " + path);
  if (map != nullptr) {
    const double u = now();
    if (::munmap(map, bytes) != 0) die("cannot unmap " + path);
    unmap_s = now() - u;
  }
  if (::close(fd) != 0) die("cannot close " + path);
  const double seconds = now() - t0;

  // Read back and check every piece.
  const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) die("cannot reopen " + path);
  std::vector<char> want(kPiece), got(kPiece);
  fill_pattern(want);
  for (size_t p = 0; p < pieces; ++p) {
    const size_t n = std::min(kPiece, bytes - p * kPiece);
    stamp_piece(want, p);
    if (::pread(in, got.data(), n, static_cast<off_t>(p * kPiece)) != static_cast<ssize_t>(n) ||
        std::memcmp(want.data(), got.data(), n) != 0) {
      std::fprintf(stderr, "gtadoc_write_bench: piece %zu of %s differs\n", p, path.c_str());
      return 1;
    }
  }
  ::close(in);
  ::unlink(path.c_str());
  std::printf(
      "{\"mode\": \"%s\", \"mib\": %zu, \"threads\": %d, \"seconds\": %.4f, \"gbps\": %.2f, "
      "\"prepare_s\": %.4f, \"unmap_s\": %.4f}\n",
      mode.c_str(), bytes >> 20, threads, seconds, static_cast<double>(bytes) / seconds / 1e9,
      prepare_s, unmap_s);
  return 0;
}
