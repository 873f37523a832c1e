// Tests of the parallel read paths of the archive: the block-parallel front-coded dictionary
// decode (formats/dictionary.h) against a plain sequential decode, the direct chunk reads of
// h5::BatchRead against the written values (chunks read with pread outside the HDF5 lock, or by
// HDF5 under it, and falling back to H5Dread on corrupt or truncated chunks with HDF5's own
// messages), the parallel grammar validation against the sequential one, and Dictionary's shared
// copies, and read_array_range (only the chunks of a range, on both paths).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "formats/archive.h"
#include "formats/dictionary.h"
#include "formats/grammar.h"
#include "formats/h5.h"
#include "tests/testutil/corpus.h"
#include "tests/testutil/grammar_mutations.h"
#include "tests/testutil/grammars.h"
#include "tests/testutil/scoped_env.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;
using testutil::read_file;
using testutil::TempDir;
using testutil::write_file;

// ------------------------------------------------------------------------------------ helpers

// The sequential decode (as the reader did it before it worked in blocks): words, offsets,
// whether they are sorted and unique, or the message of the first invalid prefix length.
struct Reference {
  std::vector<char> bytes;
  std::vector<uint64_t> offsets{0};
  bool sorted_unique = true;
  std::string error;
};

Reference reference_decode(const FrontCoded& f) {
  Reference r;
  uint64_t suffix = 0;
  for (size_t w = 0; w < f.prefix_lengths.size(); ++w) {
    const uint64_t prev_begin = w == 0 ? 0 : r.offsets[w - 1];
    if (f.prefix_lengths[w] > r.offsets[w] - prev_begin) {
      r.error =
          "/dictionary/prefix_lengths[" + std::to_string(w) + "] is longer than the previous word";
      return r;
    }
    for (uint64_t k = 0; k < f.prefix_lengths[w]; ++k) r.bytes.push_back(r.bytes[prev_begin + k]);
    r.bytes.insert(r.bytes.end(), f.suffix_bytes.begin() + suffix,
                   f.suffix_bytes.begin() + suffix + f.suffix_lengths[w]);
    suffix += f.suffix_lengths[w];
    r.offsets.push_back(r.bytes.size());
  }
  r.sorted_unique = Dictionary(r.bytes, r.offsets).is_sorted_unique();
  return r;
}

Dictionary dictionary_of(const std::vector<std::string>& words) {
  Dictionary d;
  for (const std::string& w : words) d.push_back(w);
  return d;
}

// Decodes `f` with several block sizes and thread counts and compares each with the reference.
void expect_decodes_like_reference(const FrontCoded& f, const std::string& what) {
  const Reference ref = reference_decode(f);
  const size_t n = f.prefix_lengths.size();
  for (size_t block :
       {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, n + 1, kFrontCodedBlock}) {
    if (block == 0) continue;
    for (unsigned threads : {1u, 2u, 4u}) {
      SCOPED_TRACE(what + ", block " + std::to_string(block) + ", threads " +
                   std::to_string(threads));
      bool sorted = !ref.sorted_unique;
      try {
        Dictionary d = decode_front_coded(f.prefix_lengths, f.suffix_bytes, f.suffix_lengths,
                                          &sorted, threads, block);
        EXPECT_EQ(ref.error, "") << "decoded what the sequential decode rejects";
        EXPECT_EQ(d.bytes(), ref.bytes);
        EXPECT_EQ(d.offsets(), ref.offsets);
        EXPECT_EQ(sorted, ref.sorted_unique);
      } catch (const InputError& e) {
        EXPECT_EQ(e.what(), ref.error);
      }
    }
  }
}

std::vector<std::string> random_sorted_words(size_t n, uint64_t seed, size_t max_length,
                                             const std::string& alphabet) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> words;
  while (words.size() < n) {
    for (size_t i = words.size(); i < n + n / 4 + 1; ++i) {
      std::string w(1 + rng() % max_length, '\0');  // a word is never empty
      for (char& c : w) c = alphabet[rng() % alphabet.size()];
      words.push_back(w);
    }
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
  }
  words.resize(n);  // still sorted and unique
  return words;
}

// ------------------------------------------------------------------------------ front coding

TEST(FrontCodedDecode, EmptyAndSingleWords) {
  expect_decodes_like_reference(front_code(Dictionary()), "no words");
  expect_decodes_like_reference(front_code(dictionary_of({""})), "one empty word");
  expect_decodes_like_reference(front_code(dictionary_of({"x"})), "one word");
  expect_decodes_like_reference(front_code(dictionary_of({std::string(100, 'q')})),
                                "one long word");
  bool sorted = false;
  Dictionary d = decode_front_coded({}, {}, {}, &sorted);
  EXPECT_EQ(d.size(), 0u);
  EXPECT_TRUE(sorted);
}

TEST(FrontCodedDecode, PrefixesEmptyWordsAndOddBytes) {
  const std::vector<std::string> words = {"",
                                          std::string("\0", 1),
                                          std::string("\0\0", 2),
                                          std::string("\0a", 2),
                                          "a",
                                          "ab",
                                          "abc",
                                          "abcdefghijklmnopqrstuvwxyz",
                                          "abcdefghijklmnopqrstuvwxyz0123456789",
                                          "abcdefghijklmnopqrstuvwxz",
                                          "abd",
                                          "b",
                                          std::string(40, 'b'),
                                          std::string(41, 'b'),
                                          "c",
                                          "\x7f",
                                          "\x80",
                                          "\xff",
                                          "\xff\xff",
                                          std::string(33, '\xff')};
  ASSERT_TRUE(dictionary_of(words).is_sorted_unique());
  expect_decodes_like_reference(front_code(dictionary_of(words)), "sorted odd words");
}

TEST(FrontCodedDecode, RandomDictionariesAcrossBlockBoundaries) {
  // Sizes around the block sizes used above (1, 2, 3, 7, 64) and many shared prefixes.
  for (size_t n : {size_t{2}, size_t{5}, size_t{63}, size_t{64}, size_t{65}, size_t{128},
                   size_t{129}, size_t{1000}}) {
    std::vector<std::string> words = random_sorted_words(n, n, 12, std::string("ab\0\xff", 4));
    expect_decodes_like_reference(front_code(dictionary_of(words)),
                                  "random, " + std::to_string(n) + " words");
  }
  // Long words (copies longer than 16 bytes) sharing long prefixes.
  std::vector<std::string> words = random_sorted_words(300, 9, 60, "xy");
  expect_decodes_like_reference(front_code(dictionary_of(words)), "long words");
}

