// compress --memory-budget (coordinator/compress_*.h): the pieces of the bounded pipeline (the
// partitioned vocabulary and its sort, the word lists merged between ranks, spill files, the
// memory gate) against plain references, and whole archives written under budgets small enough
// to spill every shard and the dictionary: identical to the unbounded archive but for the random
// archive id (and the digests derived from it), and a byte-exact round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "coordinator/compress/memory.h"
#include "coordinator/compress/spill.h"
#include "coordinator/compress/vocabulary.h"
#include "formats/archive.h"
#include "tests/testutil/corpus.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;
using testutil::read_file;
using testutil::run_gtadoc;
using testutil::TempDir;
using testutil::write_file;

/// Words that stress the byte order: prefixes, NUL and high bytes, long words (own chunks).
std::vector<std::string> tricky_words(std::mt19937_64& rng, size_t n) {
  std::vector<std::string> words = {"a",
                                    std::string("a\0", 2),
                                    std::string("a\0b", 3),
                                    "ab",
                                    "abcdefghij",
                                    "abcdefghijk",
                                    "abcdefghij\x01",
                                    "\xff",
                                    "\xff\xff",
                                    std::string(70000, 'z'),
                                    std::string(70000, 'z') + "y",
                                    "zz"};
  const std::string alphabet = std::string("ab\x01\xfe", 4) + std::string(1, '\0');
  while (words.size() < n) {
    std::string w(1 + rng() % 14, ' ');
    for (char& c : w) c = alphabet[rng() % alphabet.size()];
    words.push_back(w);
  }
  return words;
}

StringTable table_of(const std::vector<std::string>& words) {
  StringTable t(16);
  for (const auto& w : words) t.intern(w);
  return t;
}

TEST(CompressVocabulary, FoldsConcurrentlyAndSortsInByteOrder) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> words = tricky_words(rng, 60000);
  Vocabulary vocab;
  // Eight overlapping shards folded from four threads.
  std::vector<std::vector<std::string>> shards(8);
  for (size_t i = 0; i < words.size(); ++i) {
    shards[i % 8].push_back(words[i]);
    if (i % 3 == 0) shards[(i + 5) % 8].push_back(words[i]);
  }
  std::vector<std::vector<uint32_t>> ids(shards.size());
  std::vector<std::thread> pool;
  std::atomic<size_t> next{0};
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&] {
      for (size_t s; (s = next++) < shards.size();) ids[s] = vocab.fold(table_of(shards[s]));
    });
  for (auto& th : pool) th.join();

  const std::set<std::string> want(words.begin(), words.end());
  ASSERT_EQ(vocab.size(), want.size());
  for (size_t s = 0; s < shards.size(); ++s) {
    const StringTable t = table_of(shards[s]);
    ASSERT_EQ(ids[s].size(), t.size());
    for (uint32_t l = 0; l < t.size(); ++l) EXPECT_EQ(vocab.get(ids[s][l]), t.get(l));
  }
  EXPECT_GT(vocab.memory_bytes(), vocab.word_bytes());

  const std::vector<uint32_t> order = vocab.sorted(3);
  ASSERT_EQ(order.size(), want.size());
  size_t i = 0;
  std::vector<bool> seen(order.size(), false);
  for (const std::string& w : want) {
    EXPECT_EQ(vocab.get(order[i]), w) << "position " << i;
    const uint32_t d = vocab.dense(order[i]);
    ASSERT_LT(d, order.size());
    EXPECT_FALSE(seen[d]);
    seen[d] = true;
    ++i;
  }
  const Dictionary dict = vocab.dictionary(order, 2);
  ASSERT_EQ(dict.size(), want.size());
  EXPECT_TRUE(dict.is_sorted_unique());
  EXPECT_EQ(dict[0], *want.begin());

  // Word lists: from the vocabulary and back, merged, positions in the union.
  const std::vector<uint8_t> list = WordList::from_vocabulary(vocab, order);
  const Dictionary back = WordList(list).to_dictionary();
  EXPECT_EQ(back.bytes(), dict.bytes());
  EXPECT_EQ(back.offsets(), dict.offsets());
  vocab.release_words();
  EXPECT_EQ(vocab.size(), want.size());
  EXPECT_EQ(vocab.memory_bytes(), 0u);
}

