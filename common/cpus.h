// How many CPUs this process may use: the scheduler affinity mask (taskset, mpirun/srun binding),
// the cgroup CPU quota (containers, Slurm's cgroup plugin) and SLURM_CPUS_PER_TASK, whichever is
// smallest; and the default thread count of a rank derived from it.
#pragma once

namespace gtadoc {

/// CPUs this process may run on: min(affinity mask, ceil(cgroup quota / period),
/// SLURM_CPUS_PER_TASK), at least 1. Read once per process.
unsigned usable_cpus();

/// CPUs in the calling thread's affinity mask now (0 when unknown); not cached.
unsigned affinity_cpus();

/// Default threads of one rank: the CPUs it may use, but no more than its even share of the
/// machine among `ranks_on_node` ranks (ranks bound to one socket each would otherwise all take
/// the whole socket). At least 1.
unsigned default_threads(unsigned ranks_on_node);

}  // namespace gtadoc
