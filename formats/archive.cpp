#include "formats/archive.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <span>
#include <string_view>
#include <system_error>

#include "common/error.h"
#include "formats/h5.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;
using h5::Width;

constexpr const char* kFormatTag = "gtadoc-archive";
constexpr const char* kManifestContent = "manifest";
constexpr const char* kShardContent = "shard";

// Runs `body`; an InputError escaping it is rethrown with "<file>: " in front, so that every
// message names the file exactly once.
template <class F>
auto in_file(const fs::path& file, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const InputError& e) {
    throw InputError(file.string() + ": " + e.what(), e.file().c_str(), e.line());
  }
}

// Removes a partially written file when a writer fails (the file did not exist before: writers
// create with H5F_ACC_EXCL).
class RemoveOnFailure {
 public:
  explicit RemoveOnFailure(fs::path file) : file_(std::move(file)) {}
  ~RemoveOnFailure() {
    if (armed_) {
      std::error_code ec;
      fs::remove(file_, ec);
    }
  }
  void arm() { armed_ = true; }
  void disarm() { armed_ = false; }

 private:
  fs::path file_;
  bool armed_ = false;
};

h5::WriteOptions write_options(const ArchiveOptions& o) {
  GTADOC_EXPECTS(o.deflate_level >= 0 && o.deflate_level <= 9, "deflate level must be 0..9");
  h5::WriteOptions w;
  w.deflate_level = o.deflate_level;
  return w;
}

template <class T>
void put_min(h5::Id loc, const char* name, const std::vector<T>& v, const h5::WriteOptions& o) {
  h5::write_array_min_width(loc, name, std::span<const T>(v), o);
}

// Byte strings as concatenated bytes (uint8) + per-string lengths (smallest width).
void put_strings(h5::Id loc, const char* bytes_name, const char* lengths_name,
                 std::span<const char> bytes, const std::vector<uint64_t>& lengths,
                 const h5::WriteOptions& o) {
  h5::write_array(loc, bytes_name, bytes, Width::kU8, o);
  put_min(loc, lengths_name, lengths, o);
}

// Reads strings written by put_strings; returns bytes and offsets (lengths.size() + 1 entries).
std::pair<std::vector<char>, std::vector<uint64_t>> get_strings(h5::Id loc, const char* bytes_name,
                                                                const char* lengths_name) {
  std::vector<uint64_t> lengths = h5::read_array<uint64_t>(loc, lengths_name);
  uint64_t bytes_size = h5::dataset_size(loc, bytes_name);
  std::vector<uint64_t> offsets(lengths.size() + 1, 0);
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] > bytes_size - offsets[i])
      throw InputError(std::string("string lengths in ") + lengths_name + " exceed " + bytes_name);
    offsets[i + 1] = offsets[i] + lengths[i];
  }
  if (offsets.back() != bytes_size)
    throw InputError(std::string("string lengths in ") + lengths_name + " do not add up to " +
                     bytes_name);
  std::vector<char> bytes = h5::read_array<char>(loc, bytes_name);
  return {std::move(bytes), std::move(offsets)};
}

void write_header(h5::Id file, const char* content, uint64_t archive_id) {
  h5::write_string_attr(file, "format", kFormatTag);
  h5::write_uint_attr(file, "format_version", kFormatVersion, Width::kU32);
  h5::write_string_attr(file, "content", content);
  h5::write_uint_attr(file, "archive_id", archive_id, Width::kU64);
}

// Checks tag, version and content of an open archive file; returns its archive id.
uint64_t check_header(h5::Id file, const char* content) {
  std::optional<std::string> tag = h5::read_string_attr(file, "format");
  if (!tag || *tag != kFormatTag) throw InputError("not a gtadoc archive file");
  std::optional<uint64_t> version = h5::read_uint_attr(file, "format_version");
  if (!version) throw InputError("not a gtadoc archive file (no valid format_version attribute)");
  if (*version != kFormatVersion)
    throw InputError("unsupported format version " + std::to_string(*version) +
                     " (this build reads " + std::to_string(kFormatVersion) + ")");
  std::optional<std::string> kind = h5::read_string_attr(file, "content");
  if (!kind || *kind != content)
    throw InputError(std::string("not a gtadoc ") + content +
                     " file (content: " + (kind ? *kind : std::string("none")) + ")");
  std::optional<uint64_t> id = h5::read_uint_attr(file, "archive_id");
  if (!id) throw InputError("missing archive_id attribute");
  return *id;
}

