#include "coordinator/run_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cluster/assignment.h"
#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "cluster/partition.h"
#include "cluster/reduce.h"
#include "cluster/rows/rank_rows.h"
#include "cluster/rows/render.h"
#include "cluster/rows/result_writer.h"
#include "cluster/rows/sequence_order.h"
#include "cluster/shuffle.h"
#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "coordinator/crash_report.h"
#include "formats/archive.h"
#include "formats/atomic_output.h"
#include "worker/engine.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

struct Given {  // which options the user typed (some defaults depend on the task)
  CLI::Option *n = nullptr, *top = nullptr, *min_count = nullptr;
};
Given g_given;

void validate(RunCommand& c) {
  c.q.task = parse_task(c.task);
  if (c.output == "-") {
    if (c.partitioned) throw UsageError("--partitioned needs -o DIR, not standard output");
    c.output.clear();  // -o - is standard output
  }
  const Task t = c.q.task;
  auto given = [](CLI::Option* o) { return o != nullptr && o->count() > 0; };
  if (given(g_given.n) && !is_sequence_task(t))
    throw UsageError("--n applies only to sequence-count and ranked-inverted-index");
  if (c.q.n < 2 || c.q.n > 8)
    throw UsageError("--n " + std::to_string(c.q.n) + " is out of range (2..8)");
  if (c.q.per_doc && t != Task::kSequenceCount)
    throw UsageError("--per-doc applies only to sequence-count");
  if (given(g_given.min_count) && t != Task::kTermVector)
    throw UsageError("--min-count applies only to term-vector");
  if (given(g_given.top) && t != Task::kWordCount && t != Task::kTermVector &&
      t != Task::kSequenceCount)
    throw UsageError(std::string("--top does not apply to ") + task_name(t));
  if (t == Task::kTermVector && !given(g_given.top)) c.q.top = 10;
  if (c.format == "tsv") {
  } else if (c.format != "json") {
    throw UsageError("--format: unknown format '" + c.format + "' (expected tsv or json)");
  }
  if (c.traversal == "auto")
    c.q.traversal = Traversal::kAuto;
  else if (c.traversal == "top-down")
    c.q.traversal = Traversal::kTopDown;
  else if (c.traversal == "bottom-up")
    c.q.traversal = Traversal::kBottomUp;
  else
    throw UsageError("--traversal: unknown traversal '" + c.traversal +
                     "' (expected auto, top-down or bottom-up)");
  if (c.engine != "auto" && c.engine != "gpu" && c.engine != "cpu")
    throw UsageError("--engine: unknown engine '" + c.engine + "' (expected auto, gpu or cpu)");
  if (c.partitioned && c.output.empty())
    throw UsageError("--partitioned needs -o DIR (the directory that receives the parts)");
  if (!c.output.empty() && !c.force) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(c.output, ec)))
      throw InputError(c.output + ": output exists (use --force to replace it)");
  }
}

/// Fault injection for the failure tests: GTADOC_FAULT_INJECT="RANK:SHARD:kill|throw" makes that
/// rank die by SIGKILL, or throw, when it starts on that shard.
void maybe_inject_fault(const Comm& comm, uint32_t shard) {
  const char* spec = std::getenv("GTADOC_FAULT_INJECT");
  if (spec == nullptr) return;
  int rank = -1;
  unsigned s = 0;
  char mode[16] = {0};
  if (std::sscanf(spec, "%d:%u:%15s", &rank, &s, mode) != 3) return;
  if (rank != comm.rank() || s != shard) return;
  if (std::string(mode) == "kill") ::raise(SIGKILL);
  if (std::string(mode) == "segv") ::raise(SIGSEGV);
  throw InputError("injected failure (GTADOC_FAULT_INJECT)");
}

/// Size of the archive's shard files in MB (the grammar the engines traverse); 0 when the
/// directory cannot be listed (read_manifest then reports what is wrong).
double grammar_megabytes(const std::string& archive) {
  std::error_code ec;
  uint64_t bytes = 0;
  for (fs::directory_iterator it(archive, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("shard-", 0) == 0 && it->is_regular_file(ec)) bytes += it->file_size(ec);
  }
  return static_cast<double>(bytes) / 1e6;
}