TEST(CompressVocabulary, WordListsMergeAndMapIntoTheUnion) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> words = tricky_words(rng, 30000);
  std::set<std::string> a, b;
  for (size_t i = 0; i < words.size(); ++i) (i % 3 == 0 ? a : b).insert(words[i]);
  for (size_t i = 0; i < words.size(); i += 7) a.insert(words[i]);
  auto list_of = [](const std::set<std::string>& s) {
    Dictionary d;
    for (const auto& w : s) d.push_back(w);
    return WordList::from_dictionary(d);
  };
  const std::vector<uint8_t> la = list_of(a), lb = list_of(b);
  const std::vector<uint8_t> merged = merge_word_lists(WordList(la), WordList(lb));
  std::set<std::string> all = a;
  all.insert(b.begin(), b.end());
  EXPECT_EQ(merged, list_of(all));
  const std::vector<uint32_t> pos = positions_in(WordList(la), WordList(merged), 3);
  const std::vector<std::string> sorted_all(all.begin(), all.end());
  size_t i = 0;
  for (const auto& w : a) EXPECT_EQ(sorted_all.at(pos[i++]), w);
  // Empty lists.
  const std::vector<uint8_t> empty = list_of({});
  EXPECT_EQ(merge_word_lists(WordList(empty), WordList(la)), la);
  EXPECT_TRUE(positions_in(WordList(empty), WordList(la), 2).empty());
  EXPECT_THROW(WordList(std::span<const uint8_t>(la.data(), la.size() - 1)), Error);
}

TEST(CompressSpill, ShardTokensAndDictionaryRoundTrip) {
  TempDir tmp;
  ShardTokens t;
  t.tokens = {0, 1, 2, kBoundaryBit | 0, 1, 1};
  t.gaps = {0, 1, 1, 0, 2, 1, 1, 0};
  t.word_ids = {5, (3u << 26) | 9, 17};
  for (const char* ws : {"", " ", "\n", "  \t"}) t.ws.intern(ws);
  const fs::path file = spill_file(tmp.path(), 42);
  EXPECT_EQ(file.filename(), ".spill-00042");
  write_spill(file, t);
  EXPECT_THROW(write_spill(file, t), InputError);  // never overwrites
  ShardTokens back = read_spill(file);
  EXPECT_FALSE(fs::exists(file)) << "a spill file is removed once read";
  EXPECT_EQ(back.tokens, t.tokens);
  EXPECT_EQ(back.gaps, t.gaps);
  EXPECT_EQ(back.word_ids, t.word_ids);
  ASSERT_EQ(back.ws.size(), t.ws.size());
  for (uint32_t i = 0; i < t.ws.size(); ++i) EXPECT_EQ(back.ws.get(i), t.ws.get(i));

  // A truncated spill file is an error naming it.
  write_spill(file, t);
  fs::resize_file(file, fs::file_size(file) - 3);
  try {
    read_spill(file);
    FAIL() << "truncated spill file accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(".spill-00042"), std::string::npos) << e.what();
  }

  // Written in pieces while read: the same arrays come back.
  const fs::path pieces = spill_file(tmp.path(), 7);
  {
    SpillWriter w(pieces);
    w.tokens(std::vector<Symbol>{0, 1});
    w.gaps(std::vector<uint32_t>{0});
    w.tokens(std::vector<Symbol>{});
    w.tokens(std::vector<Symbol>{2, kBoundaryBit | 0, 1, 1});
    w.gaps(std::vector<uint32_t>{1, 1, 0, 2, 1, 1, 0});
    w.finish(t.word_ids, t.ws);
  }
  back = read_spill(pieces);
  EXPECT_EQ(back.tokens, t.tokens);
  EXPECT_EQ(back.gaps, t.gaps);
  EXPECT_EQ(back.tokens.capacity(), t.tokens.size()) << "arrays are allocated once";
  {  // A writer that never finishes leaves nothing.
    SpillWriter w(spill_file(tmp.path(), 8));
    w.tokens(std::vector<Symbol>{1, 2, 3});
  }
  EXPECT_FALSE(fs::exists(spill_file(tmp.path(), 8)));

  const std::vector<std::string> words = {"", "a", std::string("a\0", 2), "b", "zzz"};
  const fs::path dfile = dictionary_spill_file(tmp.path());
  write_dictionary_spill(dfile, words.size(), 7,
                         [&](uint64_t i) -> std::string_view { return words[i]; });
  const Dictionary d = read_dictionary_spill(dfile);
  EXPECT_FALSE(fs::exists(dfile));
  ASSERT_EQ(d.size(), words.size());
  for (uint32_t i = 0; i < d.size(); ++i) EXPECT_EQ(d[i], words[i]);

  // Several blocks of 256 Ki words (the last one partial), gathered on three threads; words
  // of 0 to 12 bytes.
  constexpr uint64_t kMany = 2'500'003;
  auto many = [](uint64_t i) -> std::string_view {
    static const std::string pool = "0123456789abcdefghijklmnopqrstuvwxyz";
    return std::string_view(pool).substr(i % 23, (i * 7919) % 13);
  };
  uint64_t many_bytes = 0;
  for (uint64_t i = 0; i < kMany; ++i) many_bytes += many(i).size();
  write_dictionary_spill(dfile, kMany, many_bytes, many, 3);
  const Dictionary big = read_dictionary_spill(dfile);
  ASSERT_EQ(big.size(), kMany);
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < kMany; ++i) wrong += big[static_cast<uint32_t>(i)] != many(i);
  EXPECT_EQ(wrong, 0u);
}