uint64_t need_uint_attr(h5::Id loc, const char* name) {
  std::optional<uint64_t> v = h5::read_uint_attr(loc, name);
  if (!v) throw InputError(std::string("missing or invalid attribute ") + name);
  return *v;
}

template <class A, class B>
void expect_equal(const A& found, const B& expected, const std::string& what) {
  if (static_cast<uint64_t>(found) != static_cast<uint64_t>(expected))
    throw InputError(what + " is " + std::to_string(static_cast<uint64_t>(found)) + ", expected " +
                     std::to_string(static_cast<uint64_t>(expected)));
}

// Opens shard `shard` of `archive` and checks its header against the manifest.
h5::File open_shard(const fs::path& file, const Manifest& manifest, uint32_t shard) {
  h5::File f = h5::open_file(file);
  uint64_t id = check_header(f.id(), kShardContent);
  if (id != manifest.archive_id)
    throw InputError("belongs to another archive (archive_id " + std::to_string(id) +
                     ", the manifest has " + std::to_string(manifest.archive_id) + ")");
  const ShardEntry& entry = manifest.shards[shard];
  expect_equal(need_uint_attr(f.id(), "shard"), shard, "shard index");
  expect_equal(need_uint_attr(f.id(), "num_words"), manifest.dict.size(), "num_words");
  expect_equal(need_uint_attr(f.id(), "first_doc"), entry.first_doc, "first_doc");
  expect_equal(need_uint_attr(f.id(), "num_docs"), entry.num_docs, "num_docs");
  if (entry.file_bytes != 0) {
    std::error_code ec;
    uint64_t size = fs::file_size(file, ec);
    if (!ec && size != entry.file_bytes)
      throw InputError("file size is " + std::to_string(size) + " bytes, the manifest says " +
                       std::to_string(entry.file_bytes) + " (truncated or replaced)");
  }
  return f;
}

fs::path shard_path(const fs::path& archive, const Manifest& manifest, uint32_t shard) {
  if (shard >= manifest.shards.size())
    throw InputError(archive.string() + ": no shard " + std::to_string(shard) +
                     " (the archive has " + std::to_string(manifest.shards.size()) + ")");
  return archive / shard_file_name(shard);
}

}  // namespace

std::string shard_file_name(uint32_t shard) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "shard-%05" PRIu32 ".h5", shard);
  return buf;
}

// ------------------------------------------------------------------------------------ shards

void write_shard_file(const fs::path& file, uint64_t archive_id, uint32_t shard,
                      const ShardGrammar& g, const ShardLayout& layout,
                      const ArchiveOptions& options) {
  GTADOC_EXPECTS(g.rule_offsets.size() >= 2 && g.rule_offsets.front() == 0 &&
                     g.rule_offsets.back() == g.symbols.size(),
                 "write_shard_file: grammar is not finalized (rule_offsets)");
  const uint32_t rules = g.num_rules();
  GTADOC_EXPECTS(g.rule_length.size() == rules && g.rule_uses.size() == rules &&
                     !g.level_offsets.empty() && g.doc_root_offsets.size() == g.num_docs + 1ull,
                 "write_shard_file: grammar is not finalized (metadata arrays)");
  const h5::WriteOptions o = write_options(options);

  std::vector<uint64_t> body_lengths(rules);
  for (uint32_t r = 0; r < rules; ++r) body_lengths[r] = g.rule_offsets[r + 1] - g.rule_offsets[r];
  std::vector<uint64_t> segment_lengths(g.num_docs);
  for (uint32_t d = 0; d < g.num_docs; ++d)
    segment_lengths[d] = g.doc_root_offsets[d + 1] - g.doc_root_offsets[d] - 1;
  std::vector<char> ws_bytes;
  std::vector<uint64_t> ws_lengths;
  for (const std::string& w : layout.ws_dict) {
    ws_bytes.insert(ws_bytes.end(), w.begin(), w.end());
    ws_lengths.push_back(w.size());
  }
  const uint64_t ws_max_id = layout.ws_dict.empty() ? 0 : layout.ws_dict.size() - 1;

  h5::Lock lock;
  RemoveOnFailure cleanup(file);
  in_file(file, [&] {
    h5::File f = h5::create_file(file);
    cleanup.arm();
    write_header(f.id(), kShardContent, archive_id);
    h5::write_uint_attr(f.id(), "shard", shard, Width::kU32);
    h5::write_uint_attr(f.id(), "num_words", g.num_words, Width::kU32);
    h5::write_uint_attr(f.id(), "first_doc", g.first_doc, Width::kU32);
    h5::write_uint_attr(f.id(), "num_docs", g.num_docs, Width::kU32);

    h5::Group gr = h5::create_group(f.id(), "grammar");
    put_min(gr.id(), "rule_body_lengths", body_lengths, o);
    h5::write_array(gr.id(), "symbols", std::span<const Symbol>(g.symbols), Width::kU32, o);
    put_min(gr.id(), "level_offsets", g.level_offsets, o);
    put_min(gr.id(), "rule_length", g.rule_length, o);
    put_min(gr.id(), "rule_uses", g.rule_uses, o);
    put_min(gr.id(), "doc_segment_lengths", segment_lengths, o);
    gr.close();

    h5::Group lg = h5::create_group(f.id(), "layout");
    put_strings(lg.id(), "ws_bytes", "ws_lengths", ws_bytes, ws_lengths, o);
    h5::write_array(lg.id(), "gaps", std::span<const uint32_t>(layout.gaps),
                    h5::min_width(ws_max_id), o);
    lg.close();
    f.close();
  });
  cleanup.disarm();
}

