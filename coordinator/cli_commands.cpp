// The commands' options (coordinator/cli_commands.h). Their order here is the order of
// `gtadoc --help` and of each command's own help.
#include "coordinator/cli_commands.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/units.h"
#include "coordinator/compress.h"
#include "coordinator/decompress.h"
#include "coordinator/run_command.h"
#include "coordinator/serve/service.h"

namespace gtadoc {

namespace {

/// A CLI11 check for a count: an integer in [lo, hi] (no sign, no suffix); the message names the
/// option (CLI11 puts it in front) and the range.
CLI::Validator count_range(uint64_t lo, uint64_t hi, const std::string& meaning = "") {
  return CLI::Validator(
      [lo, hi, meaning](std::string& v) -> std::string {
        const std::string range = "an integer from " + std::to_string(lo) + " to " +
                                  std::to_string(hi) + (meaning.empty() ? "" : "; " + meaning);
        if (v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos)
          return "'" + v.substr(0, 40) + "' is not " + range;
        const unsigned long long x = std::strtoull(v.c_str(), nullptr, 10);
        if (v.size() == 20 && v > "18446744073709551615")
          return "'" + v + "' is out of range: " + range;
        if (x < lo || x > hi) return "'" + v + "' is out of range: " + range;
        return "";
      },
      "", "count");
}

constexpr uint64_t kMaxThreads = 4096;
constexpr uint64_t kMaxCount = 1000000000000ull;  // --top, --min-count: 10^12

}  // namespace

CLI::App* add_compress_command(CLI::App& app, CompressCommand& cmd) {
  CLI::App* c = app.add_subcommand("compress", "Compress documents into a sharded archive");
  c->add_option("INPUT", cmd.inputs, "Files or directories (each regular file is a document)")
      ->required()
      ->type_name("PATH");
  c->add_option("-o,--output", cmd.output, "Archive directory to create (OUT.gtd)")
      ->required()
      ->type_name("OUT.gtd");
  c->add_option("--shard-size", cmd.shard_size, "Target input bytes per shard (default 32M)")
      ->type_name("BYTES");
  c->add_option("--shards", cmd.options.shards,
                "Number of shards, 1..1000000 (overrides --shard-size)")
      ->check(count_range(1, 1000000))
      ->type_name("N");
  c->add_option("--threads", cmd.options.threads, "Worker threads, 1..4096 (default: usable CPUs)")
      ->check(count_range(1, kMaxThreads, "leave it out for the default"))
      ->type_name("N");
  c->add_flag("--force", cmd.options.force, "Replace an existing output");
  c->add_option("--deflate-level", cmd.options.deflate_level,
                "HDF5 deflate level for the arrays, 0 (off) to 9 (default 4)")
      ->check(count_range(0, 9))
      ->type_name("0-9");
  c->add_option_function<std::string>(
       "--memory-budget",
       [&cmd](const std::string& v) {
         cmd.options.memory_budget = parse_size(v, "--memory-budget");
       },
       "Peak memory to plan for, per rank, e.g. 512M or 4G (default: a quarter of the RAM or "
       "cgroup limit, shared by the ranks of a node)")
      ->type_name("BYTES");
  return c;
}

CLI::App* add_decompress_command(CLI::App& app, DecompressCommand& cmd) {
  CLI::App* d = app.add_subcommand("decompress", "Rebuild documents from an archive");
  d->add_option("ARCHIVE", cmd.archive, "Archive directory")->required()->type_name("DIR");
  d->add_option("-o,--output", cmd.output, "Directory to create")->required()->type_name("DIR");
  d->add_option("--doc", cmd.options.docs, "Only this document (repeatable)")->type_name("NAME");
  d->add_option("--threads", cmd.options.threads, "Worker threads, 1..4096 (default: usable CPUs)")
      ->check(count_range(1, kMaxThreads, "leave it out for the default"))
      ->type_name("N");
  d->add_flag("--force", cmd.options.force, "Replace an existing output");
  return d;
}

CLI::App* add_info_command(CLI::App& app, InfoCommand& cmd) {
  CLI::App* i = app.add_subcommand("info", "Describe an archive");
  i->add_option("ARCHIVE", cmd.archive, "Archive directory")->required()->type_name("DIR");
  i->add_flag("--json", cmd.json, "Print JSON");
  i->add_flag("--verify", cmd.verify, "Also verify the archive (as gtadoc verify) and say so");
  return i;
}

CLI::App* add_verify_command(CLI::App& app, VerifyCommand& cmd) {
  CLI::App* v = app.add_subcommand(
      "verify", "Read every dataset and check checksums, structure, references and digests");
  v->add_option("ARCHIVE", cmd.archive, "Archive directory")->required()->type_name("DIR");
  v->add_flag("--json", cmd.json, "Print the report as JSON");
  v->add_option("--threads", cmd.threads, "Worker threads, 1..4096 (default: usable CPUs)")
      ->check(count_range(1, kMaxThreads, "leave it out for the default"))
      ->type_name("N");
  return v;
}

CLI::App* add_run_command(CLI::App& app, RunCommand& cmd) {
  CLI::App* r = app.add_subcommand("run", "Run an analytics task on an archive");
  add_run_options(*r, cmd);
  cmd.top->check(count_range(0, kMaxCount));
  cmd.min_count->check(count_range(0, kMaxCount));
  cmd.n->check(count_range(2, 8));
  r->get_option("--threads")->check(count_range(1, kMaxThreads, "leave it out for the default"));
  for (const char* count : {"--top", "--min-count", "--n", "--threads"})
    r->get_option(count)->type_name("N");
  return r;
}

CLI::App* add_grep_command(CLI::App& app, GrepCommand& cmd) {
  CLI::App* g = app.add_subcommand(
      "grep", "Find the documents holding phrases (consecutive words), on the compressed text");
  g->add_option("ARCHIVE", cmd.archive, "Archive directory")->required()->type_name("DIR");
  g->add_option("PHRASE", cmd.spec.phrases,
                "Words to find in sequence, 1 to 64, as one argument (quote it); several "
                "phrases give one count column each")
      ->required()
      ->type_name("PHRASE");
  g->add_flag("--all", cmd.all, "Documents holding every phrase (the default)");
  g->add_flag("--any", cmd.any, "Documents holding at least one phrase");
  g->add_flag("--count", cmd.count, "One total per phrase instead of one row per document");
  g->add_flag("--lines", cmd.lines, "Print each line holding a match as doc:line:text");
  g->add_flag("--lowercase", cmd.spec.lowercase, "Match ASCII letters in either case");
  g->add_flag("--alnum", cmd.spec.alnum,
              "Trim non-alphanumeric ASCII at both ends of words (text and phrases)");
  g->add_flag("--ids", cmd.spec.ids, "Print document ids instead of names");
  g->add_option("--format", cmd.format, "tsv (default) or json")->type_name("tsv|json");
  g->add_option("-o,--output", cmd.output, "Output file (default: standard output)")
      ->type_name("FILE");
  g->add_flag("--force", cmd.force, "Replace an existing output file");
  g->add_option("--threads", cmd.threads, "Worker threads per rank, 1..4096 (default: usable CPUs)")
      ->check(count_range(1, kMaxThreads, "leave it out for the default"))
      ->type_name("N");
  return g;
}

CLI::App* add_serve_command(CLI::App& app, ServeCommand& cmd) {
  CLI::App* sv = app.add_subcommand("serve", "Serve queries over HTTP with the shards resident");
  sv->add_option("ARCHIVE", cmd.options.archive, "Archive directory")->required()->type_name("DIR");
  sv->add_option("--listen", cmd.options.listen,
                 "Address to listen on (default 127.0.0.1:8080; port 0 = any free port)")
      ->type_name("HOST:PORT");
  sv->add_option("--token-file", cmd.options.token_file,
                 "File holding the bearer token clients must send (required off loopback)")
      ->type_name("FILE");
  sv->add_option("--engine", cmd.options.engine,
                 "auto (default: the GPU when one is visible), gpu or cpu")
      ->type_name("auto|gpu|cpu");
  sv->add_option("--gpus", cmd.gpus,
                 "Without a launcher: serve from N GPUs of this machine (or all), one rank each "
                 "as a thread of this process (default 1)")
      ->type_name("N|all");
  add_gpu_memory_limit_option(*sv, cmd.options.gpu_memory_limit);
  sv->add_option("--threads", cmd.options.threads,
                 "CPU threads per rank, 1..4096 (default: cores / ranks)")
      ->check(count_range(1, kMaxThreads, "leave it out for the default"))
      ->type_name("N");
  sv->add_option("--http-threads", cmd.options.http_threads,
                 "HTTP I/O threads on rank 0, 1 to 64 (default 2)")
      ->check(count_range(1, 64))
      ->type_name("1-64");
  sv->add_option("--queue", cmd.options.queue,
                 "Queries that may wait for the cluster, 1..1000000 (default 64)")
      ->check(count_range(1, 1000000))
      ->type_name("N");
  sv->add_option("--cache-bytes", cmd.cache_bytes, "Result cache bound (default 256M; 0 = off)")
      ->type_name("BYTES");
  sv->add_option("--doc-cache-bytes", cmd.doc_cache_bytes,
                 "Bound of rank 0's cache of shard grammars for GET /v1/docs (default 256M; "
                 "0 = off)")
      ->type_name("BYTES");
  sv->add_option("--max-body", cmd.max_body, "Largest request body (default 1M)")
      ->type_name("BYTES");
  sv->add_option("--read-timeout", cmd.options.read_timeout_s,
                 "Seconds a request may take to arrive (default 10)")
      ->type_name("SECONDS");
  sv->add_option("--header-timeout", cmd.options.header_timeout_s,
                 "Seconds a new or idle connection may take to send a request's headers "
                 "(default 5)")
      ->type_name("SECONDS");
  sv->add_option("--write-timeout", cmd.options.write_timeout_s,
                 "Seconds a client may accept no byte of its response before it is cut "
                 "(default 10)")
      ->type_name("SECONDS");
  sv->add_option("--query-timeout", cmd.options.query_timeout_s,
                 "Seconds from a request's arrival to its last response byte (default 60)")
      ->type_name("SECONDS");
  sv->add_option("--max-connections", cmd.options.max_connections,
                 "Open connections at most, 1..1000000 (default 1024)")
      ->check(count_range(1, 1000000))
      ->type_name("N");
  return sv;
}

}  // namespace gtadoc
