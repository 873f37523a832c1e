// A byte range of an output file written through a shared memory mapping, so that several
// threads (and several ranks, each with its own range) fill one file at once. Buffered writes
// to one file serialize on its inode lock (one writer moves 2–4 GB/s into the page cache), where
// page faults on a mapping run in parallel.
//
// Where it pays (measured, docs/PERFORMANCE.md, "End to end"): on tmpfs, a mapping filled by
// 16–32 threads beats pwrite by 1.2–2×, but one filled by one or two threads is 2–7× slower (a
// page fault per page, where pwrite copies at one writer's speed), so results on tmpfs are mapped
// by default when kTmpfsMappingWriters threads or more fill them. On ext4 the page faults of
// more than about four threads at once contend (8–32 threads filled a mapping 2–5× slower than
// 4), so other file systems keep pwrite unless GTADOC_OUTPUT_MAP=all, which maps them too (and
// tmpfs whatever the threads) with at most kDiskMappingWriters threads writing into a disk file
// system's mapping at a time.
//
// A range is mapped only where that is safe: on a disk file system its blocks are reserved first
// (fallocate), so a full disk is a clean error here and never a SIGBUS later; on tmpfs, whose
// fallocate zeroes every page serially, the file system's free space for the whole file is
// checked instead.
// Everywhere else (no fallocate, no mmap, a range below the size threshold, GTADOC_OUTPUT_MAP=0)
// the caller gets an empty mapping and writes with OutputFile::write_at; the bytes are the same.
#pragma once

#include <cstdint>
#include <string>

#include "common/settings.h"
#include "formats/atomic_output.h"

namespace gtadoc {

class OutputMapping {
 public:
  OutputMapping() = default;
  OutputMapping(OutputMapping&& other) noexcept;
  OutputMapping& operator=(OutputMapping&& other) noexcept;
  OutputMapping(const OutputMapping&) = delete;
  OutputMapping& operator=(const OutputMapping&) = delete;
  ~OutputMapping();  ///< unmaps (without reporting errors)

  explicit operator bool() const { return data_ != nullptr; }
  /// The range's first byte; size() bytes are writable.
  char* data() const { return data_; }
  uint64_t size() const { return size_; }
  /// Why the range is (not) mapped, for the log: "fallocate", "tmpfs", "below 8 MiB", ...
  const std::string& how() const { return how_; }
  /// At most this many threads should write into the mapping at a time (0: any number).
  unsigned max_writers() const { return max_writers_; }
  /// Unmaps; InputError naming the file when that fails.
  void finish();

  /// Maps bytes [offset, offset + size) of `file` for writing, after setting the file's size to
  /// `file_size` (every writer of one file passes the same). `writers`: the threads that will
  /// fill the file at once, every writer's (tmpfs is mapped by default from kTmpfsMappingWriters
  /// up). Empty (with how() saying why) when the range is to be written with write_at instead;
  /// InputError naming the file when the file system has no room for the range.
  static OutputMapping map(OutputFile& file, uint64_t file_size, uint64_t offset, uint64_t size,
                           unsigned writers);

 private:
  char* base_ = nullptr;  ///< the mapping (page-aligned)
  uint64_t length_ = 0;   ///< its length
  char* data_ = nullptr;  ///< the range within it
  uint64_t size_ = 0;
  std::string how_;
  std::string file_;
  unsigned max_writers_ = 0;
};

/// Threads that must fill a range for it to be mapped on tmpfs by default (GTADOC_OUTPUT_MAP unset
/// or "tmpfs"); fewer write it with pwrite.
inline constexpr unsigned kTmpfsMappingWriters = 8;

/// Threads writing into a mapping of a disk file system at a time (GTADOC_OUTPUT_MAP=all), unless
/// GTADOC_OUTPUT_MAP_WRITERS says otherwise (0: any number).
inline constexpr unsigned kDiskMappingWriters =
    static_cast<unsigned>(settings::default_number("GTADOC_OUTPUT_MAP_WRITERS"));

/// Ranges below this many bytes are written with write_at (GTADOC_OUTPUT_MAP_MIN_BYTES, a size
/// such as 0 or 64m, overrides the 8 MiB default). GTADOC_OUTPUT_MAP: unset or "tmpfs" maps on
/// tmpfs only, "all" on every file system that can reserve the range, "0" nowhere. Both are read
/// when a result is written, after its query; a bad value throws UsageError (common/settings.h;
/// the CLI refuses it before any query starts).
uint64_t output_map_min_bytes();

}  // namespace gtadoc
