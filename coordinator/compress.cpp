#include "coordinator/compress.h"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <queue>
#include <random>

#include "cluster/comm.h"
#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "coordinator/inputs.h"
#include "coordinator/sequitur.h"
#include "coordinator/string_table.h"
#include "coordinator/tokenize.h"
#include "formats/archive.h"
#include "formats/atomic_output.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

/// Everything one shard goes through between reading its documents and writing its file.
struct ShardWork {
  uint32_t index = 0;
  ShardPlan plan;
  StringTable vocab{1 << 12};
  std::vector<uint32_t> vocab_order;  ///< local word ids in byte order of the words
  std::vector<Symbol> tokens;         ///< local ids, later global ids; boundaries between docs
  StringTable ws{64};
  std::vector<uint32_t> gaps;
  std::vector<uint64_t> doc_words, doc_bytes;
  std::vector<WordId> local_to_global;
  ShardEntry entry;
};

void tokenize_shard(ShardWork& w, const std::vector<InputDocument>& docs, Progress& progress) {
  w.tokens.reserve(w.plan.bytes / 5 + 16);
  w.gaps.reserve(w.plan.bytes / 5 + 16);
  for (uint32_t i = 0; i < w.plan.num_docs; ++i) {
    const InputDocument& doc = docs[w.plan.first_doc + i];
    std::string text = read_whole_file(doc.path);
    uint64_t before = w.tokens.size();
    tokenize(
        text, [&](std::string_view gap) { w.gaps.push_back(w.ws.intern(gap)); },
        [&](std::string_view word) { w.tokens.push_back(w.vocab.intern(word)); });
    w.doc_words.push_back(w.tokens.size() - before);
    w.doc_bytes.push_back(text.size());
    if (i + 1 < w.plan.num_docs) w.tokens.push_back(boundary_symbol(i));
    progress.add(text.size());
  }
  if (w.vocab.size() >= kBoundaryBit / 2)
    throw InputError("shard " + std::to_string(w.index) + ": vocabulary too large");
  w.vocab_order.resize(w.vocab.size());
  std::iota(w.vocab_order.begin(), w.vocab_order.end(), 0u);
  std::sort(w.vocab_order.begin(), w.vocab_order.end(),
            [&](uint32_t a, uint32_t b) { return w.vocab.get(a) < w.vocab.get(b); });
}

/// K-way merge of the shards' sorted vocabularies into the global dictionary; fills each
/// shard's local_to_global map.
Dictionary merge_vocabularies(std::vector<ShardWork>& work) {
  using Head = std::pair<std::string_view, uint32_t>;  // (word, shard)
  auto greater = [](const Head& a, const Head& b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  };
  std::priority_queue<Head, std::vector<Head>, decltype(greater)> heap(greater);
  std::vector<size_t> pos(work.size(), 0);
  for (uint32_t s = 0; s < work.size(); ++s) {
    work[s].local_to_global.assign(work[s].vocab.size(), 0);
    if (!work[s].vocab_order.empty()) heap.push({work[s].vocab.get(work[s].vocab_order[0]), s});
  }
  Dictionary dict;
  while (!heap.empty()) {
    auto [word, s] = heap.top();
    heap.pop();
    if (dict.size() == 0 || dict[dict.size() - 1] != word) dict.push_back(word);
    ShardWork& w = work[s];
    w.local_to_global[w.vocab_order[pos[s]]] = dict.size() - 1;
    if (++pos[s] < w.vocab_order.size()) heap.push({w.vocab.get(w.vocab_order[pos[s]]), s});
  }
  if (dict.size() >= kBoundaryBit / 2) throw InputError("vocabulary too large");
  return dict;
}

/// Whitespace dictionary ordered by frequency (most frequent = id 0), gaps rewritten.
ShardLayout build_layout(ShardWork& w) {
  std::vector<uint64_t> freq(w.ws.size(), 0);
  for (uint32_t g : w.gaps) ++freq[g];
  std::vector<uint32_t> order(w.ws.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return freq[a] > freq[b]; });
  std::vector<uint32_t> new_id(w.ws.size());
  ShardLayout layout;
  for (uint32_t i = 0; i < order.size(); ++i) {
    new_id[order[i]] = i;
    layout.ws_dict.emplace_back(w.ws.get(order[i]));
  }
  layout.gaps = std::move(w.gaps);
  for (uint32_t& g : layout.gaps) g = new_id[g];
  return layout;
}

