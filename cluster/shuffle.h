// The MPI shuffle of partitioned records (SPEC §7): after partition_records, every rank sends
// partition p to rank p and receives every record whose owner it is.
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

}  // namespace gtadoc
