// Tests of the HDF5 archive files (formats/archive.h, formats/h5.h): exact round trips of the
// manifest and of shard files, and one-line InputErrors for corrupted, truncated, foreign,
// mixed and future-version files.
#include "formats/archive.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "formats/chunk_maps.h"
#include "formats/h5.h"
#include "tests/testutil/corpus.h"
#include "tests/testutil/grammars.h"
#include "tests/testutil/string_tables.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;
using testutil::read_file;
using testutil::TempDir;
using testutil::write_file;

// ------------------------------------------------------------------------------------ helpers

// A random acyclic grammar in Sequitur's raw form (tests/testutil/grammars.h); `empty_doc` (if
// < num_docs) gets an empty segment.
RawGrammar random_raw_grammar(uint32_t num_words, uint32_t num_docs, uint32_t num_rules,
                              uint32_t max_segment, uint64_t seed, uint32_t empty_doc = ~0u) {
  testutil::RandomGrammarOptions o;
  o.empty_doc = empty_doc;
  return testutil::random_raw_grammar(num_words, num_docs, num_rules, max_segment, seed, o);
}

ShardGrammar random_grammar(uint32_t num_words, DocId first_doc, uint32_t num_docs,
                            uint32_t num_rules, uint32_t max_segment, uint64_t seed,
                            uint32_t empty_doc = ~0u) {
  return finalize_grammar(
      num_words, first_doc, num_docs,
      random_raw_grammar(num_words, num_docs, num_rules, max_segment, seed, empty_doc));
}

ShardLayout random_layout(const ShardGrammar& g, uint32_t ws_entries, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ShardLayout layout;
  layout.ws_dict = {"", " ", "\n", "\r\n", std::string("\t \0\xff", 4)};
  for (uint32_t i = static_cast<uint32_t>(layout.ws_dict.size()); i < ws_entries; ++i)
    layout.ws_dict.push_back(std::string(1 + i % 7, ' ') + std::string(i / 7, '\t'));
  layout.ws_dict.resize(ws_entries);
  const uint64_t gaps = g.rule_length[g.root()] + g.num_docs;
  for (uint64_t i = 0; i < gaps; ++i)
    layout.gaps.push_back(static_cast<uint32_t>(rng() % layout.ws_dict.size()));
  return layout;
}

ShardEntry entry_of(const ShardGrammar& g) {
  ShardEntry e;
  e.first_doc = g.first_doc;
  e.num_docs = g.num_docs;
  e.words = g.rule_length[g.root()];
  e.input_bytes = e.words * 3;
  e.rules = g.num_rules();
  e.symbols = g.symbols.size();
  e.depth = dag_depth(g);
  return e;
}

Dictionary numbered_dictionary(uint32_t size) {
  Dictionary dict;
  char buf[32];
  for (uint32_t w = 0; w < size; ++w) {
    std::snprintf(buf, sizeof buf, "w%07u", w);
    dict.push_back(buf);
  }
  return dict;
}

// A manifest consistent with `shards` (documents "doc-0000000", ... spread evenly over words).
Manifest manifest_for(uint64_t archive_id, uint32_t num_words,
                      const std::vector<ShardGrammar>& shards) {
  Manifest m;
  m.archive_id = archive_id;
  m.dict = numbered_dictionary(num_words);
  char buf[32];
  for (uint32_t s = 0; s < shards.size(); ++s) {
    ShardEntry e = entry_of(shards[s]);
    for (uint32_t d = 0; d < e.num_docs; ++d) {
      std::snprintf(buf, sizeof buf, "doc-%07zu", m.docs.size());
      DocEntry doc{0, 0, s};
      if (d == 0) doc = DocEntry{e.input_bytes, e.words, s};
      m.docs.push_back(doc);
      m.doc_names.push_back(buf);
    }
    m.shards.push_back(e);
  }
  return m;
}

void expect_same_grammar(const ShardGrammar& a, const ShardGrammar& b) {
  EXPECT_EQ(a.num_words, b.num_words);
  EXPECT_EQ(a.local_words, b.local_words);
  EXPECT_EQ(a.first_doc, b.first_doc);
  EXPECT_EQ(a.num_docs, b.num_docs);
  EXPECT_EQ(a.rule_offsets, b.rule_offsets);
  EXPECT_EQ(a.symbols, b.symbols);
  EXPECT_EQ(a.level_offsets, b.level_offsets);
  EXPECT_EQ(a.rule_length, b.rule_length);
  EXPECT_EQ(a.rule_uses, b.rule_uses);
  EXPECT_EQ(a.doc_root_offsets, b.doc_root_offsets);
}

void expect_same_manifest(const Manifest& a, const Manifest& b) {
  EXPECT_EQ(a.format_version, b.format_version);
  EXPECT_EQ(a.archive_id, b.archive_id);
  EXPECT_EQ(a.dict.bytes(), b.dict.bytes());
  EXPECT_EQ(a.dict.offsets(), b.dict.offsets());
  ASSERT_EQ(a.docs.size(), b.docs.size());
  for (size_t d = 0; d < a.docs.size(); ++d) {
    EXPECT_EQ(a.doc_names[d], b.doc_names[d]) << d;
    EXPECT_EQ(a.docs[d].bytes, b.docs[d].bytes) << d;
    EXPECT_EQ(a.docs[d].words, b.docs[d].words) << d;
    EXPECT_EQ(a.docs[d].shard, b.docs[d].shard) << d;
  }
  ASSERT_EQ(a.shards.size(), b.shards.size());
  for (size_t s = 0; s < a.shards.size(); ++s) {
    const ShardEntry &x = a.shards[s], &y = b.shards[s];
    EXPECT_EQ(x.first_doc, y.first_doc);
    EXPECT_EQ(x.num_docs, y.num_docs);
    EXPECT_EQ(x.input_bytes, y.input_bytes);
    EXPECT_EQ(x.words, y.words);
    EXPECT_EQ(x.rules, y.rules);
    EXPECT_EQ(x.symbols, y.symbols);
    EXPECT_EQ(x.depth, y.depth);
    EXPECT_EQ(x.file_bytes, y.file_bytes);
  }
}

