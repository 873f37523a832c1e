// What the phases of `gtadoc compress` (coordinator/compress.h) share: the state of one rank's
// compression (CompressJob), each of its shards' work, and the byte encoding of the few messages
// the ranks exchange. The driver, coordinator/compress/compress.cpp, runs the phases in order;
// each is a member function defined in the file named for it (start, read, dictionary, encode,
// manifest). Not a public API.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "cluster/comm.h"
#include "common/error.h"
#include "common/timer.h"
#include "common/types.h"
#include "coordinator/compress.h"
#include "coordinator/compress/memory.h"
#include "coordinator/compress/spill.h"
#include "coordinator/compress/vocabulary.h"
#include "coordinator/inputs.h"
#include "formats/archive.h"
#include "formats/atomic_output.h"
#include "formats/dictionary.h"

namespace gtadoc::compression {

/// Gives freed heap memory back to the system (glibc keeps it otherwise), between stages.
void trim_heap();

// Byte serialization for the few small messages compression exchanges between ranks.
inline void put(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), 8);
}
inline uint64_t take(const std::vector<uint8_t>& in, size_t& pos) {
  GTADOC_EXPECTS(pos + 8 <= in.size(), "truncated message");
  uint64_t v;
  std::memcpy(&v, in.data() + pos, 8);
  pos += 8;
  return v;
}
inline std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
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

  uint64_t encode_estimate() const { return memory_model::encode_bytes(tokens, gaps, local_words); }
  /// Relative encoding time: Sequitur's work grows with the tokens and, more steeply, with the
  /// distinct words (less repetition: more rules, more table misses).
  uint64_t encode_cost() const { return tokens + 4 * local_words; }
};

/// What start_archive hands to the passes: the inputs, the shards planned, and the archive begun.
struct StartedArchive {
  std::vector<InputDocument> docs;
  std::vector<ShardPlan> plan;
  std::unique_ptr<AtomicOutput> output;  ///< on rank 0
  uint64_t archive_id = 0;
  std::filesystem::path dir;  ///< the archive's temporary directory
  double listed = 0;          ///< seconds the inputs took to list and check
};

/// Lists and checks the inputs (on this rank's threads), plans the shards and, on rank 0, starts
/// the archive under its temporary name; its random id and directory are broadcast to every rank
/// (coordinator/compress/start.cpp).
StartedArchive start_archive(const std::vector<std::string>& inputs,
                             const std::filesystem::path& out, const CompressOptions& options,
                             Comm& comm, const Timer& timer);

/// One rank's compression after start_archive. The constructor (compress.cpp) takes this rank's
/// shards and makes the memory plan; the passes then run in this order, each once. Members keep
/// the names the passes use; they are destroyed in reverse order, the archive's temporary
/// directory (`output`, removed unless committed) after everything that writes into it.
struct CompressJob {
  CompressJob(const CompressOptions& options, Comm& comm, const Timer& timer,
              StartedArchive started);

  /// Pass 1 (read.cpp): every shard tokenized, its words folded into the vocabulary, its tokens
  /// kept in memory or spilled.
  void read_shards();
  /// The dictionary (dictionary.cpp): the vocabulary sorted and, under mpirun, merged across
  /// ranks; every shard's words mapped to global ids.
  void build_dictionary();
  /// Pass 2 (encode.cpp): every shard encoded and written to its file, within the budget.
  void encode_shards();
  /// The shard tables gathered on rank 0, which writes the manifest and commits the archive
  /// (manifest.cpp).
  CompressStats write_manifest();

  // The budget's bookkeeping the passes share (compress.cpp).
  /// Brings the vocabulary's bytes in the gate up to date.
  void account_vocabulary();
  /// Moves a kept shard's tokens to its spill file.
  void spill_kept(ShardWork& w);
  /// Spills kept tokens (last kept first) until `need` more bytes fit in the budget.
  void spill_kept_until(uint64_t need);
  /// What encoding needs on top of the memory held outside the shards, one shard at a time: the
  /// kept shards go first (all their tokens held, plus the largest one's working set), then the
  /// spilled ones (the largest one's estimate).
  uint64_t encode_need() const;
  /// The bytes of every shard's kept tokens.
  uint64_t kept_total() const;

  const CompressOptions& options;
  Comm& comm;
  const Timer& timer;  ///< since compression started
  const bool root;
  std::vector<InputDocument> docs;
  std::vector<ShardPlan> plan;
  std::unique_ptr<AtomicOutput> output;  ///< on rank 0
  const uint64_t archive_id;
  const std::filesystem::path dir;
  const unsigned threads;
  std::vector<ShardWork> work;
  const bool default_budget;
  const uint64_t budget;
  const uint64_t base;
  MemoryGate gate;
  std::unique_ptr<Vocabulary> vocab = std::make_unique<Vocabulary>();
  std::mutex vocab_mu;
  uint64_t vocab_held = 0;      ///< the vocabulary's bytes as the gate knows them
  uint64_t shards_at_once = 1;  ///< the threads or the shards, the fewer (read_shards)
  std::atomic<uint64_t> kept_count{0}, spilled_count{0}, spilled_bytes{0};
  uint64_t largest = 0;           ///< the largest shard's encoding estimate (build_dictionary)
  uint64_t words_here = 0;        ///< the words of this rank's vocabulary (build_dictionary)
  std::vector<WordId> to_global;  ///< Vocabulary::dense(id) -> global word id
  Dictionary dict;                ///< the global dictionary, on rank 0 (in memory)
  bool dict_spilled = false;
  uint64_t num_words = 0, dict_bytes = 0;  ///< the global dictionary's words and bytes
};

}  // namespace gtadoc::compression
