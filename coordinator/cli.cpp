#include "coordinator/cli.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <new>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "common/error.h"
#include "common/log.h"
#include "coordinator/compress.h"
#include "coordinator/crash_report.h"
#include "coordinator/decompress.h"
#include "coordinator/info.h"
#include "coordinator/run_command.h"
#include "coordinator/serve/service.h"

namespace gtadoc {

namespace {

/// "123", "64k", "32M", "2G" (powers of 1024) -> bytes.
uint64_t parse_size(const std::string& text, const char* option = "--shard-size") {
  size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    throw UsageError(std::string(option) + ": '" + text + "' is not a size (e.g. 64M)");
  }
  std::string suffix = text.substr(pos);
  uint64_t mult = 1;
  if (suffix == "" || suffix == "B")
    mult = 1;
  else if (suffix == "k" || suffix == "K" || suffix == "KiB")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "MiB")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "GiB")
    mult = 1ull << 30;
  else
    throw UsageError(std::string(option) + ": '" + text + "' is not a size (e.g. 64M)");
  if (value == 0 && std::string(option) != "--cache-bytes")
    throw UsageError(std::string(option) + " must be positive");
  return value * mult;
}

int print_error(const std::string& message, int code) {
  std::fprintf(stderr, "gtadoc: error: %s\n", message.c_str());
  std::fflush(stderr);
  return code;
}

}  // namespace

