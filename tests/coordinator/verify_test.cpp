// gtadoc verify (docs/REFERENCE.md §9): a sound archive passes; a flipped byte, a truncated
// or missing shard, a checksum-consistent edit of a shard dataset or of a manifest dataset
// (rewritten through HDF5, so every Fletcher32 checksum still holds and the normal readers
// accept it) and a manifest without a content digest each fail, with a one-line error and exit
// 1; verify never changes the archive; `info` says whether the archive was verified.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "coordinator/verify.h"
#include "formats/archive.h"
#include "formats/chunk_maps.h"
#include "formats/digest.h"
#include "tests/testutil/corpus.h"
#include "tests/testutil/string_tables.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;
using testutil::read_file;
using testutil::run_gtadoc;
using testutil::TempDir;
using testutil::write_file;

/// The bundled sample as a 3-shard archive without deflate (so an in-place dataset rewrite keeps
/// every file's size and only the digests can tell).
struct SampleArchive {
  TempDir tmp;
  fs::path path = tmp / "s.gtd";
  SampleArchive() {
    auto r = run_gtadoc({"compress", (testutil::source_dir() / "data/sample").string(), "-o",
                         path.string(), "--shards", "3", "--deflate-level", "0"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  fs::path shard(uint32_t s) const { return path / shard_file_name(s); }
};

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    files[e.path().filename().string()] = read_file(e.path());
  return files;
}

size_t lines(const std::string& s) {
  return std::count(s.begin(), s.end(), '\n');
}

/// Rewrites a whole 1-D u64-readable dataset through HDF5 after `edit` (checksums recomputed).
template <class Edit>
void rewrite_dataset(const fs::path& file, const char* name, Edit edit) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  hid_t space = H5Dget_space(d);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space, &n, nullptr);
  std::vector<uint64_t> v(n);
  ASSERT_GE(H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  edit(v);
  ASSERT_GE(H5Dwrite(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
}

TEST(Verify, SoundArchivePassesAndIsLeftUnchanged) {
  SampleArchive a;
  const auto before = snapshot(a.path);
  VerifyReport r = verify_archive(a.path, 2);
  EXPECT_TRUE(r.ok) << r.text();
  EXPECT_EQ(r.shards, 3u);
  EXPECT_EQ(r.shards_ok, 3u);
  Manifest m = read_manifest(a.path);
  ASSERT_TRUE(m.content_sha256.has_value());
  EXPECT_EQ(*m.content_sha256, manifest_content_digest(m));
  for (uint32_t s = 0; s < 3; ++s) EXPECT_EQ(m.shards[s].sha256, sha256_file(a.shard(s)));

  auto cli = run_gtadoc({"verify", a.path.string()});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("verified: "), std::string::npos) << cli.out;
  auto json = run_gtadoc({"verify", a.path.string(), "--json", "--threads", "1"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"verified\": true"), std::string::npos) << json.out;

  auto info = run_gtadoc({"info", a.path.string()});
  EXPECT_NE(info.out.find("sha256:" + to_hex(*m.content_sha256)), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("not checked"), std::string::npos) << info.out;
  auto checked = run_gtadoc({"info", a.path.string(), "--verify", "--json"});
  EXPECT_EQ(checked.exit_code, 0) << checked.err;
  EXPECT_NE(checked.out.find("\"verified\": true"), std::string::npos) << checked.out;
  EXPECT_EQ(snapshot(a.path), before);
}

TEST(Verify, FlippedByteInAShard) {
  SampleArchive a;
  std::string bytes = read_file(a.shard(1));
  for (size_t pos : {bytes.size() / 2, bytes.size() - 7}) {
    std::string flipped = bytes;
    flipped[pos] = static_cast<char>(flipped[pos] ^ 0x10);
    fs::remove(a.shard(1));
    write_file(a.shard(1), flipped);
    auto r = run_gtadoc({"verify", a.path.string()});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("verification failed: shard 1"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("FAIL  shard 1"), std::string::npos) << r.out;
  }
}

TEST(Verify, TruncatedMissingAndExtraFiles) {
  SampleArchive a;
  const std::string bytes = read_file(a.shard(2));
  fs::resize_file(a.shard(2), bytes.size() - 100);
  VerifyReport r = verify_archive(a.path, 0);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.shards_ok, 2u);
  EXPECT_NE(r.first_failure().find("shard 2"), std::string::npos) << r.text();

  fs::remove(a.shard(2));
  r = verify_archive(a.path, 0);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.first_failure().find("shard 2"), std::string::npos) << r.text();