// Waits for a deferred read of `table` to end, with its words or with its error (left for the
// test to see at its next access): the HDF5 objects it holds are closed then.
void wait_for_read(const Dictionary& table) {
  try {
    (void)table.bytes();
  } catch (const InputError&) {
  }
}

// Runs `body`, which must throw an InputError whose one-line message contains every `parts`.
void expect_input_error(const std::function<void()>& body,
                        std::initializer_list<std::string> parts) {
  const int64_t open_before = h5::open_object_count();
  try {
    body();
    ADD_FAILURE() << "no exception thrown";
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const std::string& p : parts) EXPECT_NE(what.find(p), std::string::npos) << what;
    EXPECT_EQ(h5::open_object_count(), open_before) << "HDF5 objects left open after: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception: " << e.what();
  }
}

// Writes a small valid one-shard archive (manifest + shard 0) into `dir`.
struct SmallArchive {
  ShardGrammar grammar;
  ShardLayout layout;
  Manifest manifest;
  explicit SmallArchive(uint64_t archive_id, uint64_t seed = 7) {
    grammar = random_grammar(500, 0, 4, 300, 400, seed);
    layout = random_layout(grammar, 5, seed);
    manifest = manifest_for(archive_id, 500, {grammar});
  }
  SmallArchive(const fs::path& dir, uint64_t archive_id, int deflate, uint64_t seed = 7)
      : SmallArchive(archive_id, seed) {
    write_shard_file(dir / shard_file_name(0), archive_id, 0, grammar, layout, {deflate});
    manifest.shards[0].file_bytes = fs::file_size(dir / shard_file_name(0));
    write_manifest_file(dir / kManifestFile, manifest, {deflate});
  }
};

void flip_byte(const fs::path& file, size_t pos) {
  std::string bytes = read_file(file);
  ASSERT_LT(pos, bytes.size());
  bytes[pos] = static_cast<char>(bytes[pos] ^ 0x5a);
  write_file(file, bytes);
}

// ------------------------------------------------------------------------------------ round trips

TEST(Archive, ShardFileNames) {
  EXPECT_EQ(shard_file_name(0), "shard-00000.h5");
  EXPECT_EQ(shard_file_name(42), "shard-00042.h5");
  EXPECT_EQ(shard_file_name(123456), "shard-123456.h5");
}

class ArchiveDeflate : public testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Levels, ArchiveDeflate, testing::Values(0, 6));

TEST_P(ArchiveDeflate, ManifestRoundTripWithOddBytes) {
  TempDir dir;
  Manifest m;
  m.archive_id = 0xfedcba9876543210ull;
  for (std::string w :
       {std::string("\0", 1), std::string("\0a", 2), std::string("A"),
        std::string("a\x01"
                    "b"),
        std::string("ab"), std::string("abc"), std::string("abd"), std::string("line\x7f"),
        std::string("z"), std::string("\xff\xfe_invalid_utf8", 16)})
    m.dict.push_back(w);
  ASSERT_TRUE(m.dict.is_sorted_unique());
  m.docs = {{0, 0, 0}, {10, 3, 0}, {5, 1, 1}, {0, 0, 1}, {7, 2, 1}};
  for (const std::string& name :
       {std::string("\x01"),
        std::string("a\x01"
                    "b"),
        std::string("dir/file\twith tab"), std::string("new\nline"), std::string("\xff\xff", 2)})
    m.doc_names.push_back(name);
  m.shards = {{0, 2, 10, 3, 4, 9, 1, 1234}, {2, 3, 12, 3, 2, 5, 0, 999}};
  write_manifest_file(dir / kManifestFile, m, {GetParam()});
  Manifest back = read_manifest(dir.path());
  expect_same_manifest(m, back);

  // Root attributes: totals, and archive_bytes = shard files + the manifest itself.
  h5::File f = h5::open_file(dir / kManifestFile);
  EXPECT_EQ(h5::read_string_attr(f.id(), "format"), "gtadoc-archive");
  EXPECT_EQ(h5::read_uint_attr(f.id(), "format_version"), kFormatVersion);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "archive_id"), m.archive_id);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "documents"), 5u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "words"), 6u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "input_bytes"), 22u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "vocabulary"), 10u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "shards"), 2u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "rules"), 6u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "symbols"), 14u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "max_depth"), 1u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "archive_bytes"),
            1234u + 999u + fs::file_size(dir / kManifestFile));
}

