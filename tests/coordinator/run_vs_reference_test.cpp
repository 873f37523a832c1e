// `gtadoc run` on a compressed archive must equal, byte for byte, the raw-text reference
// (tests/reference) computed on the original documents: every task and option, both traversals,
// several thread counts, TSV and JSON, on real text and on adversarial corpora.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tests/reference/raw_reference.h"
#include "tests/testutil/corpus.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;
using testutil::run_gtadoc;
using testutil::TempDir;
using testutil::write_file;

struct Case {
  std::vector<std::string> args;  // task and options as typed on the command line
  QueryOptions q;
};

/// Builds the reference options from the command-line arguments (independently of the CLI).
Case make_case(const std::string& task, std::vector<std::string> opts) {
  Case c;
  c.args = {task};
  c.args.insert(c.args.end(), opts.begin(), opts.end());
  c.q.task = parse_task(task);
  c.q.top = task == "term-vector" ? 10 : 0;
  for (size_t i = 0; i < opts.size(); ++i) {
    const std::string& o = opts[i];
    if (o == "--n")
      c.q.n = std::stoul(opts[++i]);
    else if (o == "--top")
      c.q.top = std::stoull(opts[++i]);
    else if (o == "--min-count")
      c.q.min_count = std::stoull(opts[++i]);
    else if (o == "--per-doc")
      c.q.per_doc = true;
    else if (o == "--ids")
      c.q.ids = true;
    else if (o == "--lowercase")
      c.q.lowercase = true;
    else if (o == "--alnum")
      c.q.alnum = true;
  }
  return c;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const std::vector<std::vector<std::string>> norms = {
      {}, {"--lowercase"}, {"--alnum"}, {"--lowercase", "--alnum"}};
  for (const auto& norm : norms) {
    auto with = [&](std::vector<std::string> o) {
      o.insert(o.end(), norm.begin(), norm.end());
      return o;
    };
    cases.push_back(make_case("word-count", with({})));
    cases.push_back(make_case("word-count", with({"--top", "7"})));
    cases.push_back(make_case("sort", with({})));
    cases.push_back(make_case("inverted-index", with({})));
    cases.push_back(make_case("term-vector", with({})));
    cases.push_back(make_case("sequence-count", with({})));
    cases.push_back(make_case("sequence-count", with({"--per-doc", "--top", "3"})));
    cases.push_back(make_case("ranked-inverted-index", with({})));
  }
  cases.push_back(make_case("inverted-index", {"--ids"}));
  cases.push_back(make_case("term-vector", {"--top", "0", "--min-count", "2"}));
  cases.push_back(make_case("term-vector", {"--top", "3", "--ids"}));
  for (const char* n : {"2", "5", "8"}) {
    cases.push_back(make_case("sequence-count", {"--n", n, "--top", "11"}));
    cases.push_back(make_case("sequence-count", {"--n", n, "--per-doc"}));
    cases.push_back(make_case("ranked-inverted-index", {"--n", n, "--alnum"}));
  }
  return cases;
}

std::vector<RawDocument> read_corpus(const fs::path& dir) {
  std::vector<RawDocument> docs;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      docs.push_back({e.path().lexically_relative(dir).string(), testutil::read_file(e.path())});
  return docs;
}

