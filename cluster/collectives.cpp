// Comm's collectives and point-to-point messages (cluster/comm.h): each one a local copy with
// one rank, the in-process group's (cluster/local_group.h) for in-process ranks, and MPI calls
// otherwise, split into rounds where a message would pass max_message_bytes().
#include "cluster/comm.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cluster/comm_mpi.h"
#include "cluster/local_group.h"
#include "common/error.h"
#include "common/settings.h"

namespace gtadoc {

namespace {

/// Test hook GTADOC_FAULT_PAUSE="RANK:CALL:SECONDS[:FILE]": rank RANK of an MPI job sleeps
/// SECONDS on entering the helper CALL (barrier, broadcast, send_bytes, gather, alltoall,
/// alltoallv, alltoallv_records), after one line on standard error, so that a failure test can
/// strike while the other ranks wait in that collective. Once per process; with FILE, at every
/// such call that finds FILE, which it removes (once across restarts of a service).
void fault_pause(const char* call, int rank) {
  struct Spec {
    int rank = -1;
    std::string call, file;
    int seconds = 0;
  };
  static const Spec spec = [] {
    Spec s;
    const std::optional<std::string> v = settings::text_if_set("GTADOC_FAULT_PAUSE");
    if (!v) return s;
    std::vector<std::string> f(1);
    for (char c : *v) {
      if (c == ':' && f.size() < 4)
        f.emplace_back();
      else
        f.back() += c;
    }
    if (f.size() < 3) return s;
    s.rank = std::atoi(f[0].c_str());
    s.call = f[1];
    s.seconds = std::atoi(f[2].c_str());
    if (f.size() == 4) s.file = f[3];
    return s;
  }();
  if (spec.rank != rank || spec.call != call) return;
  if (spec.file.empty()) {
    static std::atomic<bool> done{false};
    if (done.exchange(true)) return;
  } else if (::unlink(spec.file.c_str()) != 0) {
    return;
  }
  std::fprintf(stderr, "gtadoc: test hook: rank %d pauses %d s in %s\n", rank, spec.seconds, call);
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::seconds(spec.seconds));
}

template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<uint8_t>() {
  return MPI_BYTE;
}
template <>
MPI_Datatype mpi_type<uint32_t>() {
  return MPI_UINT32_T;
}
template <>
MPI_Datatype mpi_type<uint64_t>() {
  return MPI_UINT64_T;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  GTADOC_FAIL("unknown ReduceOp");
}

// MPI rejects nothing for zero counts, but some implementations dislike null buffers.
template <typename T>
T* nonnull(T* p) {
  static T dummy{};
  return p != nullptr ? p : &dummy;
}
template <typename T>
const T* nonnull(const T* p) {
  static const T dummy{};
  return p != nullptr ? p : &dummy;
}

int to_int(size_t v) {
  GTADOC_EXPECTS(v <= static_cast<size_t>(INT_MAX), "MPI count exceeds INT_MAX");
  return static_cast<int>(v);
}

size_t ceil_div(size_t a, size_t b) {
  return (a + b - 1) / b;
}

/// The rounds of gather and allgather_bytes: every rank's bytes (`buf` here, sizes[r] on rank r)
/// move in one message when everything fits in one, otherwise in rounds of at most `quota` bytes
/// per rank, each round staged contiguously. `exchange(send, count, stage, counts, displs)` moves
/// one round (a Gatherv or an Allgatherv); where this rank `receives`, the staging buffer is sized
/// for the round and its bytes are copied into out[r] (sized sizes[r] by the caller).
template <typename Exchange>
void exchange_in_rounds(std::span<const uint8_t> buf, const std::vector<uint64_t>& sizes,
                        size_t max_message_bytes, int rank, bool receives,
                        std::vector<std::vector<uint8_t>>& out, Exchange&& exchange) {
  const size_t p = sizes.size();
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;
  const size_t quota = total <= max_message_bytes ? std::max<size_t>(1, total)
                                                  : std::max<size_t>(1, max_message_bytes / p);
  size_t rounds = 0;
  for (uint64_t s : sizes) rounds = std::max(rounds, ceil_div(s, quota));
  std::vector<int> counts(p), displs(p);
  std::vector<uint8_t> stage;
  for (size_t k = 0; k < rounds; ++k) {
    const size_t base = k * quota;
    int offset = 0;
    for (size_t r = 0; r < p; ++r) {
      const size_t left = sizes[r] > base ? sizes[r] - base : 0;
      counts[r] = static_cast<int>(std::min(left, quota));
      displs[r] = offset;
      offset += counts[r];
    }
    if (receives) stage.resize(static_cast<size_t>(offset));
    const int mine = counts[static_cast<size_t>(rank)];
    exchange(nonnull(buf.data() + std::min<size_t>(base, buf.size())), mine, nonnull(stage.data()),
             counts.data(), displs.data());
    if (receives) {
      for (size_t r = 0; r < p; ++r) {
        if (counts[r] > 0) std::memcpy(out[r].data() + base, stage.data() + displs[r], counts[r]);
      }
    }
  }
}

}  // namespace

