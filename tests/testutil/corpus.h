// Test helpers: scratch directories that clean up after themselves, writing and reading whole
// files, and running the gtadoc binary to capture its exit code and output.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gtadoc::testutil {

/// A fresh empty directory under the system temp dir, removed recursively on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

/// Writes `bytes` to `file`, creating parent directories.
void write_file(const std::filesystem::path& file, const std::string& bytes);
std::string read_file(const std::filesystem::path& file);

struct CommandResult {
  int exit_code = -1;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};
/// Runs the gtadoc binary (GTADOC_BINARY env var or compile definition) with `args`.
CommandResult run_gtadoc(const std::vector<std::string>& args);

/// Path to the repository checkout (for bundled sample data).
std::filesystem::path source_dir();

}  // namespace gtadoc::testutil