TEST_P(ArchiveDeflate, LargeRandomDictionary) {
  TempDir dir;
  std::mt19937_64 rng(5);
  std::vector<std::string> words;
  for (int i = 0; i < 200000; ++i) {
    std::string w(1 + rng() % 12, '\0');  // a word is never empty
    for (char& c : w) c = "abc\0\xff"[rng() % 5];
    words.push_back(w);
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  Manifest m;
  m.archive_id = 3;
  for (const std::string& w : words) m.dict.push_back(w);
  write_manifest_file(dir / kManifestFile, m, {GetParam()});
  Manifest back = read_manifest(dir.path());
  EXPECT_EQ(back.dict.bytes(), m.dict.bytes());
  EXPECT_EQ(back.dict.offsets(), m.dict.offsets());
}

TEST_P(ArchiveDeflate, EmptyManifestTables) {
  TempDir dir;
  Manifest m;
  m.archive_id = 1;
  write_manifest_file(dir / kManifestFile, m, {GetParam()});
  Manifest back = read_manifest(dir.path());
  expect_same_manifest(m, back);
  EXPECT_EQ(back.dict.size(), 0u);
}

TEST_P(ArchiveDeflate, ShardRoundTrip) {
  TempDir dir;
  // Document 1 is empty; 300 whitespace entries need 16-bit gap ids.
  ShardGrammar g = random_grammar(1000, 17, 5, 200, 500, 11, /*empty_doc=*/1);
  ShardLayout layout = random_layout(g, 300, 12);
  Manifest m;  // the shard readers use the dictionary size and the shard table only
  m.archive_id = 99;
  m.dict = numbered_dictionary(1000);
  m.shards = {ShardEntry{0, 17, 0, 0, 1, 0, 0, 0}, entry_of(g)};  // shard 0 is not read here
  write_shard_file(dir / shard_file_name(1), 99, 1, g, layout, {GetParam()});
  ShardGrammar back = read_shard_grammar(dir.path(), m, 1);
  expect_same_grammar(g, back);
  ShardLayout lb = read_shard_layout(dir.path(), m, 1);
  EXPECT_EQ(lb.ws_dict, layout.ws_dict);
  EXPECT_EQ(lb.gaps, layout.gaps);

  // Every dataset is chunked and checksummed; integers are shuffled and deflated on request,
  // but the symbols, packed to the bits their largest value needs.
  h5::File f = h5::open_file(dir / shard_file_name(1));
  std::vector<std::string> names = h5::list_datasets(f.id());
  EXPECT_EQ(names.size(), 10u);
  for (const std::string& name : names) {
    h5::DatasetInfo info = h5::dataset_info(f.id(), name);
    EXPECT_TRUE(info.is_unsigned_integer) << name;
    EXPECT_GT(info.chunk, 0u) << name;
    EXPECT_LE(info.chunk * info.element_bytes, h5::kMaxChunkBytes) << name;
    EXPECT_TRUE(info.fletcher32) << name;
    const bool packed = name == "/grammar/symbols";
    EXPECT_EQ(info.nbit > 0, packed) << name;
    EXPECT_EQ(info.deflate, GetParam() > 0 && !packed) << name;
    EXPECT_EQ(info.shuffle, GetParam() > 0 && !packed && info.element_bytes > 1) << name;
  }
  // Words, rules, then the boundaries (V + R + i): the bits of the largest.
  const uint64_t boundaries = g.num_docs - 1;
  EXPECT_EQ(h5::dataset_info(f.id(), "/grammar/symbols").nbit,
            std::bit_width(g.num_words + g.num_rules() + boundaries - 1));
  EXPECT_EQ(h5::dataset_info(f.id(), "/layout/gaps").element_bytes, 2u);
  EXPECT_EQ(h5::dataset_info(f.id(), "/grammar/symbols").element_bytes, 4u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "shard"), 1u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "first_doc"), 17u);
  EXPECT_EQ(h5::read_uint_attr(f.id(), "num_docs"), 5u);
  // The shard's own vocabulary: its size, and its words as dictionary ids.
  EXPECT_EQ(h5::read_uint_attr(f.id(), "num_words"), g.num_words);
  EXPECT_LT(g.num_words, 1000u);
  EXPECT_EQ(h5::read_array<uint32_t>(f.id(), "/grammar/local_words"), g.local_words);
}

TEST_P(ArchiveDeflate, SameContentGivesIdenticalFiles) {
  TempDir one, two;
  SmallArchive a(one.path(), 9, GetParam());
  SmallArchive b(two.path(), 9, GetParam());
  EXPECT_EQ(read_file(one / shard_file_name(0)), read_file(two / shard_file_name(0)));
  EXPECT_EQ(read_file(one / kManifestFile), read_file(two / kManifestFile));
}

TEST_P(ArchiveDeflate, ShardWithoutWords) {
  TempDir dir;
  // One empty document: the root is empty, as are symbols, segments' contents and the layout
  // holds a single gap.
  RawGrammar raw;
  raw.offsets = {0, 0};
  ShardGrammar g = finalize_grammar(0, 0, 1, raw);
  ASSERT_EQ(g.symbols.size(), 0u);
  ShardLayout layout;
  layout.ws_dict = {""};
  layout.gaps = {0};
  Manifest m = manifest_for(5, 0, {g});
  write_shard_file(dir / shard_file_name(0), 5, 0, g, layout, {GetParam()});
  expect_same_grammar(g, read_shard_grammar(dir.path(), m, 0));
  ShardLayout lb = read_shard_layout(dir.path(), m, 0);
  EXPECT_EQ(lb.ws_dict, layout.ws_dict);
  EXPECT_EQ(lb.gaps, layout.gaps);
  h5::File f = h5::open_file(dir / shard_file_name(0));
  h5::DatasetInfo info = h5::dataset_info(f.id(), "/grammar/symbols");
  EXPECT_EQ(info.size, 0u);
  EXPECT_TRUE(info.fletcher32);
}

