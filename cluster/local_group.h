// Ranks that are threads of one process: the collectives of Comm (cluster/comm.h) for a job run
// without a launcher on several GPUs of one machine (`gtadoc run|serve --gpus N`). Every rank's
// Comm shares one LocalGroup; a collective is "post what I contribute, meet the others, read what I
// need straight out of their memory, meet again" (no copies through a transport), so that every
// rank may free or change its buffers as soon as the call returns.
//
// Guarantees:
//  - The semantics of the matching Comm calls (same order on every rank, results in rank order).
//  - A failing rank poisons the group (fail(), or an exception escaping a collective's read
//    phase): every rank waiting in, or later entering, a collective throws LocalGroupAborted, so
//    no thread is left waiting; the failing rank's own error is the one to report.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace gtadoc {

enum class ReduceOp;

/// Thrown in a rank whose group another rank left with an error; that rank reports the error.
class LocalGroupAborted : public std::exception {
 public:
  const char* what() const noexcept override { return "another rank of this process failed"; }
};

class LocalGroup {
 public:
  explicit LocalGroup(int size);
  int size() const { return size_; }

  /// Ends every current and future collective with LocalGroupAborted. Idempotent.
  void fail();

  void barrier();
  /// Every rank's `mine`, on every rank, while `read(all)` runs; then a second meeting, so no
  /// rank's `mine` is released before every rank has read. An exception from `read` fails the
  /// group and is rethrown.
  template <typename F>
  void exchange(int rank, const void* mine, F&& read) {
    const std::vector<const void*>& all = meet(rank, mine);
    try {
      read(all);
    } catch (...) {
      fail();
      throw;
    }
    barrier();
  }

  void broadcast(int rank, std::vector<uint8_t>& buf, int root);
  std::vector<uint64_t> allgather(int rank, uint64_t value);
  void allreduce(int rank, std::span<uint64_t> values, ReduceOp op);
  std::vector<uint64_t> alltoall(int rank, std::span<const uint64_t> send);
  /// Every rank's `buf`, in rank order, on every rank (`root` < 0) or on `root` only (the other
  /// ranks get an empty vector).
  std::vector<std::vector<uint8_t>> allgather_bytes(int rank, std::span<const uint8_t> buf,
                                                    int root = -1);
  /// Comm::alltoallv for elements of `elem` bytes; counts in elements.
  std::vector<uint8_t> alltoallv(int rank, std::span<const uint8_t> send, size_t elem,
                                 std::span<const size_t> send_counts,
                                 std::vector<size_t>* recv_counts);
  /// Comm::alltoallv_records.
  void alltoallv_records(int rank, uint32_t width, const uint32_t* keys, const uint64_t* counts,
                         std::span<const size_t> send_count, std::span<const size_t> send_first,
                         uint32_t* out_keys, uint64_t* out_counts,
                         std::span<const size_t> recv_count, std::span<const size_t> recv_first);

  /// The value `make` returns, made once for the whole group under `key`: the first rank to ask
  /// makes it, the others wait for and share it (or its exception). Kept while the group lives.
  std::shared_ptr<const void> once(const std::string& key,
                                   const std::function<std::shared_ptr<const void>()>& make);

  /// Point to point, in order per (source, destination, tag). A send waits while what it would
  /// add to the pieces not yet received passes kMailboxBytes (one piece always goes), so a fast
  /// sender holds a bounded amount, as MPI's rendezvous sends do.
  static constexpr size_t kMailboxBytes = size_t{64} << 20;
  void send(int source, int dest, int tag, std::span<const uint8_t> buf);
  std::vector<uint8_t> recv(int source, int dest, int tag);

 private:
  /// Posts `mine` and waits for every rank; returns the posts.
  const std::vector<const void*>& meet(int rank, const void* mine);
  void wait(std::unique_lock<std::mutex>& lock);

  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  int arrived_ = 0;
  bool failed_ = false;
  std::vector<const void*> posts_;
  struct Mailbox {
    std::deque<std::vector<uint8_t>> pieces;
    size_t bytes = 0;
  };
  std::map<std::tuple<int, int, int>, Mailbox> mail_;
  std::map<std::string, std::shared_future<std::shared_ptr<const void>>> once_;
};

class Comm;

/// Runs body(rank r's communicator) for every rank of a new in-process group of `n` ranks, rank
/// r on its own thread (rank 0 on the caller's), each logging as "rank r". A rank whose body
/// throws anything but CollectiveError (every rank knows those) or LocalGroupAborted abandons
/// the group, so no rank waits for it. Returns after every rank ended: element r is what rank r's
/// body threw, null when it returned.
std::vector<std::exception_ptr> run_in_process_ranks(int n, const std::function<void(Comm&)>& body);

}  // namespace gtadoc