  write_file(a.shard(2), bytes);  // restored: sound again, and a stray file is only reported
  write_file(a.path / "notes.txt", "mine");
  r = verify_archive(a.path, 0);
  EXPECT_TRUE(r.ok) << r.text();
  EXPECT_NE(r.text().find("notes.txt"), std::string::npos) << r.text();
}

TEST(Verify, ChecksumConsistentEditOfAShardDataset) {
  SampleArchive a;
  Manifest m = read_manifest(a.path);
  const std::string size_before = std::to_string(fs::file_size(a.shard(0)));
  // Swap two different whitespace ids of the layout: every checksum, count and range still holds.
  rewrite_dataset(a.shard(0), "/layout/gaps", [](std::vector<uint64_t>& gaps) {
    auto other = std::find_if(gaps.begin(), gaps.end(), [&](uint64_t g) { return g != gaps[0]; });
    ASSERT_NE(other, gaps.end());
    std::swap(gaps[0], *other);
  });
  EXPECT_EQ(std::to_string(fs::file_size(a.shard(0))), size_before);
  EXPECT_NO_THROW(read_shard_layout(a.path, m, 0));  // the normal reader cannot tell
  VerifyReport r = verify_archive(a.path, 0);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.first_failure().find("shard 0: SHA-256"), std::string::npos) << r.text();
}

/// Shard `s` of `a` is refused with a message holding `want` by the reader, verify and a run.
void expect_shard_refused(const SampleArchive& a, const Manifest& m, uint32_t s,
                          const std::string& want) {
  try {
    read_shard_grammar(a.path, m, s);
    ADD_FAILURE() << "the reader accepted shard " << s << " (expected: " << want << ")";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
  VerifyReport r = verify_archive(a.path, 0);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.text().find(want), std::string::npos) << r.text();
  auto run = run_gtadoc({"run", a.path.string(), "word-count", "--engine", "cpu"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find(want), std::string::npos) << run.err;
}

TEST(Verify, CorruptLocalWordsAreCaughtByTheReadersAndVerify) {
  // /grammar/local_words rewritten through HDF5 (checksums recomputed): two words swapped (not
  // ascending), and a word beyond the dictionary. The readers refuse both; verify names them.
  for (int c = 0; c < 2; ++c) {
    SampleArchive a;
    Manifest m = read_manifest(a.path);
    rewrite_dataset(a.shard(1), "/grammar/local_words", [&](std::vector<uint64_t>& words) {
      ASSERT_GE(words.size(), 2u);
      if (c == 0)
        std::swap(words[0], words[1]);
      else
        words.back() = m.dict.size();  // the stored width holds it: the largest id is close
    });
    const std::string want =
        c == 0 ? "local_words are not strictly ascending" : "beyond the dictionary";
    expect_shard_refused(a, m, 1, want);
  }
}

/// Shard `s`'s L + R (the first stored value past its words and rules: the root's boundaries
/// start there) and where its root begins among its symbols.
struct SymbolBounds {
  uint64_t base = 0, root = 0;
};
SymbolBounds symbol_bounds(const SampleArchive& a, const Manifest& m, uint32_t s) {
  h5::Lock lock;
  h5::File f = h5::open_file(a.shard(s));
  const std::vector<uint64_t> bodies =
      h5::read_array<uint64_t>(f.id(), "/grammar/rule_body_lengths");
  return {*h5::read_uint_attr(f.id(), "num_words") + bodies.size(),
          m.shards[s].symbols - bodies.back()};
}

TEST(Verify, CorruptPackedSymbolsAreCaughtByTheReadersAndVerify) {
  // /grammar/symbols (packed by the N-bit filter) rewritten through HDF5, checksums recomputed:
  // rule 0's first symbol set to the largest value the packing holds (at or beyond L + R: not a
  // word, and no smaller rule), and a word of the root set to L + R (a boundary where none is).
  // The readers refuse both; verify names them.
  for (int c = 0; c < 2; ++c) {
    SampleArchive a;
    Manifest m = read_manifest(a.path);
    const auto [base, root] = symbol_bounds(a, m, 1);
    uint64_t bits = 0;
    {
      h5::Lock lock;
      bits = h5::dataset_info(h5::open_file(a.shard(1)).id(), "/grammar/symbols").nbit;
    }
    ASSERT_GT(bits, 0u);
    rewrite_dataset(a.shard(1), "/grammar/symbols", [&](std::vector<uint64_t>& symbols) {
      if (c == 0) {
        symbols[0] = (uint64_t{1} << bits) - 1;
        ASSERT_GE(symbols[0] + 1, base);
      } else {
        uint64_t i = root;
        while (symbols[i] >= base) ++i;
        symbols[i] = base;
      }
    });
    const std::string want = c == 0 ? "references rule" : "corrupt grammar";
    expect_shard_refused(a, m, 1, want);
  }
}

TEST(Verify, RootValueBeyondEveryBoundaryIsRefusedByTheReader) {
  // A root value at or beyond L + R + 2^31 is no word, rule or document boundary. The packing
  // keeps bit_width(largest value) bits, so only symbols stored at all 32 bits can hold one: the
  // dataset is written again at 32 bits (no N-bit filter) with such a value in place of a root
  // word or rule. The file then differs from what the manifest records (its size, its chunks),
  // which every command refuses first (tests above); the reader is handed the file's size and no
  // chunk maps, so that it decodes the symbols through HDF5 and reaches the value.
  SampleArchive a;
  Manifest m = read_manifest(a.path);
  const auto [base, root] = symbol_bounds(a, m, 1);
  std::vector<uint32_t> symbols;
  {
    h5::Lock lock;
    symbols = h5::read_array<uint32_t>(h5::open_file(a.shard(1)).id(), "/grammar/symbols");
  }
  uint64_t i = root;
  while (symbols[i] >= base) ++i;
  symbols[i] = static_cast<uint32_t>(base + (uint64_t{1} << 31));
  {
    h5::Lock lock;
    h5::File f = h5::open_file(a.shard(1), true);
    ASSERT_GE(H5Ldelete(f.id(), "/grammar/symbols", H5P_DEFAULT), 0);
    h5::WriteOptions o;
    o.threads = 1;
    h5::write_array<uint32_t>(f.id(), "/grammar/symbols", symbols, h5::Width::kU32, o);
  }
  m.shards[1].file_bytes = fs::file_size(a.shard(1));
  m.shards[1].chunk_maps.clear();
  try {
    read_shard_grammar(a.path, m, 1);
    ADD_FAILURE() << "the reader accepted the shard";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("beyond any word, rule or document boundary"),
              std::string::npos)
        << e.what();
  }
}

