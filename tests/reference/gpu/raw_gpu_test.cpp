// Tests of the raw-text GPU baseline against the raw-text CPU reference, byte for byte.
//
// CPU part (runs everywhere): the per-byte/per-word helpers the kernels use, the JSON string
// writer, the radix-sort planning, and the host formatter fed with rows built on the CPU by the
// same recipe the device follows (word ids = byte ranks, sequences keyed by space ranks, stable
// count ordering) -- so the ordering theory and every output byte are checked without a GPU.
// GPU part (skipped without a device): raw_gpu_output against raw_reference_output for every
// task x option x format over nasty generated corpora and the bundled real sample, plus the
// collision fallback forced through a degraded hash.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tests/reference/gpu/raw_gpu.cuh"
#include "tests/reference/gpu/raw_gpu_device.h"
#include "tests/reference/raw_reference.h"

namespace gtadoc::rawgpu {
namespace {

namespace fs = std::filesystem;
using Docs = std::vector<RawDocument>;

// ------------------------------------------------------------------ corpora

std::string S(const char* p, size_t n) {
  return std::string(p, n);
}

struct Corpus {
  std::string name;
  Docs docs;
  bool large = false;  ///< run a rotating subset of the variants only
};

Corpus spec_corpus() {
  return {"spec",
          {{"a.txt", "The cat sat. the cat\n"},
           {"b.txt", "the cat the dog\n"},
           {"c/empty", ""},
           {"d0", "x y x y"},
           {"d1", "x y x y x y"},
           {"d2", "y x"},
           {"h", "Hello, WORLD! -- hello... (world) 'x'"}}};
}

Corpus nasty_corpus() {
  Docs d;
  d.push_back({"", "nameless doc"});
  d.push_back({"empty", ""});
  d.push_back({"ws-only", " \t\r\n\v\f  \n"});
  d.push_back({"crlf", "Hello,\r\nWorld!\r\nhello world\r\nno-newline-at-end"});
  d.push_back({"nul", S("a\0b a\0 a \0 \0\0 a\x01 a\x01"
                        "b ab a a\0 ab",
                        31)});
  d.push_back({"bad-utf8",
               "\xC3 \xC3\xA9 caf\xC3\xA9 \xFF\xFE \xE2\x82 \xE2\x82\xAC \xC2\xA0x x\xC2\xA0 "
               "\x85y \x7F \xF0\x9F\x98\x80 \xC3 \xE2\x82 caf\xC3"});
  d.push_back({"punct", "-- ... !!! (x) 'y' don't a.b. \xC2\xABx\xC2\xBB --a-- ,,, . x"});
  d.push_back({"we\tird", "tab name"});
  d.push_back({"new\nline", "newline name name"});
  d.push_back({"back\\slash", "backslash \\ \\\\ a\\b"});
  d.push_back({"a-c", "order one"});
  d.push_back({"a/b", "order two"});
  d.push_back({"a0", "order three"});
  d.push_back({"\xFFname", "invalid utf8 name"});
  d.push_back({"dup", "first dup"});
  d.push_back({"dup", "second dup dup"});
  d.push_back({"caps", "The THE the tHe THE. the, The"});
  d.push_back({"controls", "\x01\x02 \x1f \x7f x\x1fy \"quoted\" back\\slash"});
  d.push_back({"  lead", "   leading and trailing spaces   "});
  d.push_back({"quote\"name", "\"x\" \"x\" x"});
  return {"nasty", d};
}

std::string random_letters(std::mt19937_64& rng, size_t n) {
  std::string s(n, 'a');
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

Corpus long_word_corpus() {
  std::mt19937_64 rng(7);
  const std::string w1 = random_letters(rng, 200 * 1024);
  std::string w2 = w1;
  w2.back() = w2.back() == 'z' ? 'y' : 'z';
  const std::string w3 = w1.substr(0, w1.size() - 1);
  const std::string w4(200 * 1024, '-');
  const std::string w5 = "-" + w1 + "--";
  std::string w6 = w1;
  for (char& c : w6) c = static_cast<char>(c - 'a' + 'A');
  Docs d;
  d.push_back({"l0", w1 + " x " + w2 + " " + w1});
  d.push_back({"l1", w3 + "\n" + w4 + " " + w5 + " y " + w1 + "\t" + w6});
  d.push_back({"l2", "x y " + w1 + " x y"});
  d.push_back({"l3", w6 + w6});  // one 400 KB word
  return {"long-words", d};
}

Corpus boundary_corpus() {
  std::mt19937_64 rng(11);
  const char* ws[] = {" ", "\t", "\n", "\r\n", "  ", " \v ", "\f"};
  std::string a, b;
  for (int i = 0; i < 6000; ++i) {
    const size_t len = (i * 7) % 300 + 1;
    a += std::string(len, static_cast<char>('a' + i % 3));
    a += ws[rng() % 7];
  }
  for (size_t len = 1; len <= 700; ++len) b += std::string(len, 'q') + ' ';
  for (size_t len = 700; len >= 1; --len) b += std::string(len, 'q') + '\n';
  return {"boundaries", {{"long-a", a}, {"long-b", b}, {"tail", std::string(5000, 'w')}}};
}

Corpus tiny_docs_corpus() {
  std::mt19937_64 rng(3);
  const char* vocab[] = {"a", "b", "A", "a.", "b!", "c", "-"};
  std::vector<int> ids(3000);
  for (int i = 0; i < 3000; ++i) ids[i] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  Docs d;
  for (int id : ids) {
    char name[32];
    std::snprintf(name, sizeof name, "t/%05d", id);
    std::string text;
    const int words = static_cast<int>(rng() % 4);
    for (int k = 0; k < words; ++k) {
      if (k) text += ' ';
      text += vocab[rng() % 7];
    }
    d.push_back({name, text});
  }
  return {"tiny-docs", d};
}

Corpus identical_corpus() {
  std::mt19937_64 rng(5);
  const char* vocab[] = {"the", "The", "cat", "sat", "on", "mat.", "mat", "a"};
  std::string text;
  for (int k = 0; k < 300; ++k) text += std::string(vocab[rng() % 8]) + (k % 17 ? " " : "\n");
  Docs d;
  for (int i = 0; i < 40; ++i) d.push_back({"id" + std::to_string(100 + i), text});
  return {"identical", d};
}

Corpus short_docs_corpus() {
  Docs d;
  const char* vocab[] = {"x", "y", "z"};
  for (int k = 0; k <= 9; ++k) {
    std::string text;
    for (int w = 0; w < k; ++w) text += std::string(vocab[(w * 5 + k) % 3]) + " ";
    d.push_back({"s" + std::to_string(k), text});
  }
  d.push_back({"same8", "x x x x x x x x"});
  d.push_back({"punct-only", "-- !! ..."});  // empty under --alnum
  d.push_back({"one", "x"});
  return {"short-docs", d};
}

Corpus sequence_order_corpus() {
  std::mt19937_64 rng(13);
  const std::vector<std::string> vocab = {"a",         S("a\x01", 2), "a!",    "a\x1f", "ab",
                                          "a\x7f",     "a\xC3\xA9",   "b",     "A",     "a.",
                                          S("a\0", 2), "!a",          "a\xC3", "aa",    "a-b"};
  Docs d;
  for (int i = 0; i < 30; ++i) {
    std::string text;
    for (int k = 0; k < 25; ++k) text += vocab[rng() % vocab.size()] + " ";
    d.push_back({"q" + std::to_string(i), text});
  }
  d.push_back({"x1", S("a\x01 b a b", 9)});
  return {"sequence-order", d};
}

Corpus all_empty_corpus() {
  return {"all-empty", {{"e1", ""}, {"e2", ""}, {"e3", "   \n\n"}, {"e0", "\t"}}};
}

Corpus zipf_corpus() {
  std::mt19937_64 rng(17);
  std::vector<std::string> vocab;
  vocab.reserve(150000);
  for (int i = 0; i < 150000; ++i) {
    std::string w = random_letters(rng, 1 + rng() % 12);
    if (rng() % 5 == 0) w[0] = static_cast<char>(w[0] - 'a' + 'A');
    if (rng() % 7 == 0) w += ".,;!?"[rng() % 5];
    if (rng() % 11 == 0) w = "(" + w;
    if (rng() % 13 == 0) w += std::to_string(rng() % 100);
    vocab.push_back(w);
  }
  std::vector<double> weights(2000);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = 1.0 / static_cast<double>(i + 1);
  std::discrete_distribution<size_t> zipf(weights.begin(), weights.end());
  Docs d;
  for (int i = 0; i < 30; ++i) {
    std::string text;
    while (text.size() < 50000) {
      const size_t w = rng() % 2 ? zipf(rng) : rng() % vocab.size();
      text += vocab[w];
      text += rng() % 9 == 0 ? "\n" : " ";
    }
    d.push_back({"z/" + std::to_string(i), text});
  }
  return {"zipf", d, true};
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void collect(const fs::path& dir, const std::string& prefix, Docs& docs) {
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = prefix + e.path().filename().string();
    if (fs::is_directory(e.symlink_status())) {
      collect(e.path(), name + "/", docs);
    } else if (e.is_regular_file()) {
      docs.push_back({name, read_file(e.path())});
    }
  }
}

/// The bundled sample: $GTADOC_SAMPLE_DIR, else the source tree's data/sample, else
/// data/sample below the working directory (a build carried to another machine).
std::string sample_dir() {
  if (const char* env = std::getenv("GTADOC_SAMPLE_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  if (fs::is_directory(GTADOC_SAMPLE_DIR)) return GTADOC_SAMPLE_DIR;
  return "data/sample";
}

Corpus sample_corpus() {
  Corpus c{"sample", {}, true};
  if (fs::is_directory(sample_dir())) collect(sample_dir(), "", c.docs);
  return c;
}

std::vector<Corpus> small_corpora() {
  return {spec_corpus(),       nasty_corpus(),          long_word_corpus(),
          boundary_corpus(),   tiny_docs_corpus(),      identical_corpus(),
          short_docs_corpus(), sequence_order_corpus(), all_empty_corpus()};
}

// ------------------------------------------------------------------ query variants

struct Variant {
  QueryOptions q;
  OutputFormat fmt;
  std::string label;
};

std::string describe(const QueryOptions& q, OutputFormat fmt) {
  // The test's own labels (the reference library links no engine code, not even task_name).
  static const char* const kNames[] = {"word-count",  "sort",           "inverted-index",
                                       "term-vector", "sequence-count", "ranked-inverted-index"};
  std::string s = kNames[static_cast<int>(q.task)];
  if (is_sequence_task(q.task)) s += " --n " + std::to_string(q.n);
  if (q.per_doc) s += " --per-doc";
  if (q.top) s += " --top " + std::to_string(q.top);
  if (q.min_count != 1) s += " --min-count " + std::to_string(q.min_count);
  if (q.ids) s += " --ids";
  if (q.lowercase) s += " --lowercase";
  if (q.alnum) s += " --alnum";
  if (fmt == OutputFormat::kJson) s += " --format json";
  return s;
}

/// Task variants (task, n, top, min-count, per-doc).
std::vector<QueryOptions> task_variants() {
  std::vector<QueryOptions> v;
  auto add = [&](Task t, uint32_t n, uint64_t top, uint64_t min_count, bool per_doc) {
    QueryOptions q;
    q.task = t;
    q.n = n;
    q.top = top;
    q.min_count = min_count;
    q.per_doc = per_doc;
    v.push_back(q);
  };
  add(Task::kWordCount, 3, 0, 1, false);
  add(Task::kWordCount, 3, 2, 1, false);
  add(Task::kSort, 3, 0, 1, false);
  add(Task::kInvertedIndex, 3, 0, 1, false);
  add(Task::kTermVector, 3, 10, 1, false);
  add(Task::kTermVector, 3, 0, 2, false);
  add(Task::kTermVector, 3, 1, 1, false);
  add(Task::kSequenceCount, 2, 0, 1, false);
  add(Task::kSequenceCount, 3, 0, 1, false);
  add(Task::kSequenceCount, 4, 3, 1, false);
  add(Task::kSequenceCount, 8, 0, 1, false);
  add(Task::kSequenceCount, 2, 0, 1, true);
  add(Task::kSequenceCount, 3, 1, 1, true);
  add(Task::kSequenceCount, 8, 0, 1, true);
  add(Task::kRankedInvertedIndex, 2, 0, 1, false);
  add(Task::kRankedInvertedIndex, 3, 0, 1, false);
  add(Task::kRankedInvertedIndex, 5, 0, 1, false);
  add(Task::kRankedInvertedIndex, 8, 0, 1, false);
  return v;
}

/// Every task variant x {lowercase, alnum} x {ids} x {tsv, json}; for large corpora each task
/// variant with `rotations` of the 16 combinations (rotating, so all of them get used).
std::vector<Variant> variants(bool large, int rotations = 2) {
  std::vector<Variant> out;
  const std::vector<QueryOptions> tasks = task_variants();
  for (size_t t = 0; t < tasks.size(); ++t) {
    for (int combo = 0; combo < 16; ++combo) {
      if (large) {
        bool pick = false;
        for (int r = 0; r < rotations; ++r) pick |= combo == static_cast<int>((t * 5 + r * 7) % 16);
        if (!pick) continue;
      }
      QueryOptions q = tasks[t];
      q.lowercase = combo & 1;
      q.alnum = combo & 2;
      q.ids = combo & 4;
      const OutputFormat fmt = (combo & 8) ? OutputFormat::kJson : OutputFormat::kTsv;
      out.push_back({q, fmt, describe(q, fmt)});
    }
  }
  return out;
}

// ------------------------------------------------------------------ comparison

std::string printable(std::string_view s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '\n') {
      o += "\\n\n";
    } else if (c < 0x20 || c >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o;
}

/// Empty when equal, otherwise where they first differ with some context.
std::string difference(const std::string& expected, const std::string& got) {
  if (expected == got) return "";
  size_t i = 0;
  while (i < expected.size() && i < got.size() && expected[i] == got[i]) ++i;
  const size_t from = i > 200 ? i - 200 : 0;
  std::ostringstream s;
  s << "sizes " << expected.size() << " (expected) vs " << got.size() << " (got); first "
    << "difference at byte " << i << "\n--- expected from byte " << from << ":\n"
    << printable(std::string_view(expected).substr(from, 600)) << "\n--- got:\n"
    << printable(std::string_view(got).substr(from, 600)) << "\n";
  return s.str();
}

// ------------------------------------------------------------------ CPU emulation of the rows

/// Builds the rows the device produces, on the CPU, by the device's recipe: word ids are byte
/// ranks, sequences are keyed by (space ranks..., plain rank), runs are counted and put in
/// output order by stable sorts. Fills the names and words the formatter needs.
Rows emulate_rows(const Docs& docs, const QueryOptions& q, std::vector<std::string_view>& names,
                  std::vector<std::string>& words) {
  const std::vector<size_t> order = sorted_doc_order(docs);
  names.clear();
  for (size_t i : order) names.push_back(docs[i].name);
  std::vector<std::vector<std::string>> streams;
  for (size_t i : order) {
    std::vector<std::string> s;
    for (std::string& w : rawref::split_words(docs[i].text)) {
      std::string nw = rawref::normalize_word(std::move(w), q.lowercase, q.alnum);
      if (!nw.empty()) s.push_back(std::move(nw));
    }
    streams.push_back(std::move(s));
  }
  std::set<std::string, bool (*)(std::string_view, std::string_view)> distinct(
      [](std::string_view a, std::string_view b) { return rawref::bytes_less(a, b); });
  for (const auto& s : streams) distinct.insert(s.begin(), s.end());
  words.assign(distinct.begin(), distinct.end());
  std::unordered_map<std::string, uint32_t> id;
  for (uint32_t w = 0; w < words.size(); ++w) id[words[w]] = w;
  auto u8 = [](const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); };
  std::vector<uint32_t> by_space(words.size());
  for (uint32_t w = 0; w < words.size(); ++w) by_space[w] = w;
  std::sort(by_space.begin(), by_space.end(), [&](uint32_t a, uint32_t b) {
    return space_less(u8(words[a]), static_cast<uint32_t>(words[a].size()), u8(words[b]),
                      static_cast<uint32_t>(words[b].size()));
  });
  std::vector<uint32_t> space_rank(words.size());
  for (uint32_t r = 0; r < by_space.size(); ++r) space_rank[by_space[r]] = r;

  // Items as (sort key, output fields); std::map orders the keys lexicographically.
  const uint32_t n = q.n;
  const bool sequences = is_sequence_task(q.task);
  const bool per_doc = q.task == Task::kSequenceCount && q.per_doc;
  const bool ranked = q.task == Task::kRankedInvertedIndex;
  std::map<std::vector<uint32_t>, std::pair<std::vector<uint32_t>, uint64_t>> runs;
  for (uint32_t d = 0; d < streams.size(); ++d) {
    const auto& s = streams[d];
    if (!sequences) {
      for (const std::string& w : s) {
        std::vector<uint32_t> key;
        if (q.task == Task::kTermVector)
          key = {d, id[w]};
        else if (q.task == Task::kInvertedIndex)
          key = {id[w], d};
        else
          key = {id[w]};
        auto& e = runs[key];
        e.first = key;
        ++e.second;
      }
      continue;
    }
    for (size_t p = 0; p + n <= s.size(); ++p) {
      std::vector<uint32_t> key, out;
      if (per_doc) key.push_back(d), out.push_back(d);
      for (uint32_t k = 0; k < n; ++k) {
        const uint32_t w = id[s[p + k]];
        key.push_back(k + 1 < n ? space_rank[w] : w);
        out.push_back(w);
      }
      if (ranked) key.push_back(d), out.push_back(d);
      auto& e = runs[key];
      e.first = out;
      ++e.second;
    }
  }
  struct Run {
    std::vector<uint32_t> key, out;
    uint64_t count;
    uint64_t group;
  };
  std::vector<Run> list;
  for (auto& [key, e] : runs) list.push_back({key, e.first, e.second, 0});
  for (size_t r = 0; r < list.size(); ++r) {
    const bool same =
        r > 0 && std::equal(list[r].key.begin(), list[r].key.begin() + n, list[r - 1].key.begin());
    list[r].group = r == 0 ? 0 : list[r - 1].group + (same ? 0 : 1);
  }
  auto by_count = [](const Run& a, const Run& b) { return a.count > b.count; };
  switch (q.task) {
    case Task::kWordCount:
      std::stable_sort(list.begin(), list.end(), by_count);
      break;
    case Task::kTermVector:
      std::stable_sort(list.begin(), list.end(), [](const Run& a, const Run& b) {
        return a.key[0] != b.key[0] ? a.key[0] < b.key[0] : a.count > b.count;
      });
      break;
    case Task::kSequenceCount:
      if (!per_doc) {
        std::stable_sort(list.begin(), list.end(), by_count);
      } else {
        std::stable_sort(list.begin(), list.end(), [](const Run& a, const Run& b) {
          return a.key[0] != b.key[0] ? a.key[0] < b.key[0] : a.count > b.count;
        });
      }
      break;
    case Task::kRankedInvertedIndex:
      std::stable_sort(list.begin(), list.end(), [](const Run& a, const Run& b) {
        return a.group != b.group ? a.group < b.group : a.count > b.count;
      });
      break;
    default:
      break;
  }
  Rows rows;
  if (sequences) {
    rows.width = n + (per_doc || ranked ? 1 : 0);
  } else {
    rows.width = q.task == Task::kWordCount || q.task == Task::kSort ? 1 : 2;
  }
  for (const Run& r : list) {
    rows.fields.insert(rows.fields.end(), r.out.begin(), r.out.end());
    rows.counts.push_back(r.count);
  }
  return rows;
}

bool gpu_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// ================================================================== CPU tests

TEST(RawGpuHost, ByteClassesAndTrimMatchReference) {
  std::mt19937_64 rng(1);
  const std::string alphabet = S("aZ9 \t\n\v\f\r.-'!\x01\x7f\x80\xC3\xA9\xFF\0_", 22);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string text;
    const size_t len = rng() % 24;
    for (size_t i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
    // Split by flags (the device's rule) against the reference split.
    std::vector<std::string> words;
    const auto* t = reinterpret_cast<const uint8_t*>(text.data());
    for (size_t i = 0; i < text.size(); ++i) {
      if (is_ws(t[i]) || (i > 0 && !is_ws(t[i - 1]))) continue;
      size_t e = i;
      while (e < text.size() && !is_ws(t[e])) ++e;
      words.push_back(text.substr(i, e - i));
    }
    ASSERT_EQ(words, rawref::split_words(text));
    for (const std::string& w : words) {
      for (int mode = 0; mode < 4; ++mode) {
        std::string lowered = w;
        if (mode & 1) {
          for (char& c : lowered) c = static_cast<char>(ascii_lower(static_cast<uint8_t>(c)));
        }
        uint64_t b = 0, e = lowered.size();
        if (mode & 2) alnum_trim(reinterpret_cast<const uint8_t*>(lowered.data()), b, e);
        ASSERT_EQ(lowered.substr(b, e - b), rawref::normalize_word(w, mode & 1, mode & 2));
      }
    }
  }
}

TEST(RawGpuHost, ByteOrdersMatchReference) {
  std::mt19937_64 rng(2);
  const std::string alphabet = S("a\x01\x1f!b\x7f\x80\xFF\0", 9);
  auto random_word = [&] {
    std::string w;
    const size_t len = 1 + rng() % 5;
    for (size_t i = 0; i < len; ++i) w += alphabet[rng() % alphabet.size()];
    return w;
  };
  auto u8 = [](const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); };
  for (int iter = 0; iter < 50000; ++iter) {
    const std::string a = random_word();
    const std::string b = iter % 3 == 0 ? a + random_word() : random_word();
    const auto la = static_cast<uint32_t>(a.size());
    const auto lb = static_cast<uint32_t>(b.size());
    ASSERT_EQ(bytes_compare(u8(a), la, u8(b), lb) < 0, rawref::bytes_less(a, b));
    ASSERT_EQ(bytes_compare(u8(b), lb, u8(a), la) < 0, rawref::bytes_less(b, a));
    ASSERT_EQ(bytes_equal(u8(a), la, u8(b), lb), a == b);
    ASSERT_EQ(space_less(u8(a), la, u8(b), lb), rawref::bytes_less(a + " ", b + " "));
    ASSERT_EQ(space_less(u8(b), lb, u8(a), la), rawref::bytes_less(b + " ", a + " "));
    if (a == b) {
      ASSERT_EQ(word_hash(u8(a), la), word_hash(u8(b), lb));
    }
  }
}

TEST(RawGpuHost, SequenceOrderFromRankTuples) {
  // Sorting sequences by (space ranks of the leading words, plain rank of the last) must give
  // the byte order of the joined strings.
  std::mt19937_64 rng(4);
  const std::vector<std::string> vocab = {
      "a", S("a\x01", 2), "a!", "ab", "b", S("a\0", 2), "a\x1f", "\xC3", "\xC3\xA9", "!", "a\x7f"};
  std::vector<uint32_t> plain(vocab.size()), space(vocab.size());
  auto u8 = [](const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); };
  for (uint32_t i = 0; i < vocab.size(); ++i) {
    for (uint32_t j = 0; j < vocab.size(); ++j) {
      const auto li = static_cast<uint32_t>(vocab[i].size());
      const auto lj = static_cast<uint32_t>(vocab[j].size());
      plain[i] += bytes_compare(u8(vocab[j]), lj, u8(vocab[i]), li) < 0;
      space[i] += space_less(u8(vocab[j]), lj, u8(vocab[i]), li);
    }
  }
  for (uint32_t n = 2; n <= 4; ++n) {
    std::vector<std::vector<uint32_t>> seqs(3000);
    for (auto& s : seqs) {
      for (uint32_t k = 0; k < n; ++k) s.push_back(static_cast<uint32_t>(rng() % vocab.size()));
    }
    auto joined = [&](const std::vector<uint32_t>& s) {
      std::string j = vocab[s[0]];
      for (size_t k = 1; k < s.size(); ++k) j += " " + vocab[s[k]];
      return j;
    };
    auto key = [&](const std::vector<uint32_t>& s) {
      std::vector<uint32_t> k;
      for (size_t i = 0; i < s.size(); ++i) {
        k.push_back(i + 1 < s.size() ? space[s[i]] : plain[s[i]]);
      }
      return k;
    };
    for (size_t i = 0; i + 1 < seqs.size(); ++i) {
      const auto& a = seqs[i];
      const auto& b = seqs[i + 1];
      ASSERT_EQ(key(a) < key(b), rawref::bytes_less(joined(a), joined(b)))
          << printable(joined(a)) << " vs " << printable(joined(b));
      ASSERT_EQ(key(a) == key(b), joined(a) == joined(b));
    }
  }
}

TEST(RawGpuHost, JsonStringMatchesNlohmann) {
  std::mt19937_64 rng(6);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s;
    const size_t len = rng() % 12;
    for (size_t i = 0; i < len; ++i) {
      const int kind = static_cast<int>(rng() % 4);
      const char special = "\"\\\xC3\xA9\x80\x01"[rng() % 6];
      s += static_cast<char>(kind == 0 ? rng() % 256 : (kind == 1 ? 0x20 + rng() % 95 : special));
    }
    const std::string expected =
        nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    ASSERT_EQ(json_string(s), expected) << printable(s);
  }
}

TEST(RawGpuHost, KeyChunkPlans) {
  auto plan = [](std::vector<int> bits) {
    std::string s;
    for (const KeyChunk& c : plan_key_chunks(bits)) {
      s += "[" + std::to_string(c.first) + "," + std::to_string(c.last) + ":" +
           std::to_string(c.bits) + "]";
    }
    return s;
  };
  EXPECT_EQ(plan({1}), "[0,0:1]");
  EXPECT_EQ(plan({20, 20, 20}), "[0,2:60]");
  EXPECT_EQ(plan({17, 17, 17, 17}), "[1,3:51][0,0:17]");
  EXPECT_EQ(plan({32, 32, 32}), "[1,2:64][0,0:32]");
  EXPECT_EQ(plan({12, 17, 17, 17, 17, 17, 17, 17, 17}), "[6,8:51][3,5:51][0,2:46]");
  EXPECT_EQ(plan({17, 17, 17, 17, 17, 17, 17, 17, 12}), "[5,8:63][2,4:51][0,1:34]");
}

TEST(RawGpuHost, DocumentOrderIsStableByteOrder) {
  Docs d = {{"a0", ""},   {"a/b", ""}, {"dup", "1"}, {"a-c", ""}, {"dup", "2"},
            {"\xFF", ""}, {"Z", ""},   {"", ""},     {"a", ""}};
  const std::vector<size_t> order = sorted_doc_order(d);
  std::vector<std::string> got;
  for (size_t i : order) got.push_back(d[i].name + d[i].text);
  EXPECT_EQ(got,
            (std::vector<std::string>{"", "Z", "a", "a-c", "a/b", "a0", "dup1", "dup2", "\xFF"}));
}

/// The formatter fed with CPU-built rows gives the reference bytes for every variant.
void check_formatter(const Corpus& c) {
  int failures = 0;
  for (const Variant& v : variants(c.large, 1)) {
    std::vector<std::string_view> names;
    std::vector<std::string> words;
    const Rows rows = emulate_rows(c.docs, v.q, names, words);
    const std::string got = format_output(names, words, rows, v.q, v.fmt);
    const std::string expected = raw_reference_output(c.docs, v.q, v.fmt);
    const std::string diff = difference(expected, got);
    if (!diff.empty()) {
      ADD_FAILURE() << c.name << ": " << v.label << "\n" << diff;
      if (++failures >= 5) return;
    }
  }
}

TEST(RawGpuHost, FormatterMatchesReferenceOnSmallCorpora) {
  for (const Corpus& c : small_corpora()) check_formatter(c);
}

TEST(RawGpuHost, FormatterMatchesReferenceOnZipfCorpus) {
  check_formatter(zipf_corpus());
}

TEST(RawGpuHost, FormatterMatchesReferenceOnSample) {
  const Corpus c = sample_corpus();
  if (c.docs.empty()) GTEST_SKIP() << "no sample at " << sample_dir();
  check_formatter(c);
}

TEST(RawGpuHost, BadSequenceLengthIsUsageError) {
  const Docs docs = spec_corpus().docs;
  for (uint32_t n : {0u, 1u, 9u, 100u}) {
    for (Task t : {Task::kSequenceCount, Task::kRankedInvertedIndex}) {
      QueryOptions q;
      q.task = t;
      q.n = n;
      EXPECT_THROW(raw_gpu_output(docs, q, OutputFormat::kTsv), UsageError);
    }
  }
}

TEST(RawGpuHost, NoDocumentsNeedsNoDevice) {
  for (const Variant& v : variants(false)) {
    EXPECT_EQ(raw_gpu_output({}, v.q, v.fmt), raw_reference_output({}, v.q, v.fmt)) << v.label;
  }
}

// ================================================================== GPU tests

#define REQUIRE_GPU() \
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device"

/// raw_gpu_output against the reference for the variants; returns the number of mismatches.
int check_gpu(const Corpus& c, const std::vector<Variant>& vs, const DebugOptions& debug,
              const std::string& mode) {
  int failures = 0;
  for (const Variant& v : vs) {
    RawGpuTimings t;
    std::string got;
    try {
      got = raw_gpu_output_debug(c.docs, v.q, v.fmt, &t, debug);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.name << " [" << mode << "]: " << v.label << " threw: " << e.what();
      if (++failures >= 5) return failures;
      continue;
    }
    const std::string expected = raw_reference_output(c.docs, v.q, v.fmt);
    const std::string diff = difference(expected, got);
    if (!diff.empty()) {
      ADD_FAILURE() << c.name << " [" << mode << "]: " << v.label << "\n" << diff;
      if (++failures >= 5) return failures;
    }
    if (debug.force_byte_grouping && t.words > 0) {  // no words: nothing was grouped
      EXPECT_TRUE(t.hash_fallback) << c.name << ": " << v.label;
    }
    if (debug.hash_mask == 3 && t.distinct_words > 4) {
      EXPECT_TRUE(t.hash_fallback) << v.label;
    }
    if (debug.hash_mask == ~uint64_t{0} && !debug.force_byte_grouping) {
      // A real 64-bit collision on these corpora would be news; report it but it is not wrong.
      if (t.hash_fallback) std::cerr << "note: hash collision fallback on " << c.name << "\n";
    }
  }
  return failures;
}

TEST(RawGpu, SmallCorporaAllVariants) {
  REQUIRE_GPU();
  for (const Corpus& c : small_corpora()) check_gpu(c, variants(false), DebugOptions{}, "hash");
}

TEST(RawGpu, SmallCorporaForcedHashCollisions) {
  REQUIRE_GPU();
  DebugOptions debug;
  debug.hash_mask = 3;  // four hash values: collisions everywhere, must fall back
  for (const Corpus& c : small_corpora()) check_gpu(c, variants(true, 3), debug, "mask 3");
}

TEST(RawGpu, SmallCorporaByteGrouping) {
  REQUIRE_GPU();
  DebugOptions debug;
  debug.force_byte_grouping = true;
  for (const Corpus& c : small_corpora()) check_gpu(c, variants(true, 3), debug, "bytes");
}

TEST(RawGpu, ZipfCorpus) {
  // > 65536 distinct words: 17-bit ids, so n = 4..8 sequences need several LSD chunks.
  REQUIRE_GPU();
  const Corpus c = zipf_corpus();
  check_gpu(c, variants(true, 2), DebugOptions{}, "hash");
  DebugOptions debug;
  debug.hash_mask = 0xFFFF;  // collisions among ~100k words, fallback on a big input
  check_gpu(c, variants(true, 1), debug, "mask 0xFFFF");
}

TEST(RawGpu, SampleCorpus) {
  REQUIRE_GPU();
  const Corpus c = sample_corpus();
  if (c.docs.empty()) GTEST_SKIP() << "no sample at " << sample_dir();
  check_gpu(c, variants(true, 2), DebugOptions{}, "hash");
}

TEST(RawGpu, SampleCorpusTimingsAndCounts) {
  REQUIRE_GPU();
  const Corpus c = sample_corpus();
  if (c.docs.empty()) GTEST_SKIP() << "no sample at " << sample_dir();
  uint64_t words = 0, bytes = 0;
  for (const RawDocument& d : c.docs) {
    words += rawref::split_words(d.text).size();
    bytes += d.text.size() + 1;
  }
  QueryOptions q;
  q.task = Task::kWordCount;
  RawGpuTimings t;
  const std::string first = raw_gpu_output(c.docs, q, OutputFormat::kTsv, &t);
  EXPECT_EQ(t.words, words);
  EXPECT_EQ(t.bytes, bytes);
  EXPECT_GT(t.distinct_words, 0u);
  EXPECT_EQ(t.rows, t.distinct_words);
  EXPECT_FALSE(t.hash_fallback);
  EXPECT_GE(t.upload_s, 0);
  EXPECT_GE(t.tokenize_s, 0);
  EXPECT_GE(t.group_s, 0);
  EXPECT_GE(t.reduce_s, 0);
  EXPECT_GE(t.format_s, 0);
  // Deterministic: the same bytes again.
  EXPECT_EQ(raw_gpu_output(c.docs, q, OutputFormat::kTsv), first);
  std::cerr << "sample word-count: upload " << t.upload_s << " s, tokenize " << t.tokenize_s
            << " s, group " << t.group_s << " s, reduce " << t.reduce_s << " s, format "
            << t.format_s << " s, " << t.words << " words, " << t.distinct_words << " distinct\n";
}

TEST(RawGpu, SingleDocumentCorpora) {
  // One document only (a single file), one word, one byte, no trailing separator in the input.
  REQUIRE_GPU();
  const std::vector<Corpus> cs = {{"one-word", {{"f", "word"}}},
                                  {"one-byte", {{"f", "x"}}},
                                  {"one-space", {{"f", " "}}},
                                  {"one-empty", {{"f", ""}}},
                                  {"nul-only", {{"f", S("\0", 1)}}}};
  for (const Corpus& c : cs) check_gpu(c, variants(false), DebugOptions{}, "hash");
}

}  // namespace
}  // namespace gtadoc::rawgpu
