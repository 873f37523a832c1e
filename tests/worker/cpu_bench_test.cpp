// Manual benchmarks of the CPU engine (disabled by default; run with
// --gtest_also_run_disabled_tests --gtest_filter='*Bench*'). They print timings, assert little.
// GTADOC_BENCH_WORDS sets the corpus size (default 10M words).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>

#include "coordinator/sequitur.h"
#include "tests/worker/cpu_test_util.h"

namespace gtadoc::testing_cpu {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// CPU time of the whole process: on a shared machine a fairer clock than wall time.
double cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

uint64_t bench_words() {
  const char* e = std::getenv("GTADOC_BENCH_WORDS");
  return e ? std::strtoull(e, nullptr, 10) : 10'000'000;
}

TEST(CpuBench, DISABLED_NormalizeTenMillionWords) {
  std::mt19937_64 rng(3);
  const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!-'";
  std::vector<std::string> words;
  words.reserve(10'000'000);
  for (int i = 0; i < 10'000'000; ++i) {
    std::string w;
    size_t len = 2 + rng() % 12;
    for (size_t j = 0; j < len; ++j) w.push_back(alphabet[rng() % (sizeof(alphabet) - 1)]);
    words.push_back(std::move(w));
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  Dictionary d;
  for (const auto& w : words) d.push_back(w);
  for (auto [lower, alnum] : {std::pair{true, false}, {false, true}, {true, true}}) {
    double t0 = now_s(), c0 = cpu_s();
    Normalization n = normalize_dictionary(d, lower, alnum);
    std::printf("normalize %u words lowercase=%d alnum=%d: %.3f s wall, %.3f cpu-s -> %u words\n",
                d.size(), lower, alnum, now_s() - t0, cpu_s() - c0, n.dict.size());
    EXPECT_TRUE(n.dict.is_sorted_unique());
  }
}

/// Zipf-ish text with repeated phrases, compressed with Sequitur.
ShardGrammar bench_grammar(uint64_t total_words, uint32_t vocab, uint32_t docs) {
  std::mt19937_64 rng(17);
  // Zipf sampler over [0, vocab) by inverse CDF table.
  std::vector<double> cdf(vocab);
  double acc = 0;
  for (uint32_t i = 0; i < vocab; ++i) cdf[i] = acc += 1.0 / (i + 1.0);
  auto zipf = [&](uint32_t n) {
    double x = std::uniform_real_distribution<double>(0, cdf[n - 1])(rng);
    return static_cast<uint32_t>(std::lower_bound(cdf.begin(), cdf.begin() + n, x) - cdf.begin());
  };
  std::vector<std::vector<uint32_t>> phrases(20000);
  for (auto& p : phrases) {
    p.resize(3 + rng() % 28);
    for (auto& w : p) w = zipf(vocab);
  }
  std::vector<Symbol> tokens;
  tokens.reserve(total_words + docs);
  const uint64_t per_doc = total_words / docs;
  for (uint32_t d = 0; d < docs; ++d) {
    if (d > 0) tokens.push_back(boundary_symbol(d - 1));
    uint64_t n = 0;
    while (n < per_doc) {
      if (rng() % 2) {
        const auto& p = phrases[zipf(static_cast<uint32_t>(phrases.size()))];
        tokens.insert(tokens.end(), p.begin(), p.end());
        n += p.size();
      } else {
        tokens.push_back(zipf(vocab));
        ++n;
      }
    }
  }
  RawGrammar raw = sequitur(tokens, vocab);
  return finalize_grammar(vocab, 0, docs, raw);
}

TEST(CpuBench, DISABLED_Throughput) {
  const uint32_t vocab = 100000;
  double t0 = now_s();
  ShardGrammar g = bench_grammar(bench_words(), vocab, 400);
  const uint64_t words = g.rule_length[g.root()];
  std::printf("grammar: %.1f M words, %u rules, %.1f M symbols, depth %u, built in %.1f s\n",
              words / 1e6, g.num_rules(), g.symbols.size() / 1e6, dag_depth(g), now_s() - t0);
  Dictionary dict;
  for (uint32_t i = 0; i < vocab; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "w%07u", i);
    dict.push_back(buf);
  }
  Normalization norm = normalize_dictionary(dict, false, false);
  struct Run {
    Task task;
    bool per_doc;
    Traversal trav;
    uint32_t n;
  };
  const Run runs[] = {
      {Task::kWordCount, false, Traversal::kTopDown, 3},
      {Task::kWordCount, false, Traversal::kBottomUp, 3},
      {Task::kSequenceCount, false, Traversal::kTopDown, 3},
      {Task::kSequenceCount, false, Traversal::kTopDown, 8},
      {Task::kSequenceCount, false, Traversal::kBottomUp, 3},
      {Task::kInvertedIndex, false, Traversal::kTopDown, 3},
      {Task::kInvertedIndex, false, Traversal::kBottomUp, 3},
      {Task::kInvertedIndex, false, Traversal::kAuto, 3},
      {Task::kTermVector, false, Traversal::kAuto, 3},
      {Task::kTermVector, false, Traversal::kTopDown, 3},
      {Task::kTermVector, false, Traversal::kBottomUp, 3},
      {Task::kSequenceCount, true, Traversal::kTopDown, 3},
      {Task::kSequenceCount, true, Traversal::kBottomUp, 3},
      {Task::kRankedInvertedIndex, false, Traversal::kAuto, 3},
      {Task::kRankedInvertedIndex, false, Traversal::kTopDown, 3},
  };
  for (unsigned threads : {1u, 2u}) {
    auto engine = make_cpu_engine(threads);
    double tl = now_s();
    auto shard = engine->load(ShardGrammar(g));
    std::printf("threads=%u load %.3f s\n", threads, now_s() - tl);
    for (const Run& r : runs) {
      QueryOptions q;
      q.task = r.task;
      q.per_doc = r.per_doc;
      q.traversal = r.trav;
      q.n = r.n;
      q.threads = threads;
      ShardRunStats st;
      const double c0 = cpu_s();
      RecordBatch b = engine->run(*shard, q, norm, st);
      const double cpu = cpu_s() - c0;
      const double total = st.init_s + st.traversal_s;
      std::printf(
          "threads=%u %-22s%s n=%u %-9s -> %-9s init %.3f s trav %.3f s cpu %.3f s  "
          "%7.1f M words/s wall, %7.1f per cpu-s  (%zu records)\n",
          threads, task_name(r.task), r.per_doc ? " per-doc" : "", r.n, traversal_name(r.trav),
          traversal_name(st.traversal), st.init_s, st.traversal_s, cpu, words / total / 1e6,
          words / cpu / 1e6, b.size());
    }
  }
}

}  // namespace
}  // namespace gtadoc::testing_cpu
