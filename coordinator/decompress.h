// `gtadoc decompress`: rebuilds documents byte for byte from an archive (all, or those named),
// into a directory that appears only when complete.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gtadoc {

struct DecompressOptions {
  std::vector<std::string> docs;  ///< names to extract; empty = every document
  bool force = false;
  bool progress = false;
  unsigned threads = 0;
};

/// Returns the number of documents written.
uint64_t decompress(const std::filesystem::path& archive, const std::filesystem::path& out_dir,
                    const DecompressOptions& options);

}  // namespace gtadoc
