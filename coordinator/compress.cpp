// Two passes over the shards, planned against a memory budget (coordinator/compress.h):
//
//  1. read: every shard is tokenized into its own word table (tokens are local word ids), its
//     distinct words are folded into this process's Vocabulary and the shard's table is freed;
//     the tokens are kept in memory while the budget allows, otherwise written to a spill file
//     in the archive's temporary directory.
//  2. the Vocabulary is sorted once (under mpirun: every rank's sorted words are merged up a
//     binary tree to rank 0 and the union is broadcast): word ids are byte order, so they depend
//     on nothing but the set of words, and the archive is the same whatever the budget.
//  3. encode: per shard, tokens -> global ids, Sequitur, finalization, the shard file; shards
//     kept in memory first, then the spilled ones, each started only when its estimated peak
//     fits in the budget next to what is held (coordinator/compress_memory.h).
#include "coordinator/compress.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>
#include <random>
#include <span>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "cluster/assignment.h"
#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "common/big_alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "coordinator/cli.h"
#include "coordinator/compress_memory.h"
#include "coordinator/compress_spill.h"
#include "coordinator/compress_vocabulary.h"
#include "coordinator/inputs.h"
#include "coordinator/sequitur.h"
#include "coordinator/string_table.h"
#include "coordinator/tokenize.h"
#include "formats/archive.h"
#include "formats/chunk_maps.h"
#include "formats/atomic_output.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

namespace model = memory_model;

/// Gives freed heap memory back to the system (glibc keeps it otherwise), between stages.
void trim_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

/// One shard of this rank, from reading to its entry in the manifest.
struct ShardWork {
  uint32_t index = 0;
  ShardPlan plan;
  uint64_t max_doc = 0;  ///< largest document (bytes)
  std::vector<uint64_t> doc_words, doc_bytes;
  // Known once read:
  uint64_t tokens = 0, gaps = 0, local_words = 0;
  std::unique_ptr<ShardTokens> kept;  ///< the tokens when kept in memory; else spilled
  uint64_t kept_bytes = 0;            ///< what the kept tokens hold (in the memory gate)
  ShardEntry entry;

  uint64_t encode_estimate() const { return model::encode_bytes(tokens, gaps, local_words); }
  /// Relative encoding time: Sequitur's work grows with the tokens and, more steeply, with the
  /// distinct words (less repetition: more rules, more table misses).
  uint64_t encode_cost() const { return tokens + 4 * local_words; }
};

/// Bytes the kept tokens of a shard hold (sizes: capacity beyond them was never touched).
uint64_t kept_size(const ShardTokens& t) {
  return (t.tokens.size() + t.gaps.size() + t.word_ids.size()) * 4 + t.ws.memory_bytes() +
         (uint64_t{4} << 10);
}

/// Reads and tokenizes a shard: local word ids (with document boundaries) and whitespace ids.
/// The shard's word table is returned in `vocab`. With a `stream`, tokens and gaps go to the
/// spill file every few documents instead of accumulating.
ShardTokens tokenize_shard(ShardWork& w, const std::vector<InputDocument>& docs, StringTable& vocab,
                           Progress& progress, SpillWriter* stream) {
  constexpr size_t kPiece = size_t{1} << 18;  // tokens per piece written to a stream
  ShardTokens t;
  const size_t expected = stream ? kPiece + kPiece / 4 : w.plan.bytes / 5 + 16;
  t.tokens.reserve(expected);
  t.gaps.reserve(expected);
  w.doc_words.clear();
  w.doc_bytes.clear();
  uint64_t tokens = 0, gaps = 0;  // written to the stream
  UninitVector<char> buffer;      // the document's bytes, reused for the next one
  for (uint32_t i = 0; i < w.plan.num_docs; ++i) {
    const InputDocument& doc = docs[w.plan.first_doc + i];
    const std::string_view text = read_whole_file(doc.path, doc.bytes, buffer);
    // Words are interned a few behind the tokenizer, so each one's table slot has been
    // prefetched by the time it is looked up (the vocabulary table is far larger than cache).
    constexpr size_t kAhead = 8;
    std::string_view pending[kAhead];
    uint64_t pending_hash[kAhead];
    size_t queued = 0;
    tokenize(
        text, [&](std::string_view gap) { t.gaps.push_back(t.ws.intern(gap)); },
        [&](std::string_view word) {
          size_t slot = queued % kAhead;
          if (queued >= kAhead) t.tokens.push_back(vocab.intern(pending[slot], pending_hash[slot]));
          pending[slot] = word;
          pending_hash[slot] = StringTable::hash(word);
          vocab.prefetch(pending_hash[slot]);
          ++queued;
        });
    for (size_t k = queued > kAhead ? queued - kAhead : 0; k < queued; ++k)
      t.tokens.push_back(vocab.intern(pending[k % kAhead], pending_hash[k % kAhead]));
    w.doc_words.push_back(queued);
    w.doc_bytes.push_back(text.size());
    if (i + 1 < w.plan.num_docs) t.tokens.push_back(boundary_symbol(i));
    progress.add(text.size());
    if (stream && (t.tokens.size() >= kPiece || t.gaps.size() >= kPiece)) {
      stream->tokens(t.tokens);
      stream->gaps(t.gaps);
      tokens += t.tokens.size(), gaps += t.gaps.size();
      t.tokens.clear();
      t.gaps.clear();
      if (t.tokens.capacity() > 4 * kPiece) {  // after a huge document
        decltype(t.tokens)().swap(t.tokens);
        decltype(t.gaps)().swap(t.gaps);
      }
    }
  }
  if (stream) {
    stream->tokens(t.tokens);
    stream->gaps(t.gaps);
    tokens += t.tokens.size(), gaps += t.gaps.size();
    decltype(t.tokens)().swap(t.tokens);
    decltype(t.gaps)().swap(t.gaps);
  }
  if (vocab.size() >= kBoundaryBit / 2)
    throw InputError("shard " + std::to_string(w.index) + ": vocabulary too large");
  w.tokens = tokens + t.tokens.size();
  w.gaps = gaps + t.gaps.size();
  w.local_words = vocab.size();
  return t;
}

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

