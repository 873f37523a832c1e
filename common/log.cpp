#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

namespace gtadoc {

namespace {

std::string g_prefix;               // init_logging's, for every thread
thread_local std::string t_prefix;  // set_thread_log_prefix's

/// %* in the pattern: " [prefix]" of the logging thread, or of the process, or nothing.
class PrefixFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string& p = t_prefix.empty() ? g_prefix : t_prefix;
    if (p.empty()) return;
    dest.push_back(' ');
    dest.push_back('[');
    dest.append(p.data(), p.data() + p.size());
    dest.push_back(']');
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PrefixFlag>();
  }
};

}  // namespace

void init_logging(int verbosity, const std::string& prefix) {
  auto logger = spdlog::get("gtadoc");
  if (!logger) logger = spdlog::stderr_color_mt("gtadoc");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbosity <= 0   ? spdlog::level::warn
                    : verbosity == 1 ? spdlog::level::info
                                     : spdlog::level::debug);
  g_prefix = prefix;
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<PrefixFlag>('*').set_pattern("gtadoc%*: %l: %v");
  spdlog::set_formatter(std::move(formatter));
}

void set_thread_log_prefix(const std::string& prefix) {
  t_prefix = prefix;
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
