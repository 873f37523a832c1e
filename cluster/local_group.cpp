// LocalGroup: collectives of ranks that are threads of one process. See local_group.h.
#include "cluster/local_group.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"

namespace gtadoc {

namespace {

/// What a rank posts for alltoallv / alltoallv_records: where its data is and what goes where.
struct Sends {
  const uint8_t* data;            // alltoallv: the elements
  const uint32_t* keys;           // alltoallv_records
  const uint64_t* counts;         // alltoallv_records
  std::span<const size_t> count;  // per destination, elements or records
  std::span<const size_t> first;  // per destination (records), or the offsets (alltoallv)
  uint32_t width;                 // alltoallv_records: key values per record
};

/// Copies of at least this many bytes are split over threads (a rank's share of the cores).
constexpr size_t kParallelCopyBytes = size_t{8} << 20;

void copy_bytes(void* to, const void* from, size_t bytes, unsigned threads) {
  if (bytes == 0) return;
  const size_t pieces = std::min<size_t>(threads, bytes / (kParallelCopyBytes / 4) + 1);
  if (bytes < kParallelCopyBytes || pieces <= 1) {
    std::memcpy(to, from, bytes);
    return;
  }
  const size_t step = (bytes + pieces - 1) / pieces;
  parallel_for(pieces, static_cast<unsigned>(pieces), [&](size_t i) {
    const size_t at = i * step;
    if (at < bytes)
      std::memcpy(static_cast<uint8_t*>(to) + at, static_cast<const uint8_t*>(from) + at,
                  std::min(step, bytes - at));
  });
}

}  // namespace

LocalGroup::LocalGroup(int size) : size_(size), posts_(static_cast<size_t>(size), nullptr) {
  GTADOC_EXPECTS(size >= 1, "LocalGroup needs at least one rank");
}

void LocalGroup::fail() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed_ = true;
  }
  cv_.notify_all();
}

void LocalGroup::wait(std::unique_lock<std::mutex>& lock) {
  if (failed_) throw LocalGroupAborted();
  const uint64_t gen = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != gen || failed_; });
  if (generation_ == gen) throw LocalGroupAborted();  // failed before every rank arrived
}

void LocalGroup::barrier() {
  std::unique_lock<std::mutex> lock(mu_);
  wait(lock);
}

const std::vector<const void*>& LocalGroup::meet(int rank, const void* mine) {
  std::unique_lock<std::mutex> lock(mu_);
  posts_[static_cast<size_t>(rank)] = mine;
  wait(lock);
  return posts_;
}

void LocalGroup::broadcast(int rank, std::vector<uint8_t>& buf, int root) {
  exchange(rank, &buf, [&](const std::vector<const void*>& all) {
    if (rank != root) buf = *static_cast<const std::vector<uint8_t>*>(all[root]);
  });
}

std::vector<uint64_t> LocalGroup::allgather(int rank, uint64_t value) {
  std::vector<uint64_t> out(static_cast<size_t>(size_));
  exchange(rank, &value, [&](const std::vector<const void*>& all) {
    for (int r = 0; r < size_; ++r) out[r] = *static_cast<const uint64_t*>(all[r]);
  });
  return out;
}

void LocalGroup::allreduce(int rank, std::span<uint64_t> values, ReduceOp op) {
  std::vector<uint64_t> result(values.begin(), values.end());
  exchange(rank, &values, [&](const std::vector<const void*>& all) {
    for (int r = 0; r < size_; ++r) {
      const auto& other = *static_cast<const std::span<uint64_t>*>(all[r]);
      GTADOC_EXPECTS(other.size() == values.size(), "allreduce: lengths differ between ranks");
      for (size_t i = 0; i < result.size(); ++i) {
        switch (op) {
          case ReduceOp::kSum:
            result[i] = r == 0 ? other[i] : result[i] + other[i];
            break;
          case ReduceOp::kMax:
            result[i] = r == 0 ? other[i] : std::max(result[i], other[i]);
            break;
          case ReduceOp::kMin:
            result[i] = r == 0 ? other[i] : std::min(result[i], other[i]);
            break;
        }
      }
    }
  });
  std::copy(result.begin(), result.end(), values.begin());
}

std::vector<uint64_t> LocalGroup::alltoall(int rank, std::span<const uint64_t> send) {
  GTADOC_EXPECTS(send.size() == static_cast<size_t>(size_), "alltoall needs one value per rank");
  std::vector<uint64_t> out(send.size());
  exchange(rank, send.data(), [&](const std::vector<const void*>& all) {
    for (int r = 0; r < size_; ++r) out[r] = static_cast<const uint64_t*>(all[r])[rank];
  });
  return out;
}

std::vector<std::vector<uint8_t>> LocalGroup::allgather_bytes(int rank,
                                                              std::span<const uint8_t> buf,
                                                              int root) {
  std::vector<std::vector<uint8_t>> out;
  if (root < 0 || rank == root) out.resize(static_cast<size_t>(size_));
  exchange(rank, &buf, [&](const std::vector<const void*>& all) {
    for (int r = 0; r < static_cast<int>(out.size()); ++r) {
      const auto& other = *static_cast<const std::span<const uint8_t>*>(all[r]);
      out[r].assign(other.begin(), other.end());
    }
  });
  return out;
}

