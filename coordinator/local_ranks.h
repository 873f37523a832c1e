// Several GPUs of one machine without a launcher: `gtadoc run|serve --gpus N|all` runs N ranks
// that are threads of this process, one GPU each (Comm::in_process_ranks, cluster/local_group.h).
// This unit decides how many, from the options and the environment, and says why it refuses.
#pragma once

#include <string>

namespace gtadoc {

class Comm;

/// The value of --gpus in the raw arguments of `run` or `serve`, before parsing (0: not given or
/// not a valid value, -1: all), for the start-up that runs before MPI and CUDA (which GPUs stay
/// visible, which are warmed up).
int gpus_asked(int argc, const char* const* argv);

/// How many in-process ranks run the command: `gpus` (--gpus: N, or all = every visible GPU;
/// N > 1 means the GPU engine, so `engine` auto becomes gpu) or, for tests with any engine,
/// GTADOC_LOCAL_RANKS=N; 1 otherwise. UsageError for a value outside 1..64 or all, --gpus with
/// --engine cpu, or more than one rank under a launcher (which starts the ranks itself);
/// ResourceError when fewer GPUs are visible than asked for.
int in_process_rank_count(const std::string& gpus, std::string& engine, const Comm& comm);

}  // namespace gtadoc
