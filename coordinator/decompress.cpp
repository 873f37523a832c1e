#include "coordinator/decompress.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <span>
#include <unordered_set>

#include "common/error.h"
#include "common/log.h"
#include "common/parallel.h"
#include "formats/archive.h"
#include "formats/atomic_output.h"
#include "formats/document_text.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

/// A stored name becomes a path below the output directory; refuse anything that would escape.
fs::path safe_relative_path(std::string_view name) {
  fs::path p(name);
  bool ok = !name.empty() && p.is_relative();
  for (const auto& part : p) {
    if (part == ".." || part == "." || part.empty()) ok = false;
  }
  if (!ok)
    throw InputError("document name '" + std::string(name) + "' is not a safe relative path");
  return p;
}

/// Creates the directories of `relative` below `root` one level at a time, never `root` itself:
/// once a stop request (SIGINT, SIGTERM) has removed the temporary tree, a creation still under
/// way on another thread fails instead of bringing the tree back before the process exits.
void create_below(const fs::path& root, const fs::path& relative) {
  fs::path p = root;
  for (const auto& part : relative) {
    p /= part;
    std::error_code ec;
    fs::create_directory(p, ec);  // false without an error when it is a directory already
    if (ec) throw InputError(p.string() + ": cannot create directory: " + ec.message());
  }
}

}  // namespace

uint64_t decompress(const fs::path& archive, const fs::path& out_dir,
                    const DecompressOptions& options) {
  Manifest m = read_manifest(archive);
  std::vector<char> wanted(m.docs.size(), options.docs.empty() ? 1 : 0);
  if (!options.docs.empty()) {
    for (const std::string& name : options.docs) {
      const DocId d = m.doc_names.find(name);
      if (d >= m.docs.size())
        throw InputError(archive.string() + ": no document named '" + name + "'");
      wanted[d] = 1;
    }
  }
  std::vector<fs::path> rel(m.docs.size());
  uint64_t count = 0;
  for (DocId d = 0; d < m.docs.size(); ++d)
    if (wanted[d]) {
      rel[d] = safe_relative_path(m.doc_names[d]);
      ++count;
    }

  // --force replaces a directory only if it looks like a previous decompression of this archive:
  // every regular file in it is one of the archive's documents (a tree has no marker file of its
  // own, as it must hold exactly the documents).
  std::error_code ec;
  if (options.force && fs::is_directory(fs::symlink_status(out_dir, ec))) {
    const Dictionary& names = m.doc_names;
    for (fs::recursive_directory_iterator it(out_dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->is_directory(ec)) continue;
      const std::string name = fs::relative(it->path(), out_dir, ec).generic_string();
      if (!it->is_regular_file(ec) || names.find(name) >= names.size())
        throw UsageError(out_dir.string() + ": not a previous output of this archive (" + name +
                         " is not one of its documents); --force replaces only those");
    }
  }
  AtomicOutput output(out_dir, AtomicOutput::Kind::kDirectory, options.force,
                      AtomicOutput::Replace{"", {archive}, {}});
  std::mutex h5_mutex, fs_mutex;
  std::unordered_set<std::string> made;  // folders below the temporary root created so far
  Progress progress("decompressing", count, "documents", options.progress);
  // Shards on as many threads as there are shards; each shard's documents on the threads the
  // shards leave (an archive of one shard uses them all).
  const unsigned threads = resolve_threads(options.threads);
  const unsigned outer = static_cast<unsigned>(std::min<size_t>(threads, m.shards.size()));
  const unsigned inner = std::max(1u, threads / std::max(1u, outer));
  parallel_for(m.shards.size(), outer, [&](size_t s) {
    const ShardEntry& e = m.shards[s];
    bool any = false;
    for (uint32_t i = 0; i < e.num_docs; ++i) any = any || wanted[e.first_doc + i];
    if (!any) return;
    ShardGrammar g;
    ShardLayout layout;
    {
      std::lock_guard<std::mutex> lock(h5_mutex);  // the HDF5 library is not thread-safe
      g = read_shard_grammar(archive, m, static_cast<uint32_t>(s));
      layout = read_shard_layout(archive, m, static_cast<uint32_t>(s));
    }
    // Every document's words and bytes as the grammar and layout give them, before any text is
    // sized by the manifest's numbers.
    check_shard_documents(archive, m, static_cast<uint32_t>(s), g, layout);
    // Where each document's whitespace gaps start (a document of n words has n + 1).
    const std::vector<uint64_t> gap_at = document_gap_starts(m, static_cast<uint32_t>(s));
    if (gap_at[e.num_docs] > layout.gaps.size())
      throw InputError(archive.string() + ": shard " + std::to_string(s) +
                       ": layout does not match the grammar (corrupted archive)");
    constexpr uint32_t kDocsPerTask = 64;
    parallel_for((e.num_docs + kDocsPerTask - 1) / kDocsPerTask, inner, [&](size_t task) {
      std::vector<WordId> words;
      std::string text;
      const uint32_t end = std::min<uint32_t>(e.num_docs, (task + 1) * kDocsPerTask);
      for (uint32_t i = static_cast<uint32_t>(task) * kDocsPerTask; i < end; ++i) {
        const DocId d = e.first_doc + i;
        if (!wanted[d]) continue;
        expand_checked(archive, m, static_cast<uint32_t>(s), g, d, words);
        // Checked against the manifest's size before the text is sized by it.
        DocumentText doc(
            archive, m, d, layout.ws_dict, words,
            std::span<const uint32_t>(layout.gaps).subspan(gap_at[i], words.size() + 1));
        text.clear();
        doc.append(0, doc.size(), text);
        if (rel[d].has_parent_path()) {
          std::lock_guard<std::mutex> lock(fs_mutex);
          if (made.insert(rel[d].parent_path().string()).second)
            create_below(output.temp_path(), rel[d].parent_path());
        }
        write_new_file(output.temp_path() / rel[d], text);
        progress.add(1);
      }
    });
  });
  progress.finish();
  output.commit();
  return count;
}

}  // namespace gtadoc
