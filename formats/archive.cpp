#include "formats/archive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <future>
#include <limits>
#include <span>
#include <string_view>
#include <system_error>

#include "common/big_alloc.h"
#include "common/error.h"
#include "common/parallel.h"
#include "common/recycled_arrays.h"
#include "common/settings.h"
#include "common/timer.h"
#include "formats/chunk_maps.h"
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

}  // namespace

std::string printable_name(std::string_view name) {
  std::string out;
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += ch;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, c == '\\' ? "\\\\" : "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

namespace {

h5::WriteOptions write_options(const ArchiveOptions& o) {
  GTADOC_EXPECTS(o.deflate_level >= 0 && o.deflate_level <= 9, "deflate level must be 0..9");
  h5::WriteOptions w;
  w.deflate_level = o.deflate_level;
  w.threads = o.threads;
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

// Offsets (lengths.size() + 1 entries) of strings written by put_strings, checked against the
// number of bytes.
std::vector<uint64_t> string_offsets(const std::vector<uint64_t>& lengths, uint64_t bytes_size,
                                     const char* bytes_name, const char* lengths_name) {
  std::vector<uint64_t> offsets(lengths.size() + 1, 0);
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] > bytes_size - offsets[i])
      throw InputError(std::string("string lengths in ") + lengths_name + " exceed " + bytes_name);
    offsets[i + 1] = offsets[i] + lengths[i];
  }
  if (offsets.back() != bytes_size)
    throw InputError(std::string("string lengths in ") + lengths_name + " do not add up to " +
                     bytes_name);
  return offsets;
}

// Strings written by put_strings, read by `batch` into `bytes` and `lengths` (queued as
// `bytes_i`, `lengths_i`): finishes both and returns the offsets (lengths.size() + 1 entries).
// Errors come in the order of reading the lengths, then the bytes.
std::vector<uint64_t> get_strings(h5::BatchRead& batch, size_t bytes_i, size_t lengths_i,
                                  const std::vector<uint64_t>& lengths, const char* bytes_name,
                                  const char* lengths_name) {
  batch.finish(lengths_i);
  std::vector<uint64_t> offsets =
      string_offsets(lengths, batch.size(bytes_i), bytes_name, lengths_name);
  batch.finish(bytes_i);
  return offsets;
}

// A group that may be missing: the error is thrown when the group is first used, where a
// sequential reader would have opened it.
class LazyGroup {
 public:
  LazyGroup(h5::Id loc, const char* name) {
    try {
      group_ = h5::open_group(loc, name);
    } catch (const InputError&) {
      error_ = std::current_exception();
    }
  }
  bool ok() const { return !error_; }
  h5::Id id() const {
    if (error_) std::rethrow_exception(error_);
    return group_.id();
  }

 private:
  h5::Group group_;
  std::exception_ptr error_;
};

void write_header(h5::Id file, const char* content, uint64_t archive_id) {
  h5::write_string_attr(file, "format", kFormatTag);
  h5::write_uint_attr(file, "format_version", kFormatVersion, Width::kU32);
  h5::write_string_attr(file, "content", content);
  h5::write_uint_attr(file, "archive_id", archive_id, Width::kU64);
}

struct Header {
  uint64_t archive_id = 0;
  uint32_t version = 0;
};

// Checks tag, version and content of an open archive file; returns its archive id and version.
Header check_header(h5::Id file, const char* content) {
  std::optional<std::string> tag = h5::read_string_attr(file, "format");
  if (!tag || *tag != kFormatTag) throw InputError("not a gtadoc archive file");
  std::optional<uint64_t> version = h5::read_uint_attr(file, "format_version");
  if (!version) throw InputError("not a gtadoc archive file (no valid format_version attribute)");
  if (*version < kOldestFormatVersion || *version > kFormatVersion)
    throw InputError("unsupported format version " + std::to_string(*version) +
                     " (this build reads " + std::to_string(kOldestFormatVersion) + " to " +
                     std::to_string(kFormatVersion) + ")");
  std::optional<std::string> kind = h5::read_string_attr(file, "content");
  if (!kind || *kind != content)
    throw InputError(std::string("not a gtadoc ") + content +
                     " file (content: " + (kind ? *kind : std::string("none")) + ")");
  std::optional<uint64_t> id = h5::read_uint_attr(file, "archive_id");
  if (!id) throw InputError("missing archive_id attribute");
  return {*id, static_cast<uint32_t>(*version)};
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
  const Header h = check_header(f.id(), kShardContent);
  if (h.archive_id != manifest.archive_id)
    throw InputError("belongs to another archive (archive_id " + std::to_string(h.archive_id) +
                     ", the manifest has " + std::to_string(manifest.archive_id) + ")");
  expect_equal(h.version, manifest.format_version, "format_version (the manifest's)");
  const ShardEntry& entry = manifest.shards[shard];
  expect_equal(need_uint_attr(f.id(), "shard"), shard, "shard index");
  // Version 1 shards record the dictionary's size; version 2 ones their own vocabulary's
  // (checked against /grammar/local_words where the grammar is read).
  if (h.version == 1)
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

uint64_t shard_file_bytes(const std::filesystem::path& archive) {
  std::error_code ec;
  uint64_t bytes = 0;
  for (std::filesystem::directory_iterator it(archive, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code size_ec;
    if (name.rfind("shard-", 0) == 0 && it->is_regular_file(size_ec)) {
      const uint64_t size = it->file_size(size_ec);
      if (!size_ec) bytes += size;
    }
  }
  return bytes;
}

std::string archive_directory_problem(const fs::path& dir) {
  const fs::path manifest = dir / kManifestFile;
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(manifest, ec)))
    return std::string(kManifestFile) + " is not a regular file";
  h5::Lock lock;
  uint64_t archive_id = 0, shards = 0;
  try {
    h5::File f = h5::open_file(manifest);
    archive_id = check_header(f.id(), kManifestContent).archive_id;
    shards = need_uint_attr(f.id(), "shards");
  } catch (const InputError& e) {
    return std::string(kManifestFile) + ": " + e.what();
  }
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == kManifestFile) continue;
    unsigned shard = 0;
    char tail = 0;
    const bool named = std::sscanf(name.c_str(), "shard-%u.h%c", &shard, &tail) == 2 &&
                       tail == '5' && shard < shards && name == shard_file_name(shard);
    std::error_code st_ec;
    if (!named || !fs::is_regular_file(it->symlink_status(st_ec)))
      return name + " is not part of a gtadoc archive";
    try {
      h5::File f = h5::open_file(it->path());
      if (check_header(f.id(), kShardContent).archive_id != archive_id)
        return name + " belongs to another archive";
    } catch (const InputError& e) {
      return name + ": " + e.what();
    }
  }
  if (ec) return "cannot list: " + ec.message();
  return "";
}

// ------------------------------------------------------------------------------------ shards

