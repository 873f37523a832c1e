// The command-line interface (docs/REFERENCE.md §2): parses `gtadoc <command> ...`, dispatches, and
// turns exceptions into one-line messages on stderr with exit codes (2 for usage errors).
#pragma once

#include <cstdint>
#include <string>

namespace gtadoc {
int cli_main(int argc, char** argv);

/// "1 shard", "2 shards": `n` and `noun`, plural unless n is 1.
std::string counted(uint64_t n, const std::string& noun);

/// Throws InputError "PATH: not a gtadoc archive (why)" unless `path` is a directory holding a
/// manifest: missing, a plain file, or a directory without manifest.h5. What the manifest holds
/// is checked by whoever reads it.
void require_archive(const std::string& path);

/// Whether this command's ranks may move data between the GPUs of a node (NCCL through CUDA
/// IPC), which needs every GPU of the node visible to each of them (common/visible_gpus.h): the
/// service, and a run whose shuffle may be NCCL (shuffle_may_use_nccl, large_shuffle_task with
/// `ranks_on_node` and the archive's shard bytes over `ranks_in_job`, or over `ranks_on_node`
/// when the job's size is unknown: -1). Read from the raw arguments (the archive: the argument
/// that is a directory holding manifest.h5) before MPI starts and before they are parsed: a
/// wrong guess costs start-up time only (a rank whose GPUs were narrowed shuffles with MPI).
bool gpu_peers_needed(int argc, const char* const* argv, int ranks_on_node, int ranks_in_job);

/// Whether argv is a `run` or `serve` with `--engine gpu` (or `--engine=gpu`): such a process
/// starts CUDA first (warm_up_gpu), beside MPI's start.
bool gpu_engine_asked(int argc, const char* const* argv);
}  // namespace gtadoc
