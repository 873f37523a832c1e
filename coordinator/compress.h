// `gtadoc compress`: documents -> tokenized shards -> global byte-ordered dictionary -> Sequitur
// per shard (in parallel) -> HDF5 archive written under a temporary name and renamed when
// complete. Under mpirun, shards are spread over ranks and rank 0 builds the dictionary.
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
};

struct CompressStats {
  uint64_t documents = 0, input_bytes = 0, words = 0, vocabulary = 0, shards = 0;
  uint64_t rules = 0, symbols = 0, archive_bytes = 0;
  double seconds = 0;
};

CompressStats compress(const std::vector<std::string>& inputs, const std::filesystem::path& out,
                       const CompressOptions& options, Comm& comm);

}  // namespace gtadoc