ShardGrammar read_shard_grammar(const fs::path& archive, const Manifest& manifest, uint32_t shard) {
  const fs::path file = shard_path(archive, manifest, shard);
  ShardGrammar g;
  {
    h5::Lock lock;
    in_file(file, [&] {
      h5::File f = open_shard(file, manifest, shard);
      const ShardEntry& entry = manifest.shards[shard];
      g.num_words = manifest.dict.size();
      g.first_doc = entry.first_doc;
      g.num_docs = entry.num_docs;

      h5::Group gr = h5::open_group(f.id(), "grammar");
      std::vector<uint64_t> body_lengths = h5::read_array<uint64_t>(gr.id(), "rule_body_lengths");
      if (body_lengths.empty()) throw InputError("grammar has no rules");
      const uint64_t num_symbols = h5::dataset_size(gr.id(), "symbols");
      g.rule_offsets.assign(body_lengths.size() + 1, 0);
      for (size_t r = 0; r < body_lengths.size(); ++r) {
        if (body_lengths[r] > num_symbols - g.rule_offsets[r])
          throw InputError("rule body lengths exceed /grammar/symbols");
        g.rule_offsets[r + 1] = g.rule_offsets[r] + body_lengths[r];
      }
      expect_equal(g.rule_offsets.back(), num_symbols, "sum of rule body lengths");
      body_lengths = {};
      expect_equal(g.num_rules(), entry.rules, "number of rules");
      expect_equal(num_symbols, entry.symbols, "number of symbols");

      g.symbols = h5::read_array<Symbol>(gr.id(), "symbols");
      g.level_offsets = h5::read_array<uint32_t>(gr.id(), "level_offsets");
      if (g.level_offsets.empty()) throw InputError("empty /grammar/level_offsets");
      expect_equal(g.num_levels() - 1, entry.depth, "grammar depth");
      g.rule_length = h5::read_array<uint64_t>(gr.id(), "rule_length");
      expect_equal(g.rule_length.size(), g.num_rules(), "size of /grammar/rule_length");
      g.rule_uses = h5::read_array<uint32_t>(gr.id(), "rule_uses");
      expect_equal(g.rule_uses.size(), g.num_rules(), "size of /grammar/rule_uses");

      std::vector<uint64_t> segments = h5::read_array<uint64_t>(gr.id(), "doc_segment_lengths");
      expect_equal(segments.size(), g.num_docs, "size of /grammar/doc_segment_lengths");
      const uint64_t root_length = g.rule_offsets.back() - g.rule_offsets[g.root()];
      g.doc_root_offsets.assign(g.num_docs + 1ull, 0);
      for (uint32_t d = 0; d < g.num_docs; ++d) {
        if (segments[d] > root_length || g.doc_root_offsets[d] > root_length - segments[d])
          throw InputError("document segments exceed the root rule");
        g.doc_root_offsets[d + 1] = g.doc_root_offsets[d] + segments[d] + 1;
      }
      if (g.num_docs > 0)
        expect_equal(g.doc_root_offsets.back(), root_length + 1,
                     "end of the last document segment");
    });
  }
  validate_grammar(g, file.string());
  return g;
}

