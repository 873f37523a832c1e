#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <unistd.h>

#include <cstdio>

namespace gtadoc {

void init_logging(int verbosity, const std::string& prefix) {
  auto logger = spdlog::get("gtadoc");
  if (!logger) logger = spdlog::stderr_color_mt("gtadoc");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbosity <= 0   ? spdlog::level::warn
                    : verbosity == 1 ? spdlog::level::info
                                     : spdlog::level::debug);
  std::string pattern = "gtadoc";
  if (!prefix.empty()) pattern += " [" + prefix + "]";
  spdlog::set_pattern(pattern + ": %l: %v");
}

bool stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

Progress::Progress(std::string label, uint64_t total, std::string unit, bool enabled)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      terminal_(stderr_is_terminal()),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() {
  finish();
}

void Progress::add(uint64_t amount) {
  done_ += amount;
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(terminal_ ? 200 : 2000)) return;
  last_draw_ = now;
  draw(false);
}

void Progress::finish() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  draw(true);
}

void Progress::draw(bool final_line) {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  uint64_t done = done_.load();
  double pct = total_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0;
  std::fprintf(stderr, "%s%s: %5.1f%% (%llu/%llu %s, %.1fs)%s", terminal_ ? "\r" : "",
               label_.c_str(), pct, static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total_), unit_.c_str(), secs,
               final_line || !terminal_ ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace gtadoc