struct Timings {
  double load = 0, init = 0, traversal = 0, shuffle = 0, merge = 0, write = 0;
  double collect = 0;  ///< records from the engine (GPU download) and of all shards together
  std::vector<std::string> traversals;  ///< per shard of this rank: "top-down: reason"
};

using ShardRead = std::future<std::pair<ShardGrammar, double>>;

/// Starts reading shard `s` on a thread: (grammar, seconds the read took).
ShardRead start_read(const RunCommand& c, const Manifest& m, uint32_t s) {
  return std::async(std::launch::async, [&c, &m, s] {
    Timer timer;
    ShardGrammar g = read_shard_grammar(c.archive, m, s);
    return std::make_pair(std::move(g), timer.seconds());
  });
}

/// Loads and queries this rank's shards, reading shard k+1 while shard k is traversed. `next`
/// is the read of mine[0], already started (or invalid when the rank has no shard).
RecordBatch process_shards(const RunCommand& c, Comm& comm, const Manifest& m,
                           const Normalization& norm, Engine& engine,
                           const std::vector<uint32_t>& mine, ShardRead next, Timings& t) {
  std::vector<RecordBatch> batches;
  for (size_t i = 0; i < mine.size(); ++i) {
    uint32_t s = mine[i];
    set_crash_context((comm.size() > 1 ? "rank " + std::to_string(comm.rank()) + ": " : "") +
                      "shard " + std::to_string(s) + " (" + shard_file_name(s) + ")");
    try {
      maybe_inject_fault(comm, s);
      Timer wait;
      auto [grammar, read_s] = next.get();
      double waited = wait.seconds();
      if (i + 1 < mine.size()) next = start_read(c, m, mine[i + 1]);
      Timer load_timer;
      std::unique_ptr<LoadedShard> loaded = engine.load(std::move(grammar));
      t.load += waited + load_timer.seconds();
      ShardRunStats stats;
      Timer run_timer;
      RecordBatch batch = engine.run(*loaded, c.q, norm, stats);
      t.collect += std::max(0.0, run_timer.seconds() - stats.init_s - stats.traversal_s);
      t.init += stats.init_s;
      t.traversal += stats.traversal_s;
      t.traversals.push_back(std::string(traversal_name(stats.traversal)) +
                             (stats.selector_reason.empty() ? "" : ": " + stats.selector_reason));
      spdlog::info(
          "shard {}: {} records, {} traversal ({}), read {:.3f}s init {:.3f}s "
          "traversal {:.3f}s",
          s, batch.size(), traversal_name(stats.traversal), stats.selector_reason, read_s,
          stats.init_s, stats.traversal_s);
      batches.push_back(std::move(batch));
    } catch (const Error& e) {
      if (next.valid()) next.wait();
      // The rank is named by raise_if_any_failed when the failure is reported collectively.
      std::string where = "shard " + std::to_string(s) + " (" + shard_file_name(s) + "): ";
      throw Error(e.kind(), where + e.what());
    }
  }
  set_crash_context(comm.size() > 1 ? "rank " + std::to_string(comm.rank()) +
                                          " (after its shards, exchanging results)"
                                    : "");
  Timer concat_timer;
  RecordBatch local = concatenate(std::move(batches), key_layout(c.q).width, c.q.threads);
  t.collect += concat_timer.seconds();
  return local;
}

void write_stats(const RunCommand& c, Comm& comm, const std::string& engine, const Manifest& m,
                 const Timings& t, double total) {
  std::vector<uint64_t> ns;
  for (double v : {t.load, t.init, t.traversal, t.collect, t.shuffle, t.merge, t.write, total})
    ns.push_back(static_cast<uint64_t>(v * 1e9));
  comm.allreduce(ns, ReduceOp::kMax);
  if (comm.rank() != 0) return;
  nlohmann::ordered_json j;
  j["task"] = task_name(c.q.task);
  j["engine"] = engine;
  j["ranks"] = comm.size();
  j["threads"] = c.q.threads;
  j["shards"] = m.shards.size();
  const char* keys[] = {"load_s",    "init_s",  "traversal_s", "collect_s",
                        "shuffle_s", "merge_s", "write_s",     "total_s"};
  for (size_t i = 0; i < ns.size(); ++i) j[keys[i]] = static_cast<double>(ns[i]) / 1e9;
  j["rank0_traversals"] = t.traversals;
  std::string text = j.dump(2) + "\n";
  std::ofstream out(c.stats_file, std::ios::trunc);
  out << text;
  if (!out) throw InputError(c.stats_file + ": cannot write statistics");
}

}  // namespace

