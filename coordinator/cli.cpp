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
#include "common/malloc_tuning.h"
#include "common/settings.h"
#include "common/units.h"
#include "common/visible_gpus.h"
#include "coordinator/cli_commands.h"
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
    // Before any thread starts (common/malloc_tuning.h); not for compress, whose memory budget
    // counts on freed memory going back to the system.
    if (command_of(argc, argv).first != "compress") keep_freed_blocks();
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

    CompressCommand compress_cmd;
    CLI::App* c = add_compress_command(app, compress_cmd);
    DecompressCommand decompress_cmd;
    CLI::App* d = add_decompress_command(app, decompress_cmd);
    InfoCommand info_cmd;
    CLI::App* i = add_info_command(app, info_cmd);
    VerifyCommand verify_cmd;
    CLI::App* v = add_verify_command(app, verify_cmd);
    RunCommand run_cmd;
    CLI::App* r = add_run_command(app, run_cmd);
    ServeCommand serve_cmd;
    CLI::App* sv = add_serve_command(app, serve_cmd);
    GrepCommand grep_cmd;
    CLI::App* gr = add_grep_command(app, grep_cmd);
    for (CLI::App* sub : {&app, c, d, i, v, r, sv, gr}) sub->footer(kValuePolicy);
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
    check_output(c, compress_cmd.output, false);
    check_output(d, decompress_cmd.output, false);
    check_output(r, run_cmd.output, true);
    check_output(gr, grep_cmd.output, true);
    if (c->parsed() || d->parsed() || r->parsed() || gr->parsed()) {
      // A stop request (SIGINT, SIGTERM) removes this command's temporaries and exits 128+signal.
      install_crash_report();
      set_crash_rank(comm->rank(), comm->size());
    }

    if (c->parsed()) {
      if (!compress_cmd.shard_size.empty())
        compress_cmd.options.shard_size = parse_size(compress_cmd.shard_size, "--shard-size");
      compress_cmd.options.progress = progress;
      CompressStats s =
          compress(compress_cmd.inputs, compress_cmd.output, compress_cmd.options, *comm);
      if (comm->rank() == 0)
        spdlog::info("compressed {} ({} bytes, {}) into {}, {} bytes, {:.2f}s",
                     counted(s.documents, "document"), s.input_bytes, counted(s.words, "word"),
                     counted(s.shards, "shard"), s.archive_bytes, s.seconds);
    } else if (d->parsed()) {
      decompress_cmd.options.progress = progress;
      run_collectively(*comm, [&] { require_archive(decompress_cmd.archive); });
      if (comm->rank() == 0)
        decompress(decompress_cmd.archive, decompress_cmd.output, decompress_cmd.options);
      comm->barrier();
    } else if (i->parsed()) {
      run_collectively(*comm, [&] {
        if (comm->rank() != 0) return;
        require_archive(info_cmd.archive);
        bool verified = false;
        write_stdout(archive_info(info_cmd.archive, info_cmd.json, info_cmd.verify, &verified));
        if (info_cmd.verify && !verified)
          throw InputError(info_cmd.archive + ": verification failed");
      });
    } else if (v->parsed()) {
      run_collectively(*comm, [&] {
        if (comm->rank() != 0) return;
        require_archive(verify_cmd.archive);
        VerifyReport report = verify_archive(verify_cmd.archive, verify_cmd.threads);
        write_stdout(verify_cmd.json ? report.json() : report.text());
        if (!report.ok)
          throw InputError(verify_cmd.archive + ": verification failed: " + report.first_failure());
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
    } else if (gr->parsed()) {
      execute_grep(grep_cmd, *comm);
    } else if (sv->parsed()) {
      serve_cmd.options.cache_bytes = parse_size(serve_cmd.cache_bytes, "--cache-bytes", true);
      serve_cmd.options.max_body = parse_size(serve_cmd.max_body, "--max-body");
      serve_cmd.options.doc_cache_bytes =
          parse_size(serve_cmd.doc_cache_bytes, "--doc-cache-bytes", true);
      run_collectively(*comm, [&] { require_archive(serve_cmd.options.archive); });
      const int ranks = in_process_rank_count(serve_cmd.gpus, serve_cmd.options.engine, *comm);
      if (ranks > 1)
        code = run_in_process(ranks, [&](Comm& rank) { serve(rank, serve_cmd.options); });
      else
        serve(*comm, serve_cmd.options);
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