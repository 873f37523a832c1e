// The commands of `gtadoc` (coordinator/cli.h, docs/REFERENCE.md §2) as the command line declares
// them: for each, a struct that receives its parsed values and a function that adds the command
// and its options to the application (names, help texts, checks, defaults) and returns it.
// cli_main (coordinator/cli.cpp) wires them and runs the command parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "coordinator/compress.h"
#include "coordinator/decompress.h"
#include "coordinator/run_command.h"
#include "coordinator/search/grep_command.h"
#include "coordinator/serve/service.h"

namespace gtadoc {

/// `gtadoc compress INPUT... -o OUT.gtd`.
struct CompressCommand {
  std::vector<std::string> inputs;
  std::string output;
  std::string shard_size;  ///< --shard-size as given (parsed by the caller)
  CompressOptions options;
};
CLI::App* add_compress_command(CLI::App& app, CompressCommand& cmd);

/// `gtadoc decompress ARCHIVE -o DIR`.
struct DecompressCommand {
  std::string archive, output;
  DecompressOptions options;
};
CLI::App* add_decompress_command(CLI::App& app, DecompressCommand& cmd);

/// `gtadoc info ARCHIVE`.
struct InfoCommand {
  std::string archive;
  bool json = false;
  bool verify = false;
};
CLI::App* add_info_command(CLI::App& app, InfoCommand& cmd);

/// `gtadoc verify ARCHIVE`.
struct VerifyCommand {
  std::string archive;
  bool json = false;
  unsigned threads = 0;
};
CLI::App* add_verify_command(CLI::App& app, VerifyCommand& cmd);

/// `gtadoc run ARCHIVE TASK...` (coordinator/run_command.h), with the checks of its counts.
CLI::App* add_run_command(CLI::App& app, RunCommand& cmd);

/// `gtadoc grep ARCHIVE PHRASE...` (coordinator/search/grep_command.h).
CLI::App* add_grep_command(CLI::App& app, GrepCommand& cmd);

/// `gtadoc serve ARCHIVE`.
struct ServeCommand {
  ServeOptions options;
  std::string cache_bytes = "256M", max_body = "1M";  ///< as given (parsed by the caller)
  std::string doc_cache_bytes = "256M";               ///< as given (parsed by the caller)
  std::string gpus;                                   ///< --gpus N|all
};
CLI::App* add_serve_command(CLI::App& app, ServeCommand& cmd);

}  // namespace gtadoc