int cli_main(int argc, char** argv) {
  Comm* comm = nullptr;
  int code = 0;
  try {
    comm = &Comm::init(argc, argv);
    CLI::App app{"gtadoc: text analytics directly on grammar-compressed text, on GPUs"};
    app.require_subcommand(1);
    app.fallthrough();  // -v is accepted after the command name too
    app.set_version_flag("--version", "gtadoc 0.1.0 (archive format 1)");
    int verbosity = 0;
    app.add_flag("-v,--verbose", verbosity, "More log output (-vv for debug)");

    // compress
    CLI::App* c = app.add_subcommand("compress", "Compress documents into a sharded archive");
    std::vector<std::string> inputs;
    std::string c_out, shard_size;
    CompressOptions copt;
    c->add_option("INPUT", inputs, "Files or directories (each regular file is a document)")
        ->required();
    c->add_option("-o,--output", c_out, "Archive directory to create (OUT.gtd)")->required();
    c->add_option("--shard-size", shard_size, "Target input bytes per shard (default 32M)");
    c->add_option("--shards", copt.shards, "Number of shards (overrides --shard-size)")
        ->check(CLI::PositiveNumber);
    c->add_option("--threads", copt.threads, "Worker threads (default: all cores)");
    c->add_flag("--force", copt.force, "Replace an existing output");
    c->add_option("--deflate-level", copt.deflate_level,
                  "HDF5 deflate level for the arrays, 0 (off) to 9 (default 4)")
        ->check(CLI::Range(0, 9));

    // decompress
    CLI::App* d = app.add_subcommand("decompress", "Rebuild documents from an archive");
    std::string d_archive, d_out;
    DecompressOptions dopt;
    d->add_option("ARCHIVE", d_archive, "Archive directory")->required();
    d->add_option("-o,--output", d_out, "Directory to create")->required();
    d->add_option("--doc", dopt.docs, "Only this document (repeatable)");
    d->add_option("--threads", dopt.threads, "Worker threads (default: all cores)");
    d->add_flag("--force", dopt.force, "Replace an existing output");

    // info
    CLI::App* i = app.add_subcommand("info", "Describe an archive");
    std::string i_archive;
    bool i_json = false;
    i->add_option("ARCHIVE", i_archive, "Archive directory")->required();
    i->add_flag("--json", i_json, "Print JSON");

    // run
    CLI::App* r = app.add_subcommand("run", "Run an analytics task on an archive");
    RunCommand run_cmd;
    add_run_options(*r, run_cmd);

    // serve
    CLI::App* sv = app.add_subcommand("serve", "Serve queries over HTTP with the shards resident");
    ServeOptions sopt;
    std::string cache_bytes = "256M", max_body = "1M";
    sv->add_option("ARCHIVE", sopt.archive, "Archive directory")->required();
    sv->add_option("--listen", sopt.listen,
                   "HOST:PORT to listen on (default 127.0.0.1:8080; port 0 = any free port)");
    sv->add_option("--token-file", sopt.token_file,
                   "File holding the bearer token clients must send (required off loopback)");
    sv->add_option("--engine", sopt.engine, "auto (default: the GPU when one is visible), gpu or cpu");
    sv->add_option("--threads", sopt.threads, "CPU threads per rank (default: cores / ranks)");
    sv->add_option("--http-threads", sopt.http_threads, "HTTP I/O threads on rank 0 (default 2)")
        ->check(CLI::Range(1, 64));
    sv->add_option("--queue", sopt.queue, "Queries that may wait for the cluster (default 64)");
    sv->add_option("--cache-bytes", cache_bytes, "Result cache bound (default 256M; 0 = off)");
    sv->add_option("--max-body", max_body, "Largest request body (default 1M)");
    sv->add_option("--read-timeout", sopt.read_timeout_s,
                   "Seconds a request may take to arrive (default 10)");
    sv->add_option("--query-timeout", sopt.query_timeout_s,
                   "Seconds from a request's arrival to its last response byte (default 60)");
    sv->add_option("--max-connections", sopt.max_connections,
                   "Open connections at most (default 1024)");

    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      if (comm->rank() == 0) app.exit(e);
      comm->finalize();
      return 0;
    } catch (const CLI::CallForAllHelp& e) {
      if (comm->rank() == 0) app.exit(e);
      comm->finalize();
      return 0;
    } catch (const CLI::CallForVersion& e) {
      if (comm->rank() == 0) app.exit(e);
      comm->finalize();
      return 0;
    } catch (const CLI::ParseError& e) {
      throw UsageError(std::string(e.what()) + " (see gtadoc --help)");
    }
    init_logging(verbosity, comm->size() > 1 ? "rank " + std::to_string(comm->rank()) : "");
    bool progress = stderr_is_terminal() && comm->rank() == 0;

    if (c->parsed()) {
      if (!shard_size.empty()) copt.shard_size = parse_size(shard_size);
      copt.progress = progress;
      CompressStats s = compress(inputs, c_out, copt, *comm);
      if (comm->rank() == 0)
        spdlog::info(
            "compressed {} documents ({} bytes, {} words) into {} shards, {} bytes, "
            "{:.2f}s",
            s.documents, s.input_bytes, s.words, s.shards, s.archive_bytes, s.seconds);
    } else if (d->parsed()) {
      dopt.progress = progress;
      if (comm->rank() == 0) decompress(d_archive, d_out, dopt);
      comm->barrier();
    } else if (i->parsed()) {
      if (comm->rank() == 0) std::cout << archive_info(i_archive, i_json) << std::flush;
      comm->barrier();
    } else if (r->parsed()) {
      run_cmd.progress = progress;
      execute_run(run_cmd, *comm);
    } else if (sv->parsed()) {
      sopt.cache_bytes = parse_size(cache_bytes, "--cache-bytes");
      sopt.max_body = parse_size(max_body, "--max-body");
      serve(*comm, sopt);
    }
  } catch (const CollectiveError& e) {  // every rank knows: rank 0 speaks, nobody aborts
    code = e.exit_code();
    quiet_crash_report();
    if (comm == nullptr || comm->rank() == 0) print_error(e.what(), code);
    if (comm != nullptr) comm->finalize();
    return code;
  } catch (const Error& e) {
    code = print_error(e.what(), e.exit_code());
  } catch (const std::bad_alloc&) {
    code = print_error("out of memory", 1);
  } catch (const std::exception& e) {
    code = print_error(std::string("internal error: ") + e.what(), 70);
  }
  if (code != 0) quiet_crash_report();
  if (comm == nullptr) return code;
  if (code != 0 && comm->size() > 1) comm->abort(code);  // stop every rank of the job
  comm->finalize();
  return code;
}

}  // namespace gtadoc