TEST_P(ArchiveDeflate, LargeShardSpansSeveralChunks) {
  TempDir dir;
  ShardGrammar g = random_grammar(50000, 0, 3, 120000, 200000, 21);
  ASSERT_GT(g.symbols.size() * sizeof(Symbol), 2 * h5::kMaxChunkBytes);
  ShardLayout layout = random_layout(g, 40, 22);
  Manifest m = manifest_for(77, 50000, {g});
  const fs::path file = dir / shard_file_name(0);
  write_shard_file(file, 77, 0, g, layout, {GetParam()});
  expect_same_grammar(g, read_shard_grammar(dir.path(), m, 0));
  EXPECT_EQ(read_shard_layout(dir.path(), m, 0).gaps, layout.gaps);
  {
    h5::File f = h5::open_file(file);
    h5::DatasetInfo info = h5::dataset_info(f.id(), "/grammar/symbols");
    EXPECT_EQ(info.chunk, h5::kMaxChunkBytes / 4);
    EXPECT_EQ(h5::dataset_info(f.id(), "/layout/gaps").element_bytes, 1u);
  }
  // Size characteristics (informational): random symbols are close to incompressible.
  std::cout << "[ size     ] deflate " << GetParam() << ": " << g.symbols.size() << " symbols, "
            << g.num_rules() << " rules, " << layout.gaps.size() << " gaps -> "
            << fs::file_size(file) << " bytes\n";
}

// ------------------------------------------------------------------------------------ failures

TEST(ArchiveErrors, FletcherChecksumDetectsFlippedSymbol) {
  TempDir dir;
  SmallArchive a(dir.path(), 3, /*deflate=*/0);
  // A byte in the middle of the symbols' first stored (packed) chunk flipped.
  const fs::path file = dir / shard_file_name(0);
  ASSERT_GE(a.grammar.symbols.size(), 8u);
  uint64_t pos = 0;
  {
    h5::Lock lock;
    h5::File f = h5::open_file(file);
    h5::Group g = h5::open_group(f.id(), "grammar");
    std::optional<h5::ChunkMap> map = h5::chunk_map(g.id(), "symbols");
    ASSERT_TRUE(map.has_value());
    ASSERT_GT(map->bits, 0u);
    pos = map->offsets[0] + map->sizes[0] / 2;
  }
  flip_byte(file, pos);
  expect_input_error([&] { read_shard_grammar(dir.path(), a.manifest, 0); },
                     {file.string() + ": ", "/grammar/symbols", "checksum mismatch", "corrupted"});
  // The layout lives in other datasets of the same file and still reads.
  EXPECT_EQ(read_shard_layout(dir.path(), a.manifest, 0).gaps, a.layout.gaps);
}

TEST(ArchiveErrors, FletcherChecksumDetectsFlippedNameByte) {
  TempDir dir;
  SmallArchive a(dir.path(), 3, /*deflate=*/0);
  const fs::path file = dir / kManifestFile;
  std::string bytes = read_file(file);
  size_t pos = bytes.find("doc-0000001doc-0000002");
  ASSERT_NE(pos, std::string::npos);
  flip_byte(file, pos + 3);
  expect_input_error([&] { read_manifest(dir.path()); },
                     {file.string() + ": ", "/documents/name_bytes", "checksum mismatch"});
}

// Flipping any byte of a shard file must either be detected (InputError) or leave what is read
// unchanged (the byte was unused): never a crash or silently different data.
TEST(ArchiveErrors, EverySingleByteCorruptionIsDetectedOrHarmless) {
  TempDir dir;
  SmallArchive a(dir.path(), 3, /*deflate=*/6);
  const fs::path file = dir / shard_file_name(0);
  const std::string original = read_file(file);
  a.manifest.shards[0].file_bytes = 0;  // do not let the size check hide anything
  size_t detected = 0, harmless = 0;
  for (size_t pos = 0; pos < original.size(); pos += 7) {
    std::string bytes = original;
    bytes[pos] = static_cast<char>(bytes[pos] ^ 0x10);
    write_file(file, bytes);
    try {
      ShardGrammar g = read_shard_grammar(dir.path(), a.manifest, 0);
      ShardLayout l = read_shard_layout(dir.path(), a.manifest, 0);
      ASSERT_EQ(g.symbols, a.grammar.symbols) << "byte " << pos;
      ASSERT_EQ(g.rule_offsets, a.grammar.rule_offsets) << "byte " << pos;
      ASSERT_EQ(g.rule_length, a.grammar.rule_length) << "byte " << pos;
      ASSERT_EQ(l.gaps, a.layout.gaps) << "byte " << pos;
      ASSERT_EQ(l.ws_dict, a.layout.ws_dict) << "byte " << pos;
      ++harmless;
    } catch (const InputError& e) {
      ASSERT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
      ++detected;
    }
    ASSERT_EQ(h5::open_object_count(), 0) << "byte " << pos;  // nothing left open
  }
  EXPECT_GT(detected, harmless);
  std::cout << "[ corrupt  ] " << original.size() << "-byte shard: " << detected
            << " flips detected, " << harmless << " harmless\n";
}

TEST(ArchiveErrors, TruncatedFiles) {
  TempDir dir;
  SmallArchive a(dir.path(), 3, 6);
  for (const fs::path& file : {dir / shard_file_name(0), dir / kManifestFile}) {
    std::string bytes = read_file(file);
    write_file(file, bytes.substr(0, bytes.size() / 2));
  }
  expect_input_error([&] { read_manifest(dir.path()); },
                     {(dir / kManifestFile).string() + ": ", "cannot open"});
  expect_input_error([&] { read_shard_grammar(dir.path(), a.manifest, 0); },
                     {(dir / shard_file_name(0)).string() + ": ", "cannot open"});
  expect_input_error([&] { read_shard_layout(dir.path(), a.manifest, 0); },
                     {(dir / shard_file_name(0)).string() + ": ", "cannot open"});
}

TEST(ArchiveErrors, GarbageAndMissingFiles) {
  TempDir dir;
  expect_input_error([&] { read_manifest(dir.path()); },
                     {(dir / kManifestFile).string() + ": cannot open", "no such file"});
  write_file(dir / kManifestFile, "this is not an HDF5 file, just some text\n");
  testing::internal::CaptureStderr();
  expect_input_error([&] { read_manifest(dir.path()); },
                     {(dir / kManifestFile).string() + ": cannot open (not an HDF5 file"});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // HDF5 prints nothing
  write_file(dir / kManifestFile, "");
  expect_input_error([&] { read_manifest(dir.path()); }, {"cannot open"});
}

