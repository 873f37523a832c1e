// Turning INPUT arguments into the document table (docs/REFERENCE.md §2): directories are walked
// recursively (every regular file is a document named by its path relative to the directory), plain
// files are one document named by their base name; names must be unique; documents are sorted by
// name (byte order), which fixes their ids. Also the shard plan: contiguous, byte-balanced ranges.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/big_alloc.h"
#include "common/types.h"

namespace gtadoc {

struct InputDocument {
  std::string name;
  std::filesystem::path path;
  uint64_t bytes = 0;
};

/// An entry below an input directory that is not a document (symlink policy: a symlink to a
/// regular file, inside or outside the tree, is followed and is a document named by the link's
/// own path; a symlink to a directory is not descended; dangling symlinks, symlink loops,
/// FIFOs, sockets and devices are skipped).
struct SkippedInput {
  std::filesystem::path path;
  std::string why;  ///< "FIFO", "socket", "device", "dangling symlink", "symlink loop", ...
};

/// Throws InputError for a missing/unreadable input, a duplicate name, or an empty corpus.
/// Entries of input directories that are not documents are appended to `skipped` when given.
/// Input directories are walked breadth first, the directories of one depth read on `threads`
/// threads (0: every usable CPU), and the files found are checked (size, readable) on them; the
/// documents, the skipped entries (in walk order) and the error (the first failure in walk order)
/// are the same for every thread count.
std::vector<InputDocument> collect_inputs(const std::vector<std::string>& inputs,
                                          std::vector<SkippedInput>* skipped = nullptr,
                                          unsigned threads = 1);

/// Logs what collect_inputs skipped: each entry at info level (-v), and one warning line
/// counting them (nothing when none were skipped).
void announce_skipped(const std::vector<SkippedInput>& skipped);

struct ShardPlan {
  DocId first_doc = 0;
  uint32_t num_docs = 0;
  uint64_t bytes = 0;
};

/// Splits the documents into `shards` contiguous ranges (0 = as many as needed so each holds
/// about `shard_size` bytes), balanced by bytes, never empty, never splitting a document.
std::vector<ShardPlan> plan_shards(const std::vector<InputDocument>& docs, uint64_t shard_size,
                                   uint32_t shards);

/// Reads a whole file into `buffer` (reused from call to call: it only grows) and returns its
/// bytes, straight from read() into the buffer; `size_hint` is the size the file is expected to
/// have (any size is read correctly). Throws InputError naming the file on failure.
std::string_view read_whole_file(const std::filesystem::path& path, uint64_t size_hint,
                                 UninitVector<char>& buffer);

}  // namespace gtadoc
