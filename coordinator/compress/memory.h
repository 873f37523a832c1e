// Memory planning for `gtadoc compress --memory-budget`: how much memory this process may use by
// default, what each stage of compression is estimated to need, and a gate that starts a shard's
// work only when its estimate fits next to what is already held.
//
// The estimates are upper bounds for ordinary input, derived from the data structures' growth
// rules (coordinator/sequitur.cpp, string_table.h, compress/vocabulary.h) and checked against
// measured peaks: Sequitur on incompressible text (every digram distinct) is the worst case
// (32 MiB of random words: 236 MiB measured, 268 MiB planned); on real text a shard needs
// 35-50% of its estimate (man pages 103 of 215 MiB, C headers 73 of 197 MiB).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace gtadoc {

/// Physical memory, lowered to the cgroup memory limit (v2 memory.max or v1
/// memory.limit_in_bytes, of this process's cgroup or the namespace root) when there is one.
uint64_t usable_memory_bytes();

/// The default --memory-budget of one rank: a quarter of usable_memory_bytes(), shared evenly by
/// the `ranks_on_node` ranks of the node. At least 64 MiB.
uint64_t default_memory_budget(unsigned ranks_on_node);

/// "1.5 GiB", "256 MiB", "12 KiB", "100 B": a size for log and warning lines.
std::string format_bytes(uint64_t bytes);

/// Peak resident memory of this process so far (getrusage), in bytes.
uint64_t peak_rss_bytes();
/// Resident memory of this process now (/proc/self/statm; 0 where unavailable), in bytes.
uint64_t current_rss_bytes();

namespace memory_model {
/// What the process holds before any shard: the binary, its libraries (HDF5, MPI), thread stacks.
inline constexpr uint64_t kBaseBytes = uint64_t{32} << 20;
inline constexpr uint64_t kBaseBytesDistributed = uint64_t{48} << 20;

/// Tokenizing a shard of `bytes` input bytes whose largest document has `max_doc` bytes: the
/// document text, the shard's tokens and gaps (4 bytes each) and its own vocabulary table.
inline uint64_t tokenize_bytes(uint64_t bytes, uint64_t max_doc) {
  return max_doc + bytes * 5 / 2 + (uint64_t{1} << 20);
}

/// Tokenizing a shard whose tokens and gaps go to its spill file as they come: the document
/// text, the pieces not yet written (one document's worth at most), its own vocabulary table.
inline uint64_t tokenize_streaming_bytes(uint64_t bytes, uint64_t max_doc) {
  return max_doc * 5 / 2 + bytes * 5 / 4 + (uint64_t{6} << 20);
}

/// Encoding a shard (Sequitur, finalization, writing) with `tokens` tokens (words + document
/// boundaries), `gaps` whitespace gaps and `local_words` distinct words: the token and gap arrays
/// (4 bytes each), the local-to-global word map, and Sequitur's working set: 12-byte nodes (at
/// most one per token) and a digram table that grows by 1.5x up to 1.9 slots of 8 bytes per token
/// when every digram is distinct (25 bytes per token while old and new tables coexist).
inline uint64_t encode_bytes(uint64_t tokens, uint64_t gaps, uint64_t local_words) {
  return tokens * (4 + 38) + gaps * 4 + local_words * 4 + (uint64_t{4} << 20);
}
/// Shards encoded at once while `fixed` bytes are held outside them: as many as `at_most` (the
/// threads, the shards) and the budget's room for estimates of `largest` bytes allow; at least one.
inline uint64_t shards_in_flight(uint64_t budget, uint64_t fixed, uint64_t largest,
                                 uint64_t at_most) {
  const uint64_t room = budget > fixed ? budget - fixed : 0;
  const uint64_t fit = largest > 0 ? room / largest : at_most;
  return fit < 1 ? 1 : (fit < at_most ? fit : at_most);
}

/// Whether the dictionary (`dict_bytes`) stays in memory while the shards are encoded, or waits on
/// disk for the manifest: it stays when it fits now (`now_need`: what is held while it is built
/// plus encoding one shard at a time) and costs no concurrency next to the `fixed` bytes held
/// outside the shards while they are encoded. (20 GB of text on 32 threads under 4 GiB: 35 M
/// words, a 1.6 GiB dictionary in memory left room for 11 shards of 193 MiB at once, not 20.)
inline bool dictionary_stays_in_memory(uint64_t budget, uint64_t now_need, uint64_t fixed,
                                       uint64_t dict_bytes, uint64_t largest, uint64_t at_most) {
  return now_need + dict_bytes <= budget &&
         shards_in_flight(budget, fixed + dict_bytes, largest, at_most) ==
             shards_in_flight(budget, fixed, largest, at_most);
}
}  // namespace memory_model

/// Admission control for the shards in flight. A task acquires its estimate before it starts and
/// releases it when done; acquire() waits while the estimate does not fit next to what is held,
/// unless no other task holds anything (one task always runs, even over the budget: the caller
/// warns about that once). Memory held between tasks (the vocabulary, tokens kept for later) is
/// added with hold() and removed with drop().
class MemoryGate {
 public:
  explicit MemoryGate(uint64_t budget, uint64_t held = 0) : budget_(budget), held_(held) {}

  /// Starts a task: waits until `bytes` fit or no other task runs, then reserves them.
  void acquire(uint64_t bytes);
  /// A running task's reservation grows (when it found it needs more than estimated): never
  /// blocks, so the budget can be exceeded by what the estimate missed.
  void grow(uint64_t bytes);
  /// Ends a task, returning its reservation (`bytes`: what it acquired plus what it grew).
  void release(uint64_t bytes);
  /// Memory held outside tasks: add / remove (never blocks).
  void hold(uint64_t bytes);
  void drop(uint64_t bytes);
  /// Atomically: if `bytes` more fit within the budget, hold them and return true.
  bool try_hold(uint64_t bytes);

  uint64_t budget() const { return budget_; }
  uint64_t used() const;
  /// The largest amount ever held at once (tasks' estimates and held memory).
  uint64_t peak() const;

 private:
  const uint64_t budget_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t held_ = 0;   ///< held outside tasks
  uint64_t tasks_ = 0;  ///< bytes of running tasks
  unsigned running_ = 0;
  uint64_t peak_ = 0;
};

}  // namespace gtadoc
