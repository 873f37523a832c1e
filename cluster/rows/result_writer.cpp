#include "cluster/rows/result_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <semaphore>
#include <vector>

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
/// Pieces rendered and written at their offsets by each thread (write_slice, into a mapping or
/// with pwrite), each thread taking the next as it finishes one: small enough that every thread
/// has some, one buffer of this size per thread where they are copied.
constexpr uint64_t kPlacedChunkBytes = uint64_t{4} << 20;

void write_stdout(const char* data, size_t size) {
  if (size > 0 && std::fwrite(data, 1, size, stdout) != size)
    throw InputError("cannot write the result to standard output");
}

constexpr const char* kMarkerFile = "_SUCCESS";
/// _SUCCESS files larger than this are not gtadoc's (its own are under 100 bytes).
constexpr size_t kMaxMarkerBytes = 4096;

const char* part_extension(OutputFormat format) {
  return format == OutputFormat::kJson ? "json" : "tsv";
}

/// The bytes of `file` when it is a regular file of at most kMaxMarkerBytes bytes (opened
/// without following a symlink and without blocking); the reason it is not, otherwise.
bool read_marker(const fs::path& file, std::string& bytes, std::string& why) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    why = errno == ENOENT ? "no _SUCCESS"
          : errno == ELOOP ? "_SUCCESS is not a regular file"
                           : std::string("_SUCCESS: ") + std::strerror(errno);
    return false;
  }
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  bytes.assign(kMaxMarkerBytes + 1, '\0');
  size_t got = 0;
  while (regular && got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(got);
  if (!regular) why = "_SUCCESS is not a regular file";
  else if (got > kMaxMarkerBytes)
    why = "_SUCCESS is not gtadoc's: it is larger than " + std::to_string(kMaxMarkerBytes) +
          " bytes";
  return why.empty();
}

/// "part-00003.tsv": the name of part `number` in `extension`.
std::string part_name(int64_t number, std::string_view extension) {
  char name[64];
  std::snprintf(name, sizeof name, "part-%05lld.", static_cast<long long>(number));
  return name + std::string(extension);
}

/// A decimal number of at most 9 digits, or -1.
int64_t small_number(std::string_view digits) {
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos)
    return -1;
  int64_t v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