ShardLayout read_shard_layout(const fs::path& archive, const Manifest& manifest, uint32_t shard) {
  const fs::path file = shard_path(archive, manifest, shard);
  h5::Lock lock;
  return in_file(file, [&] {
    h5::File f = open_shard(file, manifest, shard);
    const ShardEntry& entry = manifest.shards[shard];
    h5::Group lg = h5::open_group(f.id(), "layout");
    ShardLayout layout;
    auto [bytes, offsets] = get_strings(lg.id(), "ws_bytes", "ws_lengths");
    layout.ws_dict.reserve(offsets.size() - 1);
    for (size_t i = 0; i + 1 < offsets.size(); ++i)
      layout.ws_dict.emplace_back(bytes.data() + offsets[i], offsets[i + 1] - offsets[i]);
    layout.gaps = h5::read_array<uint32_t>(lg.id(), "gaps");
    expect_equal(layout.gaps.size(), entry.words + entry.num_docs,
                 "number of gaps (words + documents)");
    for (uint32_t gap : layout.gaps)
      if (gap >= layout.ws_dict.size())
        throw InputError("gap id " + std::to_string(gap) +
                         " out of range (whitespace dictionary has " +
                         std::to_string(layout.ws_dict.size()) + " entries)");
    return layout;
  });
}

// ------------------------------------------------------------------------------------ manifest

namespace {

struct Totals {
  uint64_t words = 0, input_bytes = 0, rules = 0, symbols = 0, shard_bytes = 0;
  uint32_t max_depth = 0;
};

Totals totals_of(const Manifest& m) {
  Totals t;
  for (const ShardEntry& s : m.shards) {
    t.words += s.words;
    t.input_bytes += s.input_bytes;
    t.rules += s.rules;
    t.symbols += s.symbols;
    t.shard_bytes += s.file_bytes;
    t.max_depth = std::max(t.max_depth, s.depth);
  }
  return t;
}

// Column `get` of every element of `rows`.
template <class Row, class Get>
auto column(const std::vector<Row>& rows, Get get) {
  std::vector<std::decay_t<decltype(get(rows.front()))>> out;
  out.reserve(rows.size());
  for (const Row& r : rows) out.push_back(get(r));
  return out;
}

// The dictionary, front-coded: word i = the first prefix_lengths[i] bytes of word i-1, then
// suffix i. Sorted words share long prefixes, so this is about a quarter smaller after deflate.
struct FrontCoded {
  std::vector<uint64_t> prefix_lengths;
  std::vector<char> suffix_bytes;
  std::vector<uint64_t> suffix_lengths;
};

FrontCoded front_code(const Dictionary& dict) {
  FrontCoded f;
  f.prefix_lengths.reserve(dict.size());
  f.suffix_lengths.reserve(dict.size());
  std::string_view prev;
  for (uint32_t w = 0; w < dict.size(); ++w) {
    std::string_view word = dict[w];
    size_t k = 0;
    const size_t limit = std::min(word.size(), prev.size());
    while (k < limit && word[k] == prev[k]) ++k;
    f.prefix_lengths.push_back(k);
    f.suffix_bytes.insert(f.suffix_bytes.end(), word.begin() + k, word.end());
    f.suffix_lengths.push_back(word.size() - k);
    prev = word;
  }
  return f;
}

Dictionary read_dictionary(h5::Id group) {
  auto [suffixes, suffix_offsets] = get_strings(group, "suffix_bytes", "suffix_lengths");
  const size_t n = suffix_offsets.size() - 1;
  if (n >= kBoundaryBit) throw InputError("dictionary too large");
  std::vector<uint64_t> prefix = h5::read_array<uint64_t>(group, "prefix_lengths");
  expect_equal(prefix.size(), n, "size of /dictionary/prefix_lengths");
  std::vector<char> bytes;
  std::vector<uint64_t> offsets{0};
  offsets.reserve(n + 1);
  for (size_t w = 0; w < n; ++w) {
    const uint64_t prev_begin = w == 0 ? 0 : offsets[w - 1];
    if (prefix[w] > offsets[w] - prev_begin)
      throw InputError("/dictionary/prefix_lengths[" + std::to_string(w) +
                       "] is longer than the previous word");
    for (uint64_t k = 0; k < prefix[w]; ++k) bytes.push_back(bytes[prev_begin + k]);
    bytes.insert(bytes.end(), suffixes.begin() + suffix_offsets[w],
                 suffixes.begin() + suffix_offsets[w + 1]);
    offsets.push_back(bytes.size());
  }
  return Dictionary(std::move(bytes), std::move(offsets));
}

// Checks the relations between the tables of a manifest that was just read.
void check_manifest(const Manifest& m) {
  if (!m.dict.is_sorted_unique()) throw InputError("dictionary words are not sorted and unique");
  for (size_t i = 1; i < m.docs.size(); ++i)
    if (!(m.docs[i - 1].name < m.docs[i].name))
      throw InputError("document names are not sorted and unique (document " + std::to_string(i) +
                       ")");
  uint64_t next_doc = 0;
  for (size_t s = 0; s < m.shards.size(); ++s) {
    const ShardEntry& e = m.shards[s];
    const std::string what = "shard " + std::to_string(s);
    expect_equal(e.first_doc, next_doc, what + " first_doc");
    if (e.num_docs > m.docs.size() - next_doc)
      throw InputError(what + " has documents beyond the document table");
    uint64_t words = 0, bytes = 0;
    for (uint64_t d = e.first_doc; d < e.first_doc + uint64_t{e.num_docs}; ++d) {
      expect_equal(m.docs[d].shard, s, "shard of document " + std::to_string(d));
      words += m.docs[d].words;
      bytes += m.docs[d].bytes;
    }
    expect_equal(words, e.words, what + " words");
    expect_equal(bytes, e.input_bytes, what + " input_bytes");
    next_doc += e.num_docs;
  }
  expect_equal(next_doc, m.docs.size(), "number of documents covered by shards");
}

}  // namespace

