// `gtadoc verify ARCHIVE [--json]` (docs/REFERENCE.md §9, docs/FORMAT.md "Verification"): reads
// every dataset of every file (each chunk's Fletcher32 checksum is checked on read), checks every
// structural invariant of the manifest and of each shard grammar, every cross-file reference
// (archive id, shard index, document ranges, rule/symbol/depth/word counts, per-document word
// counts against the grammar's expansion, whitespace layout), and the SHA-256 content digests
// written at compression time: each shard file's bytes and the manifest's content. The archive is
// only read, never written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gtadoc {

struct VerifyCheck {
  std::string what;  ///< "manifest", "content digest", "shard 3", "directory"
  bool ok = true;
  std::string detail;  ///< what was checked, or the first thing found wrong
};

struct VerifyReport {
  std::string archive;
  bool ok = false;  ///< every check passed
  std::vector<VerifyCheck> checks;
  uint32_t shards = 0, shards_ok = 0;
  uint64_t bytes_read = 0;  ///< bytes of every file hashed and read
  double seconds = 0;

  /// One line per check, then a verdict line.
  std::string text() const;
  std::string json() const;
  /// The first failed check as "what: detail" (empty when ok).
  std::string first_failure() const;
};

/// Verifies `archive` on up to `threads` threads (0 = usable CPUs). Problems are reported, not
/// thrown; only a failure to run at all (out of memory) throws.
VerifyReport verify_archive(const std::filesystem::path& archive, unsigned threads);

}  // namespace gtadoc
