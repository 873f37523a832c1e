// Round-based MPI record shuffle. See shuffle.h.
#include "cluster/shuffle.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "cluster/cross_memory.h"
#include "common/error.h"

namespace gtadoc {

namespace {

// Splits a budget of `budget` records over destinations with records left, evenly, starting at
// `start` so that no destination is always served first. take[d] receives the result.
void fill_round(const std::vector<size_t>& left, size_t budget, size_t start,
                std::vector<size_t>& take) {
  const size_t p = left.size();
  std::fill(take.begin(), take.end(), 0);
  size_t active = 0;
  for (size_t d = 0; d < p; ++d) active += left[d] > 0 ? 1 : 0;
  while (budget > 0 && active > 0) {
    const size_t share = std::max<size_t>(1, budget / active);
    for (size_t i = 0; i < p && budget > 0; ++i) {
      const size_t d = (start + i) % p;
      const size_t room = left[d] - take[d];
      if (room == 0) continue;
      const size_t t = std::min({room, share, budget});
      take[d] += t;
      budget -= t;
      if (t == room) --active;
    }
  }
}

}  // namespace

void exchange_records(Comm& comm, uint32_t width, const uint32_t* keys, const uint64_t* counts,
                      std::span<const size_t> send_first, std::span<const size_t> send_count,
                      uint32_t* out_keys, uint64_t* out_counts, std::span<const size_t> recv_first,
                      std::span<const size_t> recv_count, size_t max_round_bytes) {
  const size_t p = static_cast<size_t>(comm.size());
  GTADOC_EXPECTS(send_first.size() == p && send_count.size() == p && recv_first.size() == p &&
                     recv_count.size() == p,
                 "exchange_records: one send and one receive range per rank");
  const size_t me = static_cast<size_t>(comm.rank());
  GTADOC_EXPECTS(send_count[me] == 0 && recv_count[me] == 0,
                 "exchange_records: a rank's own part is moved by the caller");
  // Ranks that are threads of this process copy every part straight out of the senders' arrays
  // in one collective (cluster/local_group.h).
  if (comm.is_in_process()) {
    comm.alltoallv_records(width, keys, counts, send_count, send_first, out_keys, out_counts,
                           recv_count, recv_first);
    return;
  }
  // Ranks that share one node pull the records from each other's memory on several threads
  // (cluster/cross_memory.h); where they cannot, MPI moves them in rounds.
  if (pull_records_cross_memory(comm, width, keys, counts, send_first, send_count, out_keys,
                                out_counts, recv_first, recv_count))
    return;
  const size_t per_round = std::max<size_t>(1, max_round_bytes / shuffle_record_bytes(width));

  // One collective agrees on the round count and checks that all widths are equal.
  size_t remote = 0;
  for (size_t d = 0; d < p; ++d) remote += send_count[d];
  uint64_t agree[3] = {(remote + per_round - 1) / per_round, width, UINT32_MAX - uint64_t{width}};
  comm.allreduce(std::span<uint64_t>(agree, 3), ReduceOp::kMax);
  if (agree[1] != width || agree[2] != UINT32_MAX - uint64_t{width}) {
    GTADOC_FAIL("shuffle: ranks disagree on the record width");
  }
  const uint64_t rounds = agree[0];

  // Rounds: MPI moves each round's records straight from the send arrays into their place in
  // the result (no packing, no receive buffer: each of those was a pass over the records plus
  // first-touch page faults, 0.5 s of a 0.36 GB shuffle on the H200 x4 host).
  std::vector<size_t> left(p), sent(p, 0), take(p), from(p), got_count(p);
  std::vector<size_t> write_at(recv_first.begin(), recv_first.end());
  for (uint64_t round = 0; round < rounds; ++round) {
    for (size_t d = 0; d < p; ++d) left[d] = send_count[d] - sent[d];
    fill_round(left, per_round, static_cast<size_t>(comm.rank() + round) % p, take);
    for (size_t d = 0; d < p; ++d) from[d] = send_first[d] + sent[d];
    const std::vector<uint64_t> take64(take.begin(), take.end());
    const std::vector<uint64_t> got = comm.alltoall(take64);
    for (size_t s = 0; s < p; ++s) {
      got_count[s] = got[s];
      GTADOC_EXPECTS(write_at[s] + got_count[s] <= recv_first[s] + recv_count[s],
                     "shuffle received too many records");
    }
    comm.alltoallv_records(width, keys, counts, take, from, out_keys, out_counts, got_count,
                           write_at);
    for (size_t d = 0; d < p; ++d) sent[d] += take[d];
    for (size_t s = 0; s < p; ++s) write_at[s] += got_count[s];
  }
  for (size_t s = 0; s < p; ++s) {
    GTADOC_EXPECTS(write_at[s] == recv_first[s] + recv_count[s],
                   "shuffle ended with records missing");
  }
}

RecordBatch shuffle_records(Comm& comm, const PartitionedRecords& parts, size_t max_round_bytes) {
  const RecordBatch& in = parts.records;
  const uint32_t w = in.width;
  const size_t p = static_cast<size_t>(comm.size());
  GTADOC_EXPECTS(parts.parts() == p, "shuffle needs one partition per rank (" +
                                         std::to_string(parts.parts()) + " partitions, " +
                                         std::to_string(p) + " ranks)");
  GTADOC_EXPECTS(parts.offsets.front() == 0 && parts.offsets.back() == in.size() &&
                     std::is_sorted(parts.offsets.begin(), parts.offsets.end()),
                 "partition offsets are inconsistent with the records");
  GTADOC_EXPECTS(w >= 1 && in.keys.size() == in.size() * w,
                 "record keys do not match counts and width");
  if (p == 1) return in;

  std::vector<uint64_t> send_total(p);
  for (size_t d = 0; d < p; ++d) send_total[d] = parts.part_size(static_cast<uint32_t>(d));
  const std::vector<uint64_t> recv_total = comm.alltoall(send_total);
  std::vector<size_t> at(p + 1, 0);  // the result's section of each source
  for (size_t s = 0; s < p; ++s) at[s + 1] = at[s] + recv_total[s];

  RecordBatch out;
  out.width = w;
  out.keys.resize(at[p] * w);
  out.counts.resize(at[p]);

  // This rank's own part never goes through MPI: copied straight into place.
  const size_t me = static_cast<size_t>(comm.rank());
  {
    const size_t first = parts.offsets[me], rows = send_total[me];
    std::memcpy(out.keys.data() + at[me] * w, in.keys.data() + first * w,
                rows * w * sizeof(uint32_t));
    std::memcpy(out.counts.data() + at[me], in.counts.data() + first, rows * sizeof(uint64_t));
  }
  std::vector<size_t> send_first(parts.offsets.begin(), parts.offsets.end() - 1);
  std::vector<size_t> send_count(send_total.begin(), send_total.end());
  std::vector<size_t> recv_count(recv_total.begin(), recv_total.end());
  send_count[me] = recv_count[me] = 0;
  exchange_records(comm, w, in.keys.data(), in.counts.data(), send_first, send_count,
                   out.keys.data(), out.counts.data(), std::span<const size_t>(at.data(), p),
                   recv_count, max_round_bytes);
  return out;
}

}  // namespace gtadoc
