// The record exchange of ranks that share one node by Linux cross-memory attach: every rank pulls
// the records sent to it straight out of the senders' arrays with process_vm_readv, on several
// threads; MPI only exchanges the arrays' addresses and synchronizes. Open MPI's shared-memory
// transport moves one MPI_Alltoallv at 2.2-2.7 GB/s a rank on the H200 x2 host (one copy on one
// thread), where 8-16 threads pulling reach 11-15 GB/s (docs/PERFORMANCE.md, "End to end").
//
// Guarantees:
//  - The contract of exchange_records (cluster/shuffle.h): the same records land at the same
//    places. Collective over `comm`; only for a job whose ranks all share this node.
//  - Returns false on every rank, having written nothing that matters (the caller then moves the
//    records with MPI), when any rank could not read another's memory: no permission (a
//    container without the ptrace right, Yama's ptrace_scope), or the system call missing.
//    The senders' arrays are not read after the call returns on any rank.
//  - GTADOC_SHUFFLE_CMA=0 turns it off: false on every rank when any rank has it (the ranks still
//    meet in the call's collectives, so the setting may differ between them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace gtadoc {

class Comm;

/// Whether the job's ranks all share this node (a launcher's job of several ranks): then
/// pull_records_cross_memory takes part in the exchange (it may still answer false).
bool cross_memory_possible(const Comm& comm);

/// Whether this process can be expected to pull from its node's other ranks, asked before MPI
/// starts (the GPUs' narrowing depends on it): GTADOC_SHUFFLE_CMA is not 0, process_vm_readv is
/// allowed (a read of this process's own memory: a seccomp filter would refuse it), and Yama's
/// ptrace_scope lets a process read a sibling's memory (0, or 1 for root). A guess: the pull itself
/// still falls back to MPI when a read fails. UsageError for a bad GTADOC_SHUFFLE_CMA.
bool cross_memory_expected();

/// UsageError when GTADOC_SHUFFLE_CMA is set to anything but 0 or 1 (checked where a query's
/// shuffle is chosen, with GTADOC_SHUFFLE).
void check_cross_memory_setting();

/// exchange_records' arguments; the own part must be left to the caller (counts 0).
bool pull_records_cross_memory(Comm& comm, uint32_t width, const uint32_t* keys,
                               const uint64_t* counts, std::span<const size_t> send_first,
                               std::span<const size_t> send_count, uint32_t* out_keys,
                               uint64_t* out_counts, std::span<const size_t> recv_first,
                               std::span<const size_t> recv_count);

}  // namespace gtadoc
