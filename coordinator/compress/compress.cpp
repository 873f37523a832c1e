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
//     fits in the budget next to what is held (coordinator/compress/memory.h).
//
// The driver: compress() runs the phases of CompressJob (coordinator/compress/job.h) in order,
// each in its own file: start.cpp (inputs listed, shards planned, the archive started),
// read.cpp (pass 1), dictionary.cpp (2), encode.cpp (3), manifest.cpp (the manifest written,
// the archive committed). Here: the heap's settings, this rank's shards and the memory plan,
// and the bookkeeping of the budget that the passes share.
#include "coordinator/compress.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "cluster/assignment.h"
#include "cluster/comm.h"
#include "common/big_alloc.h"
#include "common/cpus.h"
#include "common/log.h"
#include "common/timer.h"
#include "coordinator/cli.h"
#include "coordinator/compress/job.h"
#include "coordinator/compress/memory.h"
#include "coordinator/compress/spill.h"
#include "coordinator/inputs.h"
#include "formats/archive.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace compression {

namespace {

namespace model = memory_model;

/// Memory the document table costs (names, paths, per-document counts, manifest entries).
uint64_t document_table_bytes(const std::vector<InputDocument>& docs) {
  uint64_t total = docs.size() * (sizeof(InputDocument) + sizeof(DocEntry) + 16);
  for (const auto& d : docs) total += 2 * d.name.capacity() + d.path.native().capacity();
  return total;
}

}  // namespace

void trim_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

CompressJob::CompressJob(const CompressOptions& options, Comm& comm, const Timer& timer,
                         StartedArchive started)
    : options(options),
      comm(comm),
      timer(timer),
      root(comm.rank() == 0),
      docs(std::move(started.docs)),
      plan(std::move(started.plan)),
      output(std::move(started.output)),
      archive_id(started.archive_id),
      dir(std::move(started.dir)),
      // Ranks sharing a node share its cores unless --threads says otherwise.
      threads(options.threads > 0 ? options.threads
                                  : default_threads(static_cast<unsigned>(comm.local_size()))),
      // The memory plan. What is held from start to end: the process itself and the document
      // table.
      default_budget(options.memory_budget == 0),
      budget(default_budget ? default_memory_budget(static_cast<unsigned>(comm.local_size()))
                            : options.memory_budget),
      base((comm.size() > 1 ? model::kBaseBytesDistributed : model::kBaseBytes) +
           document_table_bytes(docs)),
      gate(budget, base) {
  const double listed = started.listed;
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

  work.resize(mine.size());
  for (size_t k = 0; k < mine.size(); ++k) {
    work[k].index = mine[k];
    work[k].plan = plan[mine[k]];
    for (uint32_t i = 0; i < work[k].plan.num_docs; ++i)
      work[k].max_doc = std::max(work[k].max_doc, docs[work[k].plan.first_doc + i].bytes);
  }

  if (root) {
    std::string why = "--memory-budget";
    if (default_budget) {
      why = "default: a quarter of " + format_bytes(usable_memory_bytes());
      if (comm.local_size() > 1)
        why += " shared by " + std::to_string(comm.local_size()) + " ranks";
    }
    spdlog::info("compress: memory budget {} per rank ({})", format_bytes(budget), why);
  }
}

void CompressJob::account_vocabulary() {
  std::lock_guard<std::mutex> lock(vocab_mu);
  const uint64_t now = vocab->memory_bytes() + vocab->memory_bytes() / 16;  // + rehash room
  if (now > vocab_held) gate.hold(now - vocab_held);
  if (now < vocab_held) gate.drop(vocab_held - now);
  vocab_held = now;
}

void CompressJob::spill_kept(ShardWork& w) {
  write_spill(spill_file(dir, w.index), *w.kept);
  w.kept.reset();
  gate.drop(w.kept_bytes);
  spdlog::debug("compress: shard {} spilled after all ({})", w.index, format_bytes(w.kept_bytes));
  spilled_bytes += w.kept_bytes;
  w.kept_bytes = 0;
  ++spilled_count;
}

void CompressJob::spill_kept_until(uint64_t need) {
  for (size_t k = work.size(); k-- > 0 && gate.used() + need > budget;)
    if (work[k].kept) spill_kept(work[k]);
}

uint64_t CompressJob::encode_need() const {
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
}

uint64_t CompressJob::kept_total() const {
  uint64_t kept = 0;
  for (const auto& w : work) kept += w.kept_bytes;
  return kept;
}

}  // namespace compression

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
  compression::CompressJob job(options, comm, timer,
                               compression::start_archive(inputs, out, options, comm, timer));
  job.read_shards();
  job.build_dictionary();
  job.encode_shards();
  return job.write_manifest();
}

}  // namespace gtadoc