TEST(FrontCodedDecode, DefaultBlocksOnALargeDictionary) {
  // More than one default block, on every thread count (the reader's configuration).
  std::vector<std::string> words =
      random_sorted_words(3 * kFrontCodedBlock + 17, 4, 10, "abcdefgh");
  const FrontCoded f = front_code(dictionary_of(words));
  const Reference ref = reference_decode(f);
  for (unsigned threads : {0u, 1u, 3u}) {
    bool sorted = false;
    Dictionary d =
        decode_front_coded(f.prefix_lengths, f.suffix_bytes, f.suffix_lengths, &sorted, threads);
    EXPECT_EQ(d.bytes(), ref.bytes);
    EXPECT_EQ(d.offsets(), ref.offsets);
    EXPECT_TRUE(sorted);
  }
}

TEST(FrontCodedDecode, UnsortedAndDuplicateWordsAreReported) {
  // front_code takes any sequence; the decode reports whether it was sorted and unique,
  // wherever the disorder is (inside a block or between two).
  std::vector<std::string> base = random_sorted_words(50, 3, 6, "abc");
  for (size_t at : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{8}, size_t{49}}) {
    std::vector<std::string> swapped = base;
    std::swap(swapped[at - 1], swapped[at]);
    expect_decodes_like_reference(front_code(dictionary_of(swapped)),
                                  "swapped at " + std::to_string(at));
    std::vector<std::string> duplicated = base;
    duplicated[at] = duplicated[at - 1];
    expect_decodes_like_reference(front_code(dictionary_of(duplicated)),
                                  "duplicate at " + std::to_string(at));
  }
  expect_decodes_like_reference(front_code(dictionary_of({"b", "a"})), "two, descending");
  expect_decodes_like_reference(front_code(dictionary_of({"", ""})), "two empty words");
  expect_decodes_like_reference(front_code(dictionary_of({"ab", "a"})), "prefix after word");
}

TEST(FrontCodedDecode, ShorterThanPossiblePrefixesStillDecode) {
  // A valid stream need not share the longest prefix: all prefix lengths 0.
  std::vector<std::string> words = random_sorted_words(200, 5, 8, "ab");
  FrontCoded f;
  for (const std::string& w : words) {
    f.prefix_lengths.push_back(0);
    f.suffix_bytes.insert(f.suffix_bytes.end(), w.begin(), w.end());
    f.suffix_lengths.push_back(w.size());
  }
  expect_decodes_like_reference(f, "prefix lengths 0");
  // Half of the longest prefix.
  FrontCoded g = front_code(dictionary_of(words));
  FrontCoded h;
  std::string prev;
  for (size_t i = 0; i < words.size(); ++i) {
    const uint64_t p = g.prefix_lengths[i] / 2;
    h.prefix_lengths.push_back(p);
    h.suffix_bytes.insert(h.suffix_bytes.end(), words[i].begin() + p, words[i].end());
    h.suffix_lengths.push_back(words[i].size() - p);
  }
  expect_decodes_like_reference(h, "half prefixes");
}

// decode_front_coded_words: any sorted set of ids gives the whole decode's words, across long
// shared prefixes (two letters) and short ones; a prefix longer than the word before the one asked
// for, a word holding whitespace and lengths that do not add up give the whole read's messages.
TEST(FrontCodedWords, AnyIdsGiveTheWholeDecodesWords) {
  std::mt19937_64 rng(21);
  for (const std::string alphabet : {"ab", "abcdefghijklmnopqrstuvwxyz0123456789"}) {
    const std::vector<std::string> words = random_sorted_words(3000, 5, 40, alphabet);
    const FrontCoded f = front_code(dictionary_of(words));
    for (int t = 0; t < 50; ++t) {
      std::vector<WordId> ids;
      if (t == 0) ids = {0, 2999};
      for (size_t k = rng() % 20; k-- > 0;) ids.push_back(static_cast<WordId>(rng() % 3000));
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      const std::vector<std::string> got =
          decode_front_coded_words(f.prefix_lengths, f.suffix_bytes, f.suffix_lengths, ids);
      ASSERT_EQ(got.size(), ids.size());
      for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(got[i], words[ids[i]]) << ids[i];
    }
  }
}