void write_manifest_file(const fs::path& file, const Manifest& m, const ArchiveOptions& options) {
  const h5::WriteOptions o = write_options(options);
  const Totals t = totals_of(m);
  FrontCoded words = front_code(m.dict);
  std::vector<char> name_bytes;
  std::vector<uint64_t> name_lengths;
  for (const DocEntry& d : m.docs) {
    name_bytes.insert(name_bytes.end(), d.name.begin(), d.name.end());
    name_lengths.push_back(d.name.size());
  }

  h5::Lock lock;
  RemoveOnFailure cleanup(file);
  in_file(file, [&] {
    {
      h5::File f = h5::create_file(file);
      cleanup.arm();
      write_header(f.id(), kManifestContent, m.archive_id);
      h5::write_uint_attr(f.id(), "documents", m.docs.size(), Width::kU64);
      h5::write_uint_attr(f.id(), "words", t.words, Width::kU64);
      h5::write_uint_attr(f.id(), "input_bytes", t.input_bytes, Width::kU64);
      h5::write_uint_attr(f.id(), "vocabulary", m.dict.size(), Width::kU64);
      h5::write_uint_attr(f.id(), "shards", m.shards.size(), Width::kU32);
      h5::write_uint_attr(f.id(), "rules", t.rules, Width::kU64);
      h5::write_uint_attr(f.id(), "symbols", t.symbols, Width::kU64);
      h5::write_uint_attr(f.id(), "max_depth", t.max_depth, Width::kU32);
      h5::write_uint_attr(f.id(), "archive_bytes", 0, Width::kU64);  // set below

      h5::Group dg = h5::create_group(f.id(), "dictionary");
      put_min(dg.id(), "prefix_lengths", words.prefix_lengths, o);
      put_strings(dg.id(), "suffix_bytes", "suffix_lengths", words.suffix_bytes,
                  words.suffix_lengths, o);
      dg.close();

      h5::Group docs = h5::create_group(f.id(), "documents");
      put_strings(docs.id(), "name_bytes", "name_lengths", name_bytes, name_lengths, o);
      put_min(docs.id(), "bytes", column(m.docs, [](const DocEntry& d) { return d.bytes; }), o);
      put_min(docs.id(), "words", column(m.docs, [](const DocEntry& d) { return d.words; }), o);
      put_min(docs.id(), "shard", column(m.docs, [](const DocEntry& d) { return d.shard; }), o);
      docs.close();

      h5::Group sg = h5::create_group(f.id(), "shards");
      using S = ShardEntry;
      put_min(sg.id(), "first_doc", column(m.shards, [](const S& s) { return s.first_doc; }), o);
      put_min(sg.id(), "num_docs", column(m.shards, [](const S& s) { return s.num_docs; }), o);
      put_min(sg.id(), "input_bytes", column(m.shards, [](const S& s) { return s.input_bytes; }),
              o);
      put_min(sg.id(), "words", column(m.shards, [](const S& s) { return s.words; }), o);
      put_min(sg.id(), "rules", column(m.shards, [](const S& s) { return s.rules; }), o);
      put_min(sg.id(), "symbols", column(m.shards, [](const S& s) { return s.symbols; }), o);
      put_min(sg.id(), "depth", column(m.shards, [](const S& s) { return s.depth; }), o);
      put_min(sg.id(), "file_bytes", column(m.shards, [](const S& s) { return s.file_bytes; }), o);
      sg.close();
      f.close();
    }
    // archive_bytes includes the manifest itself: rewrite the fixed-size attribute in place.
    std::error_code ec;
    uint64_t own_size = fs::file_size(file, ec);
    if (ec) throw InputError("cannot stat: " + ec.message());
    h5::File f = h5::open_file(file, /*writable=*/true);
    h5::overwrite_uint_attr(f.id(), "archive_bytes", t.shard_bytes + own_size);
    f.close();
  });
  cleanup.disarm();
}

