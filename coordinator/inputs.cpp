#include "coordinator/inputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <unordered_set>

#include <map>

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/parallel.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

/// A regular file found while walking the inputs; checked (size, readable) and named later, on
/// threads. `root` is the input directory it was found below (null: a plain file input).
struct Candidate {
  Candidate(fs::path p, const fs::path* r) : path(std::move(p)), root(r) {}
  fs::path path;
  const fs::path* root = nullptr;
  uint64_t size = 0;
  std::string name;
  std::string error;  ///< why it cannot be read (the message InputError carries), or empty
};

void check_file(Candidate& c) {
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
  c.name = c.root ? c.path.lexically_relative(*c.root).string() : c.path.filename().string();
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
  // The walk (serial: directory order) lists the regular files and stops at the first error it
  // meets; the files are then checked on threads, and the first failure in walk order wins, as
  // when every file was checked the moment it was found.
  std::vector<fs::path> roots;
  roots.reserve(inputs.size());
  std::vector<Candidate> found;
  std::string walk_error;
  for (const std::string& input : inputs) {
    fs::path root(input);
    std::error_code ec;
    fs::file_status st = fs::status(root, ec);
    if (ec || !fs::exists(st)) {
      walk_error = input + ": no such file or directory";
      break;
    }
    if (fs::is_regular_file(st)) {
      found.emplace_back(root, nullptr);
    } else if (fs::is_directory(st)) {
      roots.push_back(root);  // reserved: the candidates keep pointers to it
      const fs::path* base = &roots.back();
      fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
      if (ec) {
        walk_error = input + ": cannot read directory: " + ec.message();
        break;
      }
      for (; it != end; it.increment(ec)) {
        if (ec) break;
        std::error_code fec;
        if (!it->is_regular_file(fec)) {  // follows symlinks: a link to a file is a document
          if (!it->is_directory(fec) || it->is_symlink(fec)) {
            if (skipped != nullptr) skipped->push_back({it->path(), skip_reason(it->path())});
          }
          continue;
        }
        found.emplace_back(it->path(), base);
      }
      if (ec) {
        walk_error = input + ": cannot read directory: " + ec.message();
        break;
      }
    } else {
      walk_error = input + ": not a regular file or directory";
      break;
    }
  }
  constexpr size_t kBatch = 256;
  parallel_for((found.size() + kBatch - 1) / kBatch, threads, [&](size_t b) {
    for (size_t i = b * kBatch; i < std::min(found.size(), (b + 1) * kBatch); ++i)
      check_file(found[i]);
  });
  for (const Candidate& c : found)
    if (!c.error.empty()) throw InputError(c.error);
  if (!walk_error.empty()) throw InputError(walk_error);
  std::vector<InputDocument> docs;
  docs.reserve(found.size());
  for (Candidate& c : found) docs.push_back({std::move(c.name), std::move(c.path), c.size});
  std::vector<Candidate>().swap(found);
  if (docs.empty()) throw InputError("empty corpus: no documents found in the inputs");
  std::sort(docs.begin(), docs.end(),
            [](const InputDocument& a, const InputDocument& b) { return a.name < b.name; });
  for (size_t i = 1; i < docs.size(); ++i)
    if (docs[i].name == docs[i - 1].name)
      throw InputError("duplicate document name '" + docs[i].name + "' (" +
                       docs[i - 1].path.string() + " and " + docs[i].path.string() + ")");
  // A name that is also a directory of another name ("a" and "a/b") could not be decompressed.
  std::unordered_set<std::string_view> dirs;
  for (const auto& d : docs)
    for (size_t p = d.name.find('/'); p != std::string::npos; p = d.name.find('/', p + 1))
      dirs.insert(std::string_view(d.name).substr(0, p));
  for (const auto& d : docs)
    if (dirs.count(d.name))
      throw InputError("document name '" + d.name + "' is also a directory of another document");
  if (docs.size() >= (kBoundaryBit >> 1))
    throw InputError("too many documents (" + std::to_string(docs.size()) + ")");
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
