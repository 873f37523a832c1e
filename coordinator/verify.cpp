#include "coordinator/verify.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "formats/archive.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

// SHA-256 of `file`, which must be a regular file (a symlink to one is followed): checked before
// it is opened, opened without blocking (a FIFO swapped in meanwhile cannot block the open) and
// checked again, and read up to the size it had then (a file that grows, or a device, is never
// read without end). Sets `size` to the bytes read.
Sha256 hash_regular_file(const fs::path& file, uint64_t& size) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0)
    throw InputError(file.string() + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw InputError(file.string() + ": cannot open: not a regular file");
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(file.string() + ": cannot open: " + std::strerror(errno));
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw InputError(file.string() + ": cannot open: not a regular file");
  Sha256Hasher h;
  std::vector<uint8_t> buf(4 << 20);
  const uint64_t total = static_cast<uint64_t>(st.st_size);
  size = 0;
  while (size < total) {
    const ssize_t n = ::read(fd, buf.data(), std::min<uint64_t>(buf.size(), total - size));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(file.string() + ": read error: " + std::strerror(errno));
    if (n == 0) throw InputError(file.string() + ": read error: the file shrank while read");
    h.update({buf.data(), static_cast<size_t>(n)});
    size += static_cast<uint64_t>(n);
  }
  return h.finish();
}

VerifyCheck verify_shard(const fs::path& archive, const Manifest& m, uint32_t s,
                         const Sha256& file_digest) {
  VerifyCheck c{"shard " + std::to_string(s), true, ""};
  const ShardEntry& e = m.shards[s];
  auto fail = [&](const std::string& why) {
    c.ok = false;
    c.detail = why;
    return c;
  };
  try {
    ShardGrammar g = read_shard_grammar(archive, m, s);  // every grammar dataset, validated
    ShardLayout layout = read_shard_layout(archive, m, s);
    check_shard_documents(archive, m, s, g, layout);  // words and bytes against the document table
  } catch (const InputError& err) {
    return fail(err.what());
  }
  // Datasets that read back consistently can still have been edited (rewritten through HDF5,
  // checksums and all): the file's digest says so.
  if (e.sha256 == Sha256{}) return fail("no SHA-256 recorded in the manifest");
  if (file_digest != e.sha256)
    return fail(fmt::format("SHA-256 of the file is {}..., the manifest records {}... (changed)",
                            to_hex(file_digest).substr(0, 16), to_hex(e.sha256).substr(0, 16)));
  c.detail = fmt::format("{} documents, {} rules, {} symbols, depth {}, {} bytes, sha256 ok",
                         e.num_docs, e.rules, e.symbols, e.depth, e.file_bytes);
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

  Manifest m;
  try {
    m = read_manifest(archive);  // every manifest dataset and the tables' relations
  } catch (const InputError& err) {
    r.checks.push_back({"manifest", false, err.what()});
    return finish();
  }
  std::error_code ec;
  const uint64_t manifest_bytes = fs::file_size(archive / kManifestFile, ec);
  r.bytes_read += ec ? 0 : manifest_bytes;
  r.shards = static_cast<uint32_t>(m.shards.size());
  r.checks.push_back(
      {"manifest", true,
       fmt::format("format {}, {} documents, {} words in the dictionary, {} shards",
                   m.format_version, m.docs.size(), m.dict.size(), m.shards.size())});

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

  // File digests in parallel (plain reads), then each shard's datasets (HDF5 is serialized, its
  // chunks are inflated on threads).
  std::vector<Sha256> digests(m.shards.size());
  std::vector<std::string> read_errors(m.shards.size());
  std::atomic<uint64_t> hashed{0};
  parallel_for(m.shards.size(), threads, [&](size_t s) {
    const fs::path file = archive / shard_file_name(static_cast<uint32_t>(s));
    try {
      uint64_t size = 0;
      digests[s] = hash_regular_file(file, size);
      hashed += size;
    } catch (const InputError& err) {
      read_errors[s] = err.what();
    }
  });
  r.bytes_read += hashed.load();
  for (uint32_t s = 0; s < m.shards.size(); ++s) {
    VerifyCheck c = read_errors[s].empty()
                        ? verify_shard(archive, m, s, digests[s])
                        : VerifyCheck{"shard " + std::to_string(s), false, read_errors[s]};
    r.shards_ok += c.ok;
    r.checks.push_back(std::move(c));
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
    out += fmt::format("verified: {} ({} shards, {} bytes read, {:.2f}s)\n", archive, shards,
                       bytes_read, seconds);
  else
    out +=
        fmt::format("NOT verified: {} ({} of {} checks failed)\n", archive, failed, checks.size());
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
