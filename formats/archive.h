// The on-disk archive (docs/REFERENCE.md §5, docs/FORMAT.md): a directory holding `manifest.h5`
// (format version, dictionary, document and shard tables, statistics) and one `shard-NNNNN.h5` per
// shard (grammar + whitespace layout). Every dataset carries a Fletcher32 checksum; readers check
// the format tag, version and archive id of every file and validate the grammar, and turn any HDF5
// failure into an InputError naming the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"
#include "formats/dictionary.h"
#include "formats/digest.h"
#include "formats/grammar.h"
#include "formats/h5.h"

namespace gtadoc {

/// One document's sizes; its name is Manifest::doc_names[id].
struct DocEntry {
  uint64_t bytes = 0;  ///< original size in bytes
  uint64_t words = 0;  ///< number of words
  uint32_t shard = 0;  ///< shard holding the document
};

struct ShardEntry {
  DocId first_doc = 0;  ///< documents of a shard are contiguous ids
  uint32_t num_docs = 0;
  uint64_t input_bytes = 0;  ///< bytes of the original documents
  uint64_t words = 0;
  uint64_t rules = 0;       ///< including the root
  uint64_t symbols = 0;     ///< total rule body length, root included
  uint32_t depth = 0;       ///< DAG depth (root height)
  uint64_t file_bytes = 0;  ///< size of the shard file on disk
  Sha256 sha256{};          ///< SHA-256 of the shard file; all zero when not recorded
  /// Where the grammar arrays' chunks lie in the shard file (formats/chunk_maps.h, in the order
  /// of kMappedArrays): the shard is then read without HDF5. Empty when not recorded.
  std::vector<h5::ChunkMap> chunk_maps;
};

struct Manifest {
  uint32_t format_version = kFormatVersion;
  uint64_t archive_id = 0;  ///< random; every shard file repeats it so files cannot be mixed
  Dictionary dict;
  std::vector<DocEntry> docs;  ///< index = DocId
  /// Document names, in byte order (index = DocId): paths relative to the input directory (or
  /// base names), any bytes but NUL; one byte buffer and offsets (find() searches by name).
  Dictionary doc_names;
  std::vector<ShardEntry> shards;
  /// The manifest's content digest as stored (`content_sha256`); nullopt in archives written
  /// before digests existed. Writers compute it (manifest_content_digest); only `gtadoc verify`
  /// recomputes and compares it.
  std::optional<Sha256> content_sha256;
};

/// SHA-256 of a canonical serialization of the manifest's content: archive id, dictionary,
/// document table, shard table (shard digests included). Independent of how HDF5 stores it.
Sha256 manifest_content_digest(const Manifest& manifest);
/// True when every shard entry carries a digest.
bool has_shard_digests(const Manifest& manifest);

struct ArchiveOptions {
  int deflate_level = 6;  ///< 0 disables deflate; integer arrays also get the shuffle filter
  unsigned threads = 0;   ///< threads that deflate a dataset's chunks (0: every usable CPU)
};

inline const char* kManifestFile = "manifest.h5";
/// "shard-00000.h5" for shard 0, and so on.
std::string shard_file_name(uint32_t shard);
/// Bytes of the shard files in `archive` (the grammars as stored; 0 when none can be listed):
/// read from the directory alone, so the start-up can size a job before MPI starts.
uint64_t shard_file_bytes(const std::filesystem::path& archive);

/// Why `dir` is not a gtadoc archive and nothing else (empty when it is one): it must hold a
/// manifest.h5 with gtadoc's format tag and a valid header, and besides it only regular files
/// named shard-NNNNN.h5 for shard numbers below the manifest's `shards`, each a shard file of
/// the same archive id. `compress --force` replaces only such a directory.
std::string archive_directory_problem(const std::filesystem::path& dir);

/// Writes one shard file (must not exist). `grammar` must be finalized (see formats/grammar.h).
void write_shard_file(const std::filesystem::path& file, uint64_t archive_id, uint32_t shard,
                      const ShardGrammar& grammar, const ShardLayout& layout,
                      const ArchiveOptions& options);

/// A shard file's arrays converted, shuffled, deflated and summed as they will be stored, ready
/// for write_shard_file. Preparing takes no lock (HDF5 is not entered), so many shards deflate
/// side by side and the process-wide HDF5 lock is held only to create the file and store bytes:
/// a 32-thread compression of 20 GB spent a quarter of its shards' time waiting for that lock
/// while each holder deflated. The grammar and layout must outlive the write (where chunks are
/// left to HDF5's own pipeline, see h5::FilteredArray).
class FilteredShard {
 public:
  FilteredShard();
  FilteredShard(FilteredShard&&) noexcept;
  FilteredShard& operator=(FilteredShard&&) noexcept;
  ~FilteredShard();

