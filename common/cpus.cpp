#include "common/cpus.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace gtadoc {
namespace {

unsigned hardware_cpus() {
  return std::max(1u, std::thread::hardware_concurrency());
}

/// ceil(quota / period) of the cgroup (v2 cpu.max, else v1 cfs files); 0 when unlimited.
unsigned cgroup_cpus() {
  double quota = -1, period = 0;
  if (std::ifstream v2("/sys/fs/cgroup/cpu.max"); v2) {
    std::string q;
    v2 >> q >> period;
    if (q != "max" && !q.empty()) quota = std::atof(q.c_str());
  } else {
    std::ifstream q1("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
        p1("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
    if (q1 && p1) q1 >> quota, p1 >> period;
  }
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<unsigned>(std::max(1.0, std::ceil(quota / period)));
}

unsigned slurm_cpus() {
  const char* v = std::getenv("SLURM_CPUS_PER_TASK");
  if (v == nullptr) return 0;
  const long n = std::strtol(v, nullptr, 10);
  return n > 0 ? static_cast<unsigned>(n) : 0;
}

}  // namespace

unsigned affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return static_cast<unsigned>(CPU_COUNT(&set));
}

unsigned usable_cpus() {
  static const unsigned cpus = [] {
    unsigned n = hardware_cpus();
    for (unsigned limit : {affinity_cpus(), cgroup_cpus(), slurm_cpus()})
      if (limit > 0) n = std::min(n, limit);
    return std::max(1u, n);
  }();
  return cpus;
}

unsigned default_threads(unsigned ranks_on_node) {
  return std::max(1u, std::min(usable_cpus(), hardware_cpus() / std::max(1u, ranks_on_node)));
}

}  // namespace gtadoc