void add_run_options(CLI::App& app, RunCommand& c) {
  app.add_option("ARCHIVE", c.archive, "Archive directory (OUT.gtd)")->required();
  app.add_option("TASK", c.task,
                 "word-count | sort | inverted-index | term-vector | sequence-count | "
                 "ranked-inverted-index")
      ->required();
  g_given.n = app.add_option("--n", c.q.n, "Sequence length, 2..8 (default 3)");
  g_given.top = app.add_option("--top", c.q.top,
                               "Limit rows (0 = all; term-vector: words per document, default 10)");
  g_given.min_count =
      app.add_option("--min-count", c.q.min_count, "term-vector: only words with count >= M");
  app.add_flag("--per-doc", c.q.per_doc, "sequence-count: count per document");
  app.add_flag("--ids", c.q.ids, "Print document ids instead of names");
  app.add_flag("--lowercase", c.q.lowercase, "Map ASCII A-Z to a-z");
  app.add_flag("--alnum", c.q.alnum, "Trim non-alphanumeric ASCII at both ends; drop empty words");
  app.add_option("-o,--output", c.output, "Result file, or - for standard output (the default)");
  app.add_option("--format", c.format, "tsv (default) or json");
  app.add_flag("--partitioned", c.partitioned,
               "Write one part per rank plus _SUCCESS into the -o directory");
  app.add_option("--engine", c.engine, "auto (default), gpu or cpu");
  app.add_option("--traversal", c.traversal, "auto (default), top-down or bottom-up");
  app.add_option("--threads", c.q.threads, "CPU threads per rank (default: cores / ranks)");
  app.add_flag("--force", c.force, "Replace an existing output");
  app.add_option("--stats", c.stats_file,
                 "Write timings (max over ranks) and traversal decisions as JSON to FILE");
}