/// Rank 0 creates the temporary (a file or directory) for `target`; every rank learns its path.
fs::path shared_temporary(Comm& comm, std::unique_ptr<AtomicOutput>& out,
                          const ResultTarget& target, AtomicOutput::Kind kind) {
  std::vector<uint8_t> name;
  run_collectively(comm, [&] {
    if (comm.rank() != 0) return;
    AtomicOutput::Replace replace;
    if (kind == AtomicOutput::Kind::kDirectory) {
      replace.marker = kMarkerFile;
      replace.recognize = partitioned_output_problem;
    }
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
/// makes one for `writers` threads filling the file at once (every rank's): on tmpfs rendered
/// straight into it by every thread; on a disk file system (whose page faults contend beyond a few
/// threads) rendered by every thread into pieces that at most max_writers() threads at a time copy
/// in. Where the range is not mapped, pieces rendered and written (pwrite) by several threads at
/// once.
void write_slice(OutputFile& file, uint64_t file_size, uint64_t offset, const RowRenderer& renderer,
                 std::string_view trailer, Progress& progress, unsigned writers) {
  const uint64_t size = renderer.bytes() + trailer.size();
  OutputMapping mapping = OutputMapping::map(file, file_size, offset, size, writers);
  spdlog::debug("{}: {} bytes at offset {} {} ({})", file.path().string(), size, offset,
                mapping ? "written through a mapping" : "written", mapping.how());
  if (mapping && mapping.max_writers() == 0) {
    renderer.render_into(mapping.data(), kPlacedChunkBytes, [&](size_t n) { progress.add(n); });
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

std::string partitioned_marker(uint32_t parts, std::string_view task, OutputFormat format) {
  std::string m(kPartitionedSignature);
  m += "\nparts " + std::to_string(parts) + "\ntask ";
  m += task;
  m += "\nformat ";
  m += part_extension(format);
  m += "\n";
  return m;
}

std::string partitioned_output_problem(const fs::path& dir) {
  std::string bytes, why;
  if (!read_marker(dir / kMarkerFile, bytes, why)) return why;
  // The signature line, then "key value" lines; parts, task and format are required.
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < bytes.size();) {
    const size_t end = std::min(bytes.find('\n', at), bytes.size());
    lines.emplace_back(bytes.data() + at, end - at);
    at = end + 1;
  }
  const std::string foreign = "_SUCCESS is not gtadoc's: ";
  if (lines.empty()) return foreign + "it is empty";
  if (lines[0] != kPartitionedSignature)
    return foreign + "its first line is not \"" + std::string(kPartitionedSignature) + "\"";
  int64_t parts = -1;
  std::string_view task, format;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view l = lines[i];
    if (l.starts_with("parts ")) parts = small_number(l.substr(6));
    if (l.starts_with("task ")) task = l.substr(5);
    if (l.starts_with("format ")) format = l.substr(7);
  }
  if (parts < 1 || task.empty() || (format != "tsv" && format != "json"))
    return foreign + "no valid parts, task and format lines";
  // Besides _SUCCESS exactly part-00000.<format> .. part-<parts-1>.<format>, regular files.
  std::vector<int64_t> numbers;  // as listed: never sized by what _SUCCESS claims
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == kMarkerFile) continue;
    std::error_code st_ec;
    const bool regular = fs::is_regular_file(it->symlink_status(st_ec));
    const size_t dot = name.rfind('.');
    const bool shaped = name.starts_with("part-") && dot != std::string::npos && dot >= 10 &&
                        std::string_view(name).substr(dot + 1) == format;
    const int64_t number = shaped ? small_number(std::string_view(name).substr(5, dot - 5)) : -1;
    if (!regular || number < 0 || number >= parts || name != part_name(number, format))
      return name + " is not a part file of this gtadoc result";
    numbers.push_back(number);
  }
  if (ec) return "cannot list: " + ec.message();
  std::sort(numbers.begin(), numbers.end());
  for (int64_t k = 0; k < parts; ++k)
    if (static_cast<size_t>(k) >= numbers.size() || numbers[static_cast<size_t>(k)] != k)
      return "_SUCCESS names " + std::to_string(parts) + (parts == 1 ? " part" : " parts") +
             " but " + part_name(k, format) + " is missing";
  return "";
}

uint64_t write_result(Comm& comm, const RankRows& rows, const RenderContext& ctx,
                      const ResultTarget& target, unsigned threads) {
  const bool last_rank = comm.rank() + 1 == comm.size();
  if (target.partitioned) {
    std::unique_ptr<AtomicOutput> dir;
    const fs::path tmp = shared_temporary(comm, dir, target, AtomicOutput::Kind::kDirectory);
    const RowRenderer renderer(rows.records, rows.plan, ctx, true, threads);
    const std::string_view trailer = json_trailer(ctx.format, rows.plan.rows());
    const std::string part = part_name(comm.rank(), part_extension(ctx.format));
    Progress progress = write_progress(comm, target, renderer.bytes());
    run_collectively(comm, [&] {
      OutputFile file(tmp / part, OutputFile::Mode::kCreateNew);
      write_slice(file, renderer.bytes() + trailer.size(), 0, renderer, trailer, progress,
                  renderer.threads());
      file.close();
    });
    run_collectively(comm, [&] {
      if (comm.rank() != 0) return;
      write_new_file(tmp / kMarkerFile,
                     partitioned_marker(static_cast<uint32_t>(comm.size()), task_name(ctx.q.task),
                                        ctx.format));
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
    // The ranks of this node write their ranges of this one file at once (a tmpfs is a node's).
    write_slice(file, total, offset, renderer, trailer, progress,
                renderer.threads() * static_cast<unsigned>(comm.local_size()));
    file.close();
  });
  run_collectively(comm, [&] {
    if (comm.rank() == 0) out->commit();
  });
  return mine;
}

}  // namespace gtadoc
