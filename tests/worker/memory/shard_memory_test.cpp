// Per-shard work in proportion to the shard: a shard of 10 distinct words, in an archive whose
// dictionary has 200 million words, is loaded and queried (every task, both traversals, with and
// without normalization) by the CPU engine within a few MiB. A per-shard structure sized by the
// dictionary (a counter per dictionary word: 1.6 GB; a bit per dictionary word: 25 MB) fails it.
// Measured two ways: bytes requested from operator new at their peak (this binary replaces the
// global operator new and delete), and the process's peak resident memory (VmHWM, reset through
// /proc/self/clear_refs where the kernel allows it), which also sees calloc and mmap.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <string>

#include "formats/grammar.h"
#include "tests/testutil/grammars.h"
#include "worker/engine.h"
#include "worker/query.h"

namespace {

std::atomic<int64_t> g_live{0}, g_peak{0};

/// Counts `p` (null: throws bad_alloc) as live and raises the peak.
void* note(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  const int64_t live = g_live += static_cast<int64_t>(malloc_usable_size(p));
  for (int64_t peak = g_peak.load(); live > peak && !g_peak.compare_exchange_weak(peak, live);) {
  }
  return p;
}
void* counted(size_t n) {
  return note(std::malloc(n == 0 ? 1 : n));
}
void* counted_aligned(size_t n, std::align_val_t a) {
  void* p = nullptr;
  if (posix_memalign(&p, std::max(sizeof(void*), static_cast<size_t>(a)), n == 0 ? 1 : n) != 0)
    p = nullptr;
  return note(p);
}
void uncounted(void* p) {
  if (p == nullptr) return;
  g_live -= static_cast<int64_t>(malloc_usable_size(p));
  std::free(p);
}

}  // namespace

void* operator new(size_t n) { return counted(n); }
void* operator new[](size_t n) { return counted(n); }
void* operator new(size_t n, std::align_val_t a) { return counted_aligned(n, a); }
void* operator new[](size_t n, std::align_val_t a) { return counted_aligned(n, a); }
void operator delete(void* p) noexcept { uncounted(p); }
void operator delete[](void* p) noexcept { uncounted(p); }
void operator delete(void* p, size_t) noexcept { uncounted(p); }
void operator delete[](void* p, size_t) noexcept { uncounted(p); }
void operator delete(void* p, std::align_val_t) noexcept { uncounted(p); }
void operator delete[](void* p, std::align_val_t) noexcept { uncounted(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { uncounted(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { uncounted(p); }

namespace gtadoc {
namespace {

constexpr uint32_t kDictionaryWords = 200'000'000;
constexpr int64_t kBudget = int64_t{8} << 20;  // 8 MiB; a dictionary-sized array is 25 MB+

/// Peak resident kB since the last reset (VmHWM), or -1.
long peak_rss_kb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}
long rss_kb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}
bool reset_peak_rss() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

/// A shard of 40 documents over 10 dictionary words spread across the whole dictionary.
ShardGrammar sparse_shard() {
  RawGrammar raw = testutil::random_raw_grammar(10, 40, 60, 40, 7);
  for (Symbol& s : raw.symbols) {
    if (is_boundary(s)) continue;
    s = s < 10 ? s * (kDictionaryWords / 10) + 3 : s - 10 + kDictionaryWords;
  }
  return finalize_grammar(kDictionaryWords, 1000, 40, raw);
}

TEST(ShardMemory, ASmallShardOfAHugeDictionaryCostsWhatTheShardHolds) {
  ShardGrammar g = sparse_shard();
  ASSERT_EQ(g.num_words, 10u);
  ASSERT_EQ(g.local_words.back(), 9 * (kDictionaryWords / 10) + 3);
  // A normalization is the query's (one per archive, built once on the dictionary); here one
  // that merges every other word into its neighbour and drops word 5.
  Normalization merged;
  merged.identity = false;
  merged.remap.assign(kDictionaryWords, kDroppedWord);
  for (uint32_t k = 0; k < 10; ++k)
    merged.remap[g.local_words[k]] = k == 5 ? kDroppedWord : g.local_words[k & ~1u];
  const Normalization identity;

  const bool rss = reset_peak_rss();
  const long rss_before = rss_kb();
  g_peak = g_live.load();
  const int64_t live_before = g_live.load();

  std::unique_ptr<Engine> engine = make_cpu_engine(2);
  std::unique_ptr<LoadedShard> shard = engine->load(std::move(g));
  uint64_t records = 0;
  for (Task task : {Task::kWordCount, Task::kSort, Task::kInvertedIndex, Task::kTermVector,
                    Task::kSequenceCount, Task::kRankedInvertedIndex})
    for (Traversal t : {Traversal::kTopDown, Traversal::kBottomUp})
      for (const Normalization* norm : std::initializer_list<const Normalization*>{&identity, &merged}) {
        QueryOptions q;
        q.task = task;
        q.traversal = t;
        q.threads = 2;
        q.n = 2;
        ShardRunStats stats;
        RecordBatch b = engine->run(*shard, q, *norm, stats);
        EXPECT_GT(b.size(), 0u) << task_name(task);
        records += b.size();
      }
  shard.reset();
  engine.reset();

  const int64_t peak = g_peak.load() - live_before;
  EXPECT_GT(records, 0u);
  EXPECT_LT(peak, kBudget) << "operator new peak of " << peak << " bytes";
  if (rss) {
    const long grew = peak_rss_kb() - rss_before;
    EXPECT_LT(grew * 1024L, kBudget) << "resident memory grew by " << grew << " kB";
  }
}

// The word-count of the sparse shard is exact: the same counts as the grammar's expansion.
TEST(ShardMemory, CountsOfTheSparseShardAreTheExpansions) {
  ShardGrammar g = sparse_shard();
  std::map<WordId, uint64_t> want;
  std::vector<WordId> words;
  for (uint32_t d = 0; d < g.num_docs; ++d) {
    words.clear();
    expand_document(g, d, words);
    for (WordId w : words) ++want[w];
  }
  std::unique_ptr<Engine> engine = make_cpu_engine(1);
  std::unique_ptr<LoadedShard> shard = engine->load(std::move(g));
  for (Traversal t : {Traversal::kTopDown, Traversal::kBottomUp}) {
    QueryOptions q;
    q.traversal = t;
    q.threads = 1;
    ShardRunStats stats;
    RecordBatch b = engine->run(*shard, q, Normalization{}, stats);
    std::map<WordId, uint64_t> got;
    for (size_t i = 0; i < b.size(); ++i) got[b.key(i)[0]] += b.counts[i];
    EXPECT_EQ(got, want) << traversal_name(t);
  }
}

}  // namespace
}  // namespace gtadoc
