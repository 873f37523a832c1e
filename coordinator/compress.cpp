#include "coordinator/compress.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>
#include <queue>
#include <random>
#include <span>

#include "cluster/assignment.h"
#include "cluster/collective_error.h"
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
    // Words are interned a few behind the tokenizer, so each one's table slot has been
    // prefetched by the time it is looked up (the vocabulary table is far larger than cache).
    constexpr size_t kAhead = 8;
    std::string_view pending[kAhead];
    uint64_t pending_hash[kAhead];
    size_t queued = 0;
    tokenize(
        text, [&](std::string_view gap) { w.gaps.push_back(w.ws.intern(gap)); },
        [&](std::string_view word) {
          size_t slot = queued % kAhead;
          if (queued >= kAhead)
            w.tokens.push_back(w.vocab.intern(pending[slot], pending_hash[slot]));
          pending[slot] = word;
          pending_hash[slot] = StringTable::hash(word);
          w.vocab.prefetch(pending_hash[slot]);
          ++queued;
        });
    for (size_t k = queued > kAhead ? queued - kAhead : 0; k < queued; ++k)
      w.tokens.push_back(w.vocab.intern(pending[k % kAhead], pending_hash[k % kAhead]));
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

namespace {

// Byte serialization for the few small messages compression exchanges between ranks.
void put(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), 8);
}
uint64_t take(const std::vector<uint8_t>& in, size_t& pos) {
  GTADOC_EXPECTS(pos + 8 <= in.size(), "truncated message");
  uint64_t v;
  std::memcpy(&v, in.data() + pos, 8);
  pos += 8;
  return v;
}
std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string serialize_dictionary(const Dictionary& d) {
  std::string out;
  put(out, d.size());
  for (uint32_t i = 0; i < d.size(); ++i) put(out, d[i].size());
  out.append(d.bytes().begin(), d.bytes().end());
  return out;
}

Dictionary deserialize_dictionary(const std::vector<uint8_t>& in) {
  size_t pos = 0;
  uint64_t n = take(in, pos);
  std::vector<uint64_t> offsets{0};
  for (uint64_t i = 0; i < n; ++i) offsets.push_back(offsets.back() + take(in, pos));
  GTADOC_EXPECTS(pos + offsets.back() == in.size(), "bad dictionary message");
  return Dictionary(std::vector<char>(in.begin() + pos, in.end()), std::move(offsets));
}

/// Union of sorted dictionaries, in byte order.
Dictionary merge_dictionaries(const std::vector<Dictionary>& parts) {
  using Head = std::pair<std::string_view, uint32_t>;
  auto greater = [](const Head& a, const Head& b) { return a > b; };
  std::priority_queue<Head, std::vector<Head>, decltype(greater)> heap(greater);
  std::vector<uint32_t> pos(parts.size(), 0);
  for (uint32_t p = 0; p < parts.size(); ++p)
    if (parts[p].size()) heap.push({parts[p][0], p});
  Dictionary out;
  while (!heap.empty()) {
    auto [word, p] = heap.top();
    heap.pop();
    if (out.size() == 0 || out[out.size() - 1] != word) out.push_back(word);
    if (++pos[p] < parts[p].size()) heap.push({parts[p][pos[p]], p});
  }
  return out;
}

}  // namespace

