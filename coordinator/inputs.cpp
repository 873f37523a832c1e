#include "coordinator/inputs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string_view>

#include <map>

#include <spdlog/spdlog.h>

#include "cluster/rows/parallel_sort.h"
#include "common/error.h"
#include "common/parallel.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

/// A regular file found while walking the inputs; checked (size, readable) on threads. `name`:
/// its path relative to the input directory it was found below (a plain file input: its base
/// name); `root`: that directory (null: a plain file input, whose `path` is set).
struct Candidate {
  Candidate(std::string n, const fs::path* r, fs::path p = {})
      : name(std::move(n)), root(r), path(std::move(p)) {}
  std::string name;
  const fs::path* root = nullptr;
  fs::path path;
  uint64_t size = 0;
  std::string error;  ///< why it cannot be read (the message InputError carries), or empty
};

void check_file(Candidate& c) {
  if (c.root != nullptr) c.path = *c.root / c.name;
  std::error_code ec;
  c.size = fs::file_size(c.path, ec);
  if (ec) {
    c.error = c.path.string() + ": cannot read: " + ec.message();
    return;
  }
  if (::access(c.path.c_str(), R_OK) != 0) {
    c.error = c.path.string() + ": cannot read: " + std::strerror(errno);
    return;
  }
}

/// Why `entry` (a non-regular directory entry) is not a document.
std::string skip_reason(const fs::path& entry) {
  std::error_code ec;
  const fs::file_status own = fs::symlink_status(entry, ec);
  if (fs::is_symlink(own)) {
    struct stat st {};
    if (::stat(entry.c_str(), &st) != 0)
      return errno == ELOOP    ? "symlink loop"
             : errno == ENOENT ? "dangling symlink"
                               : std::string("symlink: ") + std::strerror(errno);
    if (S_ISDIR(st.st_mode)) return "symlink to a directory (not followed)";
    if (S_ISFIFO(st.st_mode)) return "symlink to a FIFO";
    if (S_ISSOCK(st.st_mode)) return "symlink to a socket";
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "symlink to a device";
    return "symlink to a special file";
  }
  if (fs::is_fifo(own)) return "FIFO";
  if (fs::is_socket(own)) return "socket";
  if (fs::is_character_file(own) || fs::is_block_file(own)) return "device";
  return "special file";
}

/// One directory of a walk: its documents (regular files and symlinks to regular files) and
/// subdirectories (not symlinks to directories) as paths relative to the input directory, its
/// other entries, and the error that stopped reading it.
struct DirListing {
  std::vector<std::string> files, subdirs;
  std::vector<SkippedInput> skipped;
  std::string error;  ///< strerror text; empty when the whole directory was read
};

/// Reads the directory `rel` below `root` ("" for the root itself). Entry types come from
/// readdir (no stat for regular files and directories); symlinks are resolved relative to the
/// directory's descriptor.
DirListing list_directory(const fs::path& root, const std::string& rel) {
  DirListing out;
  const fs::path dir = rel.empty() ? root : root / rel;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    out.error = std::strerror(errno);
    return out;
  }
  const int fd = ::dirfd(d);
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(d);
    if (e == nullptr) {
      if (errno != 0) out.error = std::strerror(errno);
      break;
    }
    const char* n = e->d_name;
    if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
    std::string child = rel.empty() ? std::string(n) : rel + '/' + n;
    unsigned char type = e->d_type;
    struct stat st {};
    if (type == DT_UNKNOWN && ::fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) == 0)
      type = IFTODT(st.st_mode);
    if (type == DT_DIR) {
      out.subdirs.push_back(std::move(child));
    } else if (type == DT_REG || (type == DT_LNK && ::fstatat(fd, n, &st, 0) == 0 &&
                                  S_ISREG(st.st_mode))) {  // a link to a file is a document
      out.files.push_back(std::move(child));
    } else {
      const fs::path path = root / child;
      out.skipped.push_back({path, skip_reason(path)});
    }
  }
  ::closedir(d);
  return out;
}

}  // namespace

