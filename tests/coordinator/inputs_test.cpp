// Tests of collect_inputs (coordinator/inputs.h) on threads: the same documents (names, paths,
// sizes, order), the same skipped entries and the same first error for every thread count.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "coordinator/inputs.h"
#include "tests/testutil/corpus.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;
using testutil::TempDir;
using testutil::write_file;

std::string error_of(const std::vector<std::string>& inputs, unsigned threads) {
  try {
    collect_inputs(inputs, nullptr, threads);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CollectInputs, SameDocumentsOnThreads) {
  TempDir tmp;
  for (int d = 0; d < 30; ++d)
    for (int f = 0; f < 40; ++f)
      write_file(tmp / ("corpus/d" + std::to_string(d) + "/sub/f" + std::to_string(f) + ".txt"),
                 std::string(static_cast<size_t>(d * 40 + f), 'x'));
  write_file(tmp / "single.txt", "alpha beta");
  ASSERT_EQ(::mkfifo((tmp / "corpus/d3/pipe").c_str(), 0600), 0);
  fs::create_symlink(tmp / "nowhere", tmp / "corpus/d4/dangling");
  const std::vector<std::string> inputs = {(tmp / "corpus").string(),
                                           (tmp / "single.txt").string()};
  std::vector<SkippedInput> skipped1;
  const std::vector<InputDocument> want = collect_inputs(inputs, &skipped1, 1);
  ASSERT_EQ(want.size(), 30u * 40u + 1u);
  EXPECT_EQ(skipped1.size(), 2u);
  for (unsigned threads : {2u, 3u, 8u, 0u}) {
    std::vector<SkippedInput> skipped;
    const std::vector<InputDocument> got = collect_inputs(inputs, &skipped, threads);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].name, want[i].name);
      EXPECT_EQ(got[i].path, want[i].path);
      EXPECT_EQ(got[i].bytes, want[i].bytes);
    }
    ASSERT_EQ(skipped.size(), skipped1.size());
    for (size_t i = 0; i < skipped.size(); ++i) {
      EXPECT_EQ(skipped[i].path, skipped1[i].path);
      EXPECT_EQ(skipped[i].why, skipped1[i].why);
    }
  }
}

TEST(CollectInputs, SameErrorsOnThreads) {
  TempDir tmp;
  for (int f = 0; f < 600; ++f) write_file(tmp / ("a/f" + std::to_string(f)), "x");
  write_file(tmp / "b/f0", "y");
  const std::string a = (tmp / "a").string(), b = (tmp / "b").string();
  const std::string missing = (tmp / "missing").string();
  const std::vector<std::vector<std::string>> cases = {
      {a, missing}, {missing, a}, {a, b}, {(tmp / "a/f0").string(), b}};
  for (const auto& inputs : cases) {
    const std::string want = error_of(inputs, 1);
    EXPECT_FALSE(want.empty());
    for (unsigned threads : {2u, 4u}) EXPECT_EQ(error_of(inputs, threads), want);
  }
  EXPECT_EQ(error_of({a, missing}, 4), missing + ": no such file or directory");
}

// Two inputs may name "a" and "a/b": such an archive could not be decompressed. The check must
// find "a/b" past names that sort between "a" and "a/" ("a!x": '!' < '/'), and must not mistake
// "ab/c" or "a!x" for a folder "a".
TEST(CollectInputs, NameThatIsAlsoADirectoryOfAnother) {
  TempDir tmp;
  write_file(tmp / "one/a", "x");
  write_file(tmp / "one/a!x", "x");
  write_file(tmp / "one/ab/c", "x");
  write_file(tmp / "two/a/b", "x");
  write_file(tmp / "three/a!x/y", "x");
  for (unsigned threads : {1u, 2u, 4u}) {
    EXPECT_EQ(error_of({(tmp / "one").string(), (tmp / "two").string()}, threads),
              "document name 'a' is also a directory of another document");
    EXPECT_EQ(error_of({(tmp / "two").string(), (tmp / "one").string()}, threads),
              "document name 'a' is also a directory of another document");
    EXPECT_EQ(error_of({(tmp / "one").string(), (tmp / "three").string()}, threads),
              "document name 'a!x' is also a directory of another document");
    EXPECT_EQ(collect_inputs({(tmp / "one").string()}, nullptr, threads).size(), 3u);
  }
}

}  // namespace
}  // namespace gtadoc
