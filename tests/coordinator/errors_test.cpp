// docs/REFERENCE.md §9 at the command line: every bad input ends with one line on stderr naming the
// problem, a non-zero exit (2 for usage errors), and nothing half-written next to the output.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>

#include "formats/archive.h"
#include "formats/chunk_maps.h"
#include "tests/testutil/corpus.h"
#include "tests/testutil/string_tables.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;
using testutil::CommandResult;
using testutil::run_gtadoc;
using testutil::TempDir;
using testutil::write_file;

size_t lines(const std::string& s) {
  return std::count(s.begin(), s.end(), '\n');
}

/// One line on stderr containing `needle`, exit code `code`, and no leftovers in `dir`
/// other than the entries listed in `keep`.
void expect_clean_failure(const CommandResult& r, int code, const std::string& needle,
                          const fs::path& dir, std::set<std::string> keep) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_TRUE(keep.count(e.path().filename().string())) << "left behind: " << e.path();
}

struct Archive {
  TempDir tmp;
  fs::path path;
  Archive() {
    for (int i = 0; i < 6; ++i)
      write_file(
          tmp / ("in/doc" + std::to_string(i)),
          std::string(3000, 'a') + " some words repeated some words repeated " + std::to_string(i));
    path = tmp / "a.gtd";
    auto r = run_gtadoc({"compress", (tmp / "in").string(), "-o", path.string(), "--shards", "2"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
};

TEST(CompressErrors, MissingInput) {
  TempDir tmp;
  auto r = run_gtadoc({"compress", (tmp / "nope").string(), "-o", (tmp / "a.gtd").string()});
  expect_clean_failure(r, 1, "nope: no such file or directory", tmp.path(), {});
}

TEST(CompressErrors, EmptyCorpus) {
  TempDir tmp;
  fs::create_directory(tmp / "empty");
  auto r = run_gtadoc({"compress", (tmp / "empty").string(), "-o", (tmp / "a.gtd").string()});
  expect_clean_failure(r, 1, "empty corpus", tmp.path(), {"empty"});
}

TEST(CompressErrors, DuplicateNames) {
  TempDir tmp;
  write_file(tmp / "x/same", "1");
  write_file(tmp / "y/same", "2");
  auto r = run_gtadoc({"compress", (tmp / "x/same").string(), (tmp / "y/same").string(), "-o",
                       (tmp / "a.gtd").string()});
  expect_clean_failure(r, 1, "duplicate document name 'same'", tmp.path(), {"x", "y"});
}

TEST(CompressErrors, OutputExistsAndForce) {
  TempDir tmp;
  write_file(tmp / "in/a", "text");
  fs::create_directory(tmp / "a.gtd");
  write_file(tmp / "a.gtd/marker", "old");
  auto r = run_gtadoc({"compress", (tmp / "in").string(), "-o", (tmp / "a.gtd").string()});
  expect_clean_failure(r, 1, "output exists", tmp.path(), {"in", "a.gtd"});
  EXPECT_TRUE(fs::exists(tmp / "a.gtd/marker"));
  // --force replaces only a previous archive (docs/REFERENCE.md §2): a foreign directory is
  // refused.
  auto foreign =
      run_gtadoc({"compress", (tmp / "in").string(), "-o", (tmp / "a.gtd").string(), "--force"});
  expect_clean_failure(foreign, 2, "not a previous output", tmp.path(), {"in", "a.gtd"});
  EXPECT_TRUE(fs::exists(tmp / "a.gtd/marker"));
  // A file merely named manifest.h5 does not make it an archive.
  write_file(tmp / "a.gtd/manifest.h5", "an old archive's manifest");
  auto named =
      run_gtadoc({"compress", (tmp / "in").string(), "-o", (tmp / "a.gtd").string(), "--force"});
  expect_clean_failure(named, 2, "not a previous output", tmp.path(), {"in", "a.gtd"});
  EXPECT_TRUE(fs::exists(tmp / "a.gtd/marker"));
  // A previous archive is replaced.
  fs::remove_all(tmp / "a.gtd");
  ASSERT_EQ(
      run_gtadoc({"compress", (tmp / "in").string(), "-o", (tmp / "a.gtd").string()}).exit_code, 0);
  auto f =
      run_gtadoc({"compress", (tmp / "in").string(), "-o", (tmp / "a.gtd").string(), "--force"});
  EXPECT_EQ(f.exit_code, 0) << f.err;
  EXPECT_TRUE(fs::exists(tmp / "a.gtd/manifest.h5"));
}

TEST(CompressErrors, UsageErrorsExitTwo) {
  TempDir tmp;
  write_file(tmp / "in/a", "text");
  auto r = run_gtadoc({"compress", (tmp / "in").string()});
  expect_clean_failure(r, 2, "--output", tmp.path(), {"in"});
  auto u =
      run_gtadoc({"compress", (tmp / "in").string(), "-o", (tmp / "o.gtd").string(), "--bogus"});
  expect_clean_failure(u, 2, "bogus", tmp.path(), {"in"});
  auto s = run_gtadoc(
      {"compress", (tmp / "in").string(), "-o", (tmp / "o.gtd").string(), "--shard-size", "lots"});
  expect_clean_failure(s, 2, "--shard-size", tmp.path(), {"in"});
  auto n = run_gtadoc({"frobnicate"});
  EXPECT_EQ(n.exit_code, 2);
}

TEST(ArchiveErrors, FlippedByteInEveryShardDatasetIsDetected) {
  Archive a;
  fs::path shard = a.path / "shard-00000.h5";
  std::string original = testutil::read_file(shard);
  // Flip bytes at many positions across the file; every run must fail cleanly or (when the byte
  // was in unused space) succeed with identical output. At least one must be detected.
  int detected = 0;
  for (size_t pos = 0; pos < original.size(); pos += std::max<size_t>(1, original.size() / 64)) {
    std::string bad = original;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x5A);
    testutil::write_file(shard, bad);
    TempDir out;
    auto r = run_gtadoc({"decompress", a.path.string(), "-o", (out / "docs").string()});
    if (r.exit_code != 0) {
      ++detected;
      EXPECT_EQ(lines(r.err), 1u) << r.err;
      EXPECT_NE(r.err.find("shard-00000.h5"), std::string::npos) << r.err;
      EXPECT_FALSE(fs::exists(out / "docs"));
    } else {
      for (int i = 0; i < 6; ++i)
        EXPECT_EQ(testutil::read_file(out / ("docs/doc" + std::to_string(i))),
                  testutil::read_file(a.tmp / ("in/doc" + std::to_string(i))));
    }
  }
  testutil::write_file(shard, original);
  EXPECT_GT(detected, 0);
}

TEST(ArchiveErrors, TruncatedShardAndManifest) {
  Archive a;
  for (const char* file : {"shard-00001.h5", "manifest.h5"}) {
    fs::path p = a.path / file;
    std::string original = testutil::read_file(p);
    testutil::write_file(p, original.substr(0, original.size() / 2));
    TempDir out;
    auto r = run_gtadoc({"decompress", a.path.string(), "-o", (out / "docs").string()});
    expect_clean_failure(r, 1, file, out.path(), {});
    testutil::write_file(p, original);
  }
}

TEST(ArchiveErrors, NotAnArchive) {
  TempDir tmp;
  write_file(tmp / "fake.gtd/manifest.h5", "this is not HDF5 at all");
  auto r = run_gtadoc({"info", (tmp / "fake.gtd").string()});
  expect_clean_failure(r, 1, "manifest.h5", tmp.path(), {"fake.gtd"});
  auto m = run_gtadoc({"info", (tmp / "missing.gtd").string()});
  expect_clean_failure(m, 1, "missing.gtd", tmp.path(), {"fake.gtd"});
}

TEST(ArchiveErrors, SourceLocationOnlyWithVerbose) {
  Archive a;
  fs::path p = a.path / "shard-00000.h5";
  std::string original = testutil::read_file(p);
  testutil::write_file(p, original.substr(0, original.size() / 2));
  TempDir out;
  auto quiet = run_gtadoc({"run", a.path.string(), "sort", "-o", (out / "q.tsv").string()});
  expect_clean_failure(quiet, 1, "shard-00000.h5", out.path(), {});
  EXPECT_EQ(quiet.err.find(".cpp:"), std::string::npos) << quiet.err;
  auto verbose = run_gtadoc({"-v", "run", a.path.string(), "sort", "-o", (out / "v.tsv").string()});
  EXPECT_EQ(verbose.exit_code, 1);
  const std::string last = verbose.err.substr(verbose.err.rfind("gtadoc: error:"));
  EXPECT_NE(last.find(".cpp:"), std::string::npos) << verbose.err;  // "[h5.cpp:123]"
  EXPECT_EQ(lines(last), 1u) << last;
}

TEST(ArchiveErrors, MissingShardFile) {
  Archive a;
  fs::remove(a.path / "shard-00001.h5");
  TempDir out;
  auto r = run_gtadoc({"decompress", a.path.string(), "-o", (out / "docs").string()});
  expect_clean_failure(r, 1, "shard-00001.h5", out.path(), {});
}

TEST(DecompressErrors, UnknownDocumentAndExistingOutput) {
  Archive a;
  TempDir out;
  auto r = run_gtadoc(
      {"decompress", a.path.string(), "-o", (out / "docs").string(), "--doc", "nonexistent"});
  expect_clean_failure(r, 1, "no document named 'nonexistent'", out.path(), {});
  fs::create_directory(out / "docs");
  auto e = run_gtadoc({"decompress", a.path.string(), "-o", (out / "docs").string()});
  expect_clean_failure(e, 1, "output exists", out.path(), {"docs"});
}

// A name that is also another document's folder ("doc0" and "doc0/x") cannot come from compress,
// which refuses such inputs; an archive whose manifest says so anyway (crafted, or written by
// another tool) fails cleanly: within one shard (the file first, then its folder) and across the
// two shards, decompressed side by side (either first).
TEST(DecompressErrors, NameThatIsAlsoAFolder) {
  for (const auto& [renamed, to, needle] :
       {std::tuple<int, std::string, std::string>{1, "doc0/x", "doc0: cannot create directory"},
        std::tuple<int, std::string, std::string>{3, "doc2/x", "doc2"}}) {
    SCOPED_TRACE(to);
    Archive a;
    Manifest m = read_manifest(a.path);
    ASSERT_EQ(m.docs.size(), 6u);
    ASSERT_EQ(m.shards.size(), 2u);
    ASSERT_EQ(m.shards[1].first_doc, 3u);  // doc0..doc2 in shard 0, doc3..doc5 in shard 1
    m.doc_names = testutil::with_entry(m.doc_names, renamed, to);
    fs::remove(a.path / kManifestFile);
    write_manifest_file(a.path / kManifestFile, m, ArchiveOptions{});
    TempDir out;
    auto r = run_gtadoc(
        {"decompress", a.path.string(), "-o", (out / "docs").string(), "--threads", "2"});
    expect_clean_failure(r, 1, needle, out.path(), {});
  }
}

}  // namespace
}  // namespace gtadoc

