#include "coordinator/compress/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace gtadoc {
namespace {

namespace fs = std::filesystem;

/// A cgroup limit file's value in bytes; 0 when absent, unreadable or unlimited ("max").
uint64_t read_limit(const fs::path& file) {
  std::ifstream in(file);
  std::string v;
  if (!(in >> v) || v.empty() || v == "max" ||
      v.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return std::strtoull(v.c_str(), nullptr, 10);
}

/// The smallest limit along `dir` and its parents up to `root` (cgroup limits nest).
uint64_t limit_along(const fs::path& root, const std::string& rel, const char* name) {
  uint64_t best = 0;
  fs::path p = root / fs::path(rel).relative_path();
  for (;;) {
    const uint64_t v = read_limit(p / name);
    if (v > 0 && (best == 0 || v < best)) best = v;
    if (p == root || !p.has_parent_path() || p.parent_path() == p) break;
    p = p.parent_path();
    if (p.string().size() < root.string().size()) break;
  }
  return best;
}

uint64_t cgroup_limit() {
  uint64_t best = 0;
  auto take = [&](uint64_t v) {
    if (v > 0 && (best == 0 || v < best)) best = v;
  };
  std::ifstream cg("/proc/self/cgroup");
  std::string line;
  while (std::getline(cg, line)) {
    // "0::/path" (v2) or "N:controllers:/path" (v1).
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), rel = line.substr(b + 1);
    if (controllers.empty()) {
      take(limit_along("/sys/fs/cgroup", rel, "memory.max"));
    } else {
      std::stringstream ss(controllers);
      std::string c;
      while (std::getline(ss, c, ','))
        if (c == "memory") take(limit_along("/sys/fs/cgroup/memory", rel, "memory.limit_in_bytes"));
    }
  }
  take(read_limit("/sys/fs/cgroup/memory.max"));
  take(read_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
  return best;
}

}  // namespace

uint64_t usable_memory_bytes() {
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    uint64_t phys = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t{8} << 30;
    const uint64_t limit = cgroup_limit();
    if (limit > 0 && limit < phys) phys = limit;
    return phys;
  }();
  return bytes;
}

uint64_t default_memory_budget(unsigned ranks_on_node) {
  return std::max<uint64_t>(usable_memory_bytes() / 4 / std::max(1u, ranks_on_node),
                            uint64_t{64} << 20);
}

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

uint64_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

uint64_t current_rss_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  const long page = sysconf(_SC_PAGE_SIZE);
  return resident * static_cast<uint64_t>(page > 0 ? page : 4096);
}

void MemoryGate::acquire(uint64_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return running_ == 0 || held_ + tasks_ + bytes <= budget_; });
  tasks_ += bytes;
  ++running_;
  peak_ = std::max(peak_, held_ + tasks_);
}

void MemoryGate::grow(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_ += bytes;
  peak_ = std::max(peak_, held_ + tasks_);
}

void MemoryGate::release(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_ -= std::min(tasks_, bytes);
    if (running_ > 0) --running_;
  }
  cv_.notify_all();
}

void MemoryGate::hold(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  held_ += bytes;
  peak_ = std::max(peak_, held_ + tasks_);
}

void MemoryGate::drop(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ -= std::min(held_, bytes);
  }
  cv_.notify_all();
}

bool MemoryGate::try_hold(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (held_ + tasks_ + bytes > budget_) return false;
  held_ += bytes;
  peak_ = std::max(peak_, held_ + tasks_);
  return true;
}

uint64_t MemoryGate::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_ + tasks_;
}

uint64_t MemoryGate::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

}  // namespace gtadoc
