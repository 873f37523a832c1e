#include "coordinator/run_command.h"

#include <spdlog/spdlog.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "cluster/rows/result_writer.h"
#include "common/error.h"
#include "common/timer.h"
#include "common/units.h"
#include "coordinator/cli.h"
#include "coordinator/crash_report.h"
#include "coordinator/pipeline/archive_session.h"
#include "coordinator/pipeline/query_pipeline.h"
#include "formats/atomic_output.h"
#include "worker/engine.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

/// With --partitioned --force, an existing directory `dir` is replaced only when it is a
/// partitioned result as gtadoc writes one (cluster/rows/result_writer.h,
/// partitioned_output_problem: gtadoc's signed _SUCCESS and exactly the part files it names).
/// UsageError (nothing deleted) otherwise; the cases AtomicOutput refuses itself (not a
/// directory, the archive) are left to it.
void check_partitioned_output(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return;
  if (const std::string why = partitioned_output_problem(dir); !why.empty())
    throw UsageError(dir + ": not a previous output (" + why + "); --force replaces only those");
}

void validate(RunCommand& c) {
  auto given = [](CLI::Option* o) { return o != nullptr && o->count() > 0; };
  c.spec.n_given = given(c.n);
  c.spec.top_given = given(c.top);
  c.spec.min_count_given = given(c.min_count);
  validate_query(c.spec);
  c.spec.format = parse_format(c.format, false);
  if (c.output == "-") {
    if (c.partitioned) throw UsageError("--partitioned needs -o DIR, not standard output");
    c.output.clear();  // -o - is standard output
  }
  if (c.engine != "auto" && c.engine != "gpu" && c.engine != "cpu")
    throw UsageError("--engine: unknown engine '" + c.engine + "' (expected auto, gpu or cpu)");
  if (c.partitioned && c.output.empty())
    throw UsageError("--partitioned needs -o DIR (the directory that receives the parts)");
  require_archive(c.archive);  // before anything is logged about it (e.g. --engine auto)
  if (!c.output.empty() && !c.force) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(c.output, ec)))
      throw InputError(c.output + ": output exists (use --force to replace it)");
  }
  if (c.partitioned && c.force) check_partitioned_output(c.output);
}

/// Where --stats goes, checked before the run so that a bad path fails before any result is
/// committed: an existing non-regular file (a terminal, a pipe) or a path under /dev or /proc
/// (/dev/stderr, /dev/fd/3, whatever they point to) is written in place; otherwise the
/// statistics are written under a temporary name and renamed (an existing regular file is
/// replaced, the archive never).
class StatsTarget {
 public:
  StatsTarget(const std::string& file, const std::string& archive) : file_(file) {
    std::error_code ec;
    const fs::file_status st = fs::status(file, ec);
    const bool special = file.starts_with("/dev/") || file.starts_with("/proc/");
    if ((fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st)) ||
        (special && fs::exists(st)))
      return;
    if (fs::is_directory(st)) throw UsageError("--stats " + file + ": is a directory");
    out_ = std::make_unique<AtomicOutput>(file, AtomicOutput::Kind::kFile, /*force=*/true,
                                          AtomicOutput::Replace{"", {fs::path(archive)}, {}});
  }
  void write(const std::string& text) {
    try {
      if (!out_) {
        std::ofstream f(file_, std::ios::app);
        f << text << std::flush;
        if (!f) throw InputError(file_ + ": write failed");
        return;
      }
      write_new_file(out_->temp_path(), text);
      out_->commit();
    } catch (const InputError& e) {
      throw InputError(std::string(e.what()) +
                       " (--stats; the result itself was written completely)");
    }
  }

 private:
  std::string file_;
  std::unique_ptr<AtomicOutput> out_;
};

void write_stats(StatsTarget* target, const RunCommand& c, Comm& comm, const ArchiveSession& s,
                 const QueryTimings& t, double total) {
  std::vector<uint64_t> ns;
  // "init" of a run is opening the archive (engine creation, manifest) plus the engines' init.
  for (double v :
       {t.load, t.open + t.init, t.traversal, t.collect, t.shuffle, t.merge, t.write, total})
    ns.push_back(static_cast<uint64_t>(v * 1e9));
  comm.allreduce(ns, ReduceOp::kMax);
  std::vector<uint64_t> volume{t.records, t.shuffle_bytes};
  comm.allreduce(volume, ReduceOp::kSum);
  if (comm.rank() != 0) return;
  nlohmann::ordered_json j;
  j["task"] = task_name(c.spec.q.task);
  j["engine"] = s.engine().name();
  j["ranks"] = comm.size();
  j["threads"] = s.threads();
  j["shards"] = s.manifest().shards.size();
  const char* keys[] = {"load_s",    "init_s",  "traversal_s", "collect_s",
                        "shuffle_s", "merge_s", "write_s",     "total_s"};
  for (size_t i = 0; i < ns.size(); ++i) j[keys[i]] = static_cast<double>(ns[i]) / 1e9;
  j["records"] = volume[0];        // records entering the shuffle, all ranks
  j["shuffle_bytes"] = volume[1];  // bytes sent between ranks, all ranks
  j["rank0_traversals"] = t.traversals;
  target->write(j.dump(2) + "\n");  // rank 0 holds the target
}

}  // namespace