void announce_skipped(const std::vector<SkippedInput>& skipped) {
  if (skipped.empty()) return;
  for (const SkippedInput& s : skipped) spdlog::info("skipped {}: {}", s.path.string(), s.why);
  std::map<std::string, size_t> by_why;
  for (const SkippedInput& s : skipped) {
    const std::string& w = s.why;
    ++by_why[w.rfind("symlink to", 0) == 0 && w.find("directory") == std::string::npos
                 ? "symlink to a special file"
                 : w];
  }
  std::string kinds;
  for (const auto& [why, n] : by_why)
    kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + why;
  if (kinds.size() > 120) kinds = kinds.substr(0, 117) + "...";
  spdlog::warn("skipped {} entr{} that {} not regular files ({}){}", skipped.size(),
               skipped.size() == 1 ? "y" : "ies", skipped.size() == 1 ? "is" : "are", kinds,
               spdlog::should_log(spdlog::level::info) ? "" : "; -v lists them");
}

std::vector<InputDocument> collect_inputs(const std::vector<std::string>& inputs,
                                          std::vector<SkippedInput>* skipped, unsigned threads) {
  threads = resolve_threads(threads);
  // Each input directory is walked breadth first, the directories of one depth read on threads;
  // the files are then checked on threads. The walk stops at the depth where a directory could
  // not be read, and at the input that caused an error; the first failure in walk order (inputs
  // in order; a directory's files, then its own error, directories in breadth-first order) wins,
  // as when every file was checked the moment it was found. Nothing depends on the threads.
  std::vector<fs::path> roots;
  roots.reserve(inputs.size());
  std::vector<Candidate> found;
  std::string walk_error;
  size_t walk_error_at = 0;  // candidates found before it
  for (const std::string& input : inputs) {
    fs::path root(input);
    std::error_code ec;
    fs::file_status st = fs::status(root, ec);
    if (ec || !fs::exists(st)) {
      walk_error = input + ": no such file or directory";
    } else if (fs::is_regular_file(st)) {
      found.emplace_back(root.filename().string(), nullptr, root);
    } else if (fs::is_directory(st)) {
      roots.push_back(root);  // reserved: the candidates keep pointers to it
      const fs::path* base = &roots.back();
      for (std::vector<std::string> level{""}; !level.empty() && walk_error.empty();) {
        std::vector<DirListing> listed(level.size());
        parallel_for(level.size(), std::min<size_t>(threads, level.size()),
                     [&](size_t i) { listed[i] = list_directory(*base, level[i]); });
        std::vector<std::string> next;
        for (DirListing& l : listed) {
          for (std::string& f : l.files) found.emplace_back(std::move(f), base);
          if (skipped != nullptr)
            for (SkippedInput& k : l.skipped) skipped->push_back(std::move(k));
          if (!l.error.empty() && walk_error.empty()) {
            walk_error = input + ": cannot read directory: " + l.error;
            walk_error_at = found.size();
          }
          for (std::string& d : l.subdirs) next.push_back(std::move(d));
        }
        level = std::move(next);
      }
      if (!walk_error.empty()) break;
      continue;
    } else {
      walk_error = input + ": not a regular file or directory";
    }
    if (!walk_error.empty()) {
      walk_error_at = found.size();
      break;
    }
  }
  constexpr size_t kBatch = 256;
  parallel_for((found.size() + kBatch - 1) / kBatch, threads, [&](size_t b) {
    for (size_t i = b * kBatch; i < std::min(found.size(), (b + 1) * kBatch); ++i)
      check_file(found[i]);
  });
  for (size_t i = 0; i < found.size(); ++i) {
    if (!walk_error.empty() && i >= walk_error_at) break;
    if (!found[i].error.empty()) throw InputError(found[i].error);
  }
  if (!walk_error.empty()) throw InputError(walk_error);
  if (found.empty()) throw InputError("empty corpus: no documents found in the inputs");
  if (found.size() >= (kBoundaryBit >> 1))
    throw InputError("too many documents (" + std::to_string(found.size()) + ")");
  // Byte order of the names; equal names (an error) in walk order, so the message is the same
  // for every thread count.
  std::vector<uint32_t> order(found.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  parallel_sort(
      order.begin(), order.end(),
      [&](uint32_t a, uint32_t b) {
        const int c = found[a].name.compare(found[b].name);
        return c < 0 || (c == 0 && a < b);
      },
      threads);
  for (size_t i = 1; i < order.size(); ++i) {
    const Candidate &a = found[order[i - 1]], &b = found[order[i]];
    if (a.name == b.name)
      throw InputError("duplicate document name '" + b.name + "' (" + a.path.string() + " and " +
                       b.path.string() + ")");
  }
  std::vector<InputDocument> docs(found.size());
  parallel_blocks(order.size(), threads, [&](uint64_t lo, uint64_t hi) {
    for (uint64_t i = lo; i < hi; ++i) {
      Candidate& c = found[order[i]];
      docs[i] = {std::move(c.name), std::move(c.path), c.size};
    }
  });
  std::vector<Candidate>().swap(found);
  // A name that is also a directory of another name ("a" and "a/b") could not be decompressed:
  // the names below "a/" follow "a/" in byte order, so the first name at or after it tells.
  std::atomic<uint64_t> first_bad{docs.size()};  // the first such name in byte order
  parallel_blocks(docs.size(), threads, [&](uint64_t lo, uint64_t hi) {
    for (uint64_t i = lo; i < hi && i < first_bad.load(std::memory_order_relaxed); ++i) {
      const std::string dir = docs[i].name + '/';
      const auto it = std::lower_bound(
          docs.begin() + static_cast<std::ptrdiff_t>(i) + 1, docs.end(), dir,
          [](const InputDocument& d, const std::string& key) { return d.name < key; });
      if (it == docs.end() || it->name.compare(0, dir.size(), dir) != 0) continue;
      uint64_t seen = first_bad.load();
      while (i < seen && !first_bad.compare_exchange_weak(seen, i)) {
      }
      break;
    }
  });
  if (first_bad < docs.size())
    throw InputError("document name '" + docs[first_bad].name +
                     "' is also a directory of another document");
  return docs;
}

std::vector<ShardPlan> plan_shards(const std::vector<InputDocument>& docs, uint64_t shard_size,
                                   uint32_t shards) {
  GTADOC_EXPECTS(!docs.empty(), "plan_shards needs documents");
  uint64_t total = 0;
  for (const auto& d : docs) total += d.bytes;
  uint64_t n = shards;
  if (n == 0)
    n = std::max<uint64_t>(1, (total + shard_size - 1) / std::max<uint64_t>(1, shard_size));
  n = std::min<uint64_t>(n, docs.size());
  std::vector<ShardPlan> plan;
  size_t i = 0;
  uint64_t before = 0;  // bytes of the documents already assigned
  for (uint64_t s = 0; s < n; ++s) {
    ShardPlan p;
    p.first_doc = static_cast<DocId>(i);
    uint64_t target = (s + 1 == n) ? total : total * (s + 1) / n;  // cumulative bytes goal
    size_t must_leave = n - s - 1;  // documents to keep for the remaining shards
    while (i < docs.size() - must_leave) {
      bool empty = p.num_docs == 0;
      uint64_t next = before + docs[i].bytes;
      // Take the document if the shard is empty, or if that lands closer to the goal.
      if (!empty && s + 1 != n && next > target && next - target > target - before) break;
      before = next;
      p.bytes += docs[i].bytes;
      ++p.num_docs;
      ++i;
      if (s + 1 != n && before >= target) break;
    }
    plan.push_back(p);
  }
  GTADOC_EXPECTS(i == docs.size(), "shard plan does not cover every document");
  return plan;
}

std::string_view read_whole_file(const fs::path& path, uint64_t size_hint,
                                 UninitVector<char>& buffer) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path.string() + ": cannot read: " + std::strerror(errno));
  // One byte of room past the expected end, so the read that finds the end needs no growth.
  if (buffer.size() < size_hint + 1) buffer.resize(size_hint + 1);
  size_t got = 0;
  for (;;) {
    if (got == buffer.size()) buffer.resize(buffer.size() * 2);
    ssize_t r = ::read(fd, buffer.data() + got, buffer.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw InputError(path.string() + ": cannot read: " + std::strerror(err));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return {buffer.data(), got};
}

}  // namespace gtadoc