void execute_run(RunCommand& c, Comm& comm) {
  install_crash_report();
  Timings t;
  Timer timer;
  Manifest m;
  Normalization norm;
  std::unique_ptr<Engine> engine;
  std::vector<std::vector<uint32_t>> assignment;
  ShardRead first;
  run_collectively(comm, [&] {
    validate(c);
    if (c.q.threads == 0) c.q.threads = default_threads(static_cast<unsigned>(comm.local_size()));
    // Creating the engine (for the GPU: the CUDA context, 0.2-0.5 s) overlaps reading the
    // manifest, starting the first shard's read and normalizing the dictionary.
    const int local_rank = comm.local_rank();
    if (c.engine == "auto") {
      std::string why;
      // Probing for a GPU initializes the CUDA driver (0.2-0.4 s): only when a GPU could win.
      const double mb = grammar_megabytes(c.archive) / comm.size();
      const bool could_win = choose_auto_engine(c.q.task, mb, c.q.threads, true, nullptr) == "gpu";
      c.engine = choose_auto_engine(c.q.task, mb, c.q.threads, could_win && gpu_available(), &why);
      if (comm.rank() == 0) spdlog::info("--engine auto: {} ({})", c.engine, why);
    }
    std::future<std::unique_ptr<Engine>> made = std::async(std::launch::async, [&c, local_rank] {
      return make_engine(c.engine, c.q.threads, local_rank);
    });
    m = read_manifest(c.archive);
    std::vector<uint64_t> sizes;
    for (const auto& s : m.shards) sizes.push_back(s.input_bytes);
    assignment = assign_by_size(sizes, comm.size());
    if (!assignment[comm.rank()].empty()) first = start_read(c, m, assignment[comm.rank()][0]);
    norm = normalize_dictionary(m.dict, c.q.lowercase, c.q.alnum);
    engine = made.get();
  });
  const OutputFormat fmt = c.format == "json" ? OutputFormat::kJson : OutputFormat::kTsv;
  t.init += timer.seconds();
  if (comm.rank() == 0)
    spdlog::info("run {} on {} shards, {} ranks, engine {}", task_name(c.q.task), m.shards.size(),
                 comm.size(), engine->name());

  RecordBatch local;
  run_collectively(comm, [&] {
    local = process_shards(c, comm, m, norm, *engine, assignment[comm.rank()], std::move(first), t);
  });

  Timer shuffle_timer;
  const KeyLayout layout = key_layout(c.q);
  const uint32_t parts = static_cast<uint32_t>(comm.size());
  // Sequence rows order by their joined bytes. When that is not the word-id order (a word holds
  // a byte below 0x20), n-grams are rewritten into ranks here, once, so that every later stage
  // (range partitioning, reduce, row order) orders integer tuples; rendering maps them back.
  std::optional<SequenceOrder> words_order, keys_order;
  if (is_sequence_task(c.q.task)) {
    words_order.emplace(norm.dict, c.q.n, c.q.threads);
    if (words_order->identity()) {
      keys_order = words_order;
    } else {
      keys_order = SequenceOrder::of_ranks(c.q.n);
      const uint32_t w = local.width, off = c.q.per_doc ? 1 : 0;
      parallel_for(local.size() / 4096 + 1, c.q.threads, [&](size_t b) {
        for (size_t i = b * 4096; i < std::min(local.size(), (b + 1) * 4096); ++i)
          words_order->to_ranks(local.keys.data() + i * w + off);
      });
    }
  }
  std::vector<uint32_t> splitters;
  RecordBatch owned;
  if (parts == 1) {  // one owner: nothing to partition or move
    owned = std::move(local);
  } else {
    if (layout.range_partition) splitters = choose_range_splitters(comm, local, parts);
    PartitionedRecords partitioned =
        partition_records(local, layout, parts, splitters, c.q.threads);
    local = RecordBatch{};
    owned = shuffle_records(comm, partitioned);
  }
  t.shuffle = shuffle_timer.seconds();

  Timer merge_timer;
  reduce_records(owned, c.q.threads);
  spdlog::debug("reduce: {} records in {:.3f}s", owned.size(), merge_timer.seconds());
  // term-vector: every document of this rank's range gets a row, with words or without.
  const DocId num_docs = static_cast<DocId>(m.docs.size());
  DocId doc_begin = 0, doc_end = num_docs;
  if (c.q.task == Task::kTermVector && parts > 1) {
    const int r = comm.rank();
    doc_begin = r == 0 ? 0 : std::min(splitters[r - 1], num_docs);
    doc_end = r + 1 == comm.size() ? num_docs : std::min(splitters[r], num_docs);
    doc_end = std::max(doc_begin, doc_end);
  }
  RankRows rows = plan_rank_rows(comm, std::move(owned), c.q, keys_order ? &*keys_order : nullptr,
                                 doc_begin, doc_end, c.q.threads);
  t.merge = merge_timer.seconds();

  Timer write_timer;
  const DocText doc_text(m.docs, c.q.ids, fmt, c.q.threads);
  const bool ranked_keys = words_order && !words_order->identity();
  const RenderContext render{c.q, norm.dict, doc_text, fmt, ranked_keys ? &*words_order : nullptr};
  write_result(comm, rows, render, {c.output, c.partitioned, c.force, c.archive}, c.q.threads);
  t.write = write_timer.seconds();
  if (!c.stats_file.empty()) write_stats(c, comm, engine->name(), m, t, timer.seconds());
  spdlog::info(
      "timings: load {:.3f}s init {:.3f}s traversal {:.3f}s shuffle {:.3f}s merge "
      "{:.3f}s write {:.3f}s",
      t.load, t.init, t.traversal, t.shuffle, t.merge, t.write);
}

}  // namespace gtadoc