TEST(ArchiveErrors, ForeignHdf5File) {
  TempDir dir;
  const fs::path file = dir / kManifestFile;
  {
    h5::File f = h5::create_file(file);
    std::vector<uint32_t> data = {1, 2, 3};
    h5::write_array(f.id(), "data", std::span<const uint32_t>(data), h5::Width::kU32, {});
    f.close();
  }
  expect_input_error([&] { read_manifest(dir.path()); },
                     {file.string() + ": not a gtadoc archive file"});
  {
    h5::File f = h5::open_file(file, true);
    h5::write_string_attr(f.id(), "format", "some-other-format");
    f.close();
  }
  expect_input_error([&] { read_manifest(dir.path()); },
                     {file.string() + ": not a gtadoc archive file"});
}

TEST(ArchiveErrors, FutureFormatVersion) {
  TempDir dir;
  SmallArchive a(dir.path(), 3, 6);
  for (const fs::path& file : {dir / shard_file_name(0), dir / kManifestFile}) {
    h5::File f = h5::open_file(file, true);
    h5::overwrite_uint_attr(f.id(), "format_version", kFormatVersion + 1);
    f.close();
  }
  expect_input_error([&] { read_manifest(dir.path()); },
                     {(dir / kManifestFile).string() + ": ",
                      "unsupported format version " + std::to_string(kFormatVersion + 1),
                      "(this build reads 1 to " + std::to_string(kFormatVersion) + ")"});
  a.manifest.shards[0].file_bytes = 0;
  expect_input_error([&] { read_shard_grammar(dir.path(), a.manifest, 0); },
                     {(dir / shard_file_name(0)).string() + ": ",
                      "unsupported format version " + std::to_string(kFormatVersion + 1)});
}

TEST(ArchiveErrors, ShardOfAnotherVersionThanItsManifest) {
  TempDir dir;
  SmallArchive a(dir.path(), 4, 6);
  {
    h5::File f = h5::open_file(dir / shard_file_name(0), true);
    h5::overwrite_uint_attr(f.id(), "format_version", 1);
    f.close();
  }
  a.manifest.shards[0].file_bytes = 0;
  expect_input_error(
      [&] { read_shard_grammar(dir.path(), a.manifest, 0); },
      {(dir / shard_file_name(0)).string() + ": ",
       "format_version (the manifest's) is 1, expected " + std::to_string(kFormatVersion)});
}

TEST(ArchiveErrors, ShardFromAnotherArchive) {
  TempDir one, two;
  SmallArchive a(one.path(), 1111, 6);
  SmallArchive b(two.path(), 2222, 6);
  fs::copy_file(two / shard_file_name(0), one / shard_file_name(0),
                fs::copy_options::overwrite_existing);
  Manifest m = read_manifest(one.path());
  m.shards[0].file_bytes = 0;
  expect_input_error(
      [&] { read_shard_grammar(one.path(), m, 0); },
      {(one / shard_file_name(0)).string() + ": ", "another archive", "2222", "1111"});
  expect_input_error([&] { read_shard_layout(one.path(), m, 0); }, {"another archive"});
}

TEST(ArchiveErrors, MixedUpFiles) {
  TempDir dir;
  SmallArchive a(dir.path(), 5, 6);
  Manifest m = read_manifest(dir.path());
  // A shard file where the manifest is expected, and the other way round.
  TempDir swapped;
  fs::copy_file(dir / shard_file_name(0), swapped / kManifestFile);
  fs::copy_file(dir / kManifestFile, swapped / shard_file_name(0));
  expect_input_error([&] { read_manifest(swapped.path()); }, {"not a gtadoc manifest file"});
  m.shards[0].file_bytes = 0;
  expect_input_error([&] { read_shard_grammar(swapped.path(), m, 0); },
                     {"not a gtadoc shard file"});
  // Shard index out of range.
  expect_input_error([&] { read_shard_grammar(dir.path(), m, 1); }, {"no shard 1"});
  // The manifest's statistics disagree with the shard.
  Manifest wrong = read_manifest(dir.path());
  wrong.shards[0].rules += 1;
  expect_input_error([&] { read_shard_grammar(dir.path(), wrong, 0); }, {"number of rules"});
  // Sizes the manifest gives are checked against the datasets before anything is allocated.
  wrong = read_manifest(dir.path());
  wrong.shards[0].symbols = uint64_t{1} << 40;
  expect_input_error([&] { read_shard_grammar(dir.path(), wrong, 0); },
                     {"number of symbols is", "expected 1099511627776"});
  wrong = read_manifest(dir.path());
  wrong.shards[0].rules = uint64_t{1} << 40;
  expect_input_error([&] { read_shard_grammar(dir.path(), wrong, 0); },
                     {"number of rules is", "expected 1099511627776"});
  wrong = read_manifest(dir.path());
  wrong.shards[0].words += 1;
  expect_input_error([&] { read_shard_layout(dir.path(), wrong, 0); }, {"number of gaps"});
  wrong = read_manifest(dir.path());
  wrong.shards[0].file_bytes += 1;
  expect_input_error([&] { read_shard_layout(dir.path(), wrong, 0); }, {"file size"});
  // The shard's words name dictionary ids beyond a (smaller) dictionary.
  wrong = read_manifest(dir.path());
  wrong.dict = Dictionary();
  wrong.dict.push_back("a");
  expect_input_error([&] { read_shard_grammar(dir.path(), wrong, 0); },
                     {"/grammar/local_words holds word id", "beyond the dictionary (1 words)"});
}

