#include "coordinator/verify.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/parallel.h"
#include "common/temporaries.h"
#include "common/timer.h"
#include "coordinator/cli.h"
#include "formats/archive.h"
#include "formats/chunk_maps.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

/// A file of the archive held open while it is verified. The name is resolved once, by an
/// O_PATH open (which opens nothing: neither a FIFO's nor a device's open runs), and the
/// descriptor is checked (fstat): anything but a regular file is refused ("cannot open: not a
/// regular file"). The file is then opened for reading through that descriptor
/// (/proc/self/fd/N, O_RDONLY | O_NONBLOCK | O_CLOEXEC; without /proc by its name, and refused
/// unless it is the same file), and read only through it: there is no window in which the name
/// can be pointed elsewhere between the check and the reads.
class HeldFile {
 public:
  explicit HeldFile(const fs::path& file) : path_(file) {
    auto fail = [&](int err) {
      return InputError(file.string() + ": cannot open: " +
                        (err == ENOENT ? "no such file" : std::strerror(err)));
    };
    const Fd named(::open(file.c_str(), O_PATH | O_CLOEXEC));
    if (named.fd < 0) throw fail(errno);
    struct stat st {};
    if (::fstat(named.fd, &st) != 0) throw fail(errno);
    const InputError not_regular(file.string() + ": cannot open: not a regular file");
    if (!S_ISREG(st.st_mode)) throw not_regular;
    fd_.fd = ::open(proc_path(named.fd).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_.fd < 0 && errno == ENOENT)  // no /proc: by name, then checked to be the same file
      fd_.fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_.fd < 0) throw fail(errno);
    struct stat now {};
    if (::fstat(fd_.fd, &now) != 0) throw fail(errno);
    if (!S_ISREG(now.st_mode) || now.st_dev != st.st_dev || now.st_ino != st.st_ino)
      throw not_regular;
    size_ = static_cast<uint64_t>(now.st_size);
  }

  int fd() const { return fd_.fd; }
  /// The size when opened: nothing past it is read (a file that grows is not read without end).
  uint64_t size() const { return size_; }
  const fs::path& path() const { return path_; }

  /// SHA-256 of the file's first size() bytes, read through the descriptor.
  Sha256 sha256() const {
    Sha256Hasher h;
    std::vector<uint8_t> buf(4 << 20);
    uint64_t done = 0;
    while (done < size_) {
      const ssize_t n = ::pread(fd_.fd, buf.data(), std::min<uint64_t>(buf.size(), size_ - done),
                                static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw InputError(path_.string() + ": read error: " + std::strerror(errno));
      if (n == 0) throw InputError(path_.string() + ": read error: the file shrank while read");
      h.update({buf.data(), static_cast<size_t>(n)});
      done += static_cast<uint64_t>(n);
    }
    return h.finish();
  }

  static std::string proc_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

 private:
  struct Fd {
    int fd = -1;
    Fd() = default;
    explicit Fd(int f) : fd(f) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  };
  fs::path path_;
  Fd fd_;
  uint64_t size_ = 0;
};

/// The archive as the HDF5 readers see it. They open files by name, so verify hands them a
/// private directory (in the temporary directory) whose `manifest.h5` and `shard-NNNNN.h5` are
/// symbolic links to /proc/self/fd/N of the HeldFile it checked and hashed: every dataset read
/// comes from that same open file. Where no such directory can be made (no /proc, no writable
/// temporary directory) the readers get the archive itself. Messages name the archive's files
/// either way (reported()).
class ReaderView {
 public:
  explicit ReaderView(const fs::path& archive) : archive_(archive), dir_(archive) {
    std::error_code ec;
    std::string tmpl = (fs::temp_directory_path(ec) / "gtadoc-verify-XXXXXX").string();
    if (ec || ::mkdtemp(tmpl.data()) == nullptr) return;
    view_ = tmpl;
    register_temporary(view_);  // a stop request removes it
  }
  ReaderView(const ReaderView&) = delete;
  ReaderView& operator=(const ReaderView&) = delete;
  ~ReaderView() {
    if (view_.empty()) return;
    std::error_code ec;
    fs::remove_all(view_, ec);
    unregister_temporary(view_);
  }

