// Pass 2 of `gtadoc compress` (coordinator/compress/job.h, CompressJob::encode_shards): per
// shard, tokens -> global ids, Sequitur, finalization, the shard file; shards kept in memory
// first, then the spilled ones, each started only when its estimated peak fits in the budget
// next to what is held (coordinator/compress/memory.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <vector>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "common/big_alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "common/types.h"
#include "coordinator/cli.h"
#include "coordinator/compress/job.h"
#include "coordinator/compress/memory.h"
#include "coordinator/compress/spill.h"
#include "coordinator/compress/vocabulary.h"
#include "coordinator/sequitur.h"
#include "formats/archive.h"
#include "formats/chunk_maps.h"

namespace gtadoc::compression {
namespace fs = std::filesystem;

namespace {

namespace model = memory_model;

/// Whitespace dictionary ordered by frequency (most frequent = id 0), gaps rewritten.
ShardLayout build_layout(ShardTokens& t) {
  std::vector<uint64_t> freq(t.ws.size(), 0);
  for (uint32_t g : t.gaps) ++freq[g];
  std::vector<uint32_t> order(t.ws.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return freq[a] > freq[b]; });
  std::vector<uint32_t> new_id(t.ws.size());
  ShardLayout layout;
  for (uint32_t i = 0; i < order.size(); ++i) {
    new_id[order[i]] = i;
    layout.ws_dict.emplace_back(t.ws.get(order[i]));
  }
  resize_on_huge_pages(layout.gaps, t.gaps.size());
  for (size_t i = 0; i < t.gaps.size(); ++i) layout.gaps[i] = new_id[t.gaps[i]];
  decltype(t.gaps)().swap(t.gaps);
  return layout;
}

/// Shard-local word ids in dictionary order, Sequitur, finalization and the shard file.
void encode_shard(ShardWork& w, ShardTokens t, const std::vector<WordId>& to_global,
                  const Vocabulary& vocab, uint32_t num_words, const fs::path& dir,
                  uint64_t archive_id, const CompressOptions& options, unsigned threads,
                  std::mutex& h5_mutex) {
  Timer timer;
  // The shard's words numbered in dictionary order (the archive's shard-local ids): the tokens,
  // Sequitur and the grammar use them; local_words maps them to the dictionary.
  const size_t num_local = t.word_ids.size();
  std::vector<WordId> dict_ids(num_local);
  for (size_t l = 0; l < num_local; ++l) dict_ids[l] = to_global[vocab.dense(t.word_ids[l])];
  std::vector<uint32_t>().swap(t.word_ids);
  std::vector<uint32_t> order(num_local);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return dict_ids[a] < dict_ids[b]; });
  std::vector<uint32_t> rank(num_local);
  std::vector<WordId> sorted_ids(num_local);
  for (uint32_t i = 0; i < num_local; ++i) {
    rank[order[i]] = i;
    sorted_ids[i] = dict_ids[order[i]];
  }
  std::vector<uint32_t>().swap(order);
  std::vector<WordId>().swap(dict_ids);
  for (Symbol& s : t.tokens)
    if (!is_boundary(s)) s = rank[s];
  std::vector<uint32_t>().swap(rank);
  const double mapped = timer.seconds();
  GTADOC_EXPECTS(num_local <= num_words, "compress: a shard with more words than the dictionary");
  const uint32_t L = static_cast<uint32_t>(num_local);
  RawGrammar raw = sequitur(t.tokens, L);
  decltype(t.tokens)().swap(t.tokens);
  const double grammar = timer.seconds();
  ShardGrammar g = finalize_grammar(L, w.plan.first_doc, w.plan.num_docs, raw);
  for (WordId& id : g.local_words) id = sorted_ids[id];  // the words used, as dictionary ids
  raw = RawGrammar{};
  ShardLayout layout = build_layout(t);
  fs::path file = dir / shard_file_name(w.index);
  const double finalized = timer.seconds();
  // Deflated here, next to the other shards' work; only the file's creation and its bytes wait
  // for the HDF5 library, which is not thread-safe.
  const FilteredShard filtered =
      prepare_shard_file(w.index, g, layout, {options.deflate_level, threads});
  const double deflated = timer.seconds();
  double waited = 0;
  {
    std::lock_guard<std::mutex> lock(h5_mutex);
    waited = timer.seconds();
    write_shard_file(file, archive_id, filtered);
  }
  w.entry.first_doc = w.plan.first_doc;
  w.entry.num_docs = w.plan.num_docs;
  w.entry.input_bytes = std::accumulate(w.doc_bytes.begin(), w.doc_bytes.end(), uint64_t{0});
  w.entry.words = std::accumulate(w.doc_words.begin(), w.doc_words.end(), uint64_t{0});
  w.entry.rules = g.num_rules();
  w.entry.symbols = g.symbols.size();
  w.entry.depth = dag_depth(g);
  w.entry.file_bytes = fs::file_size(file);
  // The file's SHA-256 (recorded in the manifest for gtadoc verify) while it is in the page cache
  // and the other threads still encode, rather than every file's at the end.
  w.entry.sha256 = sha256_file(file);
  // Where its arrays' chunks lie, for reads without HDF5 (formats/chunk_maps.h).
  w.entry.chunk_maps = map_shard_chunks(file);
  spdlog::debug(
      "compress: shard {} encoded in {:.2f}s: ids {:.2f}s, sequitur {:.2f}s, finalized {:.2f}s, "
      "deflated {:.2f}s, waited {:.2f}s for the file, written and hashed {:.2f}s",
      w.index, timer.seconds(), mapped, grammar - mapped, finalized - grammar, deflated - finalized,
      waited - deflated, timer.seconds() - waited);
}

}  // namespace