std::vector<uint8_t> LocalGroup::alltoallv(int rank, std::span<const uint8_t> send, size_t elem,
                                           std::span<const size_t> send_counts,
                                           std::vector<size_t>* recv_counts) {
  const size_t p = static_cast<size_t>(size_);
  GTADOC_EXPECTS(send_counts.size() == p, "alltoallv needs one send count per rank");
  size_t total = 0;
  std::vector<size_t> offsets(p);
  for (size_t d = 0; d < p; ++d) {
    offsets[d] = total;
    total += send_counts[d];
  }
  GTADOC_EXPECTS(total * elem == send.size(), "alltoallv send counts do not match the buffer");
  const Sends mine{send.data(), nullptr, nullptr, send_counts, offsets, 0};
  std::vector<uint8_t> out;
  exchange(rank, &mine, [&](const std::vector<const void*>& all) {
    std::vector<size_t> rc(p);
    size_t in = 0;
    for (size_t s = 0; s < p; ++s) {
      rc[s] = static_cast<const Sends*>(all[s])->count[static_cast<size_t>(rank)];
      in += rc[s];
    }
    out.resize(in * elem);
    size_t at = 0;
    for (size_t s = 0; s < p; ++s) {
      const Sends& from = *static_cast<const Sends*>(all[s]);
      std::memcpy(out.data() + at * elem, from.data + from.first[rank] * elem, rc[s] * elem);
      at += rc[s];
    }
    if (recv_counts != nullptr) recv_counts->assign(rc.begin(), rc.end());
  });
  return out;
}

void LocalGroup::alltoallv_records(int rank, uint32_t width, const uint32_t* keys,
                                   const uint64_t* counts, std::span<const size_t> send_count,
                                   std::span<const size_t> send_first, uint32_t* out_keys,
                                   uint64_t* out_counts, std::span<const size_t> recv_count,
                                   std::span<const size_t> recv_first) {
  const size_t p = static_cast<size_t>(size_);
  const Sends mine{nullptr, keys, counts, send_count, send_first, width};
  // The copies run on this rank's share of the cores (the other ranks pull at the same time).
  const unsigned threads = std::max(1u, usable_cpus() / static_cast<unsigned>(p));
  exchange(rank, &mine, [&](const std::vector<const void*>& all) {
    for (size_t s = 0; s < p; ++s) {
      const Sends& from = *static_cast<const Sends*>(all[s]);
      const size_t n = from.count[static_cast<size_t>(rank)];
      GTADOC_EXPECTS(from.width == width, "shuffle: ranks disagree on the record width");
      GTADOC_EXPECTS(n == recv_count[s], "alltoallv_records: counts disagree between ranks");
      const size_t first = from.first[static_cast<size_t>(rank)];
      if (s == static_cast<size_t>(rank)) {  // its own part: the arrays may be the same
        std::memmove(out_keys + recv_first[s] * width, keys + first * width,
                     n * width * sizeof(uint32_t));
        std::memmove(out_counts + recv_first[s], counts + first, n * sizeof(uint64_t));
        continue;
      }
      copy_bytes(out_keys + recv_first[s] * width, from.keys + first * width,
                 n * width * sizeof(uint32_t), threads);
      copy_bytes(out_counts + recv_first[s], from.counts + first, n * sizeof(uint64_t), threads);
    }
  });
}

std::shared_ptr<const void> LocalGroup::once(
    const std::string& key, const std::function<std::shared_ptr<const void>()>& make) {
  std::promise<std::shared_ptr<const void>> made;
  std::shared_future<std::shared_ptr<const void>> value;
  bool maker = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = once_.find(key);
    if (it == once_.end()) {
      maker = true;
      value = made.get_future().share();
      once_.emplace(key, value);
    } else {
      value = it->second;
    }
  }
  if (maker) {
    try {
      made.set_value(make());
    } catch (...) {
      made.set_exception(std::current_exception());
    }
  }
  return value.get();
}

void LocalGroup::send(int source, int dest, int tag, std::span<const uint8_t> buf) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    Mailbox& box = mail_[{source, dest, tag}];
    cv_.wait(lock, [&] {
      return failed_ || box.pieces.empty() || box.bytes + buf.size() <= kMailboxBytes;
    });
    if (failed_) throw LocalGroupAborted();
    box.pieces.emplace_back(buf.begin(), buf.end());
    box.bytes += buf.size();
  }
  cv_.notify_all();
}

std::vector<uint8_t> LocalGroup::recv(int source, int dest, int tag) {
  std::vector<uint8_t> out;
  {
    std::unique_lock<std::mutex> lock(mu_);
    Mailbox& box = mail_[{source, dest, tag}];
    cv_.wait(lock, [&] { return !box.pieces.empty() || failed_; });
    if (box.pieces.empty()) throw LocalGroupAborted();
    out = std::move(box.pieces.front());
    box.pieces.pop_front();
    box.bytes -= out.size();
  }
  cv_.notify_all();  // a sender may be waiting for room
  return out;
}

std::vector<std::exception_ptr> run_in_process_ranks(int n,
                                                     const std::function<void(Comm&)>& body) {
  std::vector<std::unique_ptr<Comm>> comms = Comm::in_process_ranks(n);
  std::vector<std::exception_ptr> failures(static_cast<size_t>(n));
  auto rank_main = [&](int r) {
    Comm& comm = *comms[static_cast<size_t>(r)];
    set_thread_log_prefix(n > 1 ? "rank " + std::to_string(r) : "");
    try {
      body(comm);
    } catch (const CollectiveError&) {
      failures[r] = std::current_exception();
    } catch (const LocalGroupAborted&) {
      failures[r] = std::current_exception();
    } catch (...) {
      failures[r] = std::current_exception();
      comm.abandon();
    }
    set_thread_log_prefix("");
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int r = 1; r < n; ++r) threads.emplace_back(rank_main, r);
  rank_main(0);
  for (std::thread& t : threads) t.join();
  return failures;
}

}  // namespace gtadoc