uint64_t directory_bytes(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) total += e.file_size();
  return total;
}

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

/// The union of every rank's sorted words, merged up a binary tree (rank r + step sends its
/// list to rank r, which merges): on rank 0, the global word list; elsewhere empty.
std::vector<uint8_t> merge_up_the_tree(Comm& comm, const std::vector<uint8_t>& mine) {
  constexpr int kTag = 0x6d7267;  // "mrg"
  std::vector<uint8_t> merged;
  const std::vector<uint8_t>* current = &mine;
  for (int step = 1; step < comm.size(); step *= 2) {
    if (comm.rank() % (2 * step) == step) {
      comm.send_bytes(*current, comm.rank() - step, kTag);
      return {};
    }
    if (comm.rank() + step < comm.size()) {
      std::vector<uint8_t> other = comm.recv_bytes(comm.rank() + step, kTag);
      std::vector<uint8_t> next = merge_word_lists(WordList(*current), WordList(other));
      merged = std::move(next);
      current = &merged;
    }
  }
  return current == &mine ? mine : std::move(merged);
}

/// Memory the document table costs (names, paths, per-document counts, manifest entries).
uint64_t document_table_bytes(const std::vector<InputDocument>& docs) {
  uint64_t total = docs.size() * (sizeof(InputDocument) + sizeof(DocEntry) + 16);
  for (const auto& d : docs) total += 2 * d.name.capacity() + d.path.native().capacity();
  return total;
}

}  // namespace