TEST(ArchiveErrors, InconsistentManifestTables) {
  TempDir dir;
  Manifest m = manifest_for(8, 10, {random_grammar(10, 0, 2, 5, 20, 1)});
  m.doc_names = testutil::with_entry(m.doc_names, 0, std::string(m.doc_names[1]));  // twice
  write_manifest_file(dir / kManifestFile, m, {});
  expect_input_error([&] { read_manifest(dir.path()); },
                     {(dir / kManifestFile).string() + ": ", "not sorted"});

  TempDir dir2;
  m = manifest_for(8, 10, {random_grammar(10, 0, 2, 5, 20, 1)});
  m.shards[0].words += 1;
  write_manifest_file(dir2 / kManifestFile, m, {});
  expect_input_error([&] { read_manifest(dir2.path()); }, {"shard 0 words"});
}

/// Writes into `dir` a manifest of 50 words, in reverse byte order when `unsorted` (a dictionary
/// that only a whole read can refuse), and returns it.
Manifest write_fifty_words(const TempDir& dir, bool unsorted) {
  Manifest m = manifest_for(7, 50, {random_grammar(50, 0, 2, 5, 20, 1)});
  if (unsorted) {
    Dictionary reversed;
    for (uint32_t w = 0; w < m.dict.size(); ++w) reversed.push_back(m.dict[m.dict.size() - 1 - w]);
    m.dict = reversed;
  }
  write_manifest_file(dir / kManifestFile, m, {});
  return m;
}

/// A manifest read with its dictionary deferred holds the same words, announces their number at
/// once, and gives a dictionary's errors, with the eager read's message, at the first access to
/// the words (every access after it too). Read on demand, words fetched alone equal the whole
/// read's without it; another access reads the words whole; unsorted words (which only a whole
/// read can see) are refused there, with the eager read's message.
TEST(ArchiveErrors, DeferredAndOnDemandDictionariesReadTheSameWordsAndErrors) {
  TempDir dir;
  write_fifty_words(dir, false);
  const Manifest eager = read_manifest(dir.path());
  const Manifest on_demand = read_manifest(dir.path(), ManifestRead::kWordsOnDemand);
  EXPECT_EQ(on_demand.dict.size(), 50u);
  ASSERT_TRUE(on_demand.dict.fetches_some());
  const std::vector<WordId> ids = {49, 0, 7, 7, 23};
  on_demand.dict.fetch(ids);
  for (WordId id : ids) EXPECT_EQ(on_demand.dict[id], eager.dict[id]);
  EXPECT_FALSE(on_demand.dict.ready());
  EXPECT_EQ(on_demand.dict[8], eager.dict[8]);
  EXPECT_TRUE(on_demand.dict.ready());
  EXPECT_EQ(on_demand.dict.bytes(), eager.dict.bytes());

  const Manifest lazy = read_manifest(dir.path(), ManifestRead::kDeferDictionary);
  EXPECT_EQ(lazy.dict.size(), 50u);
  EXPECT_EQ(lazy.dict.bytes(), eager.dict.bytes());
  EXPECT_EQ(lazy.dict.offsets(), eager.dict.offsets());
  EXPECT_EQ(lazy.dict.find(eager.dict[7]), 7u);
  Dictionary copy = lazy.dict;  // a copy shares the words; push_back makes them its own
  copy.push_back("~~~");
  EXPECT_EQ(copy.size(), 51u);
  EXPECT_EQ(lazy.dict.size(), 50u);

  TempDir bad;
  const Dictionary deferred_words = write_fifty_words(bad, true).dict;
  expect_input_error([&] { read_manifest(bad.path()); },
                     {(bad / kManifestFile).string() + ": ", "not sorted and unique"});
  const Manifest deferred = read_manifest(bad.path(), ManifestRead::kDeferDictionary);
  EXPECT_EQ(deferred.dict.size(), 50u);
  wait_for_read(deferred.dict);  // its thread holds HDF5 objects while it reads
  for (int i = 0; i < 2; ++i)
    expect_input_error([&] { (void)deferred.dict[0]; },
                       {(bad / kManifestFile).string() + ": ", "not sorted and unique"});
  const Manifest bad_on_demand = read_manifest(bad.path(), ManifestRead::kWordsOnDemand);
  bad_on_demand.dict.fetch(std::vector<WordId>{3});
  EXPECT_EQ(bad_on_demand.dict[3], deferred_words[3]);
  for (int i = 0; i < 2; ++i)
    expect_input_error([&] { (void)bad_on_demand.dict[4]; },
                       {(bad / kManifestFile).string() + ": ", "not sorted and unique"});
}

