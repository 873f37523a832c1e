#include "coordinator/cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "cluster/cross_memory.h"
#include "cluster/local_group.h"
#include "cluster/nccl_comm.h"
#include "common/error.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/units.h"
#include "common/visible_gpus.h"
#include "coordinator/compress.h"
#include "coordinator/crash_report.h"
#include "coordinator/decompress.h"
#include "coordinator/info.h"
#include "coordinator/local_ranks.h"
#include "coordinator/run_command.h"
#include "coordinator/serve/service.h"
#include "coordinator/verify.h"
#include "formats/archive.h"
#include "worker/engine.h"
#include "worker/query.h"

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

/// A one-line message under 200 characters: newlines become spaces, CLI11's long texts are cut.
std::string short_line(std::string m, size_t max = 185) {
  for (char& ch : m)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (m.size() > max) m = m.substr(0, max - 3) + "...";
  return m;
}

const char* kValuePolicy =
    "Values: counts are non-negative integers, each within the range its option names (--threads "
    "1..4096, default: the CPUs this process may use); sizes are digits with an optional k/m/g/t "
    "in either case (powers of 1024) and an optional B or iB: 512m, 64K, 1MB, 1GiB. -o '' is an "
    "error; -o - is standard output for run; a trailing slash on -o is harmless.";

/// Writes `text` to standard output and flushes it; an output that fails (a closed pipe, a full
/// disk, /dev/full) is an error rather than a silent exit 0.
void write_stdout(const std::string& text) {
  std::cout << text << std::flush;
  if (!std::cout) throw InputError("standard output: write failed");
}

/// Set once the command line is parsed: with -v an error names the source location that raised it.
int g_verbosity = 0;

int print_error(const std::string& message, int code, const Error* e = nullptr) {
  std::string where;
  if (g_verbosity > 0 && e != nullptr && !e->file().empty())
    where = " [" + std::filesystem::path(e->file()).filename().string() + ":" +
            std::to_string(e->line()) + "]";
  std::fprintf(stderr, "gtadoc: error: %s%s\n", short_line(message, 4000).c_str(), where.c_str());
  std::fflush(stderr);
  return code;
}

/// The exit code of `failure`, said on stderr; a CollectiveError (every rank holds the same one)
/// is said only when `speak_collective`. `*collective` tells whether it was one.
int report_failure(const std::exception_ptr& failure, bool speak_collective, bool* collective) {
  *collective = false;
  try {
    std::rethrow_exception(failure);
  } catch (const CollectiveError& e) {
    *collective = true;
    if (speak_collective) print_error(e.what(), e.exit_code(), &e);
    return e.exit_code();
  } catch (const Error& e) {
    return print_error(e.what(), e.exit_code(), &e);
  } catch (const std::bad_alloc&) {
    return print_error("out of memory", static_cast<int>(ErrorKind::kResource));
  } catch (const std::exception& e) {
    return print_error(std::string("internal error: ") + e.what(), 70);
  } catch (...) {
    return print_error("internal error: unknown exception", 70);
  }
}

/// body(rank's communicator) on `ranks` ranks that are threads of this process (one GPU each).
/// Returns the exit code: 0, or the lowest failing rank's (each rank's own error said once; a
/// collective one by rank 0 only; the ranks that only stopped because another failed say
/// nothing).
int run_in_process(int ranks, const std::function<void(Comm&)>& body) {
  const std::vector<std::exception_ptr> failures = run_in_process_ranks(ranks, body);
  int code = 0;
  bool said_collective = false;
  for (const std::exception_ptr& f : failures) {
    if (!f) continue;
    try {
      std::rethrow_exception(f);
    } catch (const LocalGroupAborted&) {
      continue;
    } catch (...) {
    }
    bool collective = false;
    const int c = report_failure(f, !said_collective, &collective);
    said_collective = said_collective || collective;
    if (code == 0) code = c;
  }
  return code;
}

/// The command of raw arguments (the first that is not an option) and its index (argc: none).
std::pair<std::string_view, int> command_of(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '\0' && argv[i][0] != '-') return {argv[i], i};
  return {{}, argc};
}

}  // namespace