CompressStats compress(const std::vector<std::string>& inputs, const fs::path& out,
                       const CompressOptions& options, Comm& comm) {
  Timer timer;
#if defined(__GLIBC__)
  // Large blocks (token arrays, tables) straight from the kernel and back at once: with glibc's
  // default sliding threshold, freed blocks of one shard stay in the heap, and resident memory
  // drifts far above what is live (+60% over a 500 MB corpus), which a budget cannot allow.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
#endif
  big_block::set_capacity(0);  // the same for the large blocks: none kept after they are freed
  const bool root = comm.rank() == 0;
  std::vector<InputDocument> docs;
  std::vector<ShardPlan> plan;
  std::unique_ptr<AtomicOutput> output;
  std::vector<uint8_t> header;  // root -> all: archive id, temporary directory
  double listed = 0;
  run_collectively(comm, [&] {
    std::vector<SkippedInput> skipped;
    // The files are checked on this rank's threads (the same count as below).
    docs = collect_inputs(inputs, &skipped,
                          options.threads > 0
                              ? options.threads
                              : default_threads(static_cast<unsigned>(comm.local_size())));
    listed = timer.seconds();
    plan = plan_shards(docs, options.shard_size, options.shards);
    if (!root) return;
    announce_skipped(skipped);
    AtomicOutput::Replace replace{
        "manifest.h5", {inputs.begin(), inputs.end()}, archive_directory_problem};
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
    spdlog::info("compress: {}, {}, {}, {} x {}", counted(docs.size(), "document"),
                 counted(total_bytes, "byte"), counted(plan.size(), "shard"),
                 counted(comm.size(), "rank"), counted(threads, "thread"));
  if (root)
    spdlog::debug("compress: inputs listed and checked in {:.2f}s, archive started in {:.2f}s",
                  listed, timer.seconds());

  std::vector<ShardWork> work(mine.size());
  for (size_t k = 0; k < mine.size(); ++k) {
    work[k].index = mine[k];
    work[k].plan = plan[mine[k]];
    for (uint32_t i = 0; i < work[k].plan.num_docs; ++i)
      work[k].max_doc = std::max(work[k].max_doc, docs[work[k].plan.first_doc + i].bytes);
  }

  // The memory plan. What is held from start to end: the process itself and the document table.
  const bool default_budget = options.memory_budget == 0;
  const uint64_t budget = default_budget
                              ? default_memory_budget(static_cast<unsigned>(comm.local_size()))
                              : options.memory_budget;
  const uint64_t base = (comm.size() > 1 ? model::kBaseBytesDistributed : model::kBaseBytes) +
                        document_table_bytes(docs);
  MemoryGate gate(budget, base);
  if (root) {
    std::string why = "--memory-budget";
    if (default_budget) {
      why = "default: a quarter of " + format_bytes(usable_memory_bytes());
      if (comm.local_size() > 1)
        why += " shared by " + std::to_string(comm.local_size()) + " ranks";
    }
    spdlog::info("compress: memory budget {} per rank ({})", format_bytes(budget), why);
  }

  // ---------------------------------------------------------------- pass 1: read and tokenize
  auto vocab = std::make_unique<Vocabulary>();
  std::mutex vocab_mu;
  uint64_t vocab_held = 0;  // the vocabulary's bytes as the gate knows them
  auto account_vocabulary = [&] {
    std::lock_guard<std::mutex> lock(vocab_mu);
    const uint64_t now = vocab->memory_bytes() + vocab->memory_bytes() / 16;  // + rehash room
    if (now > vocab_held) gate.hold(now - vocab_held);
    if (now < vocab_held) gate.drop(vocab_held - now);
    vocab_held = now;
  };
  const uint64_t shards_at_once = std::max<uint64_t>(1, std::min<uint64_t>(threads, work.size()));
  std::atomic<uint64_t> kept_count{0}, spilled_count{0}, spilled_bytes{0};
  std::atomic<bool> tight{false};
  Timer read_timer;
  run_collectively(comm, [&] {
    uint64_t my_bytes = 0;
    for (auto& w : work) my_bytes += w.plan.bytes;
    Progress progress("reading", my_bytes, "bytes", options.progress);
    parallel_for(work.size(), threads, [&](size_t k) {
      ShardWork& w = work[k];
      // Once a shard had to be spilled, the budget is tight: the next ones go to their spill
      // files as they are read, without holding their tokens.
      const bool stream = tight.load();
      const uint64_t estimate = stream ? model::tokenize_streaming_bytes(w.plan.bytes, w.max_doc)
                                       : model::tokenize_bytes(w.plan.bytes, w.max_doc);
      gate.acquire(estimate);
      uint64_t reserved = estimate;
      try {
        std::unique_ptr<SpillWriter> writer;
        if (stream) writer = std::make_unique<SpillWriter>(spill_file(dir, w.index));
        // Sized for one distinct word per 128 input bytes (real text: 1 per 80..250): most shards
        // then skip the chain of rehashes, each of which re-inserts every word at random.
        StringTable local(std::max<uint64_t>(1 << 12, w.plan.bytes / 128));
        ShardTokens t = tokenize_shard(w, docs, local, progress, writer.get());
        const uint64_t actual = kept_size(t) + local.memory_bytes() + w.max_doc;
        if (actual > reserved) gate.grow(actual - reserved), reserved = actual;
        t.word_ids = vocab->fold(local);
        local = StringTable(1);
        account_vocabulary();
        bool kept = false;
        uint64_t bytes = 0;
        if (stream) {
          writer->finish(t.word_ids, t.ws);
          bytes = writer->bytes();
          gate.release(reserved);
          reserved = 0;
        } else {
          // Keep the tokens when they fit next to what encoding these shards at full
          // concurrency and the dictionary will need; otherwise spill them.
          bytes = kept_size(t);
          const uint64_t headroom = shards_at_once * w.encode_estimate() + vocab->memory_bytes();
          gate.release(reserved);
          reserved = 0;
          kept = gate.try_hold(bytes + headroom);
          if (kept) {
            gate.drop(headroom);
            w.kept_bytes = bytes;
            w.kept = std::make_unique<ShardTokens>(std::move(t));
          } else {
            write_spill(spill_file(dir, w.index), t);
            tight = true;
          }
        }
        ++(kept ? kept_count : spilled_count);
        if (!kept) spilled_bytes += bytes;
        spdlog::debug(
            "compress: shard {} read: {}, {} of its own, {} ({}); planned {} (resident {})",
            w.index, counted(w.tokens, "token"), counted(w.local_words, "word"),
            kept     ? "kept"
            : stream ? "spilled while read"
                     : "spilled",
            format_bytes(bytes), format_bytes(gate.used()), format_bytes(current_rss_bytes()));
      } catch (...) {
        if (reserved > 0) gate.release(reserved);
        throw;
      }
    });
  });
  trim_heap();
  spdlog::info(
      "compress: read {} in {:.2f}s: {} ({}), tokens of {} kept in memory, {} spilled to disk "
      "({})",
      counted(work.size(), "shard"), read_timer.seconds(), counted(vocab->size(), "distinct word"),
      format_bytes(vocab->memory_bytes()), counted(kept_count.load(), "shard"),
      spilled_count.load(), format_bytes(spilled_bytes.load()));

  // ------------------------------------------------- the dictionary: sort, merge across ranks
  // Moves a kept shard's tokens to its spill file.
  auto spill_kept = [&](ShardWork& w) {
    write_spill(spill_file(dir, w.index), *w.kept);
    w.kept.reset();
    gate.drop(w.kept_bytes);
    spdlog::debug("compress: shard {} spilled after all ({})", w.index, format_bytes(w.kept_bytes));
    spilled_bytes += w.kept_bytes;
    w.kept_bytes = 0;
    ++spilled_count;
  };
  // Spills kept tokens (last kept first) until `need` more bytes fit in the budget.
  auto spill_kept_until = [&](uint64_t need) {
    for (size_t k = work.size(); k-- > 0 && gate.used() + need > budget;)
      if (work[k].kept) spill_kept(work[k]);
  };
  // What encoding needs on top of the memory held outside the shards, one shard at a time: the
  // kept shards go first (all their tokens held, plus the largest one's working set), then the
  // spilled ones (the largest one's estimate).
  auto encode_need = [&] {
    uint64_t kept = 0, kept_extra = 0, spilled = 0;
    for (const auto& w : work) {
      if (w.kept) {
        kept += w.kept_bytes;
        kept_extra = std::max(kept_extra, w.encode_estimate() - w.kept_bytes);
      } else {
        spilled = std::max(spilled, w.encode_estimate());
      }
    }
    return std::max(kept + kept_extra, spilled);
  };
  auto kept_total = [&] {
    uint64_t kept = 0;
    for (const auto& w : work) kept += w.kept_bytes;
    return kept;
  };
  uint64_t largest = 0;  // the largest shard's encoding estimate
  for (const auto& w : work) largest = std::max(largest, w.encode_estimate());

  Timer dict_timer;
  const uint64_t words_here = vocab->size();
  const uint64_t word_bytes = vocab->word_bytes();
  // Asked with the sort order, the id map and maybe the vocabulary's words held; the order and
  // the words are gone before encoding.
  auto dictionary_in_memory = [&](uint64_t dict_bytes) {
    return model::dictionary_stays_in_memory(
        budget, gate.used() - kept_total() + encode_need(),
        gate.used() - kept_total() - 4 * words_here - vocab_held, dict_bytes, largest,
        shards_at_once);
  };
  // Sorting needs the order and the id map (4 bytes per word each); the index goes first.
  spill_kept_until(8 * words_here);
  std::vector<WordId> to_global;  // Vocabulary::dense(id) -> global word id
  Dictionary dict;                // the global dictionary, on rank 0 (in memory)
  bool dict_spilled = false;
  uint64_t num_words = 0, dict_bytes = 0;  // the global dictionary's words and bytes
  run_collectively(comm, [&] {
    std::vector<uint32_t> order = vocab->sorted(threads);
    spdlog::debug("compress: {} sorted in {:.2f}s", counted(order.size(), "word"),
                  dict_timer.seconds());
    account_vocabulary();
    gate.hold(8 * words_here);
    to_global.resize(words_here);
    parallel_for((order.size() + 65535) / 65536, threads, [&](size_t b) {
      const size_t end = std::min(order.size(), (b + 1) * 65536);
      for (size_t i = b * 65536; i < end; ++i)
        to_global[vocab->dense(order[i])] = static_cast<WordId>(i);
    });
    if (comm.size() == 1) {
      num_words = words_here;
      if (num_words >= kBoundaryBit / 2) return;  // "vocabulary too large", below
      dict_bytes = word_bytes + 8 * (num_words + 1);
      if (dictionary_in_memory(dict_bytes)) {
        dict = vocab->dictionary(order, threads);
        gate.hold(dict_bytes);
      } else {
        write_dictionary_spill(
            dictionary_spill_file(dir), num_words, word_bytes,
            [&](uint64_t i) { return vocab->get(order[i]); }, threads);
        dict_spilled = true;
      }
    } else {
      // This rank's sorted words go up the tree; the union comes back to every rank, which maps
      // its words into it.
      std::vector<uint8_t> local = WordList::from_vocabulary(*vocab, order);
      std::vector<uint32_t>().swap(order);
      vocab->release_words();
      account_vocabulary();
      std::vector<uint8_t> global = merge_up_the_tree(comm, local);
      comm.broadcast(global);
      const WordList global_list(global);
      num_words = global_list.size();
      if (num_words >= kBoundaryBit / 2) return;
      const std::vector<uint32_t> pos = positions_in(WordList(local), global_list, threads);
      for (WordId& id : to_global) id = pos[id];
      std::vector<uint8_t>().swap(local);
      dict_bytes = global.size();
      if (root) {
        if (dictionary_in_memory(dict_bytes)) {
          dict = global_list.to_dictionary();
          gate.hold(dict_bytes);
        } else {
          write_dictionary_spill(
              dictionary_spill_file(dir), num_words, global.size() - 8 * (num_words + 2),
              [&](uint64_t i) { return global_list[i]; }, threads);
          dict_spilled = true;
        }
      }
    }
  });
  if (num_words >= kBoundaryBit / 2) throw InputError("vocabulary too large");
  vocab->release_words();
  account_vocabulary();
  gate.drop(4 * words_here);  // the sort order is gone; the id map stays
  trim_heap();
  spdlog::debug("compress: dictionary of {} ({} here) in {:.2f}s, {}", counted(num_words, "word"),
                words_here, dict_timer.seconds(),
                root ? (dict_spilled ? "set aside on disk while shards are encoded" : "in memory")
                     : "held by rank 0");

  // ------------------------------------------------------------------- pass 2: encode shards
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

  // Shard tables to rank 0, which writes the manifest and moves the archive into place.
  std::string table;
  for (const auto& w : work) {
    put(table, w.index);
    const ShardEntry& e = w.entry;
    for (uint64_t v : {uint64_t{e.first_doc}, uint64_t{e.num_docs}, e.input_bytes, e.words, e.rules,
                       e.symbols, uint64_t{e.depth}, e.file_bytes})
      put(table, v);
    table.append(reinterpret_cast<const char*>(e.sha256.data()), e.sha256.size());
    std::vector<uint64_t> maps;
    append_chunk_maps(e.chunk_maps, maps);
    put(table, maps.size());
    for (uint64_t v : maps) put(table, v);
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
        GTADOC_EXPECTS(pos + e.sha256.size() <= t.size(), "truncated message");
        std::memcpy(e.sha256.data(), t.data() + pos, e.sha256.size());
        pos += e.sha256.size();
        const uint64_t numbers = take(t, pos);
        GTADOC_EXPECTS(numbers <= (t.size() - pos) / 8, "truncated message");
        std::vector<uint64_t> maps(numbers);
        for (uint64_t& v : maps) v = take(t, pos);
        size_t at = 0;
        e.chunk_maps = take_chunk_maps(maps, at);
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
    manifest.dict =
        dict_spilled ? read_dictionary_spill(dictionary_spill_file(dir)) : std::move(dict);
    stats.vocabulary = manifest.dict.size();
    Timer tail;  // the shard digests came with the tables (computed as each file was written)
    write_manifest_file(dir / kManifestFile, manifest, {options.deflate_level, threads});
    const double written = tail.seconds();
    stats.archive_bytes = directory_bytes(dir);
    output->commit();
    spdlog::debug("compress: manifest written {:.2f}s, committed {:.2f}s", written,
                  tail.seconds() - written);
  });
  stats.documents = docs.size();
  stats.shards = plan.size();
  stats.seconds = timer.seconds();
  spdlog::debug("compress: peak resident memory {} (budget {}, planned peak {})",
                format_bytes(peak_rss_bytes()), format_bytes(budget), format_bytes(gate.peak()));
  return stats;
}

}  // namespace gtadoc
