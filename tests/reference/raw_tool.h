// The command line shared by the raw-text tools (gtadoc_reference, raw_gpu):
//   TOOL DIR TASK [--n N] [--top K] [--min-count M] [--per-doc] [--ids] [--lowercase] [--alnum]
//        [--format tsv|json] [--timings]
// Every regular file below DIR (symbolic links to files are read, links to directories are not
// entered) is one document named by its path below DIR with '/' between components; DIR may
// also be a single file, one document named by its base name. Task names are parsed here on
// purpose, independently of the engines' parse_task.
#pragma once

#include <filesystem>
#include <functional>
#include <vector>

#include "tests/reference/raw_reference.h"
#include "worker/query.h"

namespace gtadoc {

struct RawToolArgs {
  std::filesystem::path input;
  QueryOptions
      q;  ///< task, n, top (term-vector default 10), min_count, per_doc, ids, normalization
  OutputFormat format = OutputFormat::kTsv;
  bool timings = false;  ///< --timings (only where the tool accepts it)
  bool help = false;
};

/// Parses argv; throws UsageError. `--timings` is accepted only when `allow_timings`.
RawToolArgs parse_raw_tool_args(int argc, char** argv, bool allow_timings);

/// Reads the documents of a directory or a single file; throws InputError.
std::vector<RawDocument> read_raw_documents(const std::filesystem::path& input);

/// Runs `body` with the parsed arguments and maps errors to messages on stderr prefixed with
/// `tool` and to exit codes (2 usage + usage text, 1 input/resource, else the error's code).
int run_raw_tool(int argc, char** argv, const char* tool, const char* usage, bool allow_timings,
                 const std::function<void(const RawToolArgs&)>& body);

/// Writes `bytes` to standard output; throws InputError on failure.
void write_stdout(const std::string& bytes);

}  // namespace gtadoc
