// Pass 1 of `gtadoc compress` (coordinator/compress/job.h, CompressJob::read_shards): every
// shard is tokenized into its own word table (tokens are local word ids), its distinct words are
// folded into this process's Vocabulary and the shard's table is freed; the tokens are kept in
// memory while the budget allows, otherwise written to a spill file in the archive's temporary
// directory (as they are read, once the budget is tight).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/collective_error.h"
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
#include "coordinator/inputs.h"
#include "coordinator/string_table.h"
#include "coordinator/tokenize.h"

namespace gtadoc::compression {
namespace {

namespace model = memory_model;

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

}  // namespace

void CompressJob::read_shards() {
  shards_at_once = std::max<uint64_t>(1, std::min<uint64_t>(threads, work.size()));
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
}

}  // namespace gtadoc::compression