TEST(FrontCodedWords, CorruptionsOfTheWordsReadGiveTheWholeReadsMessages) {
  const std::vector<std::string> words = {"a", "ab", "abc", "abd", "b", "ba"};
  const FrontCoded f = front_code(dictionary_of(words));
  auto message = [](const FrontCoded& g, std::vector<WordId> ids) -> std::string {
    try {
      (void)decode_front_coded_words(g.prefix_lengths, g.suffix_bytes, g.suffix_lengths, ids);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  FrontCoded longer = f;
  longer.prefix_lengths[2] = 3;  // "ab" has 2 bytes
  EXPECT_EQ(message(longer, {2}), reference_decode(longer).error);
  EXPECT_EQ(message(longer, {4}), "");  // words that do not reach it read as before
  FrontCoded first = f;
  first.prefix_lengths[0] = 1;
  EXPECT_EQ(message(first, {0}), reference_decode(first).error);
  FrontCoded spaced = front_code(dictionary_of({"a", "a b", "ab"}));
  EXPECT_EQ(message(spaced, {1}), "/dictionary: word 1 holds whitespace byte 0x20");
  EXPECT_EQ(message(spaced, {0, 2}), "");
  FrontCoded empty = front_code(dictionary_of({"", "a"}));
  EXPECT_EQ(message(empty, {0}), "/dictionary: word 0 is empty");
  FrontCoded short_bytes = f;
  short_bytes.suffix_bytes.pop_back();
  EXPECT_EQ(message(short_bytes, {1}), "string lengths in suffix_lengths exceed suffix_bytes");
  FrontCoded long_bytes = f;
  long_bytes.suffix_bytes.push_back('x');
  EXPECT_EQ(message(long_bytes, {}),
            "string lengths in suffix_lengths do not add up to suffix_bytes");
}

// A dictionary on demand with a reader of a few words: fetched words answer without the whole
// read; any other access reads it whole (once), after which fetch() does nothing.
TEST(FrontCodedWords, FetchedWordsAnswerWithoutTheWholeRead) {
  const std::vector<std::string> words = random_sorted_words(500, 9, 12, "abcxyz");
  const FrontCoded f = front_code(dictionary_of(words));
  int whole = 0, some = 0;
  const Dictionary d = Dictionary::on_demand(
      500,
      [&] {
        ++whole;
        return dictionary_of(words);
      },
      [&](std::span<const WordId> ids) {
        ++some;
        return decode_front_coded_words(f.prefix_lengths, f.suffix_bytes, f.suffix_lengths, ids);
      });
  ASSERT_TRUE(d.fetches_some());
  const std::vector<WordId> ids = {499, 3, 3, 0, 250};
  d.fetch(ids);
  for (WordId id : ids) EXPECT_EQ(d[id], words[id]);
  EXPECT_EQ(some, 1);
  EXPECT_EQ(whole, 0);
  EXPECT_FALSE(d.ready());
  EXPECT_EQ(d[4], words[4]);  // not fetched: the whole read
  EXPECT_EQ(whole, 1);
  EXPECT_TRUE(d.ready());
  EXPECT_FALSE(d.fetches_some());
  for (WordId id : {0u, 3u, 4u, 499u}) EXPECT_EQ(d[id], words[id]);
  d.fetch(ids);
  EXPECT_EQ(some, 1);
  EXPECT_EQ(whole, 1);
}

TEST(FrontCodedDecode, PrefixLongerThanThePreviousWordIsRejected) {
  std::vector<std::string> words = random_sorted_words(100, 6, 6, "abc");
  const FrontCoded good = front_code(dictionary_of(words));
  for (size_t at :
       {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{8}, size_t{64}, size_t{99}}) {
    FrontCoded bad = good;
    const uint64_t previous = at == 0 ? 0 : words[at - 1].size();
    // Just over the previous word's length, or far over it (the sums must not wrap).
    bad.prefix_lengths[at] = at % 2 ? (previous + 1) << 40 : previous + 1 + at % 3;
    expect_decodes_like_reference(bad, "bad prefix at " + std::to_string(at));
  }
  // Two bad entries: the first is named, whichever block it is in.
  FrontCoded two = good;
  two.prefix_lengths[70] = 1000;
  two.prefix_lengths[9] = 1000;
  expect_decodes_like_reference(two, "two bad prefixes");
  try {
    decode_front_coded(two.prefix_lengths, two.suffix_bytes, two.suffix_lengths, nullptr, 4, 16);
    ADD_FAILURE() << "not rejected";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/dictionary/prefix_lengths[9] is longer than the previous word");
  }
}

TEST(FrontCodedArchive, UnsortedDictionaryIsRejectedOnRead) {
  TempDir dir;
  Manifest m;
  m.archive_id = 4;
  m.dict = dictionary_of(random_sorted_words(40000, 8, 9, "abcdefgh"));
  write_manifest_file(dir / kManifestFile, m, {4});
  EXPECT_EQ(read_manifest(dir.path()).dict.bytes(), m.dict.bytes());

  TempDir dir2;
  std::vector<std::string> words = random_sorted_words(40000, 8, 9, "abcdefgh");
  std::swap(words[kFrontCodedBlock - 1], words[kFrontCodedBlock]);  // across a block boundary
  m.dict = dictionary_of(words);
  write_manifest_file(dir2 / kManifestFile, m, {4});
  try {
    read_manifest(dir2.path());
    ADD_FAILURE() << "not rejected";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("dictionary words are not sorted and unique"),
              std::string::npos)
        << e.what();
  }
}

// ------------------------------------------------------------------------------------ dictionary

TEST(DictionaryCopies, ShareWordsAndCopyOnWrite) {
  Dictionary a = dictionary_of({"a", "b"});
  Dictionary b = a;
  EXPECT_EQ(b.bytes().data(), a.bytes().data());  // shared, not copied
  b.push_back("c");
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(a[1], "b");
  EXPECT_EQ(b[2], "c");
  Dictionary c = std::move(b);
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(b.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  b.push_back("z");
  EXPECT_EQ(b.size(), 1u);
  EXPECT_EQ(Dictionary().size(), 0u);
  Dictionary e;
  e.push_back("only");
  EXPECT_EQ(Dictionary().size(), 0u);  // the shared empty storage is never written
  EXPECT_EQ(e.find("only"), 0u);
}

// ------------------------------------------------------------------------------------ h5

template <class T>
std::vector<T> read_with_batch(h5::Id loc, const std::string& name, bool* direct = nullptr) {
  std::vector<T> out;
  h5::BatchRead batch(3);
  batch.add(loc, name, out);
  batch.run();
  batch.finish(0);
  if (direct) *direct = batch.direct(0);
  return out;
}

TEST(BatchRead, EveryWidthPipelineAndChunkEdge) {
  TempDir dir;
  h5::File f = h5::create_file(dir / "x.h5");
  std::mt19937_64 rng(1);
  // Chunks hold 1 MiB: 2^18 u32 values, 2^17 u64 values.
  const std::vector<uint64_t> sizes = {
      0, 1, 2, 3, 1000, (1u << 17) - 1, 1u << 17, (1u << 17) + 1, (1u << 18) + 5, 3u << 19};
  struct Case {
    std::string name;
    std::vector<uint64_t> values;
    h5::Width store;
  };
  std::vector<Case> cases;
  for (int deflate : {0, 1, 4}) {
    for (h5::Width store : {h5::Width::kU8, h5::Width::kU16, h5::Width::kU32, h5::Width::kU64}) {
      for (uint64_t n : sizes) {
        const uint64_t max = store == h5::Width::kU64
                                 ? ~uint64_t{0}
                                 : (uint64_t{1} << (8 * static_cast<int>(store))) - 1;
        std::vector<uint64_t> v(n);
        // Compressible and incompressible halves.
        for (uint64_t i = 0; i < n; ++i) v[i] = (i < n / 2 ? i % 7 : rng()) & max;
        Case c{"d" + std::to_string(deflate) + "_w" + std::to_string(static_cast<int>(store)) +
                   "_n" + std::to_string(n),
               v, store};
        h5::write_array(f.id(), c.name, std::span<const uint64_t>(v), store, {deflate});
        cases.push_back(std::move(c));
      }
    }
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    bool direct = false;
    std::vector<uint64_t> got64 = read_with_batch<uint64_t>(f.id(), c.name, &direct);
    EXPECT_EQ(got64, c.values);
    EXPECT_TRUE(direct || c.values.empty());
    EXPECT_EQ(h5::read_array<uint64_t>(f.id(), c.name), c.values);
    if (c.store <= h5::Width::kU32) {
      std::vector<uint32_t> got32 = read_with_batch<uint32_t>(f.id(), c.name, &direct);
      EXPECT_TRUE(std::equal(got32.begin(), got32.end(), c.values.begin(), c.values.end()));
      EXPECT_TRUE(direct || c.values.empty());
    }
    if (c.store <= h5::Width::kU16) {
      std::vector<uint16_t> got16 = read_with_batch<uint16_t>(f.id(), c.name, &direct);
      EXPECT_TRUE(std::equal(got16.begin(), got16.end(), c.values.begin(), c.values.end()));
    }
    if (c.store == h5::Width::kU8) {
      std::vector<char> got8 = read_with_batch<char>(f.id(), c.name, &direct);
      ASSERT_EQ(got8.size(), c.values.size());
      for (size_t i = 0; i < got8.size(); ++i)
        ASSERT_EQ(static_cast<uint8_t>(got8[i]), c.values[i]) << i;
      EXPECT_TRUE(direct || c.values.empty());
    }
  }
}

TEST(BatchRead, ErrorsComeWhenTheCallerAsks) {
  TempDir dir;
  h5::File f = h5::create_file(dir / "x.h5");
  std::vector<uint64_t> wide = {1, 1ull << 40};
  std::vector<uint32_t> ok = {7, 8, 9};
  h5::write_array(f.id(), "wide", std::span<const uint64_t>(wide), h5::Width::kU64, {6});
  h5::write_array(f.id(), "ok", std::span<const uint32_t>(ok), h5::Width::kU32, {6});
  std::vector<uint32_t> a, b, c;
  h5::BatchRead batch;
  batch.add(f.id(), "missing", a);
  batch.add(f.id(), "wide", b);  // too wide for u32
  batch.add(f.id(), "ok", c);
  batch.run();
  EXPECT_EQ(batch.size(2), 3u);
  batch.finish(2);
  EXPECT_EQ(c, ok);
  auto message = [](const std::function<void()>& body) {
    try {
      body();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { batch.size(0); }), "dataset /missing: missing");
  EXPECT_EQ(message([&] { batch.finish(0); }), "dataset /missing: missing");
  EXPECT_NE(message([&] { batch.finish(1); }).find("dataset /wide: unexpected element type"),
            std::string::npos);
}

TEST(BatchRead, CorruptChunkFallsBackToHdf5AndItsMessage) {
  TempDir dir;
  const fs::path file = dir / "x.h5";
  std::vector<uint32_t> v(300000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint32_t>(i * 2654435761u);
  {
    h5::File f = h5::create_file(file);
    h5::write_array(f.id(), "v", std::span<const uint32_t>(v), h5::Width::kU32, {0});
    f.close();
  }
  {
    h5::File f = h5::open_file(file);
    bool direct = false;
    EXPECT_EQ(read_with_batch<uint32_t>(f.id(), "v", &direct), v);
    EXPECT_TRUE(direct);
  }
  // Flip one byte of the second chunk's values (stored raw: deflate is off).
  std::string bytes = read_file(file);
  std::string pattern(reinterpret_cast<const char*>(v.data() + 270000), 16);
  size_t pos = bytes.find(pattern);
  ASSERT_NE(pos, std::string::npos);
  bytes[pos + 5] ^= 0x20;
  write_file(file, bytes);
  h5::File f = h5::open_file(file);
  std::vector<uint32_t> out;
  h5::BatchRead batch;
  batch.add(f.id(), "v", out);
  batch.run();
  EXPECT_TRUE(batch.unlocked(0));  // read whole with pread: the checksum failed
  EXPECT_FALSE(batch.direct(0));
  try {
    batch.finish(0);
    ADD_FAILURE() << "corruption not detected";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "dataset /v: checksum mismatch (corrupted data)");
  }
}

TEST(ReadArrayRange, ChunksOfTheRangeEqualTheWrittenValuesOnBothPaths) {
  // Ranges within a chunk, across chunk boundaries, at the ends, empty and whole, of datasets of
  // two and a half chunks (every width up to 4 bytes, deflate off and on), read as u32: by the
  // direct path (pread, decode) and by HDF5's hyperslab (GTADOC_H5_LOCKED_READ=1) alike.
  TempDir dir;
  const fs::path file = dir / "x.h5";
  std::mt19937_64 rng(5);
  std::vector<std::pair<std::string, std::vector<uint32_t>>> cases;
  {
    h5::File f = h5::create_file(file);
    for (int deflate : {0, 6})
      for (h5::Width store : {h5::Width::kU8, h5::Width::kU16, h5::Width::kU32}) {
        const uint64_t es = static_cast<uint64_t>(store);
        const uint64_t n = 5 * h5::kMaxChunkBytes / es / 2;
        std::vector<uint32_t> v(n);
        const uint64_t max = es == 4 ? 0xffffffffu : (uint64_t{1} << (8 * es)) - 1;
        for (uint64_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>((i % 3 ? rng() : i) & max);
        const std::string name = "d" + std::to_string(deflate) + "_w" + std::to_string(es);
        h5::write_array(f.id(), name, std::span<const uint32_t>(v), store, {deflate});
        cases.emplace_back(name, std::move(v));
      }
    f.close();
  }
  h5::File f = h5::open_file(file);
  for (const char* locked : {"0", "1"}) {
    testutil::ScopedEnv env("GTADOC_H5_LOCKED_READ", std::string(locked));
    for (const auto& [name, v] : cases) {
      const uint64_t n = v.size(), chunk = n * 2 / 5;
      for (auto [a, b] : std::vector<std::pair<uint64_t, uint64_t>>{{0, 1},
                                                                    {5, 17},
                                                                    {chunk - 3, chunk + 5},
                                                                    {chunk - 1, 2 * chunk + 1},
                                                                    {n - 7, n},
                                                                    {n, n},
                                                                    {0, n},
                                                                    {2 * chunk, 2 * chunk + 1}}) {
        SCOPED_TRACE(name + " [" + std::to_string(a) + ", " + std::to_string(b) + ") locked " +
                     locked);
        uint64_t size = 0;
        const std::vector<uint32_t> got =
            h5::read_array_range<uint32_t>(f.id(), name, a, b - a, &size);
        EXPECT_EQ(size, n);
        ASSERT_TRUE(std::equal(got.begin(), got.end(), v.begin() + a, v.begin() + b));
        ASSERT_EQ(got.size(), b - a);
      }
      try {
        h5::read_array_range<uint32_t>(f.id(), name, n - 1, 2);
        ADD_FAILURE() << "a range beyond the dataset was read";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("requested, the dataset has"), std::string::npos)
            << e.what();
      }
    }
  }
  EXPECT_EQ(h5::open_object_count(), 1);  // the file
}

TEST(ReadArrayRange, CorruptChunkIsAnErrorOnBothPaths) {
  TempDir dir;
  const fs::path file = dir / "x.h5";
  std::vector<uint32_t> v(600000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint32_t>(i * 2654435761u);
  {
    h5::File f = h5::create_file(file);
    h5::write_array(f.id(), "v", std::span<const uint32_t>(v), h5::Width::kU32, {0});
    f.close();
  }
  // Flip one byte of the second chunk's values (stored raw: deflate is off).
  std::string bytes = read_file(file);
  const size_t pos = bytes.find(std::string(reinterpret_cast<const char*>(v.data() + 270000), 16));
  ASSERT_NE(pos, std::string::npos);
  bytes[pos + 5] ^= 0x20;
  write_file(file, bytes);
  h5::File f = h5::open_file(file);
  for (const char* locked : {"0", "1"}) {
    testutil::ScopedEnv env("GTADOC_H5_LOCKED_READ", std::string(locked));
    // The first chunk is sound; a range touching the second is not.
    EXPECT_EQ(h5::read_array_range<uint32_t>(f.id(), "v", 10, 20),
              std::vector<uint32_t>(v.begin() + 10, v.begin() + 30));
    try {
      h5::read_array_range<uint32_t>(f.id(), "v", 262140, 10);
      ADD_FAILURE() << "corruption not detected (locked " << locked << ")";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("dataset /v"), std::string::npos) << e.what();
    }
  }
}

using testutil::ScopedEnv;  // GTADOC_H5_LOCKED_READ=1: BatchRead reads chunks with H5Dread_chunk
                            // under the HDF5 lock, the path files of other drivers take

/// What one BatchRead of one dataset gave: its values (as u64), how it read them and the error
/// finish() threw ("" when none).
struct BatchResult {
  std::vector<uint64_t> values;
  bool direct = false, unlocked = false;
  std::string error;
};

BatchResult batch_result(h5::Id loc, const std::string& name) {
  BatchResult r;
  h5::BatchRead batch(3);
  batch.add(loc, name, r.values);
  batch.run();
  r.direct = batch.direct(0);
  r.unlocked = batch.unlocked(0);
  try {
    batch.finish(0);
  } catch (const InputError& e) {
    r.error = e.what();
  }
  return r;
}

TEST(BatchRead, PreadPathReadsTheWrittenValues) {
  // Multi-chunk datasets of every width, deflate off and on, read in one batch from a file opened
  // read-only (as the archive opens its files) and from one still open for writing: every chunk
  // read with pread outside the lock, decoded and equal to what was written. A byte read from
  // the wrong place fails the chunk's checksum, which leaves direct() false.
  TempDir dir;
  const fs::path file = dir / "x.h5";
  std::mt19937_64 rng(7);
  struct Case {
    std::string name;
    std::vector<uint64_t> values;
  };
  std::vector<Case> cases;
  {
    h5::File f = h5::create_file(file);
    for (int deflate : {0, 6})
      for (h5::Width store : {h5::Width::kU8, h5::Width::kU16, h5::Width::kU32, h5::Width::kU64}) {
        const uint64_t es = static_cast<uint64_t>(store);
        // Two and a half chunks (1 MiB each), or one element past a chunk for the widest.
        const uint64_t n = es == 8 ? h5::kMaxChunkBytes / es + 1 : 5 * h5::kMaxChunkBytes / es / 2;
        const uint64_t max = es == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * es)) - 1;
        std::vector<uint64_t> v(n);
        for (uint64_t i = 0; i < n; ++i) v[i] = (i % 3 == 0 ? i : rng()) & max;
        Case c{"d" + std::to_string(deflate) + "_w" + std::to_string(es), std::move(v)};
        h5::write_array(f.id(), c.name, std::span<const uint64_t>(c.values), store, {deflate});
        cases.push_back(std::move(c));
      }
    f.close();
  }
  auto read_all = [&](h5::Id loc, bool expect_unlocked) {
    std::vector<std::vector<uint64_t>> got(cases.size());
    std::vector<uint32_t> narrow;  // the u16 dataset widened to u32
    h5::BatchRead batch(3);
    for (size_t i = 0; i < cases.size(); ++i) batch.add(loc, cases[i].name, got[i]);
    const size_t narrow_i = batch.add(loc, cases[1].name, narrow);
    batch.run();
    for (size_t i = 0; i <= narrow_i; ++i) {
      SCOPED_TRACE(i < narrow_i ? cases[i].name : "u16 as u32");
      EXPECT_TRUE(batch.direct(i));
      EXPECT_EQ(batch.unlocked(i), expect_unlocked);
      batch.finish(i);
    }
    for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(got[i], cases[i].values) << cases[i].name;
    ASSERT_EQ(cases[1].name, "d0_w2");
    EXPECT_TRUE(
        std::equal(narrow.begin(), narrow.end(), cases[1].values.begin(), cases[1].values.end()));
  };
  {
    h5::File f = h5::open_file(file);
    read_all(f.id(), true);
    ScopedEnv locked("GTADOC_H5_LOCKED_READ", "1");
    read_all(f.id(), false);
  }
  {
    h5::File f = h5::open_file(file, /*writable=*/true);
    read_all(f.id(), true);
  }
  EXPECT_EQ(h5::open_object_count(), 0);
  // The same file behind a 512-byte user block (HDF5 finds the superblock there and counts every
  // address from it): the chunks are read at their addresses plus the user block.
  const fs::path shifted = dir / "shifted.h5";
  write_file(shifted, std::string(512, '\0') + read_file(file));
  {
    h5::File f = h5::open_file(shifted);
    read_all(f.id(), true);
  }
}

