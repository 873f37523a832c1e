// Logging and progress: spdlog to stderr (warnings by default; -v for info, -vv for debug), and a
// progress line that is drawn only when stderr is a terminal, so batch runs stay quiet.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace gtadoc {

/// Sets up the stderr logger; verbosity 0 = warn, 1 = info, 2+ = debug. `prefix` (e.g. "rank 3")
/// is put in front of every message when not empty.
void init_logging(int verbosity, const std::string& prefix = "");

/// The prefix of messages logged by the calling thread (e.g. "rank 1" for a rank that is a
/// thread of this process); empty = init_logging's prefix. Threads the caller starts log with
/// the process's prefix.
void set_thread_log_prefix(const std::string& prefix);

/// A thread-safe "label: done/total unit" line redrawn at most every 200 ms on a terminal.
class Progress {
 public:
  Progress(std::string label, uint64_t total, std::string unit, bool enabled);
  ~Progress();
  void add(uint64_t amount);
  void finish();

 private:
  void draw(bool final_line);
  std::string label_, unit_;
  uint64_t total_;
  bool terminal_;  ///< redraw one line on a terminal; elsewhere a line every few seconds
  std::atomic<uint64_t> done_{0};
  bool enabled_;
  bool finished_ = false;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

/// True when stderr is a terminal (progress lines are worth drawing).
bool stderr_is_terminal();

}  // namespace gtadoc
