// Cross-memory pulls of records between the ranks of one node. See cross_memory.h.
#include "cluster/cross_memory.h"

#include <spdlog/spdlog.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cluster/comm.h"
#include "common/cpus.h"
#include "common/error.h"
#include "common/parallel.h"
#include "common/settings.h"
#include "common/timer.h"

namespace gtadoc {

namespace {

/// What a rank tells the others: its process, its arrays, and where each destination's part is.
struct Header {
  uint64_t pid;
  uint64_t keys;
  uint64_t counts;
  uint64_t width;
  uint64_t willing;  ///< 0: this rank turned the pulls off (GTADOC_SHUFFLE_CMA=0)
};
constexpr size_t kHeaderValues = 5;

/// Reads `bytes` at `remote` in process `pid` into `local`, resuming after partial reads.
/// Returns 0 or the errno of the failure.
int read_remote(pid_t pid, void* local, uint64_t remote, size_t bytes) {
  auto* dst = static_cast<char*>(local);
  while (bytes > 0) {
    iovec l{dst, bytes};
    iovec r{reinterpret_cast<void*>(remote), bytes};
    const ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got < 0) return errno != 0 ? errno : EIO;
    if (got == 0) return EIO;
    dst += got;
    remote += static_cast<uint64_t>(got);
    bytes -= static_cast<size_t>(got);
  }
  return 0;
}

bool turned_off() {
  return !settings::flag("GTADOC_SHUFFLE_CMA");
}

}  // namespace

void check_cross_memory_setting() {
  (void)turned_off();
}

bool cross_memory_expected() {
  if (turned_off()) return false;
  uint64_t probe = 0x5eed, copy = 0;
  if (read_remote(getpid(), &copy, reinterpret_cast<uint64_t>(&probe), sizeof probe) != 0 ||
      copy != probe)
    return false;
  int scope = 0;  // no Yama: classic ptrace permissions (same user)
  if (FILE* f = std::fopen("/proc/sys/kernel/yama/ptrace_scope", "r")) {
    if (std::fscanf(f, "%d", &scope) != 1) scope = 0;
    std::fclose(f);
  }
  return scope == 0 || (scope == 1 && geteuid() == 0);
}

bool cross_memory_possible(const Comm& comm) {
  return comm.is_distributed() && comm.size() > 1 && comm.local_size() == comm.size();
}

bool pull_records_cross_memory(Comm& comm, uint32_t width, const uint32_t* keys,
                               const uint64_t* counts, std::span<const size_t> send_first,
                               std::span<const size_t> send_count, uint32_t* out_keys,
                               uint64_t* out_counts, std::span<const size_t> recv_first,
                               std::span<const size_t> recv_count) {
  const size_t p = static_cast<size_t>(comm.size());
  const size_t me = static_cast<size_t>(comm.rank());
  GTADOC_EXPECTS(send_first.size() == p && send_count.size() == p && recv_first.size() == p &&
                     recv_count.size() == p,
                 "pull_records_cross_memory: one send and one receive range per rank");
  GTADOC_EXPECTS(send_count[me] == 0 && recv_count[me] == 0,
                 "pull_records_cross_memory: a rank's own part is moved by the caller");
  if (!cross_memory_possible(comm)) return false;

  // Every rank's header and send ranges, on every rank. A rank that turned the pulls off still
  // takes part (the setting may differ between ranks): then no rank pulls, and all use MPI.
  std::vector<uint64_t> mine = {static_cast<uint64_t>(getpid()), reinterpret_cast<uint64_t>(keys),
                                reinterpret_cast<uint64_t>(counts), width,
                                turned_off() ? uint64_t{0} : uint64_t{1}};
  for (size_t d = 0; d < p; ++d) mine.push_back(send_first[d]);
  for (size_t d = 0; d < p; ++d) mine.push_back(send_count[d]);
  const std::vector<std::vector<uint8_t>> all = comm.allgather_bytes(std::span<const uint8_t>(
      reinterpret_cast<const uint8_t*>(mine.data()), mine.size() * sizeof(uint64_t)));

  // The pulls, cut into pieces of at most 4 MiB so that every thread has work.
  struct Piece {
    pid_t pid;
    void* local;
    uint64_t remote;
    size_t bytes;
  };
  std::vector<Piece> pieces;
  bool consistent = true, willing = !turned_off();
  constexpr size_t kPiece = size_t{4} << 20;
  auto add = [&](pid_t pid, void* local, uint64_t remote, size_t bytes) {
    for (size_t at = 0; at < bytes; at += kPiece)
      pieces.push_back(
          {pid, static_cast<char*>(local) + at, remote + at, std::min(kPiece, bytes - at)});
  };
  for (size_t src = 0; src < p; ++src) {
    if (src == me) continue;
    const std::vector<uint8_t>& bytes = all[src];
    if (bytes.size() != (kHeaderValues + 2 * p) * sizeof(uint64_t)) {
      consistent = false;
      continue;
    }
    std::vector<uint64_t> v(kHeaderValues + 2 * p);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    const Header h{v[0], v[1], v[2], v[3], v[4]};
    if (h.willing == 0) willing = false;
    const uint64_t first = v[kHeaderValues + me], n = v[kHeaderValues + p + me];
    if (h.width != width || n != recv_count[src]) {  // MPI's path then reports it
      consistent = false;
      continue;
    }
    if (n == 0) continue;
    const pid_t pid = static_cast<pid_t>(h.pid);
    add(pid, out_keys + recv_first[src] * width, h.keys + first * width * sizeof(uint32_t),
        n * width * sizeof(uint32_t));
    add(pid, out_counts + recv_first[src], h.counts + first * sizeof(uint64_t),
        n * sizeof(uint64_t));
  }
  std::atomic<int> error{0};
  Timer timer;
  uint64_t bytes_in = 0;
  for (const Piece& c : pieces) bytes_in += c.bytes;
  if (consistent && willing) {
    const unsigned threads = std::min(16u, default_threads(static_cast<unsigned>(p)));
    parallel_for(pieces.size(), threads, [&](size_t i) {
      if (error.load() != 0) return;
      const Piece& c = pieces[i];
      const int e = read_remote(c.pid, c.local, c.remote, c.bytes);
      if (e != 0) error = e;
    });
  }
  // Collective: also the point after which no rank reads another's arrays.
  const bool ok = comm.allreduce_and(consistent && willing && error.load() == 0);
  if (ok) {
    spdlog::debug("cross-memory pull: {} bytes from {} ranks in {:.4f}s", bytes_in, p - 1,
                  timer.seconds());
  } else {
    // Said once (-v): every later shuffle of the process tries again and falls back the same way.
    static std::atomic<bool> said{false};
    if (error.load() != 0 && !said.exchange(true))
      spdlog::info(
          "cross-memory pull failed on this rank ({}); the records move with MPI "
          "(GTADOC_SHUFFLE_CMA=0 skips the attempt)",
          std::strerror(error.load()));
    else if (willing && !consistent)
      spdlog::debug(
          "cross-memory pull: the ranks' widths or part sizes disagree; the records move with MPI");
  }
  return ok;
}

}  // namespace gtadoc