TEST(BatchRead, PreadPathKeepsTheChecksumError) {
  // A flipped byte in a chunk's stored bytes, deflate off and on: read whole with pread, the
  // chunk fails its checksum and H5Dread reports it, as when HDF5 read the chunks.
  for (int deflate : {0, 6}) {
    SCOPED_TRACE("deflate " + std::to_string(deflate));
    TempDir dir;
    const fs::path file = dir / "x.h5";
    std::vector<uint32_t> v(3 * h5::kMaxChunkBytes / 4);  // 3 chunks
    std::mt19937_64 rng(3);
    for (auto& x : v) x = static_cast<uint32_t>(rng() % 100000);
    {
      h5::File f = h5::create_file(file);
      h5::write_array(f.id(), "v", std::span<const uint32_t>(v), h5::Width::kU32, {deflate});
      f.close();
    }
    // The chunks fill all but a few KiB of the file: its middle byte is in one of them.
    std::string bytes = read_file(file);
    ASSERT_GT(bytes.size(), v.size() * 4 / (deflate ? 4 : 1));
    bytes[bytes.size() / 2] ^= 0x08;
    write_file(file, bytes);
    h5::File f = h5::open_file(file);
    const BatchResult fast = batch_result(f.id(), "v");
    EXPECT_TRUE(fast.unlocked);
    EXPECT_FALSE(fast.direct);
    EXPECT_EQ(fast.error, "dataset /v: checksum mismatch (corrupted data)");
    ScopedEnv locked("GTADOC_H5_LOCKED_READ", "1");
    const BatchResult slow = batch_result(f.id(), "v");
    EXPECT_FALSE(slow.unlocked);
    EXPECT_FALSE(slow.direct);
    EXPECT_EQ(slow.error, fast.error);
  }
}

