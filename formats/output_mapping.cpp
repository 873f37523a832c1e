#include "formats/output_mapping.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "common/settings.h"

namespace gtadoc {

uint64_t output_map_min_bytes() {
  return settings::bytes("GTADOC_OUTPUT_MAP_MIN_BYTES");
}

namespace {

enum class Where { kNowhere, kTmpfs, kAll };

Where where_to_map() {
  const std::string_view v = settings::word("GTADOC_OUTPUT_MAP");
  if (v == "all") return Where::kAll;
  if (v == "0") return Where::kNowhere;
  return Where::kTmpfs;
}

std::string errno_text(int err) {
  return std::strerror(err);
}

}  // namespace

OutputMapping::OutputMapping(OutputMapping&& other) noexcept {
  *this = std::move(other);
}

OutputMapping& OutputMapping::operator=(OutputMapping&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, length_);
    base_ = std::exchange(other.base_, nullptr);
    length_ = std::exchange(other.length_, 0);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    how_ = std::move(other.how_);
    file_ = std::move(other.file_);
    max_writers_ = other.max_writers_;
  }
  return *this;
}

OutputMapping::~OutputMapping() {
  if (base_ != nullptr) ::munmap(base_, length_);
}

void OutputMapping::finish() {
  if (base_ == nullptr) return;
  const int rc = ::munmap(base_, length_);
  base_ = data_ = nullptr;
  if (rc != 0) throw InputError(file_ + ": cannot write: " + errno_text(errno));
}

OutputMapping OutputMapping::map(OutputFile& file, uint64_t file_size, uint64_t offset,
                                 uint64_t size, unsigned writers) {
  OutputMapping m;
  m.file_ = file.path().string();
  const int fd = file.descriptor();
  GTADOC_EXPECTS(fd >= 0 && offset + size <= file_size, "output mapping: range outside the file");
  const uint64_t min_bytes = output_map_min_bytes();
  const Where where = where_to_map();
  if (where == Where::kNowhere) {
    m.how_ = "GTADOC_OUTPUT_MAP=0";
    return m;
  }
  if (size == 0 || size < min_bytes) {
    m.how_ = "below " + std::to_string(min_bytes) + " bytes";
    return m;
  }
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) {
    m.how_ = "fstatfs failed";
    return m;
  }
  const bool tmpfs = static_cast<unsigned long>(fs.f_type) == TMPFS_MAGIC;
  if (!tmpfs && where != Where::kAll) {
    m.how_ = "not tmpfs";
    return m;
  }
  if (tmpfs && where != Where::kAll && writers < kTmpfsMappingWriters) {
    m.how_ = "tmpfs, fewer than " + std::to_string(kTmpfsMappingWriters) + " writers";
    return m;
  }
  // Every writer sets the same final size, so the order of their calls does not matter.
  if (::ftruncate(fd, static_cast<off_t>(file_size)) != 0)
    throw InputError(m.file_ + ": cannot write: " + errno_text(errno));
  if (tmpfs) {
    // A page that tmpfs cannot allocate at fault time is a SIGBUS: map only with room for the
    // whole file and some to spare (another process filling the same tmpfs meanwhile is the one
    // race left; a writer that finds less room writes, and meets a full tmpfs as a clean error).
    struct statvfs vfs {};
    if (::fstatvfs(fd, &vfs) != 0 ||
        static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize < file_size + (uint64_t{64} << 20)) {
      m.how_ = "tmpfs without room to spare";
      return m;
    }
    m.how_ = "tmpfs";
  } else {
    // Blocks reserved now: a full disk fails here, not as a SIGBUS in a page fault.
    int rc;
    do {
      rc = ::fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(size));
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      const int err = errno;
      if (err == ENOSPC || err == EDQUOT)
        throw InputError(m.file_ + ": cannot write: " + errno_text(err));
      m.how_ = "no fallocate (" + errno_text(err) + ")";
      return m;
    }
    m.how_ = "fallocate";
    m.max_writers_ = static_cast<unsigned>(settings::count("GTADOC_OUTPUT_MAP_WRITERS"));
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const uint64_t length = offset + size - start;
  void* p =
      ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
  if (p == MAP_FAILED) {
    m.how_ = "no mmap (" + errno_text(errno) + ")";
    return m;
  }
  m.base_ = static_cast<char*>(p);
  m.length_ = length;
  m.data_ = m.base_ + (offset - start);
  m.size_ = size;
  return m;
}

}  // namespace gtadoc
