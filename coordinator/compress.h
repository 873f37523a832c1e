// `gtadoc compress`: documents -> tokenized shards -> global byte-ordered dictionary -> Sequitur
// per shard (in parallel) -> HDF5 archive written under a temporary name and renamed when
// complete. Under mpirun, shards are spread over ranks and their words merged into one dictionary.
//
// Memory: planned against a budget per process (--memory-budget; default a quarter of the
// memory the process may use, shared by the ranks of a node). Shards are read with bounded
// concurrency into one vocabulary; a shard's tokens wait for the dictionary in memory while
// the budget allows, otherwise in a spill file inside the archive's temporary directory; shards
// are then encoded as many at once as their estimated peaks fit. The peak is thus bounded by the
// largest shard, the dictionary and the document table, not by the corpus size, and the archive
// is the same (but for its random id) whatever the budget. A budget below what one shard (or
// the dictionary) may need is not an error: a warning says so and shards go one at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gtadoc {

class Comm;

struct CompressOptions {
  uint64_t shard_size = 32ull << 20;  ///< target input bytes per shard
  uint32_t shards = 0;                ///< fixed number of shards (0 = from shard_size)
  unsigned threads = 0;               ///< 0 = all hardware threads
  bool force = false;                 ///< replace an existing output
  bool progress = false;              ///< draw progress on the terminal
  int deflate_level = 4;              // 6 saves ~2% more space at ~30% more compression time
  uint64_t memory_budget = 0;         ///< peak bytes to plan for per rank (0 = the default)
};

struct CompressStats {
  uint64_t documents = 0, input_bytes = 0, words = 0, vocabulary = 0, shards = 0;
  uint64_t rules = 0, symbols = 0, archive_bytes = 0;
  double seconds = 0;
};

CompressStats compress(const std::vector<std::string>& inputs, const std::filesystem::path& out,
                       const CompressOptions& options, Comm& comm);

}  // namespace gtadoc