TEST(BatchRead, FileTruncatedInAChunkGivesHdf5sError) {
  TempDir dir;
  const fs::path file = dir / "x.h5";
  std::vector<uint32_t> v(3 * h5::kMaxChunkBytes / 4);  // 3 chunks of 1 MiB, stored raw
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint32_t>(i * 2654435761u);
  {
    h5::File f = h5::create_file(file);
    h5::write_array(f.id(), "v", std::span<const uint32_t>(v), h5::Width::kU32, {0});
    f.close();
  }
  const std::string bytes = read_file(file);
  // Where the second chunk's values are stored: cut the file in its middle.
  const std::string pattern(reinterpret_cast<const char*>(v.data() + 3 * v.size() / 6), 16);
  const size_t cut = bytes.find(pattern);
  ASSERT_NE(cut, std::string::npos);
  // Truncated before it is opened: HDF5 refuses to open it, as before.
  const fs::path short_file = dir / "short.h5";
  write_file(short_file, bytes.substr(0, cut));
  try {
    h5::open_file(short_file);
    ADD_FAILURE() << "truncated file opened";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("cannot open (not an HDF5 file, truncated or unreadable)", 0),
        0u)
        << e.what();
  }
  // Truncated while open (another process rewriting it): pread comes short of the second chunk,
  // and H5Dread in finish() says what HDF5 says, as when H5Dread_chunk read the chunks.
  h5::File f = h5::open_file(file);
  ASSERT_EQ(batch_result(f.id(), "v").values, std::vector<uint64_t>(v.begin(), v.end()));
  fs::resize_file(file, cut);
  const BatchResult fast = batch_result(f.id(), "v");
  EXPECT_FALSE(fast.unlocked);
  EXPECT_FALSE(fast.direct);
  std::string slow_error;
  {
    ScopedEnv locked("GTADOC_H5_LOCKED_READ", "1");
    const BatchResult slow = batch_result(f.id(), "v");
    EXPECT_FALSE(slow.unlocked);
    EXPECT_FALSE(slow.direct);
    slow_error = slow.error;
  }
  EXPECT_EQ(fast.error, slow_error);
  EXPECT_EQ(fast.error, "dataset /v: checksum mismatch (corrupted data)");
}