 private:
  friend FilteredShard prepare_shard_file(uint32_t, const ShardGrammar&, const ShardLayout&,
                                          const ArchiveOptions&);
  friend void write_shard_file(const std::filesystem::path&, uint64_t, const FilteredShard&);
  struct Arrays;
  std::unique_ptr<Arrays> arrays_;
};
/// Filters shard `shard`'s arrays on `options.threads` threads (no lock held or taken).
FilteredShard prepare_shard_file(uint32_t shard, const ShardGrammar& grammar,
                                 const ShardLayout& layout, const ArchiveOptions& options);
/// Writes a prepared shard file (must not exist), under the HDF5 lock: the same bytes as the
/// write_shard_file above.
void write_shard_file(const std::filesystem::path& file, uint64_t archive_id,
                      const FilteredShard& shard);
/// Writes the manifest file (must not exist), with its content digest and the shard digests
/// the entries carry.
void write_manifest_file(const std::filesystem::path& file, const Manifest& manifest,
                         const ArchiveOptions& options);

/// How read_manifest reads the dictionary and the document names: with the rest, or deferred.
/// Deferred, the dictionary is read on a thread of its own while the caller goes on (its words
/// are waited for at their first use, and its errors thrown there: a query reads its shards
/// meanwhile, and needs the words only to print its rows), and the document names are read at
/// their first use (a query that prints no document never reads them: 4 M names at 32 GB).
/// kWordsOnDemand defers the names so, and the dictionary too: it is read whole at the first
/// access that needs it, on the thread making it, and Dictionary::fetch reads a few words alone
/// (a query printing 100 words reads neither the other words nor their offsets).
enum class ManifestRead { kWhole, kDeferDictionary, kWordsOnDemand };

/// Reads and checks `<archive>/manifest.h5`. Throws InputError ("<path>: not a gtadoc archive",
/// "...: unsupported format version N", "...: checksum mismatch (corrupted)", ...).
Manifest read_manifest(const std::filesystem::path& archive,
                       ManifestRead how = ManifestRead::kWhole);
/// Reads, checks and validates one shard's grammar, decoding and validating on `threads` threads
/// (0: every usable CPU; a caller reading several shards side by side gives each a share).
/// `checks`: validate_grammar whole, or only check_grammar_frame for a caller that checks the
/// bodies itself (formats/grammar.h).
/// Where one read_shard_grammar's time went, in seconds: waiting for the HDF5 lock, the file's
/// opening and the datasets' location under it, the data (read and decoded outside the lock),
/// the checks back under it, and the grammar's validation; `steps` splits the data's time
/// (h5::BatchRead::Times: locating the chunks, first touch, then thread-seconds of reads,
/// checksums, inflating and unpacking).
struct ShardReadTimes {
  bool located = false;  ///< read by the manifest's chunk maps, without HDF5
  double lock_wait = 0, open = 0, data = 0, checks = 0, validate = 0;
  h5::BatchRead::Times steps;
};
ShardGrammar read_shard_grammar(const std::filesystem::path& archive, const Manifest& manifest,
                                uint32_t shard, unsigned threads = 0,
                                ShardReadTimes* times = nullptr,
                                GrammarChecks checks = GrammarChecks::kFull);
/// Reads and checks one shard's whitespace layout.
ShardLayout read_shard_layout(const std::filesystem::path& archive, const Manifest& manifest,
                              uint32_t shard);
/// The same, with only the gaps [first_gap, first_gap + gaps) in `gaps`: HDF5 reads and inflates
/// only the chunks of /layout/gaps that hold them, so one document's gaps cost a chunk or two (at
/// most 1 MiB each), not the shard's. The whitespace dictionary is read whole, or, when
/// `whitespace` is false, left empty (the gap ids are then checked against the number of entries
/// the file stores: a caller that holds the dictionary already reads a document's gaps alone).
/// The dataset's size is checked against the manifest as above; a range beyond it is an
/// InputError.
ShardLayout read_shard_layout(const std::filesystem::path& archive, const Manifest& manifest,
                              uint32_t shard, uint64_t first_gap, uint64_t gaps,
                              bool whitespace = true);

/// `name` for a message: printable ASCII as it is, other bytes and the backslash escaped.
std::string printable_name(std::string_view name);

/// Checks every document of shard `shard` against the manifest's document table: the words its
/// root segment expands to, and the bytes its words (from the dictionary) and its gaps (from
/// the layout) add up to, from per-rule sums without expanding anything. Throws InputError
/// "document D (NAME) expands to N words, the manifest says M" (or "... N bytes ..."). `verify`
/// and `decompress` check with it before they rely on the sizes.
/// The message names the shard's file.
void check_shard_documents(const std::filesystem::path& archive, const Manifest& manifest,
                           uint32_t shard, const ShardGrammar& grammar, const ShardLayout& layout);

}  // namespace gtadoc
