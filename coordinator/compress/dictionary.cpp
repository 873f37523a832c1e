// The dictionary of `gtadoc compress` (coordinator/compress/job.h,
// CompressJob::build_dictionary): the Vocabulary is sorted once (under mpirun: every rank's
// sorted words are merged up a binary tree to rank 0 and the union is broadcast): word ids are
// byte order, so they depend on nothing but the set of words, and the archive is the same
// whatever the budget. Every shard's words are mapped to their global ids; the dictionary stays
// in memory on rank 0 or, when the budget needs the room for encoding, waits on disk.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
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

namespace gtadoc::compression {
namespace {

namespace model = memory_model;

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

}  // namespace

void CompressJob::build_dictionary() {
  for (const auto& w : work) largest = std::max(largest, w.encode_estimate());

  Timer dict_timer;
  words_here = vocab->size();
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
}

}  // namespace gtadoc::compression