/// Deferred, the document names are not read until they are used: their number is known at
/// once, the table is read at the first access, with the eager read's names and errors (an
/// unsafe or unsorted name), while the rest of the manifest answers without them.
TEST(ArchiveErrors, DocumentNamesAreReadAtTheirFirstUse) {
  TempDir dir;
  Manifest m = manifest_for(7, 50, {random_grammar(50, 0, 6, 5, 20, 1)});
  write_manifest_file(dir / kManifestFile, m, {});
  const Manifest eager = read_manifest(dir.path());
  ASSERT_TRUE(eager.doc_names.ready());
  const Manifest lazy = read_manifest(dir.path(), ManifestRead::kDeferDictionary);
  wait_for_read(lazy.dict);
  EXPECT_EQ(lazy.doc_names.size(), 6u);
  EXPECT_EQ(lazy.docs.size(), 6u);
  EXPECT_FALSE(lazy.doc_names.ready());
  EXPECT_EQ(lazy.docs[0].words, eager.docs[0].words);
  EXPECT_FALSE(lazy.doc_names.ready());  // the sizes come without the names
  EXPECT_EQ(lazy.doc_names.find("doc-0000003"), 3u);
  EXPECT_TRUE(lazy.doc_names.ready());
  EXPECT_EQ(lazy.doc_names.bytes(), eager.doc_names.bytes());
  EXPECT_EQ(lazy.doc_names.offsets(), eager.doc_names.offsets());

  for (const auto& [name, needle] : {std::pair<std::string, std::string>{"../up",
                                                                         "document 2: "
                                                                         "name \"../up\""},
                                     {"doc-0000005", "not sorted and unique (document 3)"}}) {
    SCOPED_TRACE(name);
    TempDir bad;
    Manifest u = m;
    u.doc_names = testutil::with_entry(m.doc_names, 2, name);
    write_manifest_file(bad / kManifestFile, u, {});
    expect_input_error([&] { read_manifest(bad.path()); },
                       {(bad / kManifestFile).string() + ": ", needle});
    const Manifest deferred = read_manifest(bad.path(), ManifestRead::kDeferDictionary);
    wait_for_read(deferred.dict);
    EXPECT_EQ(deferred.doc_names.size(), 6u);
    EXPECT_EQ(deferred.shards.size(), 1u);
    for (int i = 0; i < 2; ++i)
      expect_input_error([&] { (void)deferred.doc_names[0]; },
                         {(bad / kManifestFile).string() + ": ", needle});
  }
}

TEST(ArchiveErrors, WritersNeverOverwrite) {
  TempDir dir;
  write_file(dir / kManifestFile, "keep me");
  write_file(dir / shard_file_name(0), "keep me too");
  SmallArchive a(1);  // not written
  expect_input_error([&] { write_manifest_file(dir / kManifestFile, a.manifest, {}); },
                     {(dir / kManifestFile).string() + ": "});
  expect_input_error(
      [&] { write_shard_file(dir / shard_file_name(0), 1, 0, a.grammar, a.layout, {}); },
      {(dir / shard_file_name(0)).string() + ": "});
  EXPECT_EQ(read_file(dir / kManifestFile), "keep me");
  EXPECT_EQ(read_file(dir / shard_file_name(0)), "keep me too");
}

// ------------------------------------------------------------------------------------ chunk maps

// A one-shard archive whose manifest records the shard's chunk maps, as `compress` writes it.
struct MappedArchive : SmallArchive {
  MappedArchive(const fs::path& dir, int deflate, uint64_t seed = 7)
      : SmallArchive(dir, 41, deflate, seed) {
    manifest.shards[0].chunk_maps = map_shard_chunks(dir / shard_file_name(0));
    fs::remove(dir / kManifestFile);
    write_manifest_file(dir / kManifestFile, manifest, {deflate});
  }
};

TEST_P(ArchiveDeflate, ChunkMapsDescribeEveryGrammarArray) {
  TempDir dir;
  // Over several chunks: 1 MiB chunks of 4-byte symbols hold 262,144 of them.
  ShardGrammar g = random_grammar(70000, 0, 40, 20000, 40000, 5);
  ASSERT_GT(g.symbols.size(), 262144u * 2);
  write_shard_file(dir / shard_file_name(0), 3, 0, g, random_layout(g, 5, 5), {GetParam()});
  std::vector<h5::ChunkMap> maps = map_shard_chunks(dir / shard_file_name(0));
  ASSERT_EQ(maps.size(), kMappedArrays.size());
  h5::File f = h5::open_file(dir / shard_file_name(0));
  for (size_t i = 0; i < maps.size(); ++i) {
    const std::string name = std::string("/grammar/") + kMappedArrays[i];
    const h5::DatasetInfo info = h5::dataset_info(f.id(), name);
    EXPECT_EQ(maps[i].n, info.size) << name;
    EXPECT_EQ(maps[i].element_bytes, info.element_bytes) << name;
    EXPECT_EQ(maps[i].chunk, info.chunk) << name;
    EXPECT_EQ(maps[i].deflate, info.deflate) << name;
    EXPECT_EQ(maps[i].shuffle, info.shuffle) << name;
    EXPECT_EQ(h5::chunk_map_problem(maps[i]), "") << name;
  }
  EXPECT_GE(maps[2].offsets.size(), 3u);  // the symbols
  // As numbers and back, several shards in a row.
  std::vector<uint64_t> numbers;
  append_chunk_maps(maps, numbers);
  append_chunk_maps({}, numbers);
  append_chunk_maps(maps, numbers);
  size_t pos = 0;
  EXPECT_EQ(take_chunk_maps(numbers, pos), maps);
  EXPECT_TRUE(take_chunk_maps(numbers, pos).empty());
  EXPECT_EQ(take_chunk_maps(numbers, pos), maps);
  EXPECT_EQ(pos, numbers.size());
}

TEST_P(ArchiveDeflate, ShardReadByItsChunkMapsEqualsTheHdf5Read) {
  TempDir dir;
  MappedArchive a(dir.path(), GetParam());
  const Manifest m = read_manifest(dir.path());
  ASSERT_EQ(m.shards[0].chunk_maps, a.manifest.shards[0].chunk_maps);
  ShardReadTimes t;
  expect_same_grammar(a.grammar, read_shard_grammar(dir.path(), m, 0, 2, &t));
  EXPECT_TRUE(t.located);
  Manifest unmapped = m;
  unmapped.shards[0].chunk_maps.clear();
  expect_same_grammar(a.grammar, read_shard_grammar(dir.path(), unmapped, 0, 2, &t));
  EXPECT_FALSE(t.located);
}