TEST(CompressMemory, GateKeepsTasksWithinTheBudgetButNeverStalls) {
  MemoryGate gate(100, 10);
  std::atomic<uint64_t> in_use{0}, worst{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 6; ++t)
    pool.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        const uint64_t need = t == 0 && k == 3 ? 500 : 20 + (t * 7 + k) % 25;  // one too big
        gate.acquire(need);
        const uint64_t now = in_use += need;
        if (need <= 90) {
          uint64_t w = worst.load();
          while (now > w && !worst.compare_exchange_weak(w, now)) {
          }
        } else {
          EXPECT_EQ(now, need) << "an oversized task runs alone";
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        in_use -= need;
        gate.release(need);
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_LE(worst.load(), 90u);
  EXPECT_EQ(gate.used(), 10u);
  EXPECT_TRUE(gate.try_hold(90));
  EXPECT_FALSE(gate.try_hold(1));
  gate.drop(90);
  EXPECT_EQ(gate.used(), 10u);
}

TEST(CompressMemory, DefaultBudgetAndSizes) {
  EXPECT_GE(usable_memory_bytes(), uint64_t{64} << 20);
  EXPECT_LE(default_memory_budget(1), std::max(usable_memory_bytes() / 4, uint64_t{64} << 20));
  EXPECT_LE(default_memory_budget(4), default_memory_budget(1));
  EXPECT_EQ(format_bytes(100), "100 B");
  EXPECT_EQ(format_bytes(256ull << 20), "256 MiB");
  EXPECT_EQ(format_bytes(3ull << 29), "1.5 GiB");
  EXPECT_GT(current_rss_bytes(), 0u);
  EXPECT_GE(peak_rss_bytes(), current_rss_bytes() / 2);
}

TEST(CompressMemory, ShardsInFlightAndWhereTheDictionaryWaits) {
  namespace m = memory_model;
  constexpr uint64_t MiB = uint64_t{1} << 20, GiB = uint64_t{1} << 30;
  // As many as the room allows, capped by the threads, at least one.
  EXPECT_EQ(m::shards_in_flight(4 * GiB, 140 * MiB, 193 * MiB, 32), 20u);
  EXPECT_EQ(m::shards_in_flight(4 * GiB, 140 * MiB, 193 * MiB, 8), 8u);
  EXPECT_EQ(m::shards_in_flight(4 * GiB, 5 * GiB, 193 * MiB, 32), 1u);
  EXPECT_EQ(m::shards_in_flight(4 * GiB, 0, 0, 6), 6u);
  // 20 GB of text on 32 threads under 4 GiB: a 1.6 GiB dictionary would cut 20 shards at once
  // to 12, so it waits on disk; a small one stays; one that would not fit at all waits too.
  const uint64_t now = 1900 * MiB;  // vocabulary words, sort order, id map, one shard's estimate
  EXPECT_FALSE(m::dictionary_stays_in_memory(4 * GiB, now, 140 * MiB, 1638 * MiB, 193 * MiB, 32));
  EXPECT_TRUE(m::dictionary_stays_in_memory(4 * GiB, now, 140 * MiB, 20 * MiB, 193 * MiB, 32));
  EXPECT_TRUE(m::dictionary_stays_in_memory(64 * GiB, now, 140 * MiB, 1638 * MiB, 193 * MiB, 32));
  EXPECT_FALSE(m::dictionary_stays_in_memory(2 * GiB, now, 140 * MiB, 1638 * MiB, 193 * MiB, 1));
  // With one thread the concurrency cannot drop: it stays whenever it fits.
  EXPECT_TRUE(m::dictionary_stays_in_memory(4 * GiB, now, 140 * MiB, 1638 * MiB, 193 * MiB, 1));
}

// ------------------------------------------------------------------ whole archives

void expect_same_archive(const fs::path& a, const fs::path& b) {
  const Manifest ma = read_manifest(a), mb = read_manifest(b);
  EXPECT_NE(ma.archive_id, mb.archive_id);
  EXPECT_EQ(ma.dict.bytes(), mb.dict.bytes());
  EXPECT_EQ(ma.dict.offsets(), mb.dict.offsets());
  ASSERT_EQ(ma.docs.size(), mb.docs.size());
  for (size_t d = 0; d < ma.docs.size(); ++d) {
    EXPECT_EQ(ma.doc_names[d], mb.doc_names[d]);
    EXPECT_EQ(ma.docs[d].bytes, mb.docs[d].bytes);
    EXPECT_EQ(ma.docs[d].words, mb.docs[d].words);
    EXPECT_EQ(ma.docs[d].shard, mb.docs[d].shard);
  }
  ASSERT_EQ(ma.shards.size(), mb.shards.size());
  for (uint32_t s = 0; s < ma.shards.size(); ++s) {
    const ShardEntry &x = ma.shards[s], &y = mb.shards[s];
    EXPECT_EQ(x.first_doc, y.first_doc);
    EXPECT_EQ(x.num_docs, y.num_docs);
    EXPECT_EQ(x.input_bytes, y.input_bytes);
    EXPECT_EQ(x.words, y.words);
    EXPECT_EQ(x.rules, y.rules);
    EXPECT_EQ(x.symbols, y.symbols);
    EXPECT_EQ(x.depth, y.depth);
    EXPECT_EQ(x.file_bytes, y.file_bytes) << "shard " << s;
    const ShardGrammar ga = read_shard_grammar(a, ma, s), gb = read_shard_grammar(b, mb, s);
    EXPECT_EQ(ga.num_words, gb.num_words);
    EXPECT_EQ(ga.rule_offsets, gb.rule_offsets) << "shard " << s;
    EXPECT_EQ(ga.symbols, gb.symbols) << "shard " << s;
    EXPECT_EQ(ga.level_offsets, gb.level_offsets);
    EXPECT_EQ(ga.rule_length, gb.rule_length);
    EXPECT_EQ(ga.rule_uses, gb.rule_uses);
    EXPECT_EQ(ga.doc_root_offsets, gb.doc_root_offsets);
    const ShardLayout la = read_shard_layout(a, ma, s), lb = read_shard_layout(b, mb, s);
    EXPECT_EQ(la.ws_dict, lb.ws_dict) << "shard " << s;
    EXPECT_EQ(la.gaps, lb.gaps) << "shard " << s;
  }
  // Only the manifest and the shard files: no spill file left behind.
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(b)) files.insert(e.path().filename().string());
  EXPECT_EQ(files.size(), ma.shards.size() + 1);
  EXPECT_TRUE(files.count("manifest.h5"));
}

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[e.path().lexically_relative(dir).string()] = read_file(e.path());
  return files;
}