void write_adversarial_corpus(const fs::path& dir) {
  write_file(dir / "empty", "");
  write_file(dir / "one-word", "  Word!  ");
  write_file(dir / "two-words", "two WORDS");
  write_file(dir / "punct-only", "... !!! --- ,,, ???");
  std::string deep = "alpha";
  for (int i = 0; i < 12; ++i) deep = deep + " " + deep;  // 4096 words, a deep DAG
  write_file(dir / "deep", deep);
  std::string phrase;
  for (int i = 0; i < 40; ++i) phrase += "w" + std::to_string(i) + " ";
  std::string nested;
  for (int i = 0; i < 30; ++i) nested += phrase + "Tail" + std::to_string(i % 3) + "\n";
  write_file(dir / "nested", nested);  // n-grams spanning many rules
  std::mt19937_64 rng(7);
  std::string longrule;
  for (int i = 0; i < 3000; ++i) longrule += "u" + std::to_string(rng() % 100000) + " ";
  write_file(dir / "long-a", longrule);
  write_file(dir / "long-b", longrule);  // one very long rule shared by two documents
  for (int i = 0; i < 4; ++i)
    write_file(dir / ("same/" + std::to_string(i)), "same text, Same TEXT.\n");
  write_file(dir / "odd names/tab\there",
             "The the THE the. (the) \xff\xfe caf\xc3\xa9 Caf\xc3\xa9");
  write_file(dir / "odd names/back\\slash", "a\x01 b a b a\x01 b");
  write_file(dir / "odd names/new\nline", "x y z x y z");
}

void check_corpus(const fs::path& corpus, const std::vector<std::string>& compress_opts,
                  const std::vector<std::vector<std::string>>& run_variants) {
  TempDir tmp;
  fs::path archive = tmp / "c.gtd";
  std::vector<std::string> cargs = {"compress", corpus.string(), "-o", archive.string()};
  cargs.insert(cargs.end(), compress_opts.begin(), compress_opts.end());
  auto c = run_gtadoc(cargs);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::vector<RawDocument> docs = read_corpus(corpus);
  size_t variant = 0;
  for (const Case& k : all_cases()) {
    for (OutputFormat fmt : {OutputFormat::kTsv, OutputFormat::kJson}) {
      std::string want = raw_reference_output(docs, k.q, fmt);
      const auto& extra = run_variants[variant++ % run_variants.size()];
      std::vector<std::string> args = {"run", archive.string()};
      args.insert(args.end(), k.args.begin(), k.args.end());
      args.insert(args.end(), extra.begin(), extra.end());
      if (fmt == OutputFormat::kJson) args.insert(args.end(), {"--format", "json"});
      auto r = run_gtadoc(args);
      std::string cmd;
      for (const auto& a : args) cmd += a + " ";
      ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
      ASSERT_TRUE(r.out == want) << cmd << "\n--- got " << r.out.size() << " bytes, want "
                                 << want.size() << "\n--- got head:\n"
                                 << r.out.substr(0, 600) << "\n--- want head:\n"
                                 << want.substr(0, 600);
    }
  }
}

const std::vector<std::vector<std::string>> kTraversals = {
    {"--engine", "cpu", "--traversal", "top-down", "--threads", "1"},
    {"--engine", "cpu", "--traversal", "bottom-up", "--threads", "3"},
    {"--engine", "cpu", "--traversal", "auto", "--threads", "2"},
    {"--engine", "cpu", "--traversal", "bottom-up", "--threads", "1"},
    {"--engine", "cpu", "--traversal", "top-down", "--threads", "4"},
};

TEST(RunVsReference, AdversarialCorpusOneShard) {
  TempDir tmp;
  write_adversarial_corpus(tmp / "in");
  check_corpus(tmp / "in", {"--shards", "1"}, kTraversals);
}

TEST(RunVsReference, AdversarialCorpusManyShards) {
  TempDir tmp;
  write_adversarial_corpus(tmp / "in");
  check_corpus(tmp / "in", {"--shards", "6"}, kTraversals);
}

TEST(RunVsReference, RealSampleSubset) {
  fs::path sample = testutil::source_dir() / "data" / "sample";
  if (!fs::exists(sample)) GTEST_SKIP() << "no bundled sample";
  // A subset keeps the reference fast: the first ~40 documents in name order.
  TempDir tmp;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(sample))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i < files.size() && i < 40; ++i) {
    fs::path dst = tmp / "in" / files[i].lexically_relative(sample);
    fs::create_directories(dst.parent_path());
    fs::copy_file(files[i], dst);
  }
  check_corpus(tmp / "in", {"--shards", "3"}, kTraversals);
}

}  // namespace
}  // namespace gtadoc
