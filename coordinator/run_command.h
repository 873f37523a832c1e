// `gtadoc run`: the command line of one query (docs/REFERENCE.md §2–§4) on top of the pipeline
// library: parse -> open the archive (streaming) -> run the query -> write the result, on every
// rank.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "coordinator/pipeline/query_spec.h"

namespace gtadoc {

class Comm;

struct RunCommand {
  std::string archive, output, format = "tsv", engine = "auto";
  std::string stats_file;  ///< --stats FILE: timings and decisions as JSON (for benchmarks)
  QuerySpec spec;
  unsigned threads = 0;
  std::string gpus;  ///< --gpus N|all: ranks as threads of this process (local_ranks.h)
  uint64_t gpu_memory_limit = 0;  ///< --gpu-memory-limit BYTES (0: not given)
  bool partitioned = false, force = false;
  bool progress = false;            ///< stderr is a terminal (set by the CLI)
  bool progress_requested = false;  ///< --progress: also without a terminal (under a launcher)
  CLI::Option *n = nullptr, *top = nullptr, *min_count = nullptr;  ///< to see what was given
};

/// Declares the `run` options on the subcommand.
void add_run_options(CLI::App& app, RunCommand& cmd);
/// Declares --gpu-memory-limit BYTES (run and serve): a size (common/units.h) into `bytes`.
void add_gpu_memory_limit_option(CLI::App& app, uint64_t& bytes);
/// Validates the options (UsageError) and runs the query on every rank.
void execute_run(RunCommand& cmd, Comm& comm);

}  // namespace gtadoc