/// The arrays of a shard file, filtered; the vectors the file stores that the grammar and layout
/// do not hold as such live here too.
struct FilteredShard::Arrays {
  uint32_t shard = 0, num_words = 0, first_doc = 0, num_docs = 0;
  std::vector<uint64_t> body_lengths, segment_lengths, ws_lengths;
  std::vector<char> ws_bytes;
  std::vector<Symbol> stored_symbols;  ///< as the file stores them (stored_symbols)
  h5::FilteredArray local_words, body, symbols, levels, rule_length, rule_uses, segments, ws_b,
      ws_l, gaps;
};

namespace {

// The symbols as a shard stores them (format 3): boundary i of the root as V + R + i (V local
// words, R rules), so that the values are dense from 0 and their type keeps only the bits the
// largest needs (at least 1; the N-bit filter packs them). Returns those bits.
unsigned stored_symbols(const ShardGrammar& g, std::vector<Symbol>& out) {
  const uint64_t base = uint64_t{g.num_words} + g.num_rules();
  const uint64_t root = g.rule_offsets[g.root()];
  out.assign(g.symbols.begin(), g.symbols.end());
  Symbol most = 0;
  for (uint64_t i = 0; i < out.size(); ++i) {
    if (is_boundary(out[i])) {
      const uint64_t v = base + (out[i] & ~kBoundaryBit);
      GTADOC_EXPECTS(i >= root && v <= std::numeric_limits<Symbol>::max(),
                     "write_shard_file: a boundary outside the root, or too many documents");
      out[i] = static_cast<Symbol>(v);
    }
    most = std::max(most, out[i]);
  }
  return std::max(1u, static_cast<unsigned>(std::bit_width(most)));
}

// The inverse on read: stored values of the root from V + R on back to boundary_symbol (the
// grammar's checks then hold the boundaries to what they hold any to); values at or beyond
// V + R in other rules are left to those checks too (not a word, not a rule).
void restore_boundaries(ShardGrammar& g) {
  const uint64_t base = uint64_t{g.num_words} + g.num_rules();
  for (uint64_t i = g.rule_offsets[g.root()], end = g.rule_offsets.back(); i < end; ++i) {
    const Symbol s = g.symbols[i];
    if (s < base) continue;
    if (s - base >= kBoundaryBit)
      throw InputError("/grammar/symbols holds " + std::to_string(s) +
                       " in the root, beyond any word, rule or document boundary");
    g.symbols[i] = boundary_symbol(static_cast<uint32_t>(s - base));
  }
}

}  // namespace

FilteredShard::FilteredShard() = default;
FilteredShard::FilteredShard(FilteredShard&&) noexcept = default;
FilteredShard& FilteredShard::operator=(FilteredShard&&) noexcept = default;
FilteredShard::~FilteredShard() = default;

FilteredShard prepare_shard_file(uint32_t shard, const ShardGrammar& g, const ShardLayout& layout,
                                 const ArchiveOptions& options) {
  GTADOC_EXPECTS(g.rule_offsets.size() >= 2 && g.rule_offsets.front() == 0 &&
                     g.rule_offsets.back() == g.symbols.size(),
                 "write_shard_file: grammar is not finalized (rule_offsets)");
  const uint32_t rules = g.num_rules();
  GTADOC_EXPECTS(g.rule_length.size() == rules && g.rule_uses.size() == rules &&
                     !g.level_offsets.empty() && g.doc_root_offsets.size() == g.num_docs + 1ull,
                 "write_shard_file: grammar is not finalized (metadata arrays)");
  const h5::WriteOptions o = write_options(options);
  FilteredShard p;
  p.arrays_ = std::make_unique<FilteredShard::Arrays>();
  FilteredShard::Arrays& a = *p.arrays_;
  a.shard = shard;
  a.num_words = g.num_words;
  a.first_doc = g.first_doc;
  a.num_docs = g.num_docs;
  a.body_lengths.resize(rules);
  for (uint32_t r = 0; r < rules; ++r)
    a.body_lengths[r] = g.rule_offsets[r + 1] - g.rule_offsets[r];
  a.segment_lengths.resize(g.num_docs);
  for (uint32_t d = 0; d < g.num_docs; ++d)
    a.segment_lengths[d] = g.doc_root_offsets[d + 1] - g.doc_root_offsets[d] - 1;
  for (const std::string& w : layout.ws_dict) {
    a.ws_bytes.insert(a.ws_bytes.end(), w.begin(), w.end());
    a.ws_lengths.push_back(w.size());
  }
  const uint64_t ws_max_id = layout.ws_dict.empty() ? 0 : layout.ws_dict.size() - 1;
  auto min_of = [&](const auto& v) { return h5::filter_array_min_width(std::span(v), o); };
  GTADOC_EXPECTS(g.local_words.size() == g.num_words,
                 "write_shard_file: grammar is not finalized (local_words)");
  a.local_words = min_of(g.local_words);
  a.body = min_of(a.body_lengths);
  h5::WriteOptions packed = o;
  packed.nbit = stored_symbols(g, a.stored_symbols);
  a.symbols = h5::filter_array(std::span<const Symbol>(a.stored_symbols), Width::kU32, packed);
  a.levels = min_of(g.level_offsets);
  a.rule_length = min_of(g.rule_length);
  a.rule_uses = min_of(g.rule_uses);
  a.segments = min_of(a.segment_lengths);
  a.ws_b = h5::filter_array(std::span<const char>(a.ws_bytes), Width::kU8, o);
  a.ws_l = min_of(a.ws_lengths);
  a.gaps = h5::filter_array(std::span<const uint32_t>(layout.gaps), h5::min_width(ws_max_id), o);
  return p;
}

void write_shard_file(const fs::path& file, uint64_t archive_id, const FilteredShard& prepared) {
  const FilteredShard::Arrays& a = *prepared.arrays_;
  h5::Lock lock;
  RemoveOnFailure cleanup(file);
  in_file(file, [&] {
    h5::File f = h5::create_file(file);
    cleanup.arm();
    write_header(f.id(), kShardContent, archive_id);
    h5::write_uint_attr(f.id(), "shard", a.shard, Width::kU32);
    h5::write_uint_attr(f.id(), "num_words", a.num_words, Width::kU32);
    h5::write_uint_attr(f.id(), "first_doc", a.first_doc, Width::kU32);
    h5::write_uint_attr(f.id(), "num_docs", a.num_docs, Width::kU32);

    h5::Group gr = h5::create_group(f.id(), "grammar");
    h5::write_filtered(gr.id(), "local_words", a.local_words);
    h5::write_filtered(gr.id(), "rule_body_lengths", a.body);
    h5::write_filtered(gr.id(), "symbols", a.symbols);
    h5::write_filtered(gr.id(), "level_offsets", a.levels);
    h5::write_filtered(gr.id(), "rule_length", a.rule_length);
    h5::write_filtered(gr.id(), "rule_uses", a.rule_uses);
    h5::write_filtered(gr.id(), "doc_segment_lengths", a.segments);
    gr.close();

    h5::Group lg = h5::create_group(f.id(), "layout");
    h5::write_filtered(lg.id(), "ws_bytes", a.ws_b);
    h5::write_filtered(lg.id(), "ws_lengths", a.ws_l);
    h5::write_filtered(lg.id(), "gaps", a.gaps);
    lg.close();
    f.close();
  });
  cleanup.disarm();
}