TEST(Verify, ChecksumConsistentEditOfAManifestDataset) {
  SampleArchive a;
  Manifest m = read_manifest(a.path);
  // Two documents of shard 0 with different sizes swap their byte counts: the shard sums hold.
  size_t i = m.shards[0].first_doc, j = i + 1;
  while (m.docs[j].bytes == m.docs[i].bytes) ++j;
  ASSERT_LT(j, m.shards[0].first_doc + m.shards[0].num_docs);
  rewrite_dataset(a.path / kManifestFile, "/documents/bytes",
                  [&](std::vector<uint64_t>& v) { std::swap(v[i], v[j]); });
  EXPECT_NO_THROW(read_manifest(a.path));  // the normal reader cannot tell
  VerifyReport r = verify_archive(a.path, 0);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.first_failure().find("content digest"), std::string::npos) << r.text();
  auto info = run_gtadoc({"info", a.path.string(), "--verify"});
  EXPECT_EQ(info.exit_code, 1);
  EXPECT_NE(info.out.find("verified          NO: content digest"), std::string::npos) << info.out;
}

TEST(Verify, ManifestWithoutDigestsFails) {
  SampleArchive a;
  hid_t f = H5Fopen((a.path / kManifestFile).c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  ASSERT_GE(H5Adelete(f, "content_sha256"), 0);
  ASSERT_GE(H5Ldelete(f, "/shards/sha256", H5P_DEFAULT), 0);
  H5Fclose(f);
  Manifest m = read_manifest(a.path);  // still a readable archive
  EXPECT_FALSE(m.content_sha256.has_value());
  EXPECT_FALSE(has_shard_digests(m));
  VerifyReport r = verify_archive(a.path, 0);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.shards_ok, 0u);
  EXPECT_NE(r.first_failure().find("no content_sha256"), std::string::npos) << r.text();
  auto info = run_gtadoc({"info", a.path.string()});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("none (written before digests existed)"), std::string::npos);
}