void add_gpu_memory_limit_option(CLI::App& app, uint64_t& bytes) {
  app.add_option_function<std::string>(
         "--gpu-memory-limit",
         [&bytes](const std::string& v) { bytes = parse_size(v, "--gpu-memory-limit"); },
         "GPU memory the GPU engine may take per rank, resident shards and queries together, "
         "e.g. 40G (default: GTADOC_GPU_MEMORY_LIMIT, else the whole device; the CPU engine "
         "ignores it)")
      ->type_name("BYTES");
}

void add_run_options(CLI::App& app, RunCommand& c) {
  QueryOptions& q = c.spec.q;
  app.add_option("ARCHIVE", c.archive, "Archive directory (OUT.gtd)")->required()->type_name("DIR");
  app.add_option("TASK", c.spec.task,
                 "word-count | sort | inverted-index | term-vector | sequence-count | "
                 "ranked-inverted-index")
      ->required()
      ->type_name("");
  c.n = app.add_option("--n", q.n, "Sequence length, 2..8 (default 3)");
  c.top = app.add_option("--top", q.top,
                         "Limit rows (0 = all; term-vector: words per document, default 10)");
  c.min_count =
      app.add_option("--min-count", q.min_count, "term-vector: only words with count >= M");
  app.add_flag("--per-doc", q.per_doc, "sequence-count: count per document");
  app.add_flag("--ids", q.ids, "Print document ids instead of names");
  app.add_flag("--lowercase", q.lowercase, "Map ASCII A-Z to a-z");
  app.add_flag("--alnum", q.alnum, "Trim non-alphanumeric ASCII at both ends; drop empty words");
  app.add_option("-o,--output", c.output, "Result file, or - for standard output (the default)")
      ->type_name("FILE|DIR|-");
  app.add_option("--format", c.format, "tsv (default) or json")->type_name("tsv|json");
  app.add_flag("--partitioned", c.partitioned,
               "Write one part per rank plus _SUCCESS into the -o directory");
  app.add_option("--engine", c.engine, "auto (default), gpu or cpu")->type_name("auto|gpu|cpu");
  app.add_option("--traversal", c.spec.traversal, "auto (default), top-down or bottom-up")
      ->type_name("auto|top-down|bottom-up");
  app.add_option("--threads", c.threads, "CPU threads per rank (default: cores / ranks)");
  app.add_option("--gpus", c.gpus,
                 "Without a launcher: run on N GPUs of this machine (or all), one rank each as a "
                 "thread of this process (default 1)")
      ->type_name("N|all");
  add_gpu_memory_limit_option(app, c.gpu_memory_limit);
  app.add_flag("--force", c.force, "Replace an existing output");
  app.add_flag("--progress", c.progress_requested,
               "Show progress on rank 0 (shards loaded and traversed, bytes written) even when "
               "standard error is not a terminal, e.g. under mpirun or Slurm");
  app.add_option("--stats", c.stats_file,
                 "Write timings (max over ranks) and traversal decisions as JSON to FILE")
      ->type_name("FILE");
}

void execute_run(RunCommand& c, Comm& comm) {
  install_crash_report();
  Timer timer;
  QueryTimings t;
  std::unique_ptr<StatsTarget> stats;
  run_collectively(comm, [&] {
    validate(c);
    if (!c.stats_file.empty() && comm.rank() == 0)
      stats = std::make_unique<StatsTarget>(c.stats_file, c.archive);
  });
#ifndef GTADOC_HAVE_GPU_ENGINE
  // Without the GPU engine there is nothing to choose: no cost estimate for a GPU that cannot run.
  if (c.engine == "auto") {
    c.engine = "cpu";
    if (comm.rank() == 0) spdlog::info("--engine auto: cpu (this build has no GPU engine)");
  }
#endif
  set_gpu_memory_limit(c.gpu_memory_limit);
  SessionOptions options;
  options.archive = c.archive;
  options.engine = c.engine;
  options.threads = c.threads;
  options.resident = false;
  options.auto_task = c.spec.q.task;
  options.lowercase = c.spec.q.lowercase;
  options.alnum = c.spec.q.alnum;
  // A word count's --top rows print that many words: only those are read from the dictionary.
  options.words_on_demand = c.spec.q.task == Task::kWordCount && c.spec.q.top > 0 &&
                            !c.spec.q.lowercase && !c.spec.q.alnum;
  const bool progress = comm.rank() == 0 && (c.progress || c.progress_requested);
  options.progress = progress;
  std::unique_ptr<ArchiveSession> session = ArchiveSession::open(comm, options, &t);
  if (comm.rank() == 0)
    spdlog::info("run {} on {}, {}, engine {}", task_name(c.spec.q.task),
                 counted(session->manifest().shards.size(), "shard"), counted(comm.size(), "rank"),
                 session->engine().name());
  std::unique_ptr<QueryResult> result = run_query(comm, *session, c.spec, t);
  Timer write_timer;
  write_query_result(comm, *result, {c.output, c.partitioned, c.force, c.archive, progress},
                     session->threads());
  t.write = write_timer.seconds();
  if (!c.stats_file.empty())
    run_collectively(comm,
                     [&] { write_stats(stats.get(), c, comm, *session, t, timer.seconds()); });
  spdlog::info(
      "timings: open {:.3f}s load {:.3f}s init {:.3f}s traversal {:.3f}s shuffle {:.3f}s merge "
      "{:.3f}s write {:.3f}s",
      t.open, t.load, t.init, t.traversal, t.shuffle, t.merge, t.write);
}

}  // namespace gtadoc
