// Tests of formats/document_text.h and the ranged layout read (read_shard_layout of a gap
// range): every document of a small nasty corpus rebuilt from its shard equals its file, whole
// and by byte ranges read piece by piece; a document's gaps read alone equal the same gaps of the
// whole layout; sizes that do not match the manifest are InputErrors naming the shard's file.
#include "formats/document_text.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "formats/archive.h"
#include "tests/testutil/corpus.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;
using testutil::read_file;
using testutil::run_gtadoc;
using testutil::TempDir;
using testutil::write_file;

class DocumentTextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir;
    const fs::path in = *tmp_ / "in";
    write_file(in / "empty", "");
    write_file(in / "spaces-only", "   \t\n\n  ");
    write_file(in / "no-trailing-newline", "hello world");
    write_file(in / "crlf.txt", "line one\r\nline two\r\n\r\nend");
    write_file(in / "nul-bytes", std::string("a\0b c\0\0 \0", 9));
    write_file(in / "dir with space/a b+c%.txt", "  name with  spaces\n");
    std::mt19937_64 rng(7);
    const std::string words[] = {"alpha", "beta", "gamma", "delta", "x", "\xc3\xa9t\xc3\xa9"};
    const std::string ws[] = {" ", "  ", "\n", "\t", "\r\n", " \n "};
    for (int f = 0; f < 12; ++f) {
      std::string text;
      const size_t n = 1 + rng() % (f == 5 ? 40000 : 400);
      for (size_t i = 0; i < n; ++i) text += words[rng() % 6] + ws[rng() % 6];
      write_file(in / ("sub/doc-" + std::to_string(f)), text);
    }
    const auto c =
        run_gtadoc({"compress", in.string(), "-o", (*tmp_ / "a.gtd").string(), "--shards", "3"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
  }
  static void TearDownTestSuite() {
    delete tmp_;
    tmp_ = nullptr;
  }
  static fs::path archive() { return *tmp_ / "a.gtd"; }
  static fs::path input() { return *tmp_ / "in"; }
  static TempDir* tmp_;
};
TempDir* DocumentTextTest::tmp_ = nullptr;

TEST_F(DocumentTextTest, EveryDocumentWholeAndByRanges) {
  const Manifest m = read_manifest(archive());
  ASSERT_EQ(m.shards.size(), 3u);
  std::mt19937_64 rng(11);
  size_t checked = 0;
  for (uint32_t s = 0; s < m.shards.size(); ++s) {
    const ShardGrammar g = read_shard_grammar(archive(), m, s);
    const ShardLayout layout = read_shard_layout(archive(), m, s);
    const std::vector<uint64_t> gap_at = document_gap_starts(m, s);
    ASSERT_EQ(gap_at.size(), m.shards[s].num_docs + 1ull);
    EXPECT_EQ(gap_at.back(), layout.gaps.size());
    for (uint32_t i = 0; i < m.shards[s].num_docs; ++i) {
      const DocId d = m.shards[s].first_doc + i;
      const std::string want = read_file(input() / m.doc_names[d]);
      EXPECT_EQ(segment_words(g, i), m.docs[d].words);
      std::vector<WordId> words;
      expand_checked(archive(), m, s, g, d, words);
      ASSERT_EQ(words.size(), m.docs[d].words);
      // The document's gaps read alone are the same as in the whole layout.
      const ShardLayout own = read_shard_layout(archive(), m, s, gap_at[i], words.size() + 1);
      EXPECT_EQ(own.ws_dict, layout.ws_dict);
      ASSERT_EQ(own.gaps, std::vector<uint32_t>(layout.gaps.begin() + gap_at[i],
                                                layout.gaps.begin() + gap_at[i + 1]));
      const ShardLayout bare =
          read_shard_layout(archive(), m, s, gap_at[i], words.size() + 1, false);
      EXPECT_TRUE(bare.ws_dict.empty());
      EXPECT_EQ(bare.gaps, own.gaps);
      DocumentText text(archive(), m, d, own.ws_dict, words, own.gaps);
      ASSERT_EQ(text.size(), want.size());
      std::string got;
      text.append(0, text.size(), got);
      ASSERT_EQ(got, want) << m.doc_names[d];
      // Ranges, and reads piece by piece from a position.
      for (int k = 0; k < 20 && !want.empty(); ++k) {
        const uint64_t a = rng() % want.size(), b = a + rng() % (want.size() - a + 1);
        got.clear();
        text.append(a, b, got);
        ASSERT_EQ(got, want.substr(a, b - a)) << m.doc_names[d] << " [" << a << ", " << b << ")";
        text.seek(a);
        got.clear();
        const uint64_t step = 1 + rng() % 9;
        while (text.read(got, step) > 0) {
        }
        ASSERT_EQ(got, want.substr(a));
      }
      text.seek(text.size());
      got.clear();
      EXPECT_EQ(text.read(got, 10), 0u);
      ++checked;
    }
  }
  EXPECT_EQ(checked, m.docs.size());
}

TEST_F(DocumentTextTest, SizesThatDoNotMatchTheManifestAreErrorsNamingTheShard) {
  const Manifest m = read_manifest(archive());
  // A document with words (not the empty one).
  DocId d = 0;
  while (m.docs[d].words < 3) ++d;
  const uint32_t s = m.docs[d].shard;
  const uint32_t i = d - m.shards[s].first_doc;
  const ShardGrammar g = read_shard_grammar(archive(), m, s);
  const std::string file = (archive() / shard_file_name(s)).string();
  auto expect_error = [&](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error (" << needle << ")";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  };
  std::vector<WordId> words;
  Manifest more_words = m;
  more_words.docs[d].words += 1;
  expect_error([&] { expand_checked(archive(), more_words, s, g, d, words); },
               "words, the manifest says");
  expand_checked(archive(), m, s, g, d, words);
  const std::vector<uint64_t> gap_at = document_gap_starts(m, s);
  const ShardLayout own = read_shard_layout(archive(), m, s, gap_at[i], words.size() + 1);
  Manifest more_bytes = m;
  more_bytes.docs[d].bytes += 1;
  expect_error([&] { DocumentText(archive(), more_bytes, d, own.ws_dict, words, own.gaps); },
               "bytes, the manifest says");
  expect_error(
      [&] {
        DocumentText(archive(), m, d, own.ws_dict, words,
                     std::span<const uint32_t>(own.gaps).first(words.size()));
      },
      "gaps for");
  std::vector<uint32_t> bad_gaps = own.gaps;
  bad_gaps[0] = static_cast<uint32_t>(own.ws_dict.size());
  expect_error([&] { DocumentText(archive(), m, d, own.ws_dict, words, bad_gaps); },
               "out of range");
  // A gap range beyond the shard's gaps.
  const uint64_t all = m.shards[s].words + m.shards[s].num_docs;
  expect_error([&] { read_shard_layout(archive(), m, s, all - 1, 2); }, "requested");
}

}  // namespace
}  // namespace gtadoc