/// Compresses `input` without a budget and with each of `budgets`, compares the archives and
/// round-trips each bounded one. Returns the -vv logs of the bounded runs.
std::vector<std::string> check_budgets(const fs::path& input, const std::vector<std::string>& extra,
                                       const std::vector<std::string>& budgets) {
  TempDir tmp;
  std::vector<std::string> base = {"compress", input.string(), "-vv"};
  base.insert(base.end(), extra.begin(), extra.end());
  auto args = base;
  args.insert(args.end(), {"-o", (tmp / "free.gtd").string()});
  auto c = run_gtadoc(args);
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.err.find("0 spilled"), std::string::npos) << c.err;
  std::vector<std::string> logs;
  const auto want = snapshot(input);
  for (size_t k = 0; k < budgets.size(); ++k) {
    const fs::path out = tmp / ("b" + std::to_string(k) + ".gtd");
    args = base;
    args.insert(args.end(), {"-o", out.string(), "--memory-budget", budgets[k]});
    c = run_gtadoc(args);
    EXPECT_EQ(c.exit_code, 0) << c.err;
    logs.push_back(c.err);
    expect_same_archive(tmp / "free.gtd", out);
    const fs::path back = tmp / ("back" + std::to_string(k));
    auto d = run_gtadoc({"decompress", out.string(), "-o", back.string()});
    EXPECT_EQ(d.exit_code, 0) << d.err;
    EXPECT_TRUE(snapshot(back) == want) << "round trip under --memory-budget " << budgets[k];
  }
  return logs;
}