void write_shard_file(const fs::path& file, uint64_t archive_id, uint32_t shard,
                      const ShardGrammar& g, const ShardLayout& layout,
                      const ArchiveOptions& options) {
  write_shard_file(file, archive_id, prepare_shard_file(shard, g, layout, options));
}

namespace {

// GTADOC_CHUNK_MAPS=0: shards are read through HDF5 even where the manifest records their chunk
// maps (measurements).
bool chunk_maps_wanted() {
  return settings::flag("GTADOC_CHUNK_MAPS");
}

// Reads the grammar arrays of shard `file` by the entry's chunk maps, with open(2) and pread and
// no HDF5 call. False (leaving the outputs to be filled again) when the entry has no maps, they
// disagree with the entry, the file is not a regular file of the recorded size, or a chunk does
// not decode as its map says: the caller then reads the file through HDF5, whose checks and
// messages hold.
// The shard's arrays in handed-back memory where it is held (common/recycled_arrays.h: earlier
// shards' arrays, their pages in place), sized as the manifest and g.num_words say (local words
// only where the shard stores them: format 2).
void take_recycled(ShardGrammar& g, const ShardEntry& entry, bool local) {
  if (local) g.local_words = recycled::take(g.num_words);
  g.symbols = recycled::take(entry.symbols);
  g.rule_uses = recycled::take(entry.rules);
  g.rule_length = recycled::take<uint64_t>(entry.rules);
  g.rule_offsets = recycled::take<uint64_t>(entry.rules + 1);
  g.doc_root_offsets = recycled::take<uint64_t>(uint64_t{entry.num_docs} + 1);
}

bool read_located(const fs::path& file, const ShardEntry& entry, unsigned threads, ShardGrammar& g,
                  std::vector<uint64_t>& body_lengths, std::vector<uint64_t>& segments,
                  ShardReadTimes& spent) {
  const std::vector<h5::ChunkMap>& maps = entry.chunk_maps;
  if (maps.size() != kMappedArrays.size() || h5::locked_read_asked() || !chunk_maps_wanted())
    return false;
  // The maps' sizes are the manifest's (the HDF5 path checks the same against the datasets).
  if (maps[0].n >= kBoundaryBit || maps[1].n != entry.rules || maps[2].n != entry.symbols ||
      maps[4].n != entry.rules || maps[5].n != entry.rules || maps[6].n != entry.num_docs)
    return false;
  Timer clock;
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      (entry.file_bytes != 0 && static_cast<uint64_t>(st.st_size) != entry.file_bytes) ||
      !chunk_maps_fit(maps, static_cast<uint64_t>(st.st_size)))
    return false;
  spent.open += clock.seconds();
  g.num_words = static_cast<uint32_t>(maps[0].n);
  h5::BatchRead batch(threads);
  // Pages already in memory, where held (common/recycled_arrays.h), as the HDF5 path takes them.
  take_recycled(g, entry, true);
  body_lengths = recycled::take<uint64_t>(entry.rules);
  segments = recycled::take<uint64_t>(entry.num_docs);
  const size_t items[] = {batch.add_located(fd, maps[0], g.local_words),
                          batch.add_located(fd, maps[1], body_lengths),
                          batch.add_located(fd, maps[2], g.symbols),
                          batch.add_located(fd, maps[3], g.level_offsets),
                          batch.add_located(fd, maps[4], g.rule_length),
                          batch.add_located(fd, maps[5], g.rule_uses),
                          batch.add_located(fd, maps[6], segments)};
  batch.run();
  spent.data += clock.seconds() - spent.open;
  spent.steps = batch.times();
  spent.located =
      std::all_of(std::begin(items), std::end(items), [&](size_t i) { return batch.direct(i); });
  return spent.located;
}

}  // namespace