void encode_shard(ShardWork& w, uint32_t num_words, const fs::path& dir, uint64_t archive_id,
                  const CompressOptions& options, std::mutex& h5_mutex) {
  for (Symbol& t : w.tokens)
    if (!is_boundary(t)) t = w.local_to_global[t];
  RawGrammar raw = sequitur(w.tokens, num_words);
  std::vector<Symbol>().swap(w.tokens);
  ShardGrammar g = finalize_grammar(num_words, w.plan.first_doc, w.plan.num_docs, raw);
  raw = RawGrammar{};
  ShardLayout layout = build_layout(w);
  fs::path file = dir / shard_file_name(w.index);
  {
    std::lock_guard<std::mutex> lock(h5_mutex);  // the HDF5 library is not thread-safe
    write_shard_file(file, archive_id, w.index, g, layout, {options.deflate_level});
  }
  w.entry.first_doc = w.plan.first_doc;
  w.entry.num_docs = w.plan.num_docs;
  w.entry.input_bytes = std::accumulate(w.doc_bytes.begin(), w.doc_bytes.end(), uint64_t{0});
  w.entry.words = std::accumulate(w.doc_words.begin(), w.doc_words.end(), uint64_t{0});
  w.entry.rules = g.num_rules();
  w.entry.symbols = g.symbols.size();
  w.entry.depth = dag_depth(g);
  w.entry.file_bytes = fs::file_size(file);
}

uint64_t directory_bytes(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) total += e.file_size();
  return total;
}

}  // namespace

CompressStats compress(const std::vector<std::string>& inputs, const fs::path& out,
                       const CompressOptions& options, Comm& comm) {
  Timer timer;
  if (comm.size() > 1) GTADOC_FAIL("distributed compression is wired in compress_mpi");
  std::vector<InputDocument> docs = collect_inputs(inputs);
  std::vector<ShardPlan> plan = plan_shards(docs, options.shard_size, options.shards);
  AtomicOutput output(out, AtomicOutput::Kind::kDirectory, options.force);
  unsigned threads = resolve_threads(options.threads);
  uint64_t total_bytes = 0;
  for (const auto& d : docs) total_bytes += d.bytes;
  spdlog::info("compress: {} documents, {} bytes, {} shards, {} threads", docs.size(),
               total_bytes, plan.size(), threads);

  std::vector<ShardWork> work(plan.size());
  for (uint32_t s = 0; s < plan.size(); ++s) {
    work[s].index = s;
    work[s].plan = plan[s];
  }
  {
    Progress progress("reading", total_bytes, "bytes", options.progress);
    parallel_for(work.size(), threads, [&](size_t s) { tokenize_shard(work[s], docs, progress); });
  }
  Manifest manifest;
  manifest.dict = merge_vocabularies(work);
  for (auto& w : work) {  // local vocabularies are no longer needed
    w.vocab = StringTable(1);
    std::vector<uint32_t>().swap(w.vocab_order);
  }
  std::random_device rd;
  manifest.archive_id = (uint64_t{rd()} << 32) ^ rd();
  std::mutex h5_mutex;
  {
    Progress progress("compressing", work.size(), "shards", options.progress);
    parallel_for(work.size(), threads, [&](size_t s) {
      encode_shard(work[s], manifest.dict.size(), output.temp_path(), manifest.archive_id,
                   options, h5_mutex);
      progress.add(1);
    });
  }
  CompressStats stats;
  for (auto& w : work) {
    for (uint32_t i = 0; i < w.plan.num_docs; ++i)
      manifest.docs.push_back({docs[w.plan.first_doc + i].name, w.doc_bytes[i], w.doc_words[i],
                               w.index});
    manifest.shards.push_back(w.entry);
    stats.words += w.entry.words;
    stats.input_bytes += w.entry.input_bytes;
    stats.rules += w.entry.rules;
    stats.symbols += w.entry.symbols;
  }
  write_manifest_file(output.temp_path() / kManifestFile, manifest, {options.deflate_level});
  stats.archive_bytes = directory_bytes(output.temp_path());
  output.commit();
  stats.documents = manifest.docs.size();
  stats.vocabulary = manifest.dict.size();
  stats.shards = manifest.shards.size();
  stats.seconds = timer.seconds();
  return stats;
}

}  // namespace gtadoc