  /// Makes `file` (named as in the archive) what the readers open under dir(); true when the
  /// view shows `file` itself (checked: the link resolves to its descriptor's file).
  bool show(const HeldFile& file) {
    if (view_.empty()) return false;
    const fs::path link = view_ / file.path().filename();
    ::unlink(link.c_str());
    struct stat via {}, held {};
    const bool ok = ::symlink(HeldFile::proc_path(file.fd()).c_str(), link.c_str()) == 0 &&
                    ::stat(link.c_str(), &via) == 0 && ::fstat(file.fd(), &held) == 0 &&
                    via.st_dev == held.st_dev && via.st_ino == held.st_ino;
    if (ok) {
      dir_ = view_;
    } else {  // the readers fall back to the archive's names (checked when they open them)
      std::error_code ec;
      fs::remove_all(view_, ec);
      unregister_temporary(view_);
      view_.clear();
      dir_ = archive_;
    }
    return ok;
  }
  /// Removes `file`'s link once its descriptor is to be closed.
  void hide(const HeldFile& file) {
    if (!view_.empty()) ::unlink((view_ / file.path().filename()).c_str());
  }

  /// The directory to hand to the readers.
  const fs::path& dir() const { return dir_; }
  /// A reader's message with the view's paths written as the archive's.
  std::string reported(std::string message) const {
    if (view_.empty()) return message;
    const std::string from = view_.string(), to = archive_.string();
    for (size_t at = message.find(from); at != std::string::npos;
         at = message.find(from, at + to.size()))
      message.replace(at, from.size(), to);
    return message;
  }

 private:
  fs::path archive_;
  fs::path view_;  ///< the private directory; empty when there is none
  fs::path dir_;
};

VerifyCheck verify_shard(const ReaderView& view, const Manifest& m, uint32_t s,
                         const Sha256& file_digest) {
  VerifyCheck c{"shard " + std::to_string(s), true, ""};
  const ShardEntry& e = m.shards[s];
  auto fail = [&](const std::string& why) {
    c.ok = false;
    c.detail = why;
    return c;
  };
  try {
    // Every grammar dataset, validated; the layout; words and bytes against the document table.
    ShardGrammar g = read_shard_grammar(view.dir(), m, s);
    ShardLayout layout = read_shard_layout(view.dir(), m, s);
    check_shard_documents(view.dir(), m, s, g, layout);
    // The chunk maps queries read the shard by, against where HDF5 finds the chunks.
    if (!e.chunk_maps.empty() && map_shard_chunks(view.dir() / shard_file_name(s)) != e.chunk_maps)
      return fail("the manifest's chunk maps do not match where the file stores its chunks");
  } catch (const InputError& err) {
    return fail(view.reported(err.what()));
  }
  // Datasets that read back consistently can still have been edited (rewritten through HDF5,
  // checksums and all): the file's digest says so.
  if (e.sha256 == Sha256{}) return fail("no SHA-256 recorded in the manifest");
  if (file_digest != e.sha256)
    return fail(fmt::format("SHA-256 of the file is {}..., the manifest records {}... (changed)",
                            to_hex(file_digest).substr(0, 16), to_hex(e.sha256).substr(0, 16)));
  c.detail = fmt::format("{}, {}, {}, depth {}, {}, sha256 ok{}", counted(e.num_docs, "document"),
                         counted(e.rules, "rule"), counted(e.symbols, "symbol"), e.depth,
                         counted(e.file_bytes, "byte"), e.chunk_maps.empty() ? "" : ", chunk maps ok");
  return c;
}

}  // namespace