namespace gtadoc {
namespace {

TEST(RunErrors, UsageErrors) {
  Archive a;
  TempDir out;
  struct Bad {
    std::vector<std::string> args;
    std::string needle;
  };
  std::vector<Bad> cases = {
      {{"frobnicate"}, "unknown task 'frobnicate'"},
      {{"sequence-count", "--n", "9"}, "--n: '9' is out of range: an integer from 2 to 8"},
      {{"sequence-count", "--n", "1"}, "--n: '1' is out of range: an integer from 2 to 8"},
      {{"word-count", "--n", "3"}, "--n applies only to"},
      {{"word-count", "--per-doc"}, "--per-doc applies only to sequence-count"},
      {{"sort", "--top", "3"}, "--top does not apply to sort"},
      {{"word-count", "--min-count", "2"}, "--min-count applies only to term-vector"},
      {{"word-count", "--format", "xml"}, "unknown format 'xml'"},
      {{"word-count", "--engine", "tpu"}, "unknown engine 'tpu'"},
      {{"word-count", "--traversal", "sideways"}, "unknown traversal 'sideways'"},
      {{"word-count", "--no-such-option"}, "no-such-option"},
      {{"word-count", "--partitioned"}, "--partitioned needs -o"},
      {{"word-count", "--partitioned", "-o", "-"}, "--partitioned needs -o DIR"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"run", a.path.string()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = run_gtadoc(args);
    SCOPED_TRACE(c.needle);
    expect_clean_failure(r, 2, c.needle, out.path(), {});
  }
}

TEST(RunErrors, OutputExistsCorruptShardAndMissingGpu) {
  Archive a;
  TempDir out;
  testutil::write_file(out / "exists.tsv", "old");
  auto e = run_gtadoc({"run", a.path.string(), "word-count", "-o", (out / "exists.tsv").string()});
  expect_clean_failure(e, 1, "output exists", out.path(), {"exists.tsv"});
  EXPECT_EQ(testutil::read_file(out / "exists.tsv"), "old");

  auto g = run_gtadoc(
      {"run", a.path.string(), "word-count", "--engine", "gpu", "-o", (out / "gpu.tsv").string()});
  if (g.exit_code != 0) {  // no GPU here: a clear resource error, nothing written
    expect_clean_failure(g, 3, "--engine gpu", out.path(), {"exists.tsv"});
  }

  fs::path shard = a.path / "shard-00001.h5";
  std::string bytes = testutil::read_file(shard);
  // Inside the stored symbols, which every query reads (by the manifest's chunk maps: a byte
  // elsewhere, in a part of the file no query of this task reads, is found by `verify`).
  const Manifest m = read_manifest(a.path);
  ASSERT_EQ(m.shards[1].chunk_maps.size(), kMappedArrays.size());
  const h5::ChunkMap& symbols = m.shards[1].chunk_maps[2];
  const size_t pos = symbols.offsets[0] + symbols.sizes[0] / 2;
  bytes[pos] = static_cast<char>(bytes[pos] ^ 0xFF);
  testutil::write_file(shard, bytes);
  auto c = run_gtadoc({"run", a.path.string(), "inverted-index", "--engine", "cpu", "-o",
                       (out / "idx.tsv").string()});
  expect_clean_failure(c, 1, "shard-00001.h5", out.path(), {"exists.tsv", "gpu.tsv"});
}

}  // namespace
}  // namespace gtadoc