void Comm::barrier() {
  if (distributed_) fault_pause("barrier", rank_);
  if (size_ == 1) return;
  if (group_) return group_->barrier();
  MPI_TRY(MPI_Barrier(mpi_->world));
}

void Comm::bcast_raw(void* data, size_t bytes, int root) {
  auto* p = static_cast<uint8_t*>(data);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(bytes - done, max_message_bytes_);
    MPI_TRY(MPI_Bcast(p + done, to_int(n), MPI_BYTE, root, mpi_->world));
    done += n;
  }
}

void Comm::broadcast(std::vector<uint8_t>& buf, int root) {
  GTADOC_EXPECTS(root >= 0 && root < size_, "broadcast root out of range");
  if (distributed_) fault_pause("broadcast", rank_);
  if (size_ == 1) return;
  if (group_) return group_->broadcast(rank_, buf, root);
  uint64_t bytes = buf.size();
  MPI_TRY(MPI_Bcast(&bytes, 1, MPI_UINT64_T, root, mpi_->world));
  if (rank_ != root) buf.resize(bytes);
  bcast_raw(buf.data(), bytes, root);
}

void Comm::broadcast_idle(std::vector<uint8_t>& buf, int root) {
  GTADOC_EXPECTS(root >= 0 && root < size_, "broadcast root out of range");
  if (size_ == 1) return;
  if (group_) return group_->broadcast(rank_, buf, root);  // waits on a condition: idle
  uint64_t bytes = buf.size();
  MPI_Request request;
  MPI_TRY(MPI_Ibcast(&bytes, 1, MPI_UINT64_T, root, mpi_->world, &request));
  int done = 0;
  for (auto pause = std::chrono::microseconds(20);;) {
    MPI_TRY(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
  if (rank_ != root) buf.resize(bytes);
  bcast_raw(buf.data(), bytes, root);
}

void Comm::send_bytes(std::span<const uint8_t> buf, int dest, int tag) {
  GTADOC_EXPECTS(dest >= 0 && dest < size_ && dest != rank_, "send_bytes: bad destination");
  if (distributed_) fault_pause("send_bytes", rank_);
  if (group_) return group_->send(rank_, dest, tag, buf);
  uint64_t bytes = buf.size();
  MPI_TRY(MPI_Send(&bytes, 1, MPI_UINT64_T, dest, tag, mpi_->world));
  for (size_t done = 0; done < buf.size();) {
    const size_t n = std::min(buf.size() - done, max_message_bytes_);
    MPI_TRY(MPI_Send(nonnull(buf.data() + done), to_int(n), MPI_BYTE, dest, tag, mpi_->world));
    done += n;
  }
}

std::vector<uint8_t> Comm::recv_bytes(int source, int tag) {
  GTADOC_EXPECTS(source >= 0 && source < size_ && source != rank_, "recv_bytes: bad source");
  if (group_) return group_->recv(source, rank_, tag);
  uint64_t bytes = 0;
  MPI_TRY(MPI_Recv(&bytes, 1, MPI_UINT64_T, source, tag, mpi_->world, MPI_STATUS_IGNORE));
  std::vector<uint8_t> out(bytes);
  for (size_t done = 0; done < out.size();) {
    const size_t n = std::min(out.size() - done, max_message_bytes_);
    MPI_TRY(MPI_Recv(nonnull(out.data() + done), to_int(n), MPI_BYTE, source, tag, mpi_->world,
                     MPI_STATUS_IGNORE));
    done += n;
  }
  return out;
}

std::vector<uint64_t> Comm::allgather(uint64_t value) {
  std::vector<uint64_t> out(static_cast<size_t>(size_));
  if (size_ == 1) {
    out[0] = value;
    return out;
  }
  if (group_) return group_->allgather(rank_, value);
  MPI_TRY(MPI_Allgather(&value, 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, mpi_->world));
  return out;
}

uint64_t Comm::allreduce(uint64_t value, ReduceOp op) {
  allreduce(std::span<uint64_t>(&value, 1), op);
  return value;
}

void Comm::allreduce(std::span<uint64_t> values, ReduceOp op) {
  if (size_ == 1) return;
  if (group_) return group_->allreduce(rank_, values, op);
  const size_t chunk = std::max<size_t>(1, max_message_bytes_ / sizeof(uint64_t));
  for (size_t done = 0; done < values.size();) {
    const size_t n = std::min(values.size() - done, chunk);
    MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, values.data() + done, to_int(n), MPI_UINT64_T, mpi_op(op),
                          mpi_->world));
    done += n;
  }
}

