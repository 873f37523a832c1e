// The bytes of one HTTP response on their way from the query executor to the client's
// connection. The executor (the one producer) appends and never waits for the client: bytes stay
// in memory up to a bound per response and a bound over all responses (ResponseMemory); what
// does not fit goes to an unnamed temporary file, deleted when the pipe goes. The connection's
// session (the one consumer) takes the bytes in order, in pieces of at most kPieceBytes, and
// writes them at the client's pace. When the session gives up (the client went away or did not
// read in time) it abandons the pipe: what it buffered is freed at once and later appends are
// dropped (append returns false). Thread-safe between the producer and the consumer.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

namespace gtadoc {

/// The memory that all responses waiting for their clients may hold together.
class ResponseMemory {
 public:
  explicit ResponseMemory(uint64_t capacity) : capacity_(capacity) {}
  /// Takes `bytes` of the budget; false (nothing taken) when they do not fit.
  bool take(uint64_t bytes);
  void give(uint64_t bytes) { used_.fetch_sub(bytes); }
  uint64_t used() const { return used_.load(); }
  uint64_t capacity() const { return capacity_; }

 private:
  const uint64_t capacity_;
  std::atomic<uint64_t> used_{0};
};

class ResponsePipe {
 public:
  static constexpr size_t kPieceBytes = 256 * 1024;

  /// `own_limit`: bytes this response may hold in memory (also within `shared`); the rest is
  /// spilled to a file in `spill_dir`.
  ResponsePipe(ResponseMemory& shared, uint64_t own_limit, std::string spill_dir);
  ~ResponsePipe();
  ResponsePipe(const ResponsePipe&) = delete;
  ResponsePipe& operator=(const ResponsePipe&) = delete;

  // ---- producer (the executor)
  /// Appends bytes; false once the consumer abandoned the pipe or the spill file failed (the
  /// rest of the response is then dropped, and the consumer closes the connection).
  bool append(const char* data, size_t size);
  /// The response is complete; `keep_alive`: the connection may serve another request after it.
  void close(bool keep_alive);
  /// Bytes that went to the spill file so far.
  uint64_t spilled() const;

  // ---- consumer (the connection's session)
  enum class State { kData, kWait, kEnd, kFailed };
  struct Piece {
    State state = State::kWait;
    std::string bytes;        ///< kData: the next bytes, in order
    bool keep_alive = false;  ///< kEnd: whether the connection may stay open
  };
  /// The next piece; kWait when there is none yet: `wake` is then called (on the producer's
  /// thread, without blocking) once there is.
  Piece take();
  /// Called by the producer when data or the end arrives while the consumer waits.
  void set_wake(std::function<void()> wake);
  /// The consumer gives up: buffered bytes are freed and later appends fail.
  void abandon();

 private:
  struct Segment {
    std::string bytes;         ///< in memory, or empty when the segment is in the file
    uint64_t file_offset = 0;  ///< in the file: where it starts
    uint64_t file_size = 0;    ///< in the file: its length (0 for a memory segment)
  };
  bool spill(const char* data, size_t size);  ///< appends to the file (producer only)
  void notify(std::unique_lock<std::mutex>& lock);

  ResponseMemory& shared_;
  const uint64_t own_limit_;
  const std::string spill_dir_;
  mutable std::mutex mu_;
  std::deque<Segment> segments_;
  std::function<void()> wake_;
  uint64_t memory_ = 0;    ///< bytes of memory segments (taken from shared_)
  uint64_t file_end_ = 0;  ///< bytes written to the file (producer only, read under mu_)
  uint64_t spilled_ = 0;
  int fd_ = -1;           ///< the spill file (opened by the producer on first use)
  bool waiting_ = false;  ///< the consumer waits for a wake
  bool closed_ = false, keep_alive_ = false, failed_ = false, abandoned_ = false;
};

}  // namespace gtadoc