CompressStats compress(const std::vector<std::string>& inputs, const fs::path& out,
                       const CompressOptions& options, Comm& comm) {
  Timer timer;
  const bool root = comm.rank() == 0;
  std::vector<InputDocument> docs;
  std::vector<ShardPlan> plan;
  std::unique_ptr<AtomicOutput> output;
  std::vector<uint8_t> header;  // root -> all: archive id, temporary directory
  run_collectively(comm, [&] {
    std::vector<SkippedInput> skipped;
    docs = collect_inputs(inputs, &skipped);
    plan = plan_shards(docs, options.shard_size, options.shards);
    if (!root) return;
    announce_skipped(skipped);
    AtomicOutput::Replace replace{"manifest.h5", {inputs.begin(), inputs.end()}};
    output =
        std::make_unique<AtomicOutput>(out, AtomicOutput::Kind::kDirectory, options.force, replace);
    std::random_device rd;
    std::string h;
    put(h, (uint64_t{rd()} << 32) ^ rd());
    h += output->temp_path().string();
    header.assign(h.begin(), h.end());
  });
  comm.broadcast(header);
  size_t hp = 0;
  const uint64_t archive_id = take(header, hp);
  const fs::path dir(std::string(header.begin() + hp, header.end()));

  // Ranks sharing a node share its cores unless --threads says otherwise.
  unsigned threads = options.threads > 0
                         ? options.threads
                         : default_threads(static_cast<unsigned>(comm.local_size()));
  uint64_t total_bytes = 0;
  std::vector<uint64_t> sizes;
  for (const auto& d : docs) total_bytes += d.bytes;
  for (const auto& p : plan) sizes.push_back(p.bytes);
  const std::vector<uint32_t> mine = assign_by_size(sizes, comm.size())[comm.rank()];
  if (root)
    spdlog::info("compress: {} documents, {} bytes, {} shards, {} ranks x {} threads", docs.size(),
                 total_bytes, plan.size(), comm.size(), threads);

  std::vector<ShardWork> work(mine.size());
  for (size_t k = 0; k < mine.size(); ++k) {
    work[k].index = mine[k];
    work[k].plan = plan[mine[k]];
  }
  Dictionary dict;
  run_collectively(comm, [&] {
    uint64_t my_bytes = 0;
    for (auto& w : work) my_bytes += w.plan.bytes;
    Progress progress("reading", my_bytes, "bytes", options.progress);
    parallel_for(work.size(), threads, [&](size_t k) { tokenize_shard(work[k], docs, progress); });
    dict = merge_vocabularies(work);  // this rank's words; local_to_global points into it
  });
  if (comm.size() > 1) {
    // Rank 0 merges every rank's sorted vocabulary into the global dictionary and sends it back;
    // each rank then maps its own word ids to global ones by binary search.
    auto gathered = comm.gather(bytes_of(serialize_dictionary(dict)));
    std::vector<uint8_t> global_bytes;
    if (root) {
      std::vector<Dictionary> parts;
      for (auto& g : gathered) parts.push_back(deserialize_dictionary(g));
      gathered.clear();
      std::string s = serialize_dictionary(merge_dictionaries(parts));
      global_bytes.assign(s.begin(), s.end());
    }
    comm.broadcast(global_bytes);
    Dictionary global = deserialize_dictionary(global_bytes);
    std::vector<WordId> to_global(dict.size());
    parallel_for(dict.size(), threads,
                 [&](size_t i) { to_global[i] = global.find(dict[static_cast<WordId>(i)]); });
    for (auto& w : work)
      for (WordId& id : w.local_to_global) id = to_global[id];
    dict = std::move(global);
  }
  if (dict.size() >= kBoundaryBit / 2) throw InputError("vocabulary too large");
  for (auto& w : work) {  // local vocabularies are no longer needed
    w.vocab = StringTable(1);
    std::vector<uint32_t>().swap(w.vocab_order);
  }

  run_collectively(comm, [&] {
    std::mutex h5_mutex;
    Progress progress("compressing", work.size(), "shards", options.progress);
    parallel_for(work.size(), threads, [&](size_t k) {
      encode_shard(work[k], dict.size(), dir, archive_id, options, h5_mutex);
      progress.add(1);
    });
  });

  // Shard tables to rank 0, which writes the manifest and moves the archive into place.
  std::string table;
  for (const auto& w : work) {
    put(table, w.index);
    const ShardEntry& e = w.entry;
    for (uint64_t v : {uint64_t{e.first_doc}, uint64_t{e.num_docs}, e.input_bytes, e.words, e.rules,
                       e.symbols, uint64_t{e.depth}, e.file_bytes})
      put(table, v);
    for (uint32_t i = 0; i < w.plan.num_docs; ++i) {
      put(table, w.doc_bytes[i]);
      put(table, w.doc_words[i]);
    }
  }
  auto tables = comm.gather(bytes_of(table));
  CompressStats stats;
  run_collectively(comm, [&] {
    if (!root) return;
    Manifest manifest;
    manifest.archive_id = archive_id;
    manifest.docs.resize(docs.size());
    manifest.shards.resize(plan.size());
    for (const auto& t : tables) {
      size_t pos = 0;
      while (pos < t.size()) {
        uint32_t s = static_cast<uint32_t>(take(t, pos));
        ShardEntry& e = manifest.shards.at(s);
        e.first_doc = static_cast<DocId>(take(t, pos));
        e.num_docs = static_cast<uint32_t>(take(t, pos));
        e.input_bytes = take(t, pos);
        e.words = take(t, pos);
        e.rules = take(t, pos);
        e.symbols = take(t, pos);
        e.depth = static_cast<uint32_t>(take(t, pos));
        e.file_bytes = take(t, pos);
        for (uint32_t i = 0; i < e.num_docs; ++i) {
          DocEntry& d = manifest.docs.at(e.first_doc + i);
          d.name = docs[e.first_doc + i].name;
          d.bytes = take(t, pos);
          d.words = take(t, pos);
          d.shard = s;
        }
        stats.words += e.words;
        stats.input_bytes += e.input_bytes;
        stats.rules += e.rules;
        stats.symbols += e.symbols;
      }
    }
    manifest.dict = std::move(dict);
    stats.vocabulary = manifest.dict.size();
    seal_shard_digests(dir, manifest, threads);  // recorded in the manifest (gtadoc verify)
    write_manifest_file(dir / kManifestFile, manifest, {options.deflate_level});
    stats.archive_bytes = directory_bytes(dir);
    output->commit();
  });
  stats.documents = docs.size();
  stats.shards = plan.size();
  stats.seconds = timer.seconds();
  return stats;
}

}  // namespace gtadoc