ShardGrammar read_shard_grammar(const fs::path& archive, const Manifest& manifest, uint32_t shard,
                                unsigned threads, ShardReadTimes* times, GrammarChecks checks) {
  const fs::path file = shard_path(archive, manifest, shard);
  ShardGrammar g;
  ShardReadTimes spent;
  Timer clock;
  double mark = 0;
  auto lap = [&](double& into) {
    const double now = clock.seconds();
    into += now - mark;
    mark = now;
  };
  // Temporary tables, in handed-back memory where it is held (common/recycled_arrays.h).
  std::vector<uint64_t> body_lengths, segments;
  const ShardEntry& entry = manifest.shards[shard];
  const bool local = manifest.format_version >= 2;
  uint64_t num_symbols = 0;
  // With the manifest's chunk maps: no HDF5 call and no lock at all (read_located). Without
  // them, or when the file's stored bytes do not decode as they say, through HDF5.
  if (!read_located(file, entry, threads, g, body_lengths, segments, spent)) {
    // Under the HDF5 lock only what calls HDF5: the file opened, its datasets read (their chunks
    // decoded outside the lock, BatchRead::run) and completed in order (a dataset the direct
    // path gave up on is read by H5Dread, whose error is then the one thrown), the file closed.
    h5::Lock lock;
    lap(spent.lock_wait);
    in_file(file, [&] {
      h5::File f = open_shard(file, manifest, shard);
      g.num_words = local ? static_cast<uint32_t>(std::min<uint64_t>(
                                need_uint_attr(f.id(), "num_words"), kBoundaryBit))
                          : manifest.dict.size();
      h5::Group gr = h5::open_group(f.id(), "grammar");
      h5::BatchRead batch(threads);
      take_recycled(g, entry, local);
      body_lengths = recycled::take<uint64_t>(entry.rules);
      segments = recycled::take<uint64_t>(entry.num_docs);
      // Sizes the manifest and the header give are checked before anything is allocated.
      const size_t local_i = local ? batch.add(gr.id(), "local_words", g.local_words, g.num_words,
                                               "size of /grammar/local_words")
                                   : 0;
      const size_t body_i =
          batch.add(gr.id(), "rule_body_lengths", body_lengths, entry.rules, "number of rules");
      const size_t symbols_i =
          batch.add(gr.id(), "symbols", g.symbols, entry.symbols, "number of symbols");
      const size_t levels_i = batch.add(gr.id(), "level_offsets", g.level_offsets);
      const size_t length_i = batch.add(gr.id(), "rule_length", g.rule_length, entry.rules,
                                        "size of /grammar/rule_length");
      const size_t uses_i =
          batch.add(gr.id(), "rule_uses", g.rule_uses, entry.rules, "size of /grammar/rule_uses");
      const size_t segments_i = batch.add(gr.id(), "doc_segment_lengths", segments, entry.num_docs,
                                          "size of /grammar/doc_segment_lengths");
      lap(spent.open);
      batch.run();
      lap(spent.data);
      spent.steps = batch.times();
      if (local) batch.finish(local_i);
      batch.finish(body_i);
      num_symbols = batch.size(symbols_i);
      for (size_t i : {symbols_i, levels_i, length_i, uses_i, segments_i}) batch.finish(i);
    });
  } else {
    num_symbols = g.symbols.size();
    mark = clock.seconds();  // read_located counted its own time (open, data)
  }
  // The tables' relations, and the offsets derived from them, outside the lock.
  in_file(file, [&] {
    g.first_doc = entry.first_doc;
    g.num_docs = entry.num_docs;
    if (local) {
      expect_equal(g.local_words.size(), g.num_words, "size of /grammar/local_words");
      if (!g.local_words.empty() && g.local_words.back() >= manifest.dict.size())
        throw InputError("/grammar/local_words holds word id " +
                         std::to_string(g.local_words.back()) + ", beyond the dictionary (" +
                         std::to_string(manifest.dict.size()) + " words)");
    }
    if (body_lengths.empty()) throw InputError("grammar has no rules");
    resize_on_huge_pages(g.rule_offsets, body_lengths.size() + 1);
    g.rule_offsets[0] = 0;
    for (size_t r = 0; r < body_lengths.size(); ++r) {
      if (body_lengths[r] > num_symbols - g.rule_offsets[r])
        throw InputError("rule body lengths exceed /grammar/symbols");
      g.rule_offsets[r + 1] = g.rule_offsets[r] + body_lengths[r];
    }
    expect_equal(g.rule_offsets.back(), num_symbols, "sum of rule body lengths");
    expect_equal(g.num_rules(), entry.rules, "number of rules");
    expect_equal(num_symbols, entry.symbols, "number of symbols");

    if (g.level_offsets.empty()) throw InputError("empty /grammar/level_offsets");
    expect_equal(g.num_levels() - 1, entry.depth, "grammar depth");
    expect_equal(g.rule_length.size(), g.num_rules(), "size of /grammar/rule_length");
    expect_equal(g.rule_uses.size(), g.num_rules(), "size of /grammar/rule_uses");

    expect_equal(segments.size(), g.num_docs, "size of /grammar/doc_segment_lengths");
    const uint64_t root_length = g.rule_offsets.back() - g.rule_offsets[g.root()];
    g.doc_root_offsets.resize(g.num_docs + 1ull);
    g.doc_root_offsets[0] = 0;
    for (uint32_t d = 0; d < g.num_docs; ++d) {
      if (segments[d] > root_length || g.doc_root_offsets[d] > root_length - segments[d])
        throw InputError("document segments exceed the root rule");
      g.doc_root_offsets[d + 1] = g.doc_root_offsets[d] + segments[d] + 1;
    }
    if (g.num_docs > 0)
      expect_equal(g.doc_root_offsets.back(), root_length + 1, "end of the last document segment");
    if (manifest.format_version >= 3) restore_boundaries(g);
  });
  recycled::give(std::move(body_lengths));
  recycled::give(std::move(segments));
  lap(spent.checks);
  // Version 1 shards hold dictionary ids: numbered locally here (a pass over the symbols).
  if (manifest.format_version == 1) localize_words(g);
  if (checks == GrammarChecks::kFull) {
    validate_grammar(g, file.string(), threads);
  } else {
    check_grammar_frame(g, file.string());
  }
  lap(spent.validate);
  if (times != nullptr) *times = spent;
  return g;
}

namespace {

// Reads shard `shard`'s whitespace layout: its whole gaps (`range` empty), or only the gaps
// [range->first, range->first + range->second) (the chunks of /layout/gaps holding them); the
// whitespace dictionary unless `whitespace` is false (gap ids are then checked against its size).
ShardLayout read_layout(const fs::path& archive, const Manifest& manifest, uint32_t shard,
                        std::optional<std::pair<uint64_t, uint64_t>> range, bool whitespace) {
  const fs::path file = shard_path(archive, manifest, shard);
  h5::Lock lock;
  return in_file(file, [&] {
    h5::File f = open_shard(file, manifest, shard);
    const ShardEntry& entry = manifest.shards[shard];
    h5::Group lg = h5::open_group(f.id(), "layout");
    ShardLayout layout;
    uint64_t ws_entries = 0;
    if (whitespace) {
      // A document's read takes the two small arrays on this thread (threads cost more).
      h5::BatchRead batch(range ? 1 : 0);
      std::vector<char> bytes;
      std::vector<uint64_t> lengths;
      const size_t lengths_i = batch.add(lg.id(), "ws_lengths", lengths);
      const size_t bytes_i = batch.add(lg.id(), "ws_bytes", bytes);
      const size_t gaps_i = range ? 0 : batch.add(lg.id(), "gaps", layout.gaps);
      batch.run();
      std::vector<uint64_t> offsets =
          get_strings(batch, bytes_i, lengths_i, lengths, "ws_bytes", "ws_lengths");
      layout.ws_dict.reserve(offsets.size() - 1);
      for (size_t i = 0; i + 1 < offsets.size(); ++i)
        layout.ws_dict.emplace_back(bytes.data() + offsets[i], offsets[i + 1] - offsets[i]);
      ws_entries = layout.ws_dict.size();
      if (!range) {
        batch.finish(gaps_i);
        expect_equal(layout.gaps.size(), entry.words + entry.num_docs,
                     "number of gaps (words + documents)");
      }
    } else {
      ws_entries = h5::dataset_size(lg.id(), "ws_lengths");
    }
    if (range) {
      // The dataset's size is checked before the range is read (read_array_range reads nothing
      // beyond the dataset).
      expect_equal(h5::dataset_size(lg.id(), "gaps"), entry.words + entry.num_docs,
                   "number of gaps (words + documents)");
      layout.gaps = h5::read_array_range<uint32_t>(lg.id(), "gaps", range->first, range->second);
    }
    for (uint32_t gap : layout.gaps)
      if (gap >= ws_entries)
        throw InputError("gap id " + std::to_string(gap) +
                         " out of range (whitespace dictionary has " + std::to_string(ws_entries) +
                         " entries)");
    return layout;
  });
}

}  // namespace

ShardLayout read_shard_layout(const fs::path& archive, const Manifest& manifest, uint32_t shard) {
  return read_layout(archive, manifest, shard, std::nullopt, true);
}

ShardLayout read_shard_layout(const fs::path& archive, const Manifest& manifest, uint32_t shard,
                              uint64_t first_gap, uint64_t gaps, bool whitespace) {
  return read_layout(archive, manifest, shard, std::make_pair(first_gap, gaps), whitespace);
}

