// Partitioning of records by owner rank before the shuffle (docs/REFERENCE.md §7).
//  - Hash partitioning: the owner of a record is hash_u32s(first partition_width key values)
//    % parts (common/hash.h), the same on every rank and platform.
//  - Range partitioning (KeyLayout::range_partition: the tasks whose output is ordered by the
//    first key value): with splitters s (parts-1 non-decreasing values), owner p holds first key
//    values in [s[p-1], s[p]) where s[-1] = 0 and s[parts-1] = +inf, so concatenating
//    partitions 0..parts-1 is in global output order (sequence n-grams are rewritten into ranks
//    of that order before, see cluster/rows/sequence_order.h).
// Guarantees of partition_records: the output is a permutation of the input rows, grouped by
// owner in increasing owner order and stable within an owner (rows keep their input order);
// `offsets` has parts + 1 entries, offsets[0] == 0 and offsets[parts] == records.size().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "worker/query.h"
#include "worker/records.h"

namespace gtadoc {

class Comm;

struct PartitionedRecords {
  RecordBatch records;          ///< rows grouped by owner, stable within an owner
  std::vector<size_t> offsets;  ///< owner p's rows are [offsets[p], offsets[p+1]); parts + 1

  uint32_t parts() const { return offsets.empty() ? 0 : static_cast<uint32_t>(offsets.size() - 1); }
  size_t part_size(uint32_t p) const { return offsets[p + 1] - offsets[p]; }
};

/// Owner (0..parts-1) of one key under `layout` (see above); `range_splitters` is used only
/// when layout.range_partition and then must hold parts - 1 non-decreasing values.
uint32_t owner_of(std::span<const uint32_t> key, const KeyLayout& layout, uint32_t parts,
                  std::span<const uint32_t> range_splitters = {});

/// Reorders `batch` by owner, on `threads` threads (0 = all; the result does not depend on it).
/// Throws InternalError when batch.width != layout.width, when partition_width is not in 1..width,
/// when parts == 0, or when range splitters are missing (size != parts - 1) or unsorted.
PartitionedRecords partition_records(const RecordBatch& batch, const KeyLayout& layout,
                                     uint32_t parts, std::span<const uint32_t> range_splitters = {},
                                     unsigned threads = 1);

/// Collective: chooses parts - 1 range splitters from a sample of every rank's first key
/// values (each sample weighted by the number of rows it stands for), so that partitions hold
/// roughly equal numbers of rows globally and partition order is global key order. Every rank
/// returns the same splitters. A key value that alone exceeds a partition's share still lands
/// in one partition. Returns an empty vector for parts <= 1.
std::vector<uint32_t> choose_range_splitters(Comm& comm, const RecordBatch& local, uint32_t parts);

/// The same from candidates already drawn: the first key values of min(rows,
/// kSplitterCandidates) records at indices floor(j * rows / m) of the `rows` local records (what
/// the overload above draws; DeviceRecords::strided_first_values for records on a GPU).
inline constexpr size_t kSplitterCandidates = size_t{1} << 18;
std::vector<uint32_t> choose_range_splitters(Comm& comm, std::vector<uint32_t> candidates,
                                             uint64_t rows, uint32_t parts);

}  // namespace gtadoc