bool Comm::allreduce_and(bool value) {
  if (size_ == 1) return value;
  if (group_) return allreduce(value ? 1 : 0, ReduceOp::kMin) != 0;
  int v = value ? 1 : 0;
  MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LAND, mpi_->world));
  return v != 0;
}

bool Comm::allreduce_or(bool value) {
  if (size_ == 1) return value;
  if (group_) return allreduce(value ? 1 : 0, ReduceOp::kMax) != 0;
  int v = value ? 1 : 0;
  MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LOR, mpi_->world));
  return v != 0;
}

std::vector<uint64_t> Comm::alltoall(std::span<const uint64_t> send) {
  GTADOC_EXPECTS(send.size() == static_cast<size_t>(size_), "alltoall needs one value per rank");
  if (distributed_) fault_pause("alltoall", rank_);
  std::vector<uint64_t> out(send.begin(), send.end());
  if (size_ == 1) return out;
  if (group_) return group_->alltoall(rank_, send);
  MPI_TRY(MPI_Alltoall(send.data(), 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, mpi_->world));
  return out;
}

std::vector<std::vector<uint8_t>> Comm::gather(std::span<const uint8_t> buf, int root) {
  GTADOC_EXPECTS(root >= 0 && root < size_, "gather root out of range");
  if (distributed_) fault_pause("gather", rank_);
  std::vector<std::vector<uint8_t>> out;
  if (size_ == 1) {
    out.emplace_back(buf.begin(), buf.end());
    return out;
  }
  if (group_) return group_->allgather_bytes(rank_, buf, root);
  const std::vector<uint64_t> sizes = allgather(buf.size());
  const size_t p = static_cast<size_t>(size_);
  const bool is_root = rank_ == root;
  if (is_root) {
    out.resize(p);
    for (size_t r = 0; r < p; ++r) out[r].resize(sizes[r]);
  }
  exchange_in_rounds(buf, sizes, max_message_bytes_, rank_, is_root, out,
                     [&](const uint8_t* send, int count, uint8_t* stage, const int* counts,
                         const int* displs) {
                       MPI_TRY(MPI_Gatherv(send, count, MPI_BYTE, stage, counts, displs, MPI_BYTE,
                                           root, mpi_->world));
                     });
  return out;
}

std::vector<std::vector<uint8_t>> Comm::allgather_bytes(std::span<const uint8_t> buf) {
  std::vector<std::vector<uint8_t>> out;
  if (size_ == 1) {
    out.emplace_back(buf.begin(), buf.end());
    return out;
  }
  if (group_) return group_->allgather_bytes(rank_, buf);
  const std::vector<uint64_t> sizes = allgather(buf.size());
  const size_t p = static_cast<size_t>(size_);
  out.resize(p);
  for (size_t r = 0; r < p; ++r) out[r].resize(sizes[r]);
  exchange_in_rounds(buf, sizes, max_message_bytes_, rank_, /*receives=*/true, out,
                     [&](const uint8_t* send, int count, uint8_t* stage, const int* counts,
                         const int* displs) {
                       MPI_TRY(MPI_Allgatherv(send, count, MPI_BYTE, stage, counts, displs,
                                              MPI_BYTE, mpi_->world));
                     });
  return out;
}

