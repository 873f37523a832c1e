#include "coordinator/search/grep_command.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cluster/assignment.h"
#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "common/cpus.h"
#include "common/error.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "coordinator/cli.h"
#include "coordinator/pipeline/query_spec.h"
#include "formats/atomic_output.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

void validate(GrepCommand& c) {
  if (c.all && c.any) throw UsageError("--all and --any exclude each other");
  if (c.count && c.lines) throw UsageError("--count and --lines exclude each other");
  c.spec.any = c.any;
  c.spec.mode = c.count   ? SearchSpec::Mode::kCount
                : c.lines ? SearchSpec::Mode::kLines
                          : SearchSpec::Mode::kDocs;
  c.spec.format = parse_format(c.format, false);
  validate_search(c.spec);
  if (c.output == "-") c.output.clear();
  require_archive(c.archive);  // an existing -o without --force: AtomicOutput refuses it
}

}  // namespace

void execute_grep(GrepCommand& cmd, Comm& comm) {
  run_collectively(comm, [&] { validate(cmd); });
  Timer timer;
  std::unique_ptr<AtomicOutput> out;
  Manifest manifest;
  Normalization norm;
  PreparedSearch search;
  std::vector<uint32_t> mine;
  run_collectively(comm, [&] {
    if (comm.rank() == 0 && !cmd.output.empty())
      out = std::make_unique<AtomicOutput>(cmd.output, AtomicOutput::Kind::kFile, cmd.force,
                                           AtomicOutput::Replace{"", {fs::path(cmd.archive)}, {}});
    manifest = read_manifest(cmd.archive);
    norm = normalize_dictionary(manifest.dict, cmd.spec.lowercase, cmd.spec.alnum);
    search = prepare_search(cmd.spec, norm);
    std::vector<uint64_t> sizes;
    for (const ShardEntry& e : manifest.shards) sizes.push_back(e.input_bytes);
    mine = assign_by_size(sizes, comm.size())[comm.rank()];
  });
  // A phrase in no document: --all selects nothing, --any needs another phrase.
  const bool any_present = std::any_of(search.phrases.begin(), search.phrases.end(),
                                       [](const NormalizedPhrase& p) { return !p.absent; });
  const bool all_present = std::none_of(search.phrases.begin(), search.phrases.end(),
                                        [](const NormalizedPhrase& p) { return p.absent; });
  const bool none = cmd.spec.any ? !any_present : !all_present;
  const unsigned threads =
      cmd.threads != 0 ? cmd.threads : default_threads(static_cast<unsigned>(comm.local_size()));
  std::vector<SearchHits> per_shard(none ? 0 : mine.size());
  run_collectively(comm, [&] {
    const unsigned outer = static_cast<unsigned>(std::min<size_t>(threads, per_shard.size()));
    const unsigned inner = std::max(1u, threads / std::max(1u, outer));
    parallel_for(per_shard.size(), outer, [&](size_t i) {
      const uint32_t shard = mine[i];
      const ShardGrammar g = read_shard_grammar(cmd.archive, manifest, shard, inner);
      per_shard[i] = search_grammar(g, nullptr, search, norm);
      if (cmd.spec.mode == SearchSpec::Mode::kLines)
        add_line_rows(cmd.archive, manifest, shard, g, search, norm, per_shard[i]);
    });
  });
  SearchHits hits;  // shards ascending: documents ascending
  for (SearchHits& h : per_shard) hits.append(std::move(h));
  std::string text = gather_search_output(comm, manifest, search, std::move(hits));
  run_collectively(comm, [&] {
    if (comm.rank() != 0) return;
    if (out) {
      write_new_file(out->temp_path(), text);
      out->commit();
    } else {
      std::cout << text << std::flush;
      if (!std::cout) throw InputError("standard output: write failed");
    }
  });
  if (comm.rank() == 0)
    spdlog::debug("grep: {} shards on rank 0, {:.3f} s", mine.size(), timer.seconds());
}

}  // namespace gtadoc
