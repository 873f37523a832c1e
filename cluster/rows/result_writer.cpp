#include "cluster/rows/result_writer.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <semaphore>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "common/error.h"
#include "common/log.h"
#include "formats/atomic_output.h"
#include "formats/output_mapping.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kChunkBytes = uint64_t{64} << 20;
/// Pieces rendered and written at their offsets by each thread (write_slice): small enough that
/// every thread has some, one buffer of this size per thread.
constexpr uint64_t kPlacedChunkBytes = uint64_t{4} << 20;

void write_stdout(const char* data, size_t size) {
  if (size > 0 && std::fwrite(data, 1, size, stdout) != size)
    throw InputError("cannot write the result to standard output");
}

/// Rank 0 creates the temporary (a file or directory) for `target`; every rank learns its path.
fs::path shared_temporary(Comm& comm, std::unique_ptr<AtomicOutput>& out,
                          const ResultTarget& target, AtomicOutput::Kind kind) {
  std::vector<uint8_t> name;
  run_collectively(comm, [&] {
    if (comm.rank() != 0) return;
    AtomicOutput::Replace replace;
    if (kind == AtomicOutput::Kind::kDirectory) replace.marker = "_SUCCESS";
    if (!target.archive.empty()) replace.inputs.push_back(target.archive);
    out = std::make_unique<AtomicOutput>(target.path, kind, target.force, replace);
    if (kind == AtomicOutput::Kind::kFile)
      OutputFile(out->temp_path(), OutputFile::Mode::kCreateNew).close();
    const std::string p = out->temp_path().string();
    name.assign(p.begin(), p.end());
  });
  comm.broadcast(name);
  return fs::path(std::string(name.begin(), name.end()));
}

/// Writes `renderer`'s rows and then `trailer` into `file` (`file_size` bytes when every writer
/// is done) starting at `offset`, through a mapping of the range where formats/output_mapping.h
/// makes one: on tmpfs rendered straight into it by every thread; on a disk file system (whose
/// page faults contend beyond a few threads) rendered by every thread into pieces that at most
/// max_writers() threads at a time copy in. Where the range is not mapped, pieces rendered and
/// written (pwrite) by several threads at once.
void write_slice(OutputFile& file, uint64_t file_size, uint64_t offset, const RowRenderer& renderer,
                 std::string_view trailer, Progress& progress) {
  const uint64_t size = renderer.bytes() + trailer.size();
  OutputMapping mapping = OutputMapping::map(file, file_size, offset, size);
  spdlog::debug("{}: {} bytes at offset {} {} ({})", file.path().string(), size, offset,
                mapping ? "written through a mapping" : "written", mapping.how());
  if (mapping && mapping.max_writers() == 0) {
    renderer.render_into(mapping.data(), kChunkBytes, [&](size_t n) { progress.add(n); });
  } else if (mapping) {
    std::counting_semaphore<> writers(mapping.max_writers());
    renderer.render_placed(kPlacedChunkBytes, [&](uint64_t at, const char* data, size_t n) {
      writers.acquire();
      std::memcpy(mapping.data() + at, data, n);
      writers.release();
      progress.add(n);
    });
  } else {
    renderer.render_placed(kPlacedChunkBytes, [&](uint64_t at, const char* data, size_t n) {
      file.write_at(offset + at, data, n);
      progress.add(n);
    });
    file.write_at(offset + renderer.bytes(), trailer.data(), trailer.size());
    return;
  }
  std::memcpy(mapping.data() + renderer.bytes(), trailer.data(), trailer.size());
  mapping.finish();
}

/// What rank 0 shows while it writes its `bytes` (its slice of the result under several ranks).
Progress write_progress(const Comm& comm, const ResultTarget& target, uint64_t bytes) {
  return Progress(comm.size() > 1 ? "writing (rank 0's part)" : "writing", bytes, "bytes",
                  target.progress && comm.rank() == 0);
}

}  // namespace

uint64_t write_result(Comm& comm, const RankRows& rows, const RenderContext& ctx,
                      const ResultTarget& target, unsigned threads) {
  const bool last_rank = comm.rank() + 1 == comm.size();
  if (target.partitioned) {
    std::unique_ptr<AtomicOutput> dir;
    const fs::path tmp = shared_temporary(comm, dir, target, AtomicOutput::Kind::kDirectory);
    const RowRenderer renderer(rows.records, rows.plan, ctx, true, threads);
    const std::string_view trailer = json_trailer(ctx.format, rows.plan.rows());
    char part[64];
    std::snprintf(part, sizeof part, "part-%05d.%s", comm.rank(),
                  ctx.format == OutputFormat::kJson ? "json" : "tsv");
    Progress progress = write_progress(comm, target, renderer.bytes());
    run_collectively(comm, [&] {
      OutputFile file(tmp / part, OutputFile::Mode::kCreateNew);
      write_slice(file, renderer.bytes() + trailer.size(), 0, renderer, trailer, progress);
      file.close();
    });
    run_collectively(comm, [&] {
      if (comm.rank() != 0) return;
      OutputFile(tmp / "_SUCCESS", OutputFile::Mode::kCreateNew).close();
      dir->commit();
    });
    return renderer.bytes() + trailer.size();
  }

  const RowRenderer renderer(rows.records, rows.plan, ctx, rows.first_row == 0, threads);
  const std::string_view trailer = last_rank ? json_trailer(ctx.format, rows.total_rows) : "";
  const uint64_t mine = renderer.bytes() + trailer.size();
  if (target.path.empty()) {
    if (comm.size() == 1) {
      Progress progress = write_progress(comm, target, mine);
      run_collectively(comm, [&] {
        renderer.render(kChunkBytes, [&](const char* data, size_t size) {
          write_stdout(data, size);
          progress.add(size);
        });
        write_stdout(trailer.data(), trailer.size());
        if (std::fflush(stdout) != 0)
          throw InputError("cannot write the result to standard output");
      });
      return mine;
    }
    std::string bytes = renderer.render_all();
    bytes.append(trailer);
    auto gathered = comm.gather({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    bytes.clear();
    run_collectively(comm, [&] {
      for (const auto& g : gathered)
        write_stdout(reinterpret_cast<const char*>(g.data()), g.size());
      if (std::fflush(stdout) != 0) throw InputError("cannot write the result to standard output");
    });
    return mine;
  }

  std::unique_ptr<AtomicOutput> out;
  const fs::path tmp = shared_temporary(comm, out, target, AtomicOutput::Kind::kFile);
  const std::vector<uint64_t> sizes = comm.allgather(mine);
  const uint64_t offset = std::accumulate(sizes.begin(), sizes.begin() + comm.rank(), uint64_t{0});
  Progress progress = write_progress(comm, target, renderer.bytes());
  run_collectively(comm, [&] {
    OutputFile file(tmp, OutputFile::Mode::kOpenExisting);
    const uint64_t total = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
    write_slice(file, total, offset, renderer, trailer, progress);
    file.close();
  });
  run_collectively(comm, [&] {
    if (comm.rank() == 0) out->commit();
  });
  return mine;
}

}  // namespace gtadoc
