// GET /v1/docs of `gtadoc serve`: one document's bytes rebuilt on rank 0 from its own shard only
// (formats/document_text.h), never broadcast to the other ranks and never queued behind queries.
// A name is found by binary search in the manifest's document table (sorted by name). The
// shard's grammar is read once (read_shard_grammar) and kept in a bounded LRU cache of grammars
// (--doc-cache-bytes, 256 MiB by default; a grammar larger than the bound is used once and not
// kept), so that a later document of the same shard costs only its expansion and the read of its
// own whitespace gaps (read_shard_layout of a gap range: a chunk or two of /layout/gaps). Two
// requests for a shard not cached yet read it once. Thread-safe; the reads block (the HTTP
// server calls them on a small pool of its own).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/archive.h"
#include "formats/document_text.h"

namespace gtadoc {

/// One document ready to be read: its words expanded, its whitespace gaps read, its size checked
/// against the manifest's.
class OpenDocument {
 public:
  uint64_t size() const { return text_->size(); }
  /// Moves the read position to byte `pos` (at most size()).
  void seek(uint64_t pos) { text_->seek(pos); }
  /// Appends at most `max` next bytes to `out`; returns how many.
  uint64_t read(std::string& out, uint64_t max) { return text_->read(out, max); }

 private:
  friend class DocumentStore;
  std::shared_ptr<const void> shard_;  ///< keeps the shard's whitespace dictionary
  std::vector<WordId> words_;
  std::vector<uint32_t> gaps_;  ///< this document's only
  std::unique_ptr<DocumentText> text_;
};

class DocumentStore {
 public:
  /// Documents of the archive at `archive`, whose manifest (which must outlive the store) is
  /// `manifest`; at most `cache_bytes` of grammars cached (0: none).
  DocumentStore(std::filesystem::path archive, const Manifest& manifest, uint64_t cache_bytes);

  const Manifest& manifest() const { return manifest_; }
  /// The id of the document named `name` (byte order binary search), or nullopt.
  std::optional<DocId> find(std::string_view name) const;
  /// Reads what document `doc` needs (its shard's grammar, from the cache when there) and
  /// expands it. Blocks. Throws InputError when the shard cannot be read or does not match the
  /// manifest (a corrupted archive).
  std::unique_ptr<OpenDocument> open(DocId doc);

  struct Stats {
    uint64_t bytes = 0, entries = 0, capacity = 0, hits = 0, misses = 0;
  };
  Stats stats() const;

 private:
  struct Shard {
    ShardGrammar grammar;
    std::vector<std::string> ws_dict;  ///< the layout's whitespace dictionary
    std::vector<uint64_t> gap_at;      ///< where each document's gaps start in the shard's layout
    uint64_t bytes = 0;                ///< memory held
  };
  std::shared_ptr<const Shard> shard(uint32_t s);
  std::shared_ptr<const Shard> load(uint32_t s) const;

  std::filesystem::path archive_;
  const Manifest& manifest_;
  const uint64_t capacity_;
  mutable std::mutex mu_;
  using Entry = std::pair<uint32_t, std::shared_ptr<const Shard>>;
  std::list<Entry> lru_;  ///< front = most recently used
  std::map<uint32_t, std::list<Entry>::iterator> index_;
  std::map<uint32_t, std::shared_future<std::shared_ptr<const Shard>>> loading_;
  uint64_t bytes_ = 0;
  std::atomic<uint64_t> hits_{0}, misses_{0};
};

}  // namespace gtadoc