void CompressJob::encode_shards() {
  // Kept shards first (their tokens are already in memory), then the spilled ones; kept shards
  // are spilled (last first) while even one shard at a time would not fit.
  for (size_t k = work.size(); k-- > 0;) {
    if (gate.used() - kept_total() + encode_need() <= budget) break;
    if (work[k].kept) spill_kept(work[k]);
  }
  // Within each group the costliest shards go first, so that the last ones to finish are short
  // (each shard writes its own file: the order changes nothing in the archive).
  std::vector<size_t> schedule;
  for (size_t k = 0; k < work.size(); ++k)
    if (work[k].kept) schedule.push_back(k);
  const auto kept_end = static_cast<std::ptrdiff_t>(schedule.size());
  for (size_t k = 0; k < work.size(); ++k)
    if (!work[k].kept) schedule.push_back(k);
  auto costlier = [&](size_t a, size_t b) { return work[a].encode_cost() > work[b].encode_cost(); };
  std::stable_sort(schedule.begin(), schedule.begin() + kept_end, costlier);
  std::stable_sort(schedule.begin() + kept_end, schedule.end(), costlier);
  // One warning for the whole job when even one shard at a time does not fit, or the manifest
  // (the dictionary, its front-coded copy, the document table) on rank 0.
  uint64_t need_alone = gate.used() - kept_total() + encode_need();
  if (root) need_alone = std::max(need_alone, base + 2 * dict_bytes + 16 * num_words);
  need_alone = std::max(need_alone, gate.peak());  // reading went over alone
  const uint64_t worst_need = comm.allreduce(need_alone > budget ? need_alone : 0, ReduceOp::kMax);
  if (root && worst_need > 0)
    spdlog::warn(
        "{} {} is below the ~{} that the largest shard and the dictionary may need; shards go "
        "one at a time and the peak may pass the budget (a smaller --shard-size needs less)",
        default_budget ? "the default memory budget" : "--memory-budget", format_bytes(budget),
        format_bytes(worst_need));
  const uint64_t in_flight =
      model::shards_in_flight(budget, gate.used() - kept_total(), largest, shards_at_once);
  spdlog::info(
      "compress: encoding {}, up to {} at once (estimate per shard up to {}, {} held of {})",
      counted(work.size(), "shard"), in_flight, format_bytes(largest), format_bytes(gate.used()),
      format_bytes(budget));

  // Each shard deflates its file on its share of the threads.
  const unsigned deflate_threads =
      std::max(1u, threads / static_cast<unsigned>(std::max<uint64_t>(1, in_flight)));
  Timer encode_timer;
  run_collectively(comm, [&] {
    std::mutex h5_mutex;
    Progress progress("compressing", work.size(), "shards", options.progress);
    parallel_for(schedule.size(), threads, [&](size_t i) {
      ShardWork& w = work[schedule[i]];
      const uint64_t estimate = w.encode_estimate() - w.kept_bytes;
      gate.acquire(estimate);
      try {
        ShardTokens t = w.kept ? std::move(*w.kept) : read_spill(spill_file(dir, w.index));
        w.kept.reset();
        encode_shard(w, std::move(t), to_global, *vocab, static_cast<uint32_t>(num_words), dir,
                     archive_id, options, deflate_threads, h5_mutex);
      } catch (...) {
        gate.release(estimate);
        throw;
      }
      gate.release(estimate);
      gate.drop(w.kept_bytes);
      w.kept_bytes = 0;
      progress.add(1);
    });
  });
  std::vector<WordId>().swap(to_global);
  gate.drop(4 * words_here);
  trim_heap();
  spdlog::debug("compress: encoded {} in {:.2f}s", counted(work.size(), "shard"),
                encode_timer.seconds());
}

}  // namespace gtadoc::compression