TEST_P(ArchiveDeflate, ChunkMapsThatMissTheFileFallBackToHdf5) {
  TempDir dir;
  MappedArchive a(dir.path(), GetParam());
  Manifest m = read_manifest(dir.path());
  ShardReadTimes t;
  // Each array in turn pointed one byte off, or at a size one byte short: the checksums (or
  // the inflate) catch it and the shard is read through HDF5, with the same values.
  for (size_t i = 0; i < kMappedArrays.size(); ++i) {
    for (int how = 0; how < 2; ++how) {
      Manifest off = m;
      h5::ChunkMap& map = off.shards[0].chunk_maps[i];
      if (map.offsets.empty()) continue;
      if (how == 0) map.offsets[0] += 1;
      if (how == 1) map.sizes[0] -= 1;
      expect_same_grammar(a.grammar, read_shard_grammar(dir.path(), off, 0, 2, &t));
      EXPECT_FALSE(t.located) << kMappedArrays[i] << " " << how;
    }
  }
  // A file replaced by one of another size: the HDF5 path's message.
  write_file(dir / shard_file_name(0), read_file(dir / shard_file_name(0)) + "x");
  expect_input_error([&] { read_shard_grammar(dir.path(), m, 0); },
                     {"shard-00000.h5", "file size is"});
}

TEST(ArchiveErrors, ChunkMapsMustFitTheirFile) {
  h5::ChunkMap a{100, 4, 64, false, true, {0, 100}, {50, 60}};
  h5::ChunkMap b{10, 1, 16, false, false, {200}, {14}};
  ASSERT_EQ(h5::chunk_map_problem(a), "");
  ASSERT_EQ(h5::chunk_map_problem(b), "");
  const std::vector<h5::ChunkMap> maps{a, b};
  EXPECT_TRUE(chunk_maps_fit(maps, 214));
  EXPECT_FALSE(chunk_maps_fit(maps, 213));  // the last chunk beyond the file
  std::vector<h5::ChunkMap> overlapping = maps;
  overlapping[1].offsets[0] = 159;  // into a's second chunk
  EXPECT_FALSE(chunk_maps_fit(overlapping, 1000));
  std::vector<h5::ChunkMap> claiming = maps;
  claiming[1].n = 15;  // 15 one-byte elements from 14 stored bytes, not deflated
  claiming[1].chunk = 16;
  EXPECT_FALSE(chunk_maps_fit(claiming, 1000));
  claiming = maps;
  claiming[0].n = 110 * 1040 / 4 + 1;  // beyond deflate's largest expansion
  claiming[0].chunk = claiming[0].n / 2 + 1;
  EXPECT_FALSE(chunk_maps_fit(claiming, 1000));
}

TEST(ArchiveErrors, MalformedChunkMapsInTheManifest) {
  TempDir dir;
  MappedArchive a(dir.path(), 6);
  std::vector<uint64_t> good;
  append_chunk_maps(a.manifest.shards[0].chunk_maps, good);
  auto take_all = [](std::vector<uint64_t> numbers) {
    size_t pos = 0;
    take_chunk_maps(numbers, pos);
  };
  std::vector<uint64_t> v = good;
  v[0] = 3;  // three maps
  expect_input_error([&] { take_all(v); }, {"3 chunk maps"});
  v = good;
  v[2] = 3;  // element bytes
  expect_input_error([&] { take_all(v); }, {"local_words", "element size 3"});
  v = good;
  v[3] = 0;  // chunk length
  expect_input_error([&] { take_all(v); }, {"chunk length 0"});
  v = good;
  v.resize(v.size() - 1);
  expect_input_error([&] { take_all(v); }, {"cut short"});
  v = good;
  v[1] += v[3] * 5;  // elements beyond the chunks listed
  expect_input_error([&] { take_all(v); }, {"chunks for"});
  // In a manifest: read_manifest names the dataset.
  Manifest m = a.manifest;
  m.shards[0].chunk_maps.resize(2);
  fs::remove(dir / kManifestFile);
  write_manifest_file(dir / kManifestFile, m, {6});
  expect_input_error([&] { read_manifest(dir.path()); }, {"/shards/chunk_maps", "2 chunk maps"});
}

TEST(H5, HelpersNameTheObject) {
  TempDir dir;
  h5::File f = h5::create_file(dir / "x.h5");
  h5::Group g = h5::create_group(f.id(), "grp");
  std::vector<uint64_t> v = {1, 70000};
  h5::write_array_min_width(g.id(), "vals", std::span<const uint64_t>(v), {});
  EXPECT_EQ(h5::dataset_info(g.id(), "vals").element_bytes, 4u);
  EXPECT_EQ(h5::read_array<uint64_t>(g.id(), "vals"), v);
  // Stored width wider than the memory type: refused rather than truncated.
  expect_input_error([&] { h5::read_array<uint16_t>(g.id(), "vals"); },
                     {"dataset /grp/vals", "unexpected element type"});
  expect_input_error([&] { h5::read_array<uint32_t>(g.id(), "nope"); },
                     {"dataset /grp/nope: missing"});
  expect_input_error([&] { h5::open_group(f.id(), "nogroup"); }, {"group /nogroup: missing"});
  // A raw failure goes through throw_h5_error: one line naming the HDF5 call.
  expect_input_error([&] { h5::create_group(f.id(), "grp"); }, {"group /grp", "HDF5 H5Gcreate2"});
  EXPECT_EQ(h5::read_uint_attr(f.id(), "absent"), std::nullopt);
  EXPECT_EQ(h5::read_string_attr(f.id(), "absent"), std::nullopt);
  h5::write_string_attr(f.id(), "s", "text");
  EXPECT_EQ(h5::read_uint_attr(f.id(), "s"), std::nullopt);
  EXPECT_EQ(h5::read_string_attr(f.id(), "s"), "text");
}

}  // namespace
}  // namespace gtadoc