TEST(Verify, BadArguments) {
  TempDir tmp;
  auto missing = run_gtadoc({"verify", (tmp / "nope.gtd").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(lines(missing.err), 1u) << missing.err;
  EXPECT_NE(missing.err.find("nope.gtd: not a gtadoc archive"), std::string::npos) << missing.err;
  write_file(tmp / "file.gtd", "x");
  auto file = run_gtadoc({"verify", (tmp / "file.gtd").string()});
  EXPECT_EQ(file.exit_code, 1);
  auto usage = run_gtadoc({"verify"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_EQ(lines(usage.err), 1u) << usage.err;
  auto threads = run_gtadoc({"verify", (tmp / "file.gtd").string(), "--threads", "0"});
  EXPECT_EQ(threads.exit_code, 2);
}

TEST(Verify, DigestsAreStandardSha256) {
  EXPECT_EQ(to_hex(sha256_of("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(to_hex(sha256_of("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string million(1000000, 'a');  // FIPS 180-2's long message, through small and big updates
  Sha256Hasher h;
  h.update(std::string_view(million).substr(0, 3));
  h.update(std::string_view(million).substr(3, 200000));
  h.update(std::string_view(million).substr(200003));
  EXPECT_EQ(to_hex(h.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  TempDir tmp;
  write_file(tmp / "f", million);
  EXPECT_EQ(sha256_file(tmp / "f"), sha256_of(million));
  const std::string hex = to_hex(sha256_of("abc"));
  std::string upper = hex;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  EXPECT_EQ(sha256_from_hex(upper), sha256_of("abc"));
  EXPECT_FALSE(sha256_from_hex(hex.substr(1)).has_value());
  EXPECT_FALSE(sha256_from_hex(std::string(63, '0') + "g").has_value());
}

// ---------------------------------------------------------------- crafted archives
// Manifests written anew with write_manifest_file (so every checksum and digest holds) carrying
// what gtadoc never writes; every reader and `verify` refuse them with the same one-line message.

/// A copy of `a` at `dir` whose manifest is `m`.
fs::path crafted_copy(const SampleArchive& a, const Manifest& m, const fs::path& dir) {
  fs::create_directory(dir);
  for (uint32_t s = 0; s < m.shards.size(); ++s)
    fs::copy_file(a.shard(s), dir / shard_file_name(s));
  write_manifest_file(dir / kManifestFile, m, ArchiveOptions{0, 1});
  return dir;
}

/// Runs gtadoc under an address-space limit of `limit` bytes (so an allocation sized by a
/// crafted header fails instead of taking the machine's memory).
testutil::CommandResult run_limited(const std::vector<std::string>& args, uint64_t limit) {
  TempDir scratch;
  const fs::path out = scratch / "stdout", err = scratch / "stderr";
  const char* env = std::getenv("GTADOC_BINARY");
  std::string bin = env && *env ? env : GTADOC_BINARY;
  pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit rl{limit, limit};
    std::vector<std::string> copy = args;
    std::vector<char*> argv{bin.data()};
    for (auto& x : copy) argv.push_back(x.data());
    argv.push_back(nullptr);
    if (::setrlimit(RLIMIT_AS, &rl) != 0 || !std::freopen(out.c_str(), "w", stdout) ||
        !std::freopen(err.c_str(), "w", stderr))
      ::_exit(127);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  testutil::CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

constexpr uint64_t kMemoryLimit = uint64_t{1} << 30;

/// `commands` (info, verify, run word-count, decompress) on `archive`, each under the memory
/// limit: exit 1 and one line on stderr holding `needle`.
void expect_every_reader_refuses(const fs::path& archive, const std::string& needle,
                                 const std::vector<std::string>& commands = {"info", "verify",
                                                                             "run", "decompress"}) {
  const std::string p = archive.string();
  const fs::path out = archive.parent_path() / (archive.filename().string() + "-out");
  for (const std::string& command : commands) {
    // "run" counts words; "run:TASK" runs TASK.
    std::vector<std::string> args{command.substr(0, command.find(':')), p};
    if (command == "run") args.push_back("word-count");
    if (command.starts_with("run:")) args.push_back(command.substr(4));
    if (command == "decompress") args.insert(args.end(), {"-o", out.string()});
    auto r = run_limited(args, kMemoryLimit);
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << command << ": " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << command << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(Verify, ChunkMapsAreCheckedAgainstTheFiles) {
  SampleArchive a;  // compressed by gtadoc: every shard's chunk maps recorded
  Manifest m = read_manifest(a.path);
  for (const ShardEntry& e : m.shards) ASSERT_EQ(e.chunk_maps.size(), kMappedArrays.size());
  VerifyReport ok = verify_archive(a.path, 2);
  ASSERT_TRUE(ok.ok) << ok.text();
  EXPECT_NE(ok.text().find("chunk maps ok"), std::string::npos) << ok.text();
  // A map one byte off: queries fall back to HDF5 and answer the same; verify fails the shard.
  m.shards[1].chunk_maps[2].offsets[0] += 1;
  const fs::path copy = crafted_copy(a, m, a.tmp / "c.gtd");
  auto want = run_gtadoc({"run", a.path.string(), "word-count"});
  auto got = run_gtadoc({"run", copy.string(), "word-count"});
  EXPECT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(got.out, want.out);
  VerifyReport r = verify_archive(copy, 2);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.text().find("chunk maps do not match"), std::string::npos) << r.text();
}

TEST(Crafted, DictionaryWordsWithWhitespaceOrEmptyAreRefused) {
  SampleArchive a;
  const Manifest m = read_manifest(a.path);
  const uint32_t last = m.dict.size() - 1;
  int k = 0;
  for (const char* tail : {"\t1\nzzz", "\n", " x", "\r", "\v", "\f"}) {
    Manifest bad = m;
    bad.dict =
        testutil::with_entry(m.dict, last, std::string(m.dict[last]) + tail);  // still sorted
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(tail[0]));
    const std::string needle =
        "/dictionary: word " + std::to_string(last) + " holds whitespace byte " + hex;
    const fs::path dir = crafted_copy(a, bad, a.tmp / ("w" + std::to_string(k++) + ".gtd"));
    expect_every_reader_refuses(dir, needle);
    // A read of the words on demand refuses it when the word is fetched.
    const Manifest on_demand = read_manifest(dir, ManifestRead::kWordsOnDemand);
    try {
      on_demand.dict.fetch(std::vector<WordId>{last});
      ADD_FAILURE() << "a fetch of the word accepted " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("manifest.h5"), std::string::npos) << e.what();
    }
    // The deferred dictionary read refuses it as well, at the first use of the words.
    Manifest deferred = read_manifest(dir, ManifestRead::kDeferDictionary);
    try {
      (void)deferred.dict[0];
      ADD_FAILURE() << "deferred dictionary read accepted " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("manifest.h5"), std::string::npos) << e.what();
    }
  }
  // An empty word (it sorts first).
  Manifest bad = m;
  Dictionary d;
  d.push_back("");
  for (uint32_t w = 0; w < m.dict.size(); ++w) d.push_back(m.dict[w]);
  bad.dict = d;
  expect_every_reader_refuses(crafted_copy(a, bad, a.tmp / "empty.gtd"),
                              "/dictionary: word 0 is empty");
}

TEST(Crafted, UnsafeDocumentNamesAreRefused) {
  SampleArchive a;
  const Manifest m = read_manifest(a.path);
  ASSERT_EQ(m.doc_names[0], "about.rst.txt");
  int k = 0;
  // Each still sorts before the second document.
  for (const std::string& name :
       {std::string("../x"), std::string("/abs"), std::string("a\0b", 3), std::string("a//b"),
        std::string("a/"), std::string("./a"), std::string("a/../b"), std::string()}) {
    Manifest bad = m;
    bad.doc_names = testutil::with_entry(m.doc_names, 0, name);
    const fs::path dir = crafted_copy(a, bad, a.tmp / ("n" + std::to_string(k++) + ".gtd"));
    // A query reads the names only when it prints documents: an index refuses them, a word
    // count never reads them.
    const std::vector<std::string> readers = {"info", "verify", "run:inverted-index", "decompress"};
    expect_every_reader_refuses(dir, "document 0: name \"", readers);
    expect_every_reader_refuses(dir, "\" is not a safe relative path", readers);
    auto counted = run_limited({"run", dir.string(), "word-count", "--top", "3"}, kMemoryLimit);
    EXPECT_EQ(counted.exit_code, 0) << counted.err;
  }
}

TEST(Crafted, DocumentSizesInconsistentWithTheGrammarAreRefused) {
  SampleArchive a;
  const Manifest m = read_manifest(a.path);
  const DocEntry& doc = m.docs[5];
  int k = 0;
  for (uint64_t bytes : {doc.bytes + (uint64_t{1} << 50), doc.bytes + 1, doc.bytes - 1}) {
    Manifest bad = m;
    bad.docs[5].bytes = bytes;
    bad.shards[doc.shard].input_bytes += bytes - doc.bytes;  // the tables still add up
    const fs::path dir = crafted_copy(a, bad, a.tmp / ("b" + std::to_string(k++) + ".gtd"));
    const std::string needle = "shard-0000" + std::to_string(doc.shard) + ".h5: document 5 (" +
                               std::string(m.doc_names[5]) + ") expands to " +
                               std::to_string(doc.bytes) + " bytes, the manifest says " +
                               std::to_string(bytes);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"verify", dir.string()},
          {"decompress", dir.string(), "-o", (a.tmp / "out").string()}}) {
      auto r = run_limited(args, kMemoryLimit);
      EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
      EXPECT_EQ(lines(r.err), 1u) << r.err;
      EXPECT_NE(r.err.find(needle), std::string::npos) << args[0] << ": " << r.err;
    }
    EXPECT_FALSE(fs::exists(a.tmp / "out"));
  }
  // Fewer bytes than its words need: refused by every reader of the manifest.
  Manifest bad = m;
  bad.docs[5].bytes = 1;
  bad.shards[doc.shard].input_bytes -= doc.bytes - 1;
  expect_every_reader_refuses(crafted_copy(a, bad, a.tmp / "small.gtd"),
                              "(too few bytes for its words)");
}

/// Replaces dataset `name` of `file` by one of the same type whose header claims `n` elements
/// and which stores no chunk.
void replace_with_claim(const fs::path& file, const char* name, hsize_t n) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  hid_t type = H5Dget_type(d);
  H5Dclose(d);
  ASSERT_GE(H5Ldelete(f, name, H5P_DEFAULT), 0);
  hid_t space = H5Screate_simple(1, &n, &n);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t chunk = 1 << 17;
  H5Pset_chunk(dcpl, 1, &chunk);
  H5Pset_fletcher32(dcpl);
  hid_t created = H5Dcreate2(f, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(created, 0);
  H5Dclose(created);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(f);
}

TEST(Crafted, SizeClaimsBeyondTheFileAreRefusedBeforeAllocating) {
  SampleArchive a;
  const Manifest m = read_manifest(a.path);
  // A manifest table claiming 2^28 to 2^31 elements of 8 bytes (2 to 16 GiB in memory).
  int k = 0;
  for (const char* name : {"/documents/name_lengths", "/dictionary/prefix_lengths",
                           "/documents/bytes", "/shards/words"}) {
    for (hsize_t n : {hsize_t{1} << 28, hsize_t{1} << 31}) {
      const fs::path dir = crafted_copy(a, m, a.tmp / ("m" + std::to_string(k++) + ".gtd"));
      replace_with_claim(dir / kManifestFile, name, n);
      const std::string needle = std::string("manifest.h5: dataset ") + name + ": claims " +
                                 std::to_string(n) + " elements";
      // The names are read only by the queries that print documents.
      if (std::string(name) == "/documents/name_lengths")
        expect_every_reader_refuses(dir, needle,
                                    {"info", "verify", "run:inverted-index", "decompress"});
      else
        expect_every_reader_refuses(dir, needle);
      try {
        read_manifest(dir);
        ADD_FAILURE() << name << " accepted";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      }
    }
  }
  // A shard dataset (the manifest records the new file size, so only the claim is wrong): the
  // commands that read it (info reads the manifest alone, run no layout).
  for (const char* name : {"/grammar/symbols", "/grammar/rule_length", "/layout/gaps"}) {
    const fs::path dir = a.tmp / ("s" + std::to_string(k++) + ".gtd");
    fs::create_directory(dir);
    for (uint32_t s = 0; s < m.shards.size(); ++s)
      fs::copy_file(a.shard(s), dir / shard_file_name(s));
    replace_with_claim(dir / shard_file_name(1), name, hsize_t{1} << 30);
    Manifest edited = m;
    edited.shards[1].file_bytes = fs::file_size(dir / shard_file_name(1));
    // Without chunk maps: with them, the readers read the chunks the manifest points at (the
    // original ones, still in the rewritten file, their checksums sound) and never meet the
    // claim; `verify` does, comparing the maps with the file.
    edited.shards[1].chunk_maps.clear();
    write_manifest_file(dir / kManifestFile, edited, ArchiveOptions{0, 1});
    const bool layout = std::string(name).starts_with("/layout");
    expect_every_reader_refuses(
        dir, std::string("shard-00001.h5: dataset ") + name + ": claims 1073741824 elements",
        layout ? std::vector<std::string>{"verify", "decompress"}
               : std::vector<std::string>{"verify", "run", "decompress"});
  }
}

}  // namespace
}  // namespace gtadoc
