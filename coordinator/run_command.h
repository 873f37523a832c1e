// `gtadoc run`: options (SPEC §2–4) and the query pipeline on every rank — archive -> engine ->
// partitioned records -> shuffle -> reduce at the owner -> rows -> rank 0 (or every rank with
// --partitioned) writes the result, atomically.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "worker/query.h"

namespace gtadoc {

class Comm;

struct RunCommand {
  std::string archive, task, output, format = "tsv", engine = "auto", traversal = "auto";
  std::string stats_file;  ///< --stats FILE: timings and decisions as JSON (for benchmarks)
  QueryOptions q;
  bool partitioned = false, force = false, progress = false;
};

/// Declares the `run` options on the subcommand.
void add_run_options(CLI::App& app, RunCommand& cmd);
/// Validates the options (UsageError) and runs the query on every rank.
void execute_run(RunCommand& cmd, Comm& comm);

}  // namespace gtadoc