TEST(BatchRead, FletcherOfOddAndEvenLengths) {
  // HDF5's sums over big-endian 16-bit words, small cases worked by hand.
  const unsigned char one[] = {0x01};
  const unsigned char two[] = {0x01, 0x02};
  const unsigned char three[] = {0x01, 0x02, 0x03};
  EXPECT_EQ(h5::fletcher32(one, 0), 0u);
  EXPECT_EQ(h5::fletcher32(one, 1), (0x0100u << 16) | 0x0100u);
  EXPECT_EQ(h5::fletcher32(two, 2), (0x0102u << 16) | 0x0102u);
  // sum1 = 0x0102 + 0x0300 = 0x0402; sum2 = 0x0102 + 0x0402 = 0x0504.
  EXPECT_EQ(h5::fletcher32(three, 3), (0x0504u << 16) | 0x0402u);
  // Reductions: 1000 words of 0xffff keep both sums within 16 bits.
  std::vector<unsigned char> ff(2000, 0xff);
  const uint32_t sum = h5::fletcher32(ff.data(), ff.size());
  EXPECT_LE(sum & 0xffff, 0xffffu);
  EXPECT_EQ((sum & 0xffff) % 0xffff, 0u);  // 1000 * 0xffff = 0 mod 65535
}

// HDF5's checksum loop as its source writes it (sums folded every 360 words), against which the
// blocked one must agree on every length, alignment and content: zeros (sums of 0), all 0xff
// (sums that are multiples of 65535), sparse and random bytes, blocks of 2048 words and ragged
// ends.
uint32_t hdf5_fletcher32(const unsigned char* data, size_t bytes) {
  size_t len = bytes / 2;
  uint32_t sum1 = 0, sum2 = 0;
  while (len) {
    size_t tlen = len > 360 ? 360 : len;
    len -= tlen;
    do {
      sum1 += (uint32_t{data[0]} << 8) | uint32_t{data[1]};
      data += 2;
      sum2 += sum1;
    } while (--tlen);
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (bytes % 2) {
    sum1 += uint32_t{*data} << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return (sum2 << 16) | sum1;
}

TEST(BatchRead, FletcherAgreesWithHdf5sLoop) {
  std::mt19937_64 rng(9);
  for (int t = 0; t < 20000; ++t) {
    const size_t n = rng() % (t < 500 ? 40 : t < 700 ? 70000 : 9000);
    std::vector<unsigned char> v(n + 1);
    const int content = static_cast<int>(rng() % 4);
    for (unsigned char& x : v)
      x = content == 0   ? 0
          : content == 1 ? 0xff
          : content == 2 ? (rng() % 9 == 0 ? static_cast<unsigned char>(rng()) : 0)
                         : static_cast<unsigned char>(rng());
    const unsigned char* d = v.data() + (t & 1);  // unaligned as well
    ASSERT_EQ(h5::fletcher32(d, n), hdf5_fletcher32(d, n)) << n << " bytes, content " << content;
  }
}

// ------------------------------------------------------------------------------------ grammar

// A random acyclic raw grammar (tests/testutil/grammars.h), one symbol in three a rule.
RawGrammar random_raw(uint32_t num_words, uint32_t num_docs, uint32_t num_rules,
                      uint32_t max_segment, uint64_t seed) {
  testutil::RandomGrammarOptions o;
  o.rule_one_in = 3;
  o.boundary_stride = 7;
  o.boundary_offset = 3;
  return testutil::random_raw_grammar(num_words, num_docs, num_rules, max_segment, seed, o);
}

// The message of validate_grammar on `threads` threads, or "" when it accepts.
std::string validation(const ShardGrammar& g, unsigned threads) {
  return testutil::validation_message(g, threads);
}

TEST(ParallelValidate, AgreesWithTheSequentialChecksOnEveryMutation) {
  const uint32_t V = 3000;
  const ShardGrammar good = finalize_grammar(V, 5, 40, random_raw(V, 40, 30000, 3000, 17));
  ASSERT_GT(good.symbols.size(), uint64_t{1} << 17);  // large enough for the parallel checks
  ASSERT_GT(good.num_levels(), 3u);
  EXPECT_EQ(validation(good, 1), "");
  EXPECT_EQ(validation(good, 4), "");
  EXPECT_EQ(validation(good, 0), "");
  // The parallel checks themselves accept it (not only the sequential fallback).
  EXPECT_TRUE(detail::grammar_valid_in_parallel(good, 1));
  EXPECT_TRUE(detail::grammar_valid_in_parallel(good, 3));

  std::mt19937_64 rng(99);
  const std::vector<testutil::GrammarMutation> mutations = testutil::grammar_mutations(good, rng);
  for (auto& [name, mutate] : mutations) {
    for (int trial = 0; trial < 4; ++trial) {
      ShardGrammar g = good;
      mutate(g);
      const std::string sequential = validation(g, 1);
      SCOPED_TRACE(name + " (trial " + std::to_string(trial) + "): " + sequential);
      EXPECT_NE(sequential, "") << "mutation not detected at all";
      EXPECT_FALSE(detail::grammar_valid_in_parallel(g, 1));
      EXPECT_FALSE(detail::grammar_valid_in_parallel(g, 4));
      EXPECT_EQ(validation(g, 4), sequential);
      EXPECT_EQ(validation(g, 2), sequential);
    }
  }
}

// The frame checks (check_grammar_frame) accept every valid grammar; a mutation they reject gets
// the sequential checks' message, and the mutations of the bodies alone pass them (the GPU
// engine's load checks those on the device: tests/worker/gpu_checks_test.cpp).
TEST(FrameChecks, RejectWithTheSequentialMessageAndPassBodyMutations) {
  const uint32_t V = 3000;
  const ShardGrammar good = finalize_grammar(V, 5, 40, random_raw(V, 40, 30000, 3000, 17));
  EXPECT_NO_THROW(check_grammar_frame(good, "g"));
  for (uint64_t seed = 1; seed <= 20; ++seed) {  // small and degenerate ones too
    const uint32_t v = 1 + static_cast<uint32_t>(seed % 5);
    const ShardGrammar small =
        finalize_grammar(v, 0, 1 + seed % 4,
                         random_raw(v, 1 + seed % 4, static_cast<uint32_t>(seed % 7),
                                    static_cast<uint32_t>(seed % 9), seed));
    EXPECT_NO_THROW(check_grammar_frame(small, "g")) << seed;
  }
  const std::vector<std::string> frame_mutations = {"duplicate boundary id",
                                                    "root uses",
                                                    "level offsets decrease",
                                                    "doc offset",
                                                    "doc offsets swapped",
                                                    "last doc offset",
                                                    "empty body",
                                                    "offsets decrease"};
  const std::vector<std::string> body_mutations = {"symbol to a word",
                                                   "forward reference",
                                                   "self reference",
                                                   "root references itself",
                                                   "reference past the rules",
                                                   "boundary in a rule",
                                                   "extra boundary in the root",
                                                   "a local word used nowhere",
                                                   "rule_length",
                                                   "root rule_length",
                                                   "rule_uses",
                                                   "rule_uses wraps",
                                                   "level boundary moved",
                                                   "level boundary moved down",
                                                   "extra level",
                                                   "length overflows"};
  std::mt19937_64 rng(7);
  for (auto& [name, mutate] : testutil::grammar_mutations(good, rng)) {
    const bool frame = std::count(frame_mutations.begin(), frame_mutations.end(), name) != 0;
    ASSERT_TRUE(frame || std::count(body_mutations.begin(), body_mutations.end(), name) != 0)
        << name << ": list it as a frame or a body mutation";
    for (int trial = 0; trial < 4; ++trial) {
      ShardGrammar g = good;
      mutate(g);
      const std::string sequential = validation(g, 1);
      SCOPED_TRACE(name + " (trial " + std::to_string(trial) + "): " + sequential);
      std::string got;
      try {
        check_grammar_frame(g, "g");
      } catch (const InputError& e) {
        got = e.what();
      }
      EXPECT_EQ(got, frame ? sequential : "");
    }
  }
}

TEST(ParallelValidate, SmallAndDegenerateGrammars) {
  // Below the size where validate_grammar uses them, the parallel checks still agree.
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const uint32_t V = 1 + static_cast<uint32_t>(seed % 5);
    ShardGrammar g = finalize_grammar(V, 0, 1 + seed % 4,
                                      random_raw(V, 1 + seed % 4, static_cast<uint32_t>(seed % 7),
                                                 static_cast<uint32_t>(seed % 9), seed));
    EXPECT_TRUE(detail::grammar_valid_in_parallel(g, 2)) << seed;
  }
  RawGrammar empty_root;
  empty_root.offsets = {0, 0};
  EXPECT_TRUE(detail::grammar_valid_in_parallel(finalize_grammar(0, 0, 1, empty_root), 2));
  ShardGrammar bad = finalize_grammar(0, 0, 1, empty_root);
  bad.level_offsets = {0, 0, 1};
  EXPECT_FALSE(detail::grammar_valid_in_parallel(bad, 2));
  EXPECT_NE(validation(bad, 1), "");
}

TEST(ParallelValidate, ShardReadsAcrossThreadCountsAgree) {
  TempDir dir;
  const uint32_t V = 2000;
  ShardGrammar g = finalize_grammar(V, 0, 12, random_raw(V, 12, 40000, 8000, 3));
  ShardLayout layout;
  const Manifest m = testutil::write_one_shard(dir.path(), g, V, &layout);
  ShardGrammar back = read_shard_grammar(dir.path(), m, 0);
  EXPECT_EQ(back.symbols, g.symbols);
  EXPECT_EQ(back.rule_offsets, g.rule_offsets);
  EXPECT_EQ(back.rule_length, g.rule_length);
  EXPECT_EQ(back.rule_uses, g.rule_uses);
  EXPECT_EQ(back.level_offsets, g.level_offsets);
  EXPECT_EQ(back.doc_root_offsets, g.doc_root_offsets);
  EXPECT_EQ(read_shard_layout(dir.path(), m, 0).gaps, layout.gaps);
  // A read that checks only the frame reads the same grammar.
  const ShardGrammar framed =
      read_shard_grammar(dir.path(), m, 0, 2, nullptr, GrammarChecks::kFrame);
  EXPECT_EQ(framed.symbols, g.symbols);
  EXPECT_EQ(framed.rule_length, g.rule_length);
  EXPECT_EQ(framed.local_words, g.local_words);
}

/// Reads of several shard files from several threads at once (h5::BatchRead lets the process's
/// HDF5 lock go while it touches its buffers and decodes, so one read's HDF5 calls run during
/// another's decoding), with one thread holding the lock twice (nested h5::Lock) around its reads:
/// every read equals the serial one, and a corrupt shard's error stays with its own read.
TEST(ParallelValidate, ConcurrentShardReadsAgreeWithSerialOnes) {
  TempDir dir;
  const uint32_t V = 3000;
  constexpr uint32_t kShards = 4;
  Manifest m;
  m.archive_id = 7;
  for (uint32_t w = 0; w < V; ++w) m.dict.push_back("w" + std::to_string(100000 + w));
  std::vector<ShardGrammar> written;
  uint32_t first_doc = 0;
  for (uint32_t s = 0; s < kShards; ++s) {
    ShardGrammar g =
        finalize_grammar(V, first_doc, 10, random_raw(V, 10, 30000 + 5000 * s, 6000, 5 + s));
    ShardLayout layout;
    layout.ws_dict = {" "};
    layout.gaps.assign(g.rule_length[g.root()] + g.num_docs, 0);
    write_shard_file(dir / shard_file_name(s), 7, s, g, layout, {4});
    ShardEntry e;
    e.first_doc = first_doc;
    e.num_docs = g.num_docs;
    e.words = g.rule_length[g.root()];
    e.rules = g.num_rules();
    e.symbols = g.symbols.size();
    e.depth = dag_depth(g);
    m.shards.push_back(e);
    first_doc += g.num_docs;
    written.push_back(std::move(g));
  }
  // Shard 3 corrupt: a byte of its symbols flipped (the checksum fails, HDF5's own read reports).
  {
    const fs::path f = dir / shard_file_name(3);
    std::string bytes = read_file(f);
    bytes[bytes.size() / 2] ^= 0x55;
    write_file(f, bytes);
  }
  std::string serial_error;
  try {
    read_shard_grammar(dir.path(), m, 3);
  } catch (const InputError& e) {
    serial_error = e.what();
  }
  EXPECT_NE(serial_error, "");  // the flipped byte is caught
  constexpr int kThreads = 6, kRounds = 4;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::optional<h5::Lock> outer;  // thread 0 holds the lock around its reads (nested)
      if (t == 0) outer.emplace();
      for (int r = 0; r < kRounds; ++r)
        for (uint32_t k = 0; k < kShards; ++k) {
          const uint32_t s = (k + static_cast<uint32_t>(t)) % kShards;
          try {
            ShardGrammar back = read_shard_grammar(dir.path(), m, s);
            if (s == 3) {
              if (!serial_error.empty()) failures[t] += "shard 3 read without its error; ";
              continue;
            }
            if (back.symbols != written[s].symbols ||
                back.rule_offsets != written[s].rule_offsets ||
                back.level_offsets != written[s].level_offsets ||
                back.doc_root_offsets != written[s].doc_root_offsets)
              failures[t] += "shard " + std::to_string(s) + " differs; ";
          } catch (const InputError& e) {
            if (s != 3 || e.what() != serial_error)
              failures[t] += "shard " + std::to_string(s) + ": " + e.what() + "; ";
          }
        }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

}  // namespace
}  // namespace gtadoc