Manifest read_manifest(const fs::path& archive) {
  const fs::path file = archive / kManifestFile;
  h5::Lock lock;
  return in_file(file, [&] {
    h5::File f = h5::open_file(file);
    Manifest m;
    m.archive_id = check_header(f.id(), kManifestContent);
    m.format_version = kFormatVersion;

    h5::Group dg = h5::open_group(f.id(), "dictionary");
    m.dict = read_dictionary(dg.id());

    h5::Group docs = h5::open_group(f.id(), "documents");
    auto [name_bytes, name_offsets] = get_strings(docs.id(), "name_bytes", "name_lengths");
    const size_t num_docs = name_offsets.size() - 1;
    std::vector<uint64_t> bytes = h5::read_array<uint64_t>(docs.id(), "bytes");
    std::vector<uint64_t> words = h5::read_array<uint64_t>(docs.id(), "words");
    std::vector<uint32_t> shard = h5::read_array<uint32_t>(docs.id(), "shard");
    expect_equal(bytes.size(), num_docs, "size of /documents/bytes");
    expect_equal(words.size(), num_docs, "size of /documents/words");
    expect_equal(shard.size(), num_docs, "size of /documents/shard");
    m.docs.resize(num_docs);
    for (size_t d = 0; d < num_docs; ++d) {
      DocEntry& e = m.docs[d];
      e.name.assign(name_bytes.data() + name_offsets[d], name_offsets[d + 1] - name_offsets[d]);
      e.bytes = bytes[d];
      e.words = words[d];
      e.shard = shard[d];
    }

    h5::Group sg = h5::open_group(f.id(), "shards");
    std::vector<uint32_t> first_doc = h5::read_array<uint32_t>(sg.id(), "first_doc");
    const size_t num_shards = first_doc.size();
    auto get32 = [&](const char* name) {
      std::vector<uint32_t> v = h5::read_array<uint32_t>(sg.id(), name);
      expect_equal(v.size(), num_shards, std::string("size of /shards/") + name);
      return v;
    };
    auto get64 = [&](const char* name) {
      std::vector<uint64_t> v = h5::read_array<uint64_t>(sg.id(), name);
      expect_equal(v.size(), num_shards, std::string("size of /shards/") + name);
      return v;
    };
    std::vector<uint32_t> s_docs = get32("num_docs"), s_depth = get32("depth");
    std::vector<uint64_t> s_in = get64("input_bytes"), s_words = get64("words"),
                          s_rules = get64("rules"), s_symbols = get64("symbols"),
                          s_file = get64("file_bytes");
    m.shards.resize(num_shards);
    for (size_t s = 0; s < num_shards; ++s)
      m.shards[s] = ShardEntry{first_doc[s], s_docs[s],    s_in[s],    s_words[s],
                               s_rules[s],   s_symbols[s], s_depth[s], s_file[s]};

    const Totals t = totals_of(m);
    expect_equal(need_uint_attr(f.id(), "documents"), m.docs.size(), "attribute documents");
    expect_equal(need_uint_attr(f.id(), "vocabulary"), m.dict.size(), "attribute vocabulary");
    expect_equal(need_uint_attr(f.id(), "shards"), m.shards.size(), "attribute shards");
    expect_equal(need_uint_attr(f.id(), "words"), t.words, "attribute words");
    expect_equal(need_uint_attr(f.id(), "input_bytes"), t.input_bytes, "attribute input_bytes");
    expect_equal(need_uint_attr(f.id(), "rules"), t.rules, "attribute rules");
    expect_equal(need_uint_attr(f.id(), "symbols"), t.symbols, "attribute symbols");
    expect_equal(need_uint_attr(f.id(), "max_depth"), t.max_depth, "attribute max_depth");
    check_manifest(m);
    return m;
  });
}

}  // namespace gtadoc