template <typename T>
std::vector<T> Comm::alltoallv_impl(std::span<const T> send, std::span<const size_t> send_counts,
                                    std::vector<size_t>* recv_counts) {
  const size_t p = static_cast<size_t>(size_);
  GTADOC_EXPECTS(send_counts.size() == p, "alltoallv needs one send count per rank");
  if (distributed_) fault_pause("alltoallv", rank_);
  size_t send_total = 0;
  for (size_t c : send_counts) send_total += c;
  GTADOC_EXPECTS(send_total == send.size(), "alltoallv send counts do not match the buffer");
  if (size_ == 1) {
    if (recv_counts) recv_counts->assign(1, send_total);
    return std::vector<T>(send.begin(), send.end());
  }
  if (group_) {
    const std::vector<uint8_t> got = group_->alltoallv(
        rank_, {reinterpret_cast<const uint8_t*>(send.data()), send.size() * sizeof(T)}, sizeof(T),
        send_counts, recv_counts);
    std::vector<T> out(got.size() / sizeof(T));
    if (!got.empty()) std::memcpy(out.data(), got.data(), got.size());
    return out;
  }

  std::vector<uint64_t> sc(send_counts.begin(), send_counts.end());
  const std::vector<uint64_t> rc = alltoall(sc);
  std::vector<size_t> soff(p + 1, 0), roff(p + 1, 0);
  for (size_t r = 0; r < p; ++r) {
    soff[r + 1] = soff[r] + sc[r];
    roff[r + 1] = roff[r] + rc[r];
  }
  if (recv_counts) recv_counts->assign(rc.begin(), rc.end());
  std::vector<T> out(roff[p]);

  const size_t limit = std::max<size_t>(1, max_message_bytes_ / sizeof(T));
  const size_t quota = std::max<size_t>(1, limit / p);
  uint64_t agree[2] = {send_total > limit || roff[p] > limit ? 1u : 0u, 0};
  for (size_t r = 0; r < p; ++r) {
    agree[1] = std::max<uint64_t>(agree[1], ceil_div(std::max(sc[r], rc[r]), quota));
  }
  allreduce(std::span<uint64_t>(agree, 2), ReduceOp::kMax);

  std::vector<int> scount(p), sdispl(p), rcount(p), rdispl(p);
  if (agree[0] == 0) {  // every rank's totals fit in one message
    for (size_t r = 0; r < p; ++r) {
      scount[r] = to_int(sc[r]);
      sdispl[r] = to_int(soff[r]);
      rcount[r] = to_int(rc[r]);
      rdispl[r] = to_int(roff[r]);
    }
    MPI_TRY(MPI_Alltoallv(nonnull(send.data()), scount.data(), sdispl.data(), mpi_type<T>(),
                          nonnull(out.data()), rcount.data(), rdispl.data(), mpi_type<T>(),
                          mpi_->world));
    return out;
  }

  // Rounds: each pair moves at most `quota` elements per round, staged contiguously.
  std::vector<T> sstage, rstage;
  for (uint64_t k = 0; k < agree[1]; ++k) {
    const size_t base = k * quota;
    int so = 0, ro = 0;
    for (size_t r = 0; r < p; ++r) {
      scount[r] = static_cast<int>(std::min<size_t>(sc[r] > base ? sc[r] - base : 0, quota));
      rcount[r] = static_cast<int>(std::min<size_t>(rc[r] > base ? rc[r] - base : 0, quota));
      sdispl[r] = so;
      rdispl[r] = ro;
      so += scount[r];
      ro += rcount[r];
    }
    sstage.resize(static_cast<size_t>(so));
    rstage.resize(static_cast<size_t>(ro));
    for (size_t r = 0; r < p; ++r) {
      if (scount[r] > 0) {
        std::memcpy(sstage.data() + sdispl[r], send.data() + soff[r] + base,
                    static_cast<size_t>(scount[r]) * sizeof(T));
      }
    }
    MPI_TRY(MPI_Alltoallv(nonnull(sstage.data()), scount.data(), sdispl.data(), mpi_type<T>(),
                          nonnull(rstage.data()), rcount.data(), rdispl.data(), mpi_type<T>(),
                          mpi_->world));
    for (size_t r = 0; r < p; ++r) {
      if (rcount[r] > 0) {
        std::memcpy(out.data() + roff[r] + base, rstage.data() + rdispl[r],
                    static_cast<size_t>(rcount[r]) * sizeof(T));
      }
    }
  }
  return out;
}