std::string counted(uint64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

void require_archive(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st))
    throw InputError(path + ": not a gtadoc archive (no such file or directory)");
  if (!fs::is_directory(st))
    throw InputError(path + ": not a gtadoc archive (an archive is a directory made by " +
                     "gtadoc compress; this is a file)");
  if (!fs::exists(fs::path(path) / kManifestFile, ec))
    throw InputError(path + ": not a gtadoc archive (a directory without " +
                     std::string(kManifestFile) + ")");
}

bool gpu_engine_asked(int argc, const char* const* argv) {
  const auto [command, at] = command_of(argc, argv);
  if (command != "run" && command != "serve") return false;
  for (int i = at + 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (a == "--engine=gpu" ||
        (a == "--engine" && i + 1 < argc && std::string_view(argv[i + 1]) == "gpu"))
      return true;
  }
  return false;
}

bool gpu_peers_needed(int argc, const char* const* argv, int ranks_on_node, int ranks_in_job) {
  const auto [command, at] = command_of(argc, argv);
  std::vector<Task> tasks;
  uint64_t shard_bytes = 0;
  for (int i = at + 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (a.empty() || a[0] == '-') continue;
    try {
      tasks.push_back(parse_task(std::string(a)));
    } catch (const UsageError&) {  // not a task: the archive, an option's value
      std::error_code ec;
      if (shard_bytes == 0 &&
          std::filesystem::is_regular_file(std::filesystem::path(a) / "manifest.h5", ec))
        shard_bytes = shard_file_bytes(std::filesystem::path(a));
    }
  }
  const int ranks = ranks_in_job > 0 ? ranks_in_job : std::max(1, ranks_on_node);
  // Every rank on this node (known only when the launcher says the job's size): the records
  // may be pulled across processes, and no one-query shuffle needs NCCL.
  const bool pulls = ranks_in_job > 0 && ranks_in_job == ranks_on_node && cross_memory_expected();
  bool large = false;
  for (Task t : tasks)
    large = large ||
            large_shuffle_task(t, ranks_on_node, shard_bytes / static_cast<uint64_t>(ranks), pulls);
  if (command == "serve") return true;
  return command == "run" && shuffle_may_use_nccl(false, large);
}

