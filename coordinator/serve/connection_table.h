// The open connections of `gtadoc serve` and what each is doing, so that idle or slow clients
// cannot lock others out. The table holds at most `capacity` connections; a new one when it is
// full takes the place of one that is cut: never one whose query waits for or runs on the
// cluster, first one that is reading a request (idle keep-alive, headers or body on their
// way), else one writing a response; among those the one from the source address holding the
// most connections, and of its connections the one in that phase longest. A new connection is
// refused only when every connection waits for a query. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gtadoc {

class ConnectionTable {
 public:
  enum class Phase { kReading, kWriting, kQuery };

  explicit ConnectionTable(size_t capacity) : capacity_(capacity) {}

  /// Registers a connection from `address` (in the reading phase); `cut` closes it (called
  /// without the table's lock held, must not block). Returns its id, or 0 when the table is full
  /// and no connection can be cut for it (it must be refused).
  uint64_t admit(const std::string& address, std::function<void()> cut);
  void set_phase(uint64_t id, Phase phase);
  /// The connection closed (or was cut): it leaves the table.
  void leave(uint64_t id);
  size_t size() const;
  uint64_t evicted() const;

 private:
  struct Entry {
    std::string address;
    Phase phase = Phase::kReading;
    std::chrono::steady_clock::time_point since;
    std::function<void()> cut;
  };
  void remove(std::unordered_map<uint64_t, Entry>::iterator it);

  const size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::unordered_map<std::string, size_t> per_address_;
  uint64_t next_id_ = 1;
  uint64_t evicted_ = 0;
};

}  // namespace gtadoc