void Comm::alltoallv_records(uint32_t width, const uint32_t* keys, const uint64_t* counts,
                             std::span<const size_t> send_count, std::span<const size_t> send_first,
                             uint32_t* out_keys, uint64_t* out_counts,
                             std::span<const size_t> recv_count,
                             std::span<const size_t> recv_first) {
  const size_t p = static_cast<size_t>(size_);
  GTADOC_EXPECTS(send_count.size() == p && send_first.size() == p && recv_count.size() == p &&
                     recv_first.size() == p,
                 "alltoallv_records needs one count and position per rank");
  GTADOC_EXPECTS(width >= 1, "alltoallv_records: records without keys");
  if (distributed_) fault_pause("alltoallv_records", rank_);
  if (group_ && size_ > 1)
    return group_->alltoallv_records(rank_, width, keys, counts, send_count, send_first, out_keys,
                                     out_counts, recv_count, recv_first);
  if (!distributed_) {  // one rank: its records to itself
    GTADOC_EXPECTS(send_count[0] == recv_count[0], "alltoallv_records: counts disagree");
    std::memmove(out_keys + recv_first[0] * width, keys + send_first[0] * width,
                 send_count[0] * width * sizeof(uint32_t));
    std::memmove(out_counts + recv_first[0], counts + send_first[0],
                 send_count[0] * sizeof(uint64_t));
    return;
  }
  std::vector<int> sc(p), sd(p), rc(p), rd(p);
  for (size_t r = 0; r < p; ++r) {
    sc[r] = to_int(send_count[r]);
    sd[r] = to_int(send_first[r]);
    rc[r] = to_int(recv_count[r]);
    rd[r] = to_int(recv_first[r]);
  }
  // One key row is one element of a contiguous type: positions count records, not values.
  MPI_Datatype row = MPI_DATATYPE_NULL;
  MPI_TRY(MPI_Type_contiguous(static_cast<int>(width), MPI_UINT32_T, &row));
  struct Free {
    MPI_Datatype& t;
    ~Free() { MPI_Type_free(&t); }
  } free_row{row};
  MPI_TRY(MPI_Type_commit(&row));
  MPI_TRY(MPI_Alltoallv(nonnull(keys), sc.data(), sd.data(), row, nonnull(out_keys), rc.data(),
                        rd.data(), row, mpi_->world));
  MPI_TRY(MPI_Alltoallv(nonnull(counts), sc.data(), sd.data(), MPI_UINT64_T, nonnull(out_counts),
                        rc.data(), rd.data(), MPI_UINT64_T, mpi_->world));
}

std::vector<uint8_t> Comm::alltoallv(std::span<const uint8_t> send,
                                     std::span<const size_t> send_counts,
                                     std::vector<size_t>* recv_counts) {
  return alltoallv_impl<uint8_t>(send, send_counts, recv_counts);
}

std::vector<uint32_t> Comm::alltoallv(std::span<const uint32_t> send,
                                      std::span<const size_t> send_counts,
                                      std::vector<size_t>* recv_counts) {
  return alltoallv_impl<uint32_t>(send, send_counts, recv_counts);
}

std::vector<uint64_t> Comm::alltoallv(std::span<const uint64_t> send,
                                      std::span<const size_t> send_counts,
                                      std::vector<size_t>* recv_counts) {
  return alltoallv_impl<uint64_t>(send, send_counts, recv_counts);
}

}  // namespace gtadoc