int cli_main(int argc, char** argv) {
  // The CUDA warm-up's thread (below) ends before the process does, whatever the exit: CUDA's
  // own teardown at exit must not meet it.
  struct JoinWarmUp {
    ~JoinWarmUp() { finish_gpu_warm_up(); }
  } join_warm_up;
  Comm* comm = nullptr;
  int code = 0;
  // First, before MPI or CUDA start: the driver then initializes only the GPU this process uses
  // (all of them for a run on several GPUs without a launcher, `--gpus`).
  std::string narrowed;
  try {
    Comm::prepare_environment();  // setenv: before the warm-up's thread reads the environment
    const int gpus = ranks_in_job_from_env() == 1 ? gpus_asked(argc, argv) : 0;
    if (gpus != -1 && gpus <= 1)
      narrowed = narrow_visible_gpus(
          gpu_peers_needed(argc, argv, ranks_on_node_from_env(), ranks_in_job_from_env()));
    // A run or service told to use the GPU starts CUDA now, beside MPI's start.
    if (gpu_engine_asked(argc, argv) || gpus == -1 || gpus > 1)
      warm_up_gpu(std::max(0, local_rank_from_env()),
                  gpus == -1 ? visible_gpus_from_env() : std::max(1, gpus));
  } catch (const UsageError&) {
    // A bad GTADOC_* value: nothing narrowed or started; the check of every setting below, once
    // MPI runs, refuses it with one line for the job.
  }
  try {
    comm = &Comm::init(argc, argv);
    // Named explicitly: the usage line says `gtadoc`, not the path it was started by.
    CLI::App app{"gtadoc: text analytics directly on grammar-compressed text, on GPUs", "gtadoc"};
    app.require_subcommand(1);
    app.fallthrough();  // -v is accepted after the command name too
    app.set_version_flag("--version", "gtadoc 0.1.0 (writes archive format " +
                                          std::to_string(kFormatVersion) + ", reads " +
                                          std::to_string(kOldestFormatVersion) + " to " +
                                          std::to_string(kFormatVersion) + ")");
    int verbosity = 0;
    app.add_flag("-v,--verbose", verbosity, "More log output (-vv for debug)");

    // compress
    CLI::App* c = app.add_subcommand("compress", "Compress documents into a sharded archive");
    std::vector<std::string> inputs;
    std::string c_out, shard_size;
    CompressOptions copt;
    c->add_option("INPUT", inputs, "Files or directories (each regular file is a document)")
        ->required()
        ->type_name("PATH");
    c->add_option("-o,--output", c_out, "Archive directory to create (OUT.gtd)")
        ->required()
        ->type_name("OUT.gtd");
    c->add_option("--shard-size", shard_size, "Target input bytes per shard (default 32M)")
        ->type_name("BYTES");
    c->add_option("--shards", copt.shards, "Number of shards, 1..1000000 (overrides --shard-size)")
        ->check(count_range(1, 1000000))
        ->type_name("N");
    c->add_option("--threads", copt.threads, "Worker threads, 1..4096 (default: usable CPUs)")
        ->check(count_range(1, kMaxThreads, "leave it out for the default"))
        ->type_name("N");
    c->add_flag("--force", copt.force, "Replace an existing output");
    c->add_option("--deflate-level", copt.deflate_level,
                  "HDF5 deflate level for the arrays, 0 (off) to 9 (default 4)")
        ->check(count_range(0, 9))
        ->type_name("0-9");
    c->add_option_function<std::string>(
         "--memory-budget",
         [&copt](const std::string& v) { copt.memory_budget = parse_size(v, "--memory-budget"); },
         "Peak memory to plan for, per rank, e.g. 512M or 4G (default: a quarter of the RAM or "
         "cgroup limit, shared by the ranks of a node)")
        ->type_name("BYTES");

    // decompress
    CLI::App* d = app.add_subcommand("decompress", "Rebuild documents from an archive");
    std::string d_archive, d_out;
    DecompressOptions dopt;
    d->add_option("ARCHIVE", d_archive, "Archive directory")->required()->type_name("DIR");
    d->add_option("-o,--output", d_out, "Directory to create")->required()->type_name("DIR");
    d->add_option("--doc", dopt.docs, "Only this document (repeatable)")->type_name("NAME");
    d->add_option("--threads", dopt.threads, "Worker threads, 1..4096 (default: usable CPUs)")
        ->check(count_range(1, kMaxThreads, "leave it out for the default"))
        ->type_name("N");
    d->add_flag("--force", dopt.force, "Replace an existing output");

    // info
    CLI::App* i = app.add_subcommand("info", "Describe an archive");
    std::string i_archive;
    bool i_json = false;
    i->add_option("ARCHIVE", i_archive, "Archive directory")->required()->type_name("DIR");
    i->add_flag("--json", i_json, "Print JSON");
    bool i_verify = false;
    i->add_flag("--verify", i_verify, "Also verify the archive (as gtadoc verify) and say so");

    // verify
    CLI::App* v = app.add_subcommand(
        "verify", "Read every dataset and check checksums, structure, references and digests");
    std::string v_archive;
    bool v_json = false;
    unsigned v_threads = 0;
    v->add_option("ARCHIVE", v_archive, "Archive directory")->required()->type_name("DIR");
    v->add_flag("--json", v_json, "Print the report as JSON");
    v->add_option("--threads", v_threads, "Worker threads, 1..4096 (default: usable CPUs)")
        ->check(count_range(1, kMaxThreads, "leave it out for the default"))
        ->type_name("N");

    // run
    CLI::App* r = app.add_subcommand("run", "Run an analytics task on an archive");
    RunCommand run_cmd;
    add_run_options(*r, run_cmd);
    run_cmd.top->check(count_range(0, kMaxCount));
    run_cmd.min_count->check(count_range(0, kMaxCount));
    run_cmd.n->check(count_range(2, 8));
    r->get_option("--threads")->check(count_range(1, kMaxThreads, "leave it out for the default"));
    for (const char* count : {"--top", "--min-count", "--n", "--threads"})
      r->get_option(count)->type_name("N");

    // serve
    CLI::App* sv = app.add_subcommand("serve", "Serve queries over HTTP with the shards resident");
    ServeOptions sopt;
    std::string cache_bytes = "256M", max_body = "1M";
    sv->add_option("ARCHIVE", sopt.archive, "Archive directory")->required()->type_name("DIR");
    sv->add_option("--listen", sopt.listen,
                   "Address to listen on (default 127.0.0.1:8080; port 0 = any free port)")
        ->type_name("HOST:PORT");
    sv->add_option("--token-file", sopt.token_file,
                   "File holding the bearer token clients must send (required off loopback)")
        ->type_name("FILE");
    sv->add_option("--engine", sopt.engine,
                   "auto (default: the GPU when one is visible), gpu or cpu")
        ->type_name("auto|gpu|cpu");
    std::string serve_gpus;
    sv->add_option("--gpus", serve_gpus,
                   "Without a launcher: serve from N GPUs of this machine (or all), one rank each "
                   "as a thread of this process (default 1)")
        ->type_name("N|all");
    add_gpu_memory_limit_option(*sv, sopt.gpu_memory_limit);
    sv->add_option("--threads", sopt.threads,
                   "CPU threads per rank, 1..4096 (default: cores / ranks)")
        ->check(count_range(1, kMaxThreads, "leave it out for the default"))
        ->type_name("N");
    sv->add_option("--http-threads", sopt.http_threads,
                   "HTTP I/O threads on rank 0, 1 to 64 (default 2)")
        ->check(count_range(1, 64))
        ->type_name("1-64");
    sv->add_option("--queue", sopt.queue,
                   "Queries that may wait for the cluster, 1..1000000 (default 64)")
        ->check(count_range(1, 1000000))
        ->type_name("N");
    sv->add_option("--cache-bytes", cache_bytes, "Result cache bound (default 256M; 0 = off)")
        ->type_name("BYTES");
    sv->add_option("--max-body", max_body, "Largest request body (default 1M)")
        ->type_name("BYTES");
    sv->add_option("--read-timeout", sopt.read_timeout_s,
                   "Seconds a request may take to arrive (default 10)")
        ->type_name("SECONDS");
    sv->add_option("--header-timeout", sopt.header_timeout_s,
                   "Seconds a new or idle connection may take to send a request's headers "
                   "(default 5)")
        ->type_name("SECONDS");
    sv->add_option("--write-timeout", sopt.write_timeout_s,
                   "Seconds a client may accept no byte of its response before it is cut "
                   "(default 10)")
        ->type_name("SECONDS");
    sv->add_option("--query-timeout", sopt.query_timeout_s,
                   "Seconds from a request's arrival to its last response byte (default 60)")
        ->type_name("SECONDS");
    sv->add_option("--max-connections", sopt.max_connections,
                   "Open connections at most, 1..1000000 (default 1024)")
        ->check(count_range(1, 1000000))
        ->type_name("N");
    for (CLI::App* sub : {&app, c, d, i, v, r, sv}) sub->footer(kValuePolicy);
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      commands.push_back(sub->get_name());

    // The first word that is not an option names the command: say so when it names none.
    for (int a = 1; a < argc; ++a) {
      const std::string word = argv[a];
      if (word.empty() || word[0] == '-') continue;
      if (std::find(commands.begin(), commands.end(), word) == commands.end()) {
        std::string list;
        for (size_t k = 0; k < commands.size(); ++k)
          list += (k == 0 ? "" : k + 1 == commands.size() ? " or " : ", ") + commands[k];
        throw UsageError("unknown command '" + short_line(word, 60) + "' (expected " + list + ")");
      }
      break;
    }
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
      throw UsageError(short_line(e.what()) + " (see gtadoc --help)");
    }
    init_logging(verbosity, comm->size() > 1 ? "rank " + std::to_string(comm->rank()) : "");
    g_verbosity = verbosity;
    run_collectively(*comm, [] { settings::check_environment(); });
    if (comm->rank() == 0) settings::log_environment();
    if (!narrowed.empty()) spdlog::debug("{}", narrowed);
    if (!comm->transport_note().empty() && comm->rank() == 0)
      spdlog::info("{}", comm->transport_note());
    bool progress = stderr_is_terminal() && comm->rank() == 0;
    auto check_output = [](CLI::App* sub, const std::string& out, bool stdout_ok) {
      CLI::Option* o = sub->get_option_no_throw("--output");
      if (o == nullptr || o->count() == 0) return;
      if (out.empty()) throw UsageError("-o: the output path is empty");
      if (out == "-" && !stdout_ok)
        throw UsageError("-o -: " + sub->get_name() +
                         " writes a directory, which cannot go to standard output");
    };
    check_output(c, c_out, false);
    check_output(d, d_out, false);
    check_output(r, run_cmd.output, true);
    if (c->parsed() || d->parsed() || r->parsed()) {
      // A stop request (SIGINT, SIGTERM) removes this command's temporaries and exits 128+signal.
      install_crash_report();
      set_crash_rank(comm->rank(), comm->size());
    }

    if (c->parsed()) {
      if (!shard_size.empty()) copt.shard_size = parse_size(shard_size, "--shard-size");
      copt.progress = progress;
      CompressStats s = compress(inputs, c_out, copt, *comm);
      if (comm->rank() == 0)
        spdlog::info("compressed {} ({} bytes, {}) into {}, {} bytes, {:.2f}s",
                     counted(s.documents, "document"), s.input_bytes, counted(s.words, "word"),
                     counted(s.shards, "shard"), s.archive_bytes, s.seconds);
    } else if (d->parsed()) {
      dopt.progress = progress;
      run_collectively(*comm, [&] { require_archive(d_archive); });
      if (comm->rank() == 0) decompress(d_archive, d_out, dopt);
      comm->barrier();
    } else if (i->parsed()) {
      run_collectively(*comm, [&] {
        if (comm->rank() != 0) return;
        require_archive(i_archive);
        bool verified = false;
        write_stdout(archive_info(i_archive, i_json, i_verify, &verified));
        if (i_verify && !verified) throw InputError(i_archive + ": verification failed");
      });
    } else if (v->parsed()) {
      run_collectively(*comm, [&] {
        if (comm->rank() != 0) return;
        require_archive(v_archive);
        VerifyReport report = verify_archive(v_archive, v_threads);
        write_stdout(v_json ? report.json() : report.text());
        if (!report.ok)
          throw InputError(v_archive + ": verification failed: " + report.first_failure());
      });
    } else if (r->parsed()) {
      run_cmd.progress = progress;
      const int ranks = in_process_rank_count(run_cmd.gpus, run_cmd.engine, *comm);
      if (ranks > 1)
        code = run_in_process(ranks, [&](Comm& rank) {
          RunCommand mine = run_cmd;  // validated and completed per rank
          execute_run(mine, rank);
        });
      else
        execute_run(run_cmd, *comm);
    } else if (sv->parsed()) {
      sopt.cache_bytes = parse_size(cache_bytes, "--cache-bytes", true);
      sopt.max_body = parse_size(max_body, "--max-body");
      run_collectively(*comm, [&] { require_archive(sopt.archive); });
      const int ranks = in_process_rank_count(serve_gpus, sopt.engine, *comm);
      if (ranks > 1)
        code = run_in_process(ranks, [&](Comm& rank) { serve(rank, sopt); });
      else
        serve(*comm, sopt);
    }
  } catch (...) {
    bool collective = false;
    code =
        report_failure(std::current_exception(), comm == nullptr || comm->rank() == 0, &collective);
    if (collective) {  // every rank knows: rank 0 spoke, nobody aborts
      quiet_crash_report();
      if (comm != nullptr) comm->finalize();
      return code;
    }
  }
  if (code != 0) quiet_crash_report();
  if (comm == nullptr) return code;
  if (code != 0 && comm->size() > 1) comm->abort(code);  // stop every rank of the job
  comm->finalize();
  return code;
}

}  // namespace gtadoc
