// Output that appears complete or not at all: a file or directory is written under a temporary
// sibling name and renamed into place by `commit()`. Destruction without commit removes the
// temporary. With `force`, an existing target is replaced only at commit time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gtadoc {

class AtomicOutput {
 public:
  enum class Kind { kFile, kDirectory };
  /// What an existing target may be replaced by --force: `marker` (non-empty) is a file every
  /// previous output of this kind holds (an archive's manifest.h5, a partitioned result's
  /// _SUCCESS), and `inputs` are paths the command reads, which the target must neither be, lie
  /// inside, nor contain.
  /// `recognize` (when set) is called on an existing directory target that holds the marker and
  /// says why it is not a previous output after all (empty when it is one): every entry is
  /// checked, so that --force never deletes files gtadoc did not write.
  struct Replace {
    std::string marker;
    std::vector<std::filesystem::path> inputs;
    std::function<std::string(const std::filesystem::path&)> recognize;
  };
  /// Throws InputError if `target` exists and !force, or its parent directory is missing; with
  /// force, UsageError when the existing target may not be replaced: a file target that is not a
  /// regular file, a directory target that is not a directory, lacks `replace.marker` (a regular
  /// file) or is refused by `replace.recognize`, or a target overlapping one of `replace.inputs`.
  AtomicOutput(std::filesystem::path target, Kind kind, bool force, const Replace& replace = {});
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;
  ~AtomicOutput();

  /// Where to write now (a file path, or a created empty directory).
  const std::filesystem::path& temp_path() const { return temp_; }
  const std::filesystem::path& target() const { return target_; }
  /// Moves the temporary into place (replacing an existing target when forced).
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  Kind kind_;
  bool force_;
  bool committed_ = false;
};

/// Creates `file` (which must not exist) holding exactly `bytes`; InputError naming `file` on
/// failure.
void write_new_file(const std::filesystem::path& file, std::string_view bytes);

/// A file opened for writing at offsets (several writers may share one file, each writing its
/// own byte range). Errors name the file; close() reports a failed close, the destructor only
/// closes.
class OutputFile {
 public:
  enum class Mode { kCreateNew, kOpenExisting };
  OutputFile(std::filesystem::path file, Mode mode);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();
  void write_at(uint64_t offset, const char* data, size_t size);
  void close();
  const std::filesystem::path& path() const { return file_; }
  /// The open descriptor (formats/output_mapping.h maps ranges of it); -1 after close().
  int descriptor() const { return fd_; }

 private:
  std::filesystem::path file_;
  int fd_ = -1;
};

/// A sibling path of `target` that does not exist yet: "<target>.tmp-<pid>-<random>-<host>".
/// The constructor of AtomicOutput first removes such temporaries of `target` whose process
/// (on this host) no longer exists, and registers its own (common/temporaries.h) so that a stop
/// request (SIGINT/SIGTERM) removes it.
std::filesystem::path unique_temp_sibling(const std::filesystem::path& target);

}  // namespace gtadoc