TEST(CompressBudget, SampleUnderTinyBudgetSpillsEverythingAndMatches) {
  const fs::path sample = testutil::source_dir() / "data" / "sample";
  if (!fs::exists(sample)) GTEST_SKIP() << "no data/sample";
  auto logs = check_budgets(sample, {}, {"1M"});
  // Everything spilled, the dictionary set aside, one shard at a time, and one warning saying so.
  EXPECT_NE(logs[0].find("tokens of 0 shards kept in memory"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("set aside on disk"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("warning: --memory-budget 1.0 MiB is below"), std::string::npos)
      << logs[0];
}

TEST(CompressBudget, ManyShardsUnderSeveralBudgetsMatch) {
  const fs::path sample = testutil::source_dir() / "data" / "sample";
  if (!fs::exists(sample)) GTEST_SKIP() << "no data/sample";
  // About 20 shards of 256 KiB on 2 threads: 1M spills everything; 48M keeps some shards in
  // memory and spills others; 512M keeps everything (the one-pass path).
  auto logs =
      check_budgets(sample, {"--shard-size", "256K", "--threads", "2"}, {"1M", "48M", "512M"});
  EXPECT_NE(logs[0].find("tokens of 0 shards kept"), std::string::npos) << logs[0];
  EXPECT_EQ(logs[1].find("tokens of 0 shards kept"), std::string::npos) << logs[1];
  EXPECT_EQ(logs[1].find(" 0 spilled"), std::string::npos) << logs[1];
  EXPECT_EQ(logs[2].find("warning"), std::string::npos) << logs[2];
  EXPECT_NE(logs[2].find(" 0 spilled"), std::string::npos) << logs[2];
}

TEST(CompressBudget, AdversarialDocumentsMatch) {
  // Nasty inputs (empty documents, whitespace only, NUL bytes, one huge word, a long run of one
  // word) under a budget that spills everything, one document per shard.
  TempDir tmp;
  const fs::path in = tmp / "in";
  write_file(in / "empty", "");
  write_file(in / "spaces", " \t\n\n ");
  write_file(in / "nul", std::string("a\0b a\0b\0 \0", 11));
  write_file(in / "huge-word", std::string(200000, 'x') + " y " + std::string(200000, 'x'));
  std::string run;
  for (int i = 0; i < 20000; ++i) run += "la ";
  write_file(in / "run", run);
  std::mt19937_64 rng(3);
  std::string random;
  for (int i = 0; i < 40000; ++i) random += std::to_string(rng() % 100000) + (i % 11 ? " " : "\n");
  write_file(in / "random", random);
  check_budgets(in, {"--shards", "6"}, {"1k", "2M"});
}

}  // namespace
}  // namespace gtadoc
