// Records kept in one GPU's memory: the GPU engine's output of a query left on
// the device, so that partitioning by owner runs there and the records move between GPUs with
// NCCL (cluster/nccl_shuffle.h); only the records a rank owns come back to the host.
// A host-side interface: no CUDA type appears here (the implementation is worker/gpu).
//
// Guarantees (the same as the host path, so both paths give identical bytes):
//  - map_keys / partition / download keep the records' multiset; partition() is the stable
//    grouping by owner of partition_records (cluster/partition.h), with owner_of's owners.
//  - strided_first_values(m) returns the first key value of the records at indices
//    floor(j * size() / m), j = 0..m-1 (choose_range_splitters' candidates).
//  - Every call is ordered on the records' stream and returns when its results are usable.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc {

class DeviceRecords {
 public:
  virtual ~DeviceRecords() = default;

  virtual uint32_t width() const = 0;
  virtual uint64_t size() const = 0;
  /// The CUDA device, the stream (a cudaStream_t) the records are ordered on, and the record
  /// arrays in device memory: size() * width() key values row-major, size() counts.
  virtual int device() const = 0;
  virtual void* stream() const = 0;
  virtual uint32_t* keys() = 0;
  virtual uint64_t* counts() = 0;

  /// Rewrites key values [first, first + count) of every record v -> table[v] (sequence
  /// n-grams into ranks, cluster/rows/sequence_order.h). Every value must be < table.size().
  virtual void map_keys(uint32_t first, uint32_t count, std::span<const uint32_t> table) = 0;
  /// The first key value of m evenly strided records (see above); m <= size().
  virtual std::vector<uint32_t> strided_first_values(uint64_t m) = 0;
  /// Reorders the records by owner (stable); returns offsets, parts + 1 entries.
  virtual std::vector<uint64_t> partition(const KeyLayout& layout, uint32_t parts,
                                          std::span<const uint32_t> range_splitters) = 0;
  /// Sorts the records by key and sums the counts of equal keys: afterwards they are exactly
  /// what reduce_records (cluster/reduce.h) makes of them (keys strictly increasing). May throw
  /// ResourceError (device memory), leaving the same records, perhaps reordered.
  virtual void reduce() = 0;
  /// Keeps, in order, the records whose count is at least the k-th largest count (every record
  /// when k == 0 or size() <= k): the only candidates for the k rows of a count-ordered --top,
  /// whatever the order among equal counts, so that only they cross to the host.
  virtual void keep_top_counts(uint64_t k) = 0;
  /// Puts reduced records (keys strictly increasing, as reduce() leaves them) into row order:
  /// stably by count descending within each run of equal first `group` key values (group == 0:
  /// the whole set is one run), so the order becomes (those values asc, count desc, key asc) --
  /// the rows of word-count and sequence-count (group 0) and of ranked-inverted-index (group n,
  /// postings by count desc, document asc). `keep_first` > 0 (only with group 0) then keeps the
  /// first keep_first records: a count-ordered --top. Returns false, changing nothing, when one
  /// 64-bit sort key cannot hold a record's run index and count (then the host orders them).
  /// May throw ResourceError (device memory) before anything changed.
  virtual bool order_by_count(uint32_t group, uint64_t keep_first) = 0;
  /// Records in count order (order_by_count with group 0) cut by `splitters` (rows: key and
  /// count, in the same order): offsets[0] = 0, offsets[p + 1] = the number of records not
  /// after splitter p in (count desc, key asc), offsets[last] = size(). parts = splitters + 1.
  virtual std::vector<uint64_t> count_order_cuts(const RecordBatch& splitters) = 0;
  /// Host copies of the records at `positions` (each < size()), in that order.
  virtual RecordBatch rows_at(std::span<const uint64_t> positions) const = 0;
  /// Fresh uninitialized records of the same width on the same device and stream.
  virtual std::unique_ptr<DeviceRecords> allocate(uint64_t n) const = 0;
  /// Host copies of records [first, first + n): n * width() key values into `keys`, n counts
  /// into `counts` (host memory the caller owns). first + n <= size().
  virtual void download_range(uint64_t first, uint64_t n, uint32_t* keys,
                              uint64_t* counts) const = 0;
  /// Host records (n * width() key values, n counts) written at positions [at, at + n).
  virtual void upload_range(uint64_t at, uint64_t n, const uint32_t* keys,
                            const uint64_t* counts) = 0;
  /// Records [first, first + n) of `from` (same width, same device) copied to positions
  /// [at, at + n) of these records, on the device.
  virtual void copy_range(DeviceRecords& from, uint64_t first, uint64_t at, uint64_t n) = 0;
  /// A host copy of the records, in order.
  virtual RecordBatch download() const = 0;
};

}  // namespace gtadoc
