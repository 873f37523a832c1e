// compress -> decompress must reproduce every document byte for byte, names included, on nasty
// inputs, on the bundled real sample, with one shard and many, one thread and several.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "tests/testutil/corpus.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;
using testutil::read_file;
using testutil::run_gtadoc;
using testutil::TempDir;
using testutil::write_file;

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[e.path().lexically_relative(dir).string()] = read_file(e.path());
  return files;
}

void expect_roundtrip(const fs::path& input, const std::vector<std::string>& extra) {
  TempDir tmp;
  std::vector<std::string> args = {"compress", input.string(), "-o", (tmp / "a.gtd").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  auto c = run_gtadoc(args);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto d = run_gtadoc({"decompress", (tmp / "a.gtd").string(), "-o", (tmp / "out").string()});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  auto want = snapshot(input), got = snapshot(tmp / "out");
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [name, bytes] : want) {
    auto it = got.find(name);
    ASSERT_NE(it, got.end()) << "missing document " << name;
    EXPECT_TRUE(it->second == bytes) << "document differs: " << name;
  }
}

std::string random_bytes(std::mt19937_64& rng, size_t n, const std::string& alphabet) {
  std::string s(n, ' ');
  for (auto& ch : s) ch = alphabet[rng() % alphabet.size()];
  return s;
}

void write_nasty_corpus(const fs::path& dir) {
  write_file(dir / "empty", "");
  write_file(dir / "spaces-only", "   \t\n\n  ");
  write_file(dir / "no-trailing-newline", "hello world");
  write_file(dir / "crlf.txt", "line one\r\nline two\r\n\r\nend");
  write_file(dir / "controls", "a\tb\vc\fd\re\n\x0b\x0c tail \t");
  write_file(dir / "huge-ws",
             "start" + std::string(300000, ' ') + "\n\n" + std::string(5000, '\t') + "end");
  write_file(dir / "nul-bytes", std::string("a\0b c\0\0 \0", 9));
  write_file(dir / "invalid-utf8", "caf\xc3\xa9 \xff\xfe \x80\x80 ok \xed\xa0\x80 \xc3");
  write_file(dir / "long-word", std::string(200 * 1024, 'x') + " y " + std::string(1000, 'z'));
  write_file(dir / "deep/a/b/c/d/e/f/g/h/doc.txt", "deep document deep document");
  write_file(dir / "name with spaces.txt", "spaced name");
  write_file(dir / "tab\tname", "tab in name");
  write_file(dir / "new\nline", "newline in name");
  write_file(dir / "bad-\xff\xfe-name", "non utf8 name");
  write_file(dir / "repeats", [] {
    std::string s;
    for (int i = 0; i < 2000; ++i) s += "the quick brown fox jumps over the lazy dog ";
    return s;
  }());
  std::mt19937_64 rng(42);
  for (int i = 0; i < 1500; ++i)
    write_file(dir / ("tiny/" + std::to_string(i)),
               random_bytes(rng, rng() % 12, std::string("ab \n\t\x01\xff", 7)));
  for (int i = 0; i < 5; ++i)
    write_file(dir / ("random/" + std::to_string(i)),
               random_bytes(rng, 20000 + rng() % 20000, "abcde fgh\n\r\t\v\f"));
}

TEST(RoundTrip, NastyInputsOneShardOneThread) {
  TempDir tmp;
  write_nasty_corpus(tmp / "in");
  expect_roundtrip(tmp / "in", {"--shards", "1", "--threads", "1"});
}

TEST(RoundTrip, NastyInputsManyShardsManyThreads) {
  TempDir tmp;
  write_nasty_corpus(tmp / "in");
  expect_roundtrip(tmp / "in", {"--shards", "37", "--threads", "3"});
}

TEST(RoundTrip, NastyInputsSmallShardSize) {
  TempDir tmp;
  write_nasty_corpus(tmp / "in");
  expect_roundtrip(tmp / "in", {"--shard-size", "4k", "--threads", "2"});
}

TEST(RoundTrip, BundledSampleCorpus) {
  fs::path sample = testutil::source_dir() / "data" / "sample";
  if (!fs::exists(sample)) GTEST_SKIP() << "no bundled sample";
  expect_roundtrip(sample, {"--threads", "2"});
  expect_roundtrip(sample, {"--shards", "5", "--threads", "1"});
}

TEST(RoundTrip, SingleFileInputAndSelectedDocuments) {
  TempDir tmp;
  write_file(tmp / "one.txt", "just one file\n");
  write_file(tmp / "dir/x", "x x x");
  write_file(tmp / "dir/sub/y", "y\n");
  auto c = run_gtadoc({"compress", (tmp / "one.txt").string(), (tmp / "dir").string(), "-o",
                       (tmp / "a.gtd").string()});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto d = run_gtadoc({"decompress", (tmp / "a.gtd").string(), "-o", (tmp / "out").string(),
                       "--doc", "sub/y", "--doc", "one.txt"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  auto got = snapshot(tmp / "out");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got["one.txt"], "just one file\n");
  EXPECT_EQ(got["sub/y"], "y\n");
}

TEST(Info, ReportsCountsAsTextAndJson) {
  TempDir tmp;
  write_file(tmp / "in/a", "a b c a b c\n");
  write_file(tmp / "in/b", "");
  ASSERT_EQ(
      run_gtadoc({"compress", (tmp / "in").string(), "-o", (tmp / "a.gtd").string()}).exit_code, 0);
  auto text = run_gtadoc({"info", (tmp / "a.gtd").string()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("documents         2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("words             6"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("vocabulary        3"), std::string::npos) << text.out;
  auto json = run_gtadoc({"info", (tmp / "a.gtd").string(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"input_bytes\": 12"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"shard_table\""), std::string::npos) << json.out;
}

}  // namespace
}  // namespace gtadoc
