#include "formats/atomic_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <random>
#include <system_error>

#include "common/error.h"
#include "common/log.h"
#include "common/temporaries.h"

namespace gtadoc {
namespace fs = std::filesystem;

fs::path unique_temp_sibling(const fs::path& target) {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path p = target;
    p += temporary_suffix(rd() % 1000000);
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) return p;
  }
  throw InputError("cannot find a free temporary name next to " + target.string());
}

void write_new_file(const fs::path& file, std::string_view bytes) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(file.string() + ": cannot create: " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int err = errno;
      ::close(fd);
      throw InputError(file.string() + ": cannot write: " + std::strerror(err));
    }
    done += static_cast<size_t>(w);
  }
  if (::close(fd) != 0) throw InputError(file.string() + ": cannot write: " + std::strerror(errno));
}

OutputFile::OutputFile(fs::path file, Mode mode) : file_(std::move(file)) {
  const int flags = mode == Mode::kCreateNew
                        ? O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC
                        : O_RDWR | O_CLOEXEC;  // read too: a shared mapping needs it
  fd_ = ::open(file_.c_str(), flags, 0644);
  if (fd_ < 0)
    throw InputError(file_.string() + ": cannot " + (mode == Mode::kCreateNew ? "create" : "open") +
                     ": " + std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write_at(uint64_t offset, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t w = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw InputError(file_.string() + ": cannot write: " + std::strerror(errno));
    done += static_cast<size_t>(w);
  }
}

void OutputFile::close() {
  if (fd_ < 0) return;
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw InputError(file_.string() + ": cannot write: " + std::strerror(errno));
}

namespace {

/// True when `inner` is `outer` or lies below it (both made absolute and normalized; symlinks
/// of existing parts resolved).
bool within(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(fs::absolute(inner), ec);
  const fs::path b = fs::weakly_canonical(fs::absolute(outer), ec);
  auto ia = a.begin();
  for (auto ib = b.begin(); ib != b.end(); ++ib, ++ia) {
    if (ib->empty()) continue;  // a trailing separator
    if (ia == a.end() || *ia != *ib) return false;
  }
  return true;
}

/// UsageError when --force must not replace the existing `target` (see the constructor).
void check_replaceable(const fs::path& target, AtomicOutput::Kind kind,
                       const AtomicOutput::Replace& replace) {
  for (const fs::path& in : replace.inputs)
    if (within(target, in) || within(in, target))
      throw UsageError(target.string() + ": --force would overwrite " + in.string() +
                       ", which this command reads");
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(target, ec);
  if (kind == AtomicOutput::Kind::kFile && !fs::is_regular_file(st))
    throw UsageError(target.string() + ": not a regular file; --force replaces only files");
  if (kind == AtomicOutput::Kind::kDirectory) {
    if (!fs::is_directory(st))
      throw UsageError(target.string() + ": not a directory; --force replaces only directories");
    if (!replace.marker.empty() &&
        !fs::is_regular_file(fs::symlink_status(target / replace.marker, ec)))
      throw UsageError(target.string() + ": not a previous output (no " + replace.marker +
                       "); --force replaces only those");
    if (replace.recognize)
      if (const std::string why = replace.recognize(target); !why.empty())
        throw UsageError(target.string() + ": not a previous output (" + why +
                         "); --force replaces only those");
  }
}

}  // namespace

AtomicOutput::AtomicOutput(fs::path target, Kind kind, bool force, const Replace& replace)
    : target_(std::move(target)), kind_(kind), force_(force) {
  // "out/" names the same target as "out" (a trailing slash is harmless, docs/REFERENCE.md §2).
  while (target_.has_relative_path() && !target_.has_filename()) target_ = target_.parent_path();
  // Temporaries of this target left by dead processes of this host (killed, crashed) go now.
  if (const size_t stale = remove_stale_temporaries(target_))
    spdlog::info("{}: removed {} stale temporar{} of processes that no longer run",
                 target_.string(), stale, stale == 1 ? "y" : "ies");
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(target_, ec));
  if (exists && !force_)
    throw InputError(target_.string() + ": output exists (use --force to replace it)");
  if (exists) check_replaceable(target_, kind_, replace);
  fs::path parent = target_.has_parent_path() ? target_.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec))
    throw InputError(parent.string() + ": output directory does not exist");
  temp_ = unique_temp_sibling(target_);
  // Registered before it exists, so that a stop request removes it whatever happens next.
  std::lock_guard<std::mutex> lock(temporaries_mutex());
  register_temporary_locked(temp_);
  if (kind_ == Kind::kDirectory) {
    if (!fs::create_directory(temp_, ec) || ec) {
      unregister_temporary_locked(temp_);
      throw InputError(temp_.string() + ": cannot create directory: " + ec.message());
    }
  }
}

AtomicOutput::~AtomicOutput() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(temp_, ec);
  unregister_temporary(temp_);
}

void AtomicOutput::commit() {
  std::error_code ec;
  fs::path old;
  {
    // Under the temporaries' lock: a stop request either removes the temporary before this
    // (and the output never appears) or finds the output committed.
    std::lock_guard<std::mutex> lock(temporaries_mutex());
    if (fs::exists(fs::symlink_status(target_, ec))) {
      if (!force_)
        throw InputError(target_.string() + ": output exists (use --force to replace it)");
      old = unique_temp_sibling(target_);
      fs::rename(target_, old, ec);
      if (ec) throw InputError(target_.string() + ": cannot replace: " + ec.message());
    }
    fs::rename(temp_, target_, ec);
    if (ec) {
      if (!old.empty()) fs::rename(old, target_, ec);
      throw InputError(target_.string() + ": cannot move output into place: " + ec.message());
    }
    committed_ = true;
    unregister_committed_locked(temp_);
  }
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace gtadoc
