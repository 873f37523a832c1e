// gtadoc_read_bench: how fast the shards' grammars of an archive are read (formats/archive.h,
// read_shard_grammar: the files read, their chunks inflated and checked, the grammars validated),
// against reading the same files' bytes, on the same machine in the same run.
//
//   gtadoc_read_bench ARCHIVE [AT_ONCE [THREADS_PER_READ [ROUNDS]]]
//
// First every shard file is read whole with read(2) on AT_ONCE threads (the floor: what `cat`
// costs, page cache as it is). Then ROUNDS (default 2) times every shard's grammar is read,
// AT_ONCE shards at a time (default: half the cores), each on THREADS_PER_READ threads (default
// 2), the grammars dropped as they are read (their symbols handed back for the next reads, as
// the GPU engine's load does once a shard is on the device: common/recycled_arrays.h). Prints
// per round the seconds, GB/s of shard files, and where a read's time went (summed over the
// shards, per shard in ms). Where the manifest records chunk maps (formats/chunk_maps.h), each
// round reads every shard by them, then again through HDF5 with the maps set aside.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/parallel.h"
#include "common/recycled_arrays.h"
#include "common/timer.h"
#include "formats/archive.h"

namespace {

using namespace gtadoc;
namespace fs = std::filesystem;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gtadoc_read_bench ARCHIVE [AT_ONCE [THREADS_PER_READ [ROUNDS]]]\n");
    return 2;
  }
  try {
    const fs::path archive = argv[1];
    const unsigned cores = resolve_threads(0);
    const unsigned at_once = argc > 2 ? std::max(1, std::atoi(argv[2])) : std::max(1u, cores / 2);
    const unsigned per_read = argc > 3 ? std::max(1, std::atoi(argv[3])) : 2;
    const int rounds = argc > 4 ? std::max(1, std::atoi(argv[4])) : 2;
    Manifest manifest = read_manifest(archive, ManifestRead::kDeferDictionary);
    // Each round reads the shards by their chunk maps (where the manifest records them), then
    // through HDF5 (the maps set aside).
    std::vector<std::vector<h5::ChunkMap>> maps(manifest.shards.size());
    bool mapped = false;
    for (size_t s = 0; s < maps.size(); ++s) {
      mapped = mapped || !manifest.shards[s].chunk_maps.empty();
      maps[s] = manifest.shards[s].chunk_maps;
    }
    const size_t shards = manifest.shards.size();
    std::vector<fs::path> files(shards);
    uint64_t bytes = 0;
    for (size_t s = 0; s < shards; ++s) {
      files[s] = archive / shard_file_name(static_cast<uint32_t>(s));
      bytes += fs::file_size(files[s]);
    }
    std::printf("%s: %zu shards, %.3f GB of shard files; %u reads at once, %u threads each\n",
                archive.c_str(), shards, bytes / 1e9, at_once, per_read);

    Timer floor_clock;
    parallel_for(shards, at_once, [&](size_t s) {
      const int fd = ::open(files[s].c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return;
      std::vector<char> buf(size_t{1} << 20);
      while (::read(fd, buf.data(), buf.size()) > 0) {
      }
      ::close(fd);
    });
    const double floor = floor_clock.seconds();
    std::printf("read(2) of the files: %.3f s, %.2f GB/s\n", floor, bytes / 1e9 / floor);

    for (int round = 0; round < rounds * (mapped ? 2 : 1); ++round) {
      const int r = mapped ? round / 2 : round;
      const bool by_maps = mapped && round % 2 == 0;
      for (size_t s = 0; s < maps.size(); ++s)
        manifest.shards[s].chunk_maps = by_maps ? maps[s] : std::vector<h5::ChunkMap>{};
      std::mutex m;
      size_t located = 0;
      ShardReadTimes sum;
      uint64_t symbols = 0;
      Timer clock;
      parallel_for(shards, at_once, [&](size_t s) {
        ShardReadTimes t;
        ShardGrammar g =
            read_shard_grammar(archive, manifest, static_cast<uint32_t>(s), per_read, &t);
        const uint64_t n = g.symbols.size();
        recycled::give(std::move(g.symbols));  // as the GPU engine's load does
        std::lock_guard lock(m);
        located += t.located;
        sum.lock_wait += t.lock_wait;
        sum.open += t.open;
        sum.data += t.data;
        sum.checks += t.checks;
        sum.validate += t.validate;
        sum.steps.locate += t.steps.locate;
        sum.steps.touch += t.steps.touch;
        sum.steps.pread += t.steps.pread;
        sum.steps.checksum += t.steps.checksum;
        sum.steps.inflate += t.steps.inflate;
        sum.steps.unpack += t.steps.unpack;
        symbols += n;
      });
      const double sec = clock.seconds();
      const double per = 1e3 / static_cast<double>(std::max<size_t>(shards, 1));
      std::printf(
          "round %d, %s (%zu by their maps): %.3f s, %.2f GB/s of files, %.1f M symbols/s; per "
          "shard ms: lock wait %.2f open %.2f data %.2f [locate %.2f touch %.2f; thread-ms: "
          "pread %.2f checksum %.2f inflate %.2f unpack %.2f] checks %.2f validate %.2f\n",
          r + 1, by_maps ? "chunk maps" : "through HDF5", located, sec, bytes / 1e9 / sec, symbols / 1e6 / sec, sum.lock_wait * per, sum.open * per,
          sum.data * per, sum.steps.locate * per, sum.steps.touch * per, sum.steps.pread * per,
          sum.steps.checksum * per, sum.steps.inflate * per, sum.steps.unpack * per,
          sum.checks * per, sum.validate * per);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gtadoc_read_bench: %s\n", e.what());
    return 1;
  }
}
