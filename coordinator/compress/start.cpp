// The start of `gtadoc compress` (coordinator/compress/job.h, start_archive): the inputs listed
// and checked, the shards planned, and on rank 0 the archive begun under its temporary name
// (formats/atomic_output.h) with a random id; every rank learns the id and the directory.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "common/cpus.h"
#include "common/timer.h"
#include "coordinator/compress/job.h"
#include "coordinator/inputs.h"
#include "formats/archive.h"
#include "formats/atomic_output.h"

namespace gtadoc::compression {
namespace fs = std::filesystem;

StartedArchive start_archive(const std::vector<std::string>& inputs, const fs::path& out,
                             const CompressOptions& options, Comm& comm, const Timer& timer) {
  const bool root = comm.rank() == 0;
  std::vector<InputDocument> docs;
  std::vector<ShardPlan> plan;
  std::unique_ptr<AtomicOutput> output;
  std::vector<uint8_t> header;  // root -> all: archive id, temporary directory
  double listed = 0;
  run_collectively(comm, [&] {
    std::vector<SkippedInput> skipped;
    // The files are checked on this rank's threads (the same count as CompressJob::threads).
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
  return {std::move(docs), std::move(plan), std::move(output), archive_id, dir, listed};
}

}  // namespace gtadoc::compression
