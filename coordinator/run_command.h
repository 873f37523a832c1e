// `gtadoc run`: the command line of one query (SPEC §2–4) on top of the pipeline library:
// parse -> open the archive (streaming) -> run the query -> write the result, on every rank.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "coordinator/pipeline/query_spec.h"

namespace gtadoc {

class Comm;

struct RunCommand {
  std::string archive, output, format = "tsv", engine = "auto";
  std::string stats_file;  ///< --stats FILE: timings and decisions as JSON (for benchmarks)
  QuerySpec spec;
  unsigned threads = 0;
  std::string gpus;  ///< --gpus N|all: ranks as threads of this process, one GPU each
  bool partitioned = false, force = false;
  bool progress = false;            ///< stderr is a terminal (set by the CLI)
  bool progress_requested = false;  ///< --progress: also without a terminal (under a launcher)
  CLI::Option *n = nullptr, *top = nullptr, *min_count = nullptr;  ///< to see what was given
};

/// Declares the `run` options on the subcommand.
void add_run_options(CLI::App& app, RunCommand& cmd);
/// Validates the options (UsageError) and runs the query on every rank.
void execute_run(RunCommand& cmd, Comm& comm);

/// How many ranks of this process run the query (Comm::in_process_ranks), 1 for a plain run:
/// --gpus N (or all: every visible GPU; the GPU engine, which --engine auto then means) or, for
/// tests with any engine, GTADOC_LOCAL_RANKS=N. UsageError under a launcher (it starts the
/// ranks), with --engine cpu, or out of 1..64; ResourceError when fewer GPUs are visible.
int in_process_ranks(RunCommand& cmd, const Comm& comm);

/// The value of --gpus in raw arguments of `run` before parsing (0: not given, -1: all), for the
/// start-up that runs before MPI and CUDA (which GPUs to leave visible and to warm up).
int gpus_asked(int argc, const char* const* argv);

}  // namespace gtadoc