void check_shard_documents(const fs::path& archive, const Manifest& m, uint32_t shard,
                           const ShardGrammar& g, const ShardLayout& layout) {
  in_file(shard_path(archive, m, shard), [&] {
    const ShardEntry& entry = m.shards.at(shard);
    const std::vector<uint64_t>& dict_offsets = m.dict.offsets();
    auto add = [](uint64_t a, uint64_t b) {  // saturating: a sum past 2^64 matches no table
      uint64_t sum;
      return __builtin_add_overflow(a, b, &sum) ? ~uint64_t{0} : sum;
    };
    auto word_bytes = [&](Symbol s) {
      const WordId w = g.local_words.at(s);
      return dict_offsets.at(w + 1ull) - dict_offsets.at(w);
    };
    // Bytes each rule expands to (a rule references only rules with smaller ids).
    const uint32_t rules = g.num_rules();
    std::vector<uint64_t> rule_bytes(rules, 0);
    for (RuleId r = 0; r + 1 < rules; ++r) {
      uint64_t bytes = 0;
      for (uint64_t i = g.body_begin(r); i < g.body_end(r); ++i) {
        const Symbol s = g.symbols[i];
        bytes = add(bytes, is_word(s, g.num_words) ? word_bytes(s)
                                                   : rule_bytes.at(rule_of(s, g.num_words)));
      }
      rule_bytes[r] = bytes;
    }
    uint64_t gap = 0;
    for (uint32_t d = 0; d < g.num_docs; ++d) {
      const DocId id = entry.first_doc + d;
      const DocEntry& doc = m.docs.at(id);
      auto [begin, end] = g.doc_segment(d);
      uint64_t words = 0, bytes = 0;
      for (uint64_t i = begin; i < end; ++i) {
        const Symbol s = g.symbols[i];
        if (is_word(s, g.num_words)) {
          words = add(words, 1);
          bytes = add(bytes, word_bytes(s));
        } else {
          words = add(words, g.rule_length.at(rule_of(s, g.num_words)));
          bytes = add(bytes, rule_bytes.at(rule_of(s, g.num_words)));
        }
      }
      const std::string what =
          "document " + std::to_string(id) + " (" + printable_name(m.doc_names[id]) + ")";
      if (words != doc.words)
        throw InputError(what + " expands to " + std::to_string(words) +
                         " words, the manifest says " + std::to_string(doc.words));
      if (words >= layout.gaps.size() - gap)
        throw InputError(what + ": the layout has too few gaps for its words");
      for (uint64_t k = 0; k <= words; ++k)
        bytes = add(bytes, layout.ws_dict.at(layout.gaps[gap + k]).size());
      gap += words + 1;
      if (bytes != doc.bytes)
        throw InputError(what + " expands to " + std::to_string(bytes) +
                         " bytes, the manifest says " + std::to_string(doc.bytes));
    }
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

// Where `batch` reads the dictionary's datasets: suffix lengths, suffix bytes, prefix lengths.
struct QueuedDictionary {
  size_t lengths_i = 0, bytes_i = 0, prefix_i = 0;
};

// Queues the dictionary's datasets of `group` on `batch`, to be read into `f`.
QueuedDictionary queue_dictionary(h5::BatchRead& batch, h5::Id group, FrontCoded& f) {
  QueuedDictionary q;
  q.lengths_i = batch.add(group, "suffix_lengths", f.suffix_lengths);
  q.bytes_i = batch.add(group, "suffix_bytes", f.suffix_bytes);
  q.prefix_i = batch.add(group, "prefix_lengths", f.prefix_lengths);
  return q;
}

// The dictionary, read by `batch` (queued as `q`), checked in the order of a sequential reader.
// Sets `sorted_unique` (checked while decoding).
Dictionary read_dictionary(h5::BatchRead& batch, const QueuedDictionary& q, FrontCoded& f,
                           bool& sorted_unique) {
  batch.finish(q.lengths_i);
  const uint64_t bytes_size = batch.size(q.bytes_i);
  uint64_t total = 0;
  bool overflow = false;
  for (uint64_t len : f.suffix_lengths) overflow |= __builtin_add_overflow(total, len, &total);
  if (overflow || total > bytes_size)
    throw InputError("string lengths in suffix_lengths exceed suffix_bytes");
  if (total != bytes_size)
    throw InputError("string lengths in suffix_lengths do not add up to suffix_bytes");
  batch.finish(q.bytes_i);
  const size_t n = f.suffix_lengths.size();
  if (n >= kBoundaryBit) throw InputError("dictionary too large");
  batch.finish(q.prefix_i);
  expect_equal(f.prefix_lengths.size(), n, "size of /dictionary/prefix_lengths");
  Dictionary dict =
      decode_front_coded(f.prefix_lengths, f.suffix_bytes, f.suffix_lengths, &sorted_unique);
  check_dictionary_words(dict);  // a word with whitespace would split rows of the output
  return dict;
}

// Why document `d`'s name is unusable (empty when it is fine): it must be a safe relative path,
// since decompress writes the document there.
std::string document_name_problem(std::string_view name, size_t d) {
  bool safe = !name.empty() && name.front() != '/' && name.find('\0') == std::string_view::npos;
  for (size_t begin = 0; safe && begin <= name.size();) {
    size_t end = name.find('/', begin);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(begin, end - begin);
    safe = !part.empty() && part != "." && part != "..";
    begin = end + 1;
  }
  if (safe) return {};
  return "document " + std::to_string(d) + ": name \"" + printable_name(name) +
         "\" is not a safe relative path (empty, absolute, a '.', '..' or empty component, or a "
         "NUL byte)";
}

// Whether document `doc`'s size can hold its words (each at least one byte, with a gap of at
// least one byte between two words).
bool document_size_fits(const DocEntry& doc) {
  return doc.words == 0 || (doc.words <= doc.bytes && doc.bytes - doc.words >= doc.words - 1);
}

// The smallest i in [begin, n) for which bad(i) holds, else n: blocks of indexes on every usable
// CPU (a manifest's document table has millions of entries), stopping early past a hit.
template <class Bad>
size_t first_where(size_t begin, size_t n, Bad bad) {
  if (begin >= n) return n;
  constexpr size_t kBlock = 16384;
  const size_t blocks = (n - begin + kBlock - 1) / kBlock;
  std::atomic<size_t> first{n};
  parallel_for(blocks, 0, [&](size_t b) {
    const size_t lo = begin + b * kBlock, hi = std::min(n, lo + kBlock);
    for (size_t i = lo; i < hi && i < first.load(std::memory_order_relaxed); ++i)
      if (bad(i)) {
        size_t seen = first.load();
        while (i < seen && !first.compare_exchange_weak(seen, i)) {
        }
        return;
      }
  });
  return first;
}

// Checks a manifest's document names: each a safe relative path, all in strictly increasing
// byte order. The first bad name in document order is reported, as a sequential reader would;
// the names are checked in blocks on every usable CPU.
void check_document_names(const Dictionary& names) {
  const size_t n = names.size();
  const size_t unsafe =
      first_where(0, n, [&](size_t d) { return !document_name_problem(names[d], d).empty(); });
  if (unsafe < n) throw InputError(document_name_problem(names[unsafe], unsafe));
  const size_t unsorted = first_where(1, n, [&](size_t i) { return !(names[i - 1] < names[i]); });
  if (unsorted < n)
    throw InputError("document names are not sorted and unique (document " +
                     std::to_string(unsorted) + ")");
}

// The document names read by `batch` into `bytes` and `lengths` (queued as `bytes_i`,
// `lengths_i`), checked (check_document_names).
Dictionary take_document_names(h5::BatchRead& batch, size_t bytes_i, size_t lengths_i,
                               std::vector<char>& bytes, const std::vector<uint64_t>& lengths) {
  std::vector<uint64_t> offsets =
      get_strings(batch, bytes_i, lengths_i, lengths, "name_bytes", "name_lengths");
  Dictionary names(std::move(bytes), std::move(offsets));
  check_document_names(names);
  return names;
}

// Checks the relations between the tables of a manifest that was just read.
// `dict_sorted_unique` says whether the dictionary is sorted and unique (checked when decoding).
void check_manifest(const Manifest& m, bool dict_sorted_unique) {
  if (!dict_sorted_unique) throw InputError("dictionary words are not sorted and unique");
  // The shards whose document ranges follow each other inside the table (all of them in a valid
  // manifest) get their sums, and their first document of another shard, on every usable CPU
  // (4 M documents at 32 GB); the checks then run in shard order with a sequential reader's
  // messages.
  const size_t num_shards = m.shards.size();
  size_t ranged = 0;
  for (uint64_t next = 0; ranged < num_shards; ++ranged) {
    const ShardEntry& e = m.shards[ranged];
    if (e.first_doc != next || e.num_docs > m.docs.size() - next) break;
    next += e.num_docs;
  }
  struct Sums {
    uint64_t words = 0, bytes = 0, foreign = ~uint64_t{0};  ///< first document of another shard
  };
  std::vector<Sums> sums(ranged);
  parallel_for(ranged, 0, [&](size_t s) {
    const ShardEntry& e = m.shards[s];
    Sums& out = sums[s];
    for (uint64_t d = e.first_doc; d < e.first_doc + uint64_t{e.num_docs}; ++d) {
      if (m.docs[d].shard != s) {
        out.foreign = d;
        return;
      }
      out.words += m.docs[d].words;
      out.bytes += m.docs[d].bytes;
    }
  });
  uint64_t next_doc = 0;
  for (size_t s = 0; s < num_shards; ++s) {
    const ShardEntry& e = m.shards[s];
    const std::string what = "shard " + std::to_string(s);
    expect_equal(e.first_doc, next_doc, what + " first_doc");
    if (e.num_docs > m.docs.size() - next_doc)
      throw InputError(what + " has documents beyond the document table");
    const Sums& sum = sums.at(s);
    if (sum.foreign != ~uint64_t{0})
      expect_equal(m.docs[sum.foreign].shard, s,
                   "shard of document " + std::to_string(sum.foreign));
    expect_equal(sum.words, e.words, what + " words");
    expect_equal(sum.bytes, e.input_bytes, what + " input_bytes");
    next_doc += e.num_docs;
  }
  expect_equal(next_doc, m.docs.size(), "number of documents covered by shards");
}

}  // namespace

void write_manifest_file(const fs::path& file, const Manifest& m, const ArchiveOptions& options) {
  const h5::WriteOptions o = write_options(options);
  const Totals t = totals_of(m);
  // The content digest is serial (one SHA-256 stream): with more than one thread it is computed
  // next to the front coding and the HDF5 calls, which leave a core idle between their parallel
  // steps.
  std::future<Sha256> digest;
  if (resolve_threads(options.threads) > 1)
    digest = std::async(std::launch::async, [&m] { return manifest_content_digest(m); });
  FrontCoded words = front_code(m.dict, options.threads);
  GTADOC_EXPECTS(m.doc_names.size() == m.docs.size(), "one name per document");
  const std::vector<char>& name_bytes = m.doc_names.bytes();
  std::vector<uint64_t> name_lengths(m.docs.size());
  for (size_t d = 0; d < name_lengths.size(); ++d)
    name_lengths[d] = m.doc_names.offsets()[d + 1] - m.doc_names.offsets()[d];

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
      std::vector<uint8_t> digests;
      digests.reserve(m.shards.size() * sizeof(Sha256));
      for (const S& s : m.shards) digests.insert(digests.end(), s.sha256.begin(), s.sha256.end());
      h5::write_array(sg.id(), "sha256", std::span<const uint8_t>(digests), Width::kU8, o);
      if (std::any_of(m.shards.begin(), m.shards.end(),
                      [](const S& s) { return !s.chunk_maps.empty(); })) {
        std::vector<uint64_t> maps;
        for (const S& s : m.shards) append_chunk_maps(s.chunk_maps, maps);
        put_min(sg.id(), "chunk_maps", maps, o);
      }
      sg.close();
      h5::write_string_attr(f.id(), "content_sha256",
                            to_hex(digest.valid() ? digest.get() : manifest_content_digest(m)));
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

namespace {

// The dictionary of `file` alone, read, decoded and checked (sorted and unique, `size` words)
// with the messages read_manifest gives: the deferred part of a ManifestRead::kDeferDictionary
// read, on its own thread.
Dictionary read_dictionary_alone(const fs::path& file, uint64_t size) {
  h5::Lock lock;
  return in_file(file, [&] {
    h5::File f = h5::open_file(file);
    h5::BatchRead batch;
    LazyGroup dg(f.id(), "dictionary");
    FrontCoded words;
    const QueuedDictionary queued = queue_dictionary(batch, dg.id(), words);
    batch.run();
    bool sorted_unique = true;
    Dictionary dict = read_dictionary(batch, queued, words, sorted_unique);
    if (!sorted_unique) throw InputError("dictionary words are not sorted and unique");
    expect_equal(size, dict.size(), "attribute vocabulary");
    return dict;
  });
}

// The dictionary of `file` as stored (`size` words), read on its own: the shared part of a
// ManifestRead::kWordsOnDemand read, started when the manifest is read.
std::shared_ptr<const FrontCoded> read_front_coded_alone(const fs::path& file, uint64_t size) {
  h5::Lock lock;
  return in_file(file, [&] {
    h5::File f = h5::open_file(file);
    h5::BatchRead batch;
    LazyGroup dg(f.id(), "dictionary");
    auto words = std::make_shared<FrontCoded>();
    const QueuedDictionary queued = queue_dictionary(batch, dg.id(), *words);
    batch.run();
    for (size_t i : {queued.lengths_i, queued.bytes_i, queued.prefix_i}) batch.finish(i);
    expect_equal(words->suffix_lengths.size(), size, "attribute vocabulary");
    expect_equal(words->prefix_lengths.size(), size, "size of /dictionary/prefix_lengths");
    return std::shared_ptr<const FrontCoded>(std::move(words));
  });
}

// A kWordsOnDemand dictionary: its stored arrays read now on a thread of their own; the words
// decoded from them all (at the first access needing them) or a few (Dictionary::fetch), with
// the messages read_manifest gives.
Dictionary words_on_demand(const fs::path& file, uint64_t size) {
  using Raw = std::shared_future<std::shared_ptr<const FrontCoded>>;
  const Raw raw = std::async(std::launch::async, [file, size] {
                    return read_front_coded_alone(file, size);
                  }).share();
  auto all = [raw, file, size] {
    const FrontCoded& f = *raw.get();
    return in_file(file, [&] {
      if (f.suffix_lengths.size() >= kBoundaryBit) throw InputError("dictionary too large");
      // The lengths adding up to the bytes: decode_front_coded_words checks it with
      // read_dictionary's messages.
      (void)decode_front_coded_words(f.prefix_lengths, f.suffix_bytes, f.suffix_lengths, {});
      bool sorted_unique = true;
      Dictionary dict =
          decode_front_coded(f.prefix_lengths, f.suffix_bytes, f.suffix_lengths, &sorted_unique);
      check_dictionary_words(dict);
      if (!sorted_unique) throw InputError("dictionary words are not sorted and unique");
      expect_equal(size, dict.size(), "attribute vocabulary");
      return dict;
    });
  };
  auto some = [raw, file](std::span<const WordId> ids) {
    const FrontCoded& f = *raw.get();
    return in_file(file, [&] {
      return decode_front_coded_words(f.prefix_lengths, f.suffix_bytes, f.suffix_lengths, ids);
    });
  };
  return Dictionary::on_demand(static_cast<uint32_t>(size), std::move(all), std::move(some));
}

// The document names of `file` alone (`size` of them), read and checked with the messages
// read_manifest gives: the on-demand part of a ManifestRead::kDeferDictionary read.
Dictionary read_document_names_alone(const fs::path& file, uint64_t archive_id, uint64_t size) {
  h5::Lock lock;
  return in_file(file, [&] {
    h5::File f = h5::open_file(file);
    expect_equal(check_header(f.id(), kManifestContent).archive_id, archive_id, "archive id");
    h5::BatchRead batch;
    LazyGroup docs(f.id(), "documents");
    std::vector<char> bytes;
    std::vector<uint64_t> lengths;
    const size_t lengths_i = batch.add(docs.id(), "name_lengths", lengths);
    const size_t bytes_i = batch.add(docs.id(), "name_bytes", bytes);
    batch.run();
    Dictionary names = take_document_names(batch, bytes_i, lengths_i, bytes, lengths);
    expect_equal(lengths.size(), size, "size of /documents/name_lengths");
    return names;
  });
}

}  // namespace

Manifest read_manifest(const fs::path& archive, ManifestRead how) {
  const fs::path file = archive / kManifestFile;
  const bool defer = how != ManifestRead::kWhole;
  h5::Lock lock;
  return in_file(file, [&] {
    h5::File f = h5::open_file(file);
    Manifest m;
    const Header header = check_header(f.id(), kManifestContent);
    m.archive_id = header.archive_id;
    m.format_version = header.version;

    // Every table is read in one batch (chunks decoded on threads); errors are thrown in the
    // order of the checks below.
    h5::BatchRead batch;
    LazyGroup dg(f.id(), "dictionary"), docs(f.id(), "documents"), sg(f.id(), "shards");
    FrontCoded words;
    QueuedDictionary queued;
    if (dg.ok() && !defer) queued = queue_dictionary(batch, dg.id(), words);
    std::vector<char> name_bytes;
    std::vector<uint64_t> name_lengths, bytes, doc_words;
    std::vector<uint32_t> shard;
    size_t name_lengths_i = 0, name_bytes_i = 0, bytes_i = 0, words_i = 0, shard_i = 0;
    if (docs.ok()) {
      if (!defer) {
        name_lengths_i = batch.add(docs.id(), "name_lengths", name_lengths);
        name_bytes_i = batch.add(docs.id(), "name_bytes", name_bytes);
      }
      bytes_i = batch.add(docs.id(), "bytes", bytes);
      words_i = batch.add(docs.id(), "words", doc_words);
      shard_i = batch.add(docs.id(), "shard", shard);
    }
    std::vector<uint32_t> first_doc, s_docs, s_depth;
    std::vector<uint64_t> s_in, s_words, s_rules, s_symbols, s_file;
    struct Column {
      const char* name;
      std::vector<uint32_t>* v32;
      std::vector<uint64_t>* v64;
      size_t index;
    };
    std::vector<Column> columns = {
        {"num_docs", &s_docs, nullptr, 0},  {"depth", &s_depth, nullptr, 0},
        {"input_bytes", nullptr, &s_in, 0}, {"words", nullptr, &s_words, 0},
        {"rules", nullptr, &s_rules, 0},    {"symbols", nullptr, &s_symbols, 0},
        {"file_bytes", nullptr, &s_file, 0}};
    size_t first_doc_i = 0, digests_i = 0, maps_i = 0;
    std::vector<uint8_t> digests;  // optional: archives written before digests lack it
    std::vector<uint64_t> maps;    // optional: archives written before chunk maps lack it
    bool have_digests = false, have_maps = false;
    if (sg.ok()) {
      first_doc_i = batch.add(sg.id(), "first_doc", first_doc);
      for (Column& c : columns)
        c.index = c.v32 ? batch.add(sg.id(), c.name, *c.v32) : batch.add(sg.id(), c.name, *c.v64);
      have_digests = h5::has_link(sg.id(), "sha256");
      if (have_digests) digests_i = batch.add(sg.id(), "sha256", digests);
      have_maps = h5::has_link(sg.id(), "chunk_maps");
      if (have_maps) maps_i = batch.add(sg.id(), "chunk_maps", maps);
    }
    batch.run();

    dg.id();  // throws here if the group is missing
    bool dict_sorted_unique = true;
    uint64_t deferred_size = 0;
    if (defer) {
      // Read on its own thread once every other check has passed (started earlier, it would wait
      // for the HDF5 lock this read holds, and an error thrown here would wait for it), the
      // process-wide lock held only to locate its chunks; its errors surface at the first access
      // to the words.
      deferred_size = need_uint_attr(f.id(), "vocabulary");
      if (deferred_size >= kBoundaryBit) throw InputError("dictionary too large");
    } else {
      m.dict = read_dictionary(batch, queued, words, dict_sorted_unique);
      words = FrontCoded{};
    }

    docs.id();  // likewise
    size_t num_docs = 0;
    if (defer) {
      batch.finish(bytes_i);
      num_docs = bytes.size();
    } else {
      m.doc_names =
          take_document_names(batch, name_bytes_i, name_lengths_i, name_bytes, name_lengths);
      num_docs = name_lengths.size();
      batch.finish(bytes_i);
    }
    batch.finish(words_i);
    batch.finish(shard_i);
    expect_equal(bytes.size(), num_docs, "size of /documents/bytes");
    expect_equal(doc_words.size(), num_docs, "size of /documents/words");
    expect_equal(shard.size(), num_docs, "size of /documents/shard");
    if (num_docs >= kBoundaryBit) throw InputError("document table too large");
    if (defer)
      m.doc_names = Dictionary::on_demand(static_cast<uint32_t>(num_docs),
                                          [file, id = m.archive_id, num_docs] {
                                            return read_document_names_alone(file, id, num_docs);
                                          });
    // Millions of entries at tens of GB: built and checked on every usable CPU; the first bad
    // entry in document order is reported, as a sequential reader would.
    resize_on_huge_pages(m.docs, num_docs);  // first touch of 96 MB at 4 M documents
    const size_t bad_doc = first_where(0, num_docs, [&](size_t d) {
      DocEntry& e = m.docs[d];
      e.bytes = bytes[d];
      e.words = doc_words[d];
      e.shard = shard[d];
      return !document_size_fits(e);
    });
    if (bad_doc < num_docs) {
      const DocEntry& e = m.docs[bad_doc];
      throw InputError("document " + std::to_string(bad_doc) + " (" +
                       printable_name(m.doc_names[static_cast<DocId>(bad_doc)]) + ") has " +
                       std::to_string(e.words) + " words in " + std::to_string(e.bytes) +
                       " bytes (too few bytes for its words)");
    }

    sg.id();  // likewise
    batch.finish(first_doc_i);
    const size_t num_shards = first_doc.size();
    for (const Column& c : columns) {
      batch.finish(c.index);
      expect_equal(c.v32 ? c.v32->size() : c.v64->size(), num_shards,
                   std::string("size of /shards/") + c.name);
    }
    m.shards.resize(num_shards);
    for (size_t s = 0; s < num_shards; ++s)
      m.shards[s] = ShardEntry{first_doc[s], s_docs[s],  s_in[s],   s_words[s], s_rules[s],
                               s_symbols[s], s_depth[s], s_file[s], Sha256{},   {}};
    if (have_digests) {
      batch.finish(digests_i);
      expect_equal(digests.size(), num_shards * sizeof(Sha256), "size of /shards/sha256");
      for (size_t s = 0; s < num_shards; ++s)
        std::copy_n(digests.begin() + s * sizeof(Sha256), sizeof(Sha256),
                    m.shards[s].sha256.begin());
    }
    if (have_maps) {
      batch.finish(maps_i);
      try {
        size_t pos = 0;
        for (ShardEntry& e : m.shards) e.chunk_maps = take_chunk_maps(maps, pos);
        if (pos != maps.size()) throw InputError("more numbers than the shards' chunk maps");
      } catch (const InputError& e) {
        throw InputError(std::string("dataset /shards/chunk_maps: ") + e.what());
      }
    }
    if (std::optional<std::string> hex = h5::read_string_attr(f.id(), "content_sha256")) {
      m.content_sha256 = sha256_from_hex(*hex);
      if (!m.content_sha256) throw InputError("attribute content_sha256 is not 64 hex digits");
    }

    const Totals t = totals_of(m);
    expect_equal(need_uint_attr(f.id(), "documents"), m.docs.size(), "attribute documents");
    expect_equal(need_uint_attr(f.id(), "vocabulary"), defer ? deferred_size : m.dict.size(),
                 "attribute vocabulary");
    expect_equal(need_uint_attr(f.id(), "shards"), m.shards.size(), "attribute shards");
    expect_equal(need_uint_attr(f.id(), "words"), t.words, "attribute words");
    expect_equal(need_uint_attr(f.id(), "input_bytes"), t.input_bytes, "attribute input_bytes");
    expect_equal(need_uint_attr(f.id(), "rules"), t.rules, "attribute rules");
    expect_equal(need_uint_attr(f.id(), "symbols"), t.symbols, "attribute symbols");
    expect_equal(need_uint_attr(f.id(), "max_depth"), t.max_depth, "attribute max_depth");
    check_manifest(m, dict_sorted_unique);
    if (how == ManifestRead::kWordsOnDemand)
      m.dict = words_on_demand(file, deferred_size);
    else if (defer)
      m.dict = Dictionary::deferred(static_cast<uint32_t>(deferred_size), [file, deferred_size] {
        return read_dictionary_alone(file, deferred_size);
      });
    return m;
  });
}

Sha256 manifest_content_digest(const Manifest& m) {
  // The serialization is gathered in a buffer and hashed a block at a time (per-field updates of
  // a few bytes each cost more than the hash itself); the bytes are those of update_string and
  // update_u64: lengths and numbers as eight bytes, little-endian.
  Sha256Hasher h;
  std::string buf;
  constexpr size_t kFlush = size_t{1} << 20;
  buf.reserve(kFlush + 64);
  auto u64 = [&](uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
    buf.append(b, 8);
  };
  auto bytes = [&](std::string_view s) {
    if (buf.size() + s.size() > kFlush) {
      h.update(buf);
      buf.clear();
    }
    if (s.size() >= kFlush)
      h.update(s);
    else
      buf.append(s);
  };
  auto str = [&](std::string_view s) {
    u64(s.size());
    bytes(s);
  };
  str("gtadoc manifest content v1");
  u64(m.format_version);
  u64(m.archive_id);
  u64(m.dict.size());
  for (uint32_t w = 0; w < m.dict.size(); ++w) str(m.dict[w]);
  u64(m.docs.size());
  for (size_t i = 0; i < m.docs.size(); ++i) {
    const DocEntry& d = m.docs[i];
    str(m.doc_names[static_cast<DocId>(i)]);
    u64(d.bytes);
    u64(d.words);
    u64(d.shard);
  }
  u64(m.shards.size());
  for (const ShardEntry& s : m.shards) {
    for (uint64_t v : {uint64_t{s.first_doc}, uint64_t{s.num_docs}, s.input_bytes, s.words, s.rules,
                       s.symbols, uint64_t{s.depth}, s.file_bytes})
      u64(v);
    bytes(std::string_view(reinterpret_cast<const char*>(s.sha256.data()), s.sha256.size()));
  }
  h.update(buf);
  return h.finish();
}

bool has_shard_digests(const Manifest& m) {
  return std::all_of(m.shards.begin(), m.shards.end(),
                     [](const ShardEntry& s) { return s.sha256 != Sha256{}; });
}

}  // namespace gtadoc