VerifyReport verify_archive(const fs::path& archive, unsigned threads) {
  Timer timer;
  VerifyReport r;
  r.archive = archive.string();
  auto finish = [&] {
    r.ok = std::all_of(r.checks.begin(), r.checks.end(), [](const VerifyCheck& c) { return c.ok; });
    r.seconds = timer.seconds();
    return r;
  };

  ReaderView view(archive);
  Manifest m;
  try {
    // Every manifest dataset and the tables' relations, read from the file opened here.
    const HeldFile manifest(archive / kManifestFile);
    view.show(manifest);
    m = read_manifest(view.dir());
    view.hide(manifest);
    r.bytes_read += manifest.size();
  } catch (const InputError& err) {
    r.checks.push_back({"manifest", false, view.reported(err.what())});
    return finish();
  }
  r.shards = static_cast<uint32_t>(m.shards.size());
  r.checks.push_back({"manifest", true,
                      fmt::format("format {}, {}, {} in the dictionary, {}", m.format_version,
                                  counted(m.docs.size(), "document"),
                                  counted(m.dict.size(), "word"),
                                  counted(m.shards.size(), "shard"))});

  if (!m.content_sha256)
    r.checks.push_back({"content digest", false,
                        "the manifest has no content_sha256 (written before gtadoc verify "
                        "existed; compress again to add one)"});
  else if (*m.content_sha256 != manifest_content_digest(m))
    r.checks.push_back({"content digest", false,
                        "the manifest's content does not match its content_sha256 (edited)"});
  else
    r.checks.push_back({"content digest", true, "sha256:" + to_hex(*m.content_sha256)});

  // The directory: every shard file present; anything else is reported (not a failure).
  std::set<std::string> expected{kManifestFile};
  for (uint32_t s = 0; s < m.shards.size(); ++s) expected.insert(shard_file_name(s));
  std::vector<std::string> extra;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(archive, ec))
    if (!expected.count(entry.path().filename().string()))
      extra.push_back(entry.path().filename().string());
  std::sort(extra.begin(), extra.end());
  if (!extra.empty()) {
    std::string list;
    for (size_t k = 0; k < extra.size() && k < 5; ++k) list += (k ? ", " : "") + extra[k];
    if (extra.size() > 5) list += fmt::format(" and {} more", extra.size() - 5);
    r.checks.push_back({"directory", true,
                        fmt::format("{} entr{} not part of the archive (ignored): {}", extra.size(),
                                    extra.size() == 1 ? "y" : "ies", list)});
  }

  // Shards in batches of a few per thread: each batch's files opened and hashed in parallel
  // (plain reads), then each shard's datasets read from the same open files (HDF5 is
  // serialized, its chunks are inflated on threads). A batch bounds the descriptors held.
  const unsigned workers = resolve_threads(threads);
  const size_t batch = std::max<size_t>(1, 2 * size_t{workers});
  for (size_t first = 0; first < m.shards.size(); first += batch) {
    const size_t n = std::min(batch, m.shards.size() - first);
    std::vector<std::unique_ptr<HeldFile>> files(n);
    std::vector<Sha256> digests(n);
    std::vector<std::string> read_errors(n);
    std::atomic<uint64_t> hashed{0};
    parallel_for(n, threads, [&](size_t k) {
      const uint32_t s = static_cast<uint32_t>(first + k);
      try {
        files[k] = std::make_unique<HeldFile>(archive / shard_file_name(s));
        digests[k] = files[k]->sha256();
        hashed += files[k]->size();
      } catch (const InputError& err) {
        files[k].reset();
        read_errors[k] = err.what();
      }
    });
    r.bytes_read += hashed.load();
    for (size_t k = 0; k < n; ++k) {
      const uint32_t s = static_cast<uint32_t>(first + k);
      VerifyCheck c{"shard " + std::to_string(s), false, read_errors[k]};
      if (files[k]) {
        view.show(*files[k]);
        c = verify_shard(view, m, s, digests[k]);
        view.hide(*files[k]);
        files[k].reset();
      }
      r.shards_ok += c.ok;
      r.checks.push_back(std::move(c));
    }
  }
  return finish();
}

std::string VerifyReport::first_failure() const {
  for (const VerifyCheck& c : checks)
    if (!c.ok) return c.what + ": " + c.detail;
  return "";
}

std::string VerifyReport::text() const {
  std::string out;
  for (const VerifyCheck& c : checks)
    out += fmt::format("{:<5} {:<15} {}\n", c.ok ? "ok" : "FAIL", c.what, c.detail);
  const size_t failed =
      std::count_if(checks.begin(), checks.end(), [](const VerifyCheck& c) { return !c.ok; });
  if (ok)
    out += fmt::format("verified: {} ({}, {} read, {:.2f}s)\n", archive, counted(shards, "shard"),
                       counted(bytes_read, "byte"), seconds);
  else
    out += fmt::format("NOT verified: {} ({} of {} failed)\n", archive, failed,
                       counted(checks.size(), "check"));
  return out;
}

std::string VerifyReport::json() const {
  nlohmann::ordered_json j;
  j["archive"] = archive;
  j["verified"] = ok;
  j["shards"] = shards;
  j["shards_ok"] = shards_ok;
  j["bytes_read"] = bytes_read;
  j["seconds"] = seconds;
  auto& arr = j["checks"] = nlohmann::ordered_json::array();
  for (const VerifyCheck& c : checks)
    arr.push_back({{"what", c.what}, {"ok", c.ok}, {"detail", c.detail}});
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace gtadoc
