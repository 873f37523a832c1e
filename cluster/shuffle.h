// The MPI shuffle of partitioned records (docs/REFERENCE.md §7): after partition_records, every
// rank sends partition p to rank p and receives every record whose owner it is.
// Guarantees:
//  - Collective over `comm`; requires parts.parts() == comm.size() and the same key width on
//    every rank (checked collectively: every rank throws, none hangs).
//  - Every record arrives exactly once, at its owner, with its count unchanged.
//  - Deterministic order: the result holds the records from rank 0 first, then rank 1, ...,
//    each source's records in its partitioned order, whatever the round size.
//  - No staging: the exchange runs in rounds of MPI_Alltoallv that move records straight from
//    the partitioned batch into their place in the result (Comm::alltoallv_records); per round
//    each rank sends at most max_round_bytes (at least one record), spread evenly over
//    destinations that still have data; all ranks agree on the number of rounds. Besides the
//    result, a rank holds no copy of the records.
//  - With one rank the records are returned unchanged and MPI is not used.
#pragma once

#include <cstddef>
#include <span>

#include "cluster/comm.h"
#include "cluster/partition.h"
#include "worker/records.h"

namespace gtadoc {

inline constexpr size_t kDefaultShuffleRoundBytes = size_t{64} << 20;  // 64 MiB

/// Bytes one record occupies on the wire: width u32 key values and one u64 count.
constexpr size_t shuffle_record_bytes(uint32_t width) {
  return width * sizeof(uint32_t) + sizeof(uint64_t);
}

RecordBatch shuffle_records(Comm& comm, const PartitionedRecords& parts,
                            size_t max_round_bytes = kDefaultShuffleRoundBytes);

/// The rounds of shuffle_records on caller-owned arrays of `width`-value keys and counts:
/// send_count[d] records from record send_first[d] of (keys, counts) go to rank d, and the
/// recv_count[s] records rank s sends here (the caller exchanged the counts: Comm::alltoall)
/// are written from record recv_first[s] of (out_keys, out_counts). A rank's own part is the
/// caller's to move: send_count[rank] and recv_count[rank] must be 0. Collective; every rank must
/// pass the same width (checked: every rank throws, none hangs).
void exchange_records(Comm& comm, uint32_t width, const uint32_t* keys, const uint64_t* counts,
                      std::span<const size_t> send_first, std::span<const size_t> send_count,
                      uint32_t* out_keys, uint64_t* out_counts, std::span<const size_t> recv_first,
                      std::span<const size_t> recv_count,
                      size_t max_round_bytes = kDefaultShuffleRoundBytes);

}  // namespace gtadoc
