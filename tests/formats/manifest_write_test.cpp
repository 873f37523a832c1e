// Tests of the manifest writer's parallel steps: front_code on threads gives the arrays of the
// plain sequential front coding for every thread count (words across several blocks), and the
// buffered manifest_content_digest hashes the same bytes as the field-by-field serialization
// (docs/FORMAT.md, "Content digest").
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "formats/archive.h"
#include "formats/dictionary.h"
#include "formats/digest.h"

namespace gtadoc {
namespace {

// Sorted distinct words, many sharing prefixes, the empty word first; over 3 blocks of 2^16.
Dictionary sample_dictionary(size_t n) {
  std::mt19937_64 rng(7);
  std::vector<std::string> words{""};
  while (words.size() < n) {
    std::string w(1 + rng() % 14, 'a');
    for (char& c : w) c = static_cast<char>('a' + rng() % 6);
    if (rng() % 100 == 0) w += std::string(70000 * (rng() % 2), 'z');  // a few very long words
    words.push_back(std::move(w));
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  Dictionary d;
  for (const std::string& w : words) d.push_back(w);
  return d;
}

FrontCoded sequential_front_code(const Dictionary& dict) {
  FrontCoded f;
  std::string_view prev;
  for (uint32_t w = 0; w < dict.size(); ++w) {
    const std::string_view word = dict[w];
    size_t k = 0;
    while (k < std::min(word.size(), prev.size()) && word[k] == prev[k]) ++k;
    f.prefix_lengths.push_back(k);
    f.suffix_bytes.insert(f.suffix_bytes.end(), word.begin() + k, word.end());
    f.suffix_lengths.push_back(word.size() - k);
    prev = word;
  }
  return f;
}

TEST(ManifestWrite, FrontCodeOnThreadsIsSequential) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{5}, size_t{200000}}) {
    const Dictionary d = n == 0 ? Dictionary() : sample_dictionary(n);
    const FrontCoded want = sequential_front_code(d);
    for (unsigned threads : {1u, 2u, 3u, 8u}) {
      const FrontCoded got = front_code(d, threads);
      EXPECT_EQ(got.prefix_lengths, want.prefix_lengths) << n << " words, " << threads;
      EXPECT_EQ(got.suffix_lengths, want.suffix_lengths) << n << " words, " << threads;
      EXPECT_TRUE(got.suffix_bytes == want.suffix_bytes) << n << " words, " << threads;
    }
  }
}

Sha256 field_by_field_digest(const Manifest& m) {
  Sha256Hasher h;
  h.update_string("gtadoc manifest content v1");
  h.update_u64(m.format_version);
  h.update_u64(m.archive_id);
  h.update_u64(m.dict.size());
  for (uint32_t w = 0; w < m.dict.size(); ++w) h.update_string(m.dict[w]);
  h.update_u64(m.docs.size());
  for (DocId i = 0; i < m.docs.size(); ++i) {
    const DocEntry& d = m.docs[i];
    h.update_string(m.doc_names[i]);
    h.update_u64(d.bytes);
    h.update_u64(d.words);
    h.update_u64(d.shard);
  }
  h.update_u64(m.shards.size());
  for (const ShardEntry& s : m.shards) {
    for (uint64_t v : {uint64_t{s.first_doc}, uint64_t{s.num_docs}, s.input_bytes, s.words, s.rules,
                       s.symbols, uint64_t{s.depth}, s.file_bytes})
      h.update_u64(v);
    h.update(std::span<const uint8_t>(s.sha256));
  }
  return h.finish();
}

TEST(ManifestWrite, ContentDigestHashesTheSameBytes) {
  Manifest m;
  m.archive_id = 0x1234567890abcdefull;
  EXPECT_EQ(manifest_content_digest(m), field_by_field_digest(m)) << "empty manifest";
  m.dict = sample_dictionary(200000);
  for (int i = 0; i < 3000; ++i) {
    m.docs.push_back({uint64_t(i) * 977, uint64_t(i) * 13, uint32_t(i / 1000)});
    m.doc_names.push_back("dir/doc" + std::to_string(i) + std::string(i % 300, 'x'));
  }
  for (uint32_t s = 0; s < 3; ++s) {
    ShardEntry e;
    e.first_doc = s * 1000;
    e.num_docs = 1000;
    e.words = 5 + s;
    e.file_bytes = 1000 + s;
    e.sha256.fill(static_cast<uint8_t>(s + 1));
    m.shards.push_back(e);
  }
  EXPECT_EQ(manifest_content_digest(m), field_by_field_digest(m));
}

}  // namespace
}  // namespace gtadoc
