// The end of `gtadoc compress` (coordinator/compress/job.h, CompressJob::write_manifest): every
// rank's shard table (the shard files' entries, digests and chunk maps, the documents' counts)
// gathered on rank 0, which writes the manifest with the dictionary and moves the archive into
// place.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"
#include "coordinator/compress/job.h"
#include "coordinator/compress/memory.h"
#include "coordinator/compress/spill.h"
#include "formats/archive.h"
#include "formats/atomic_output.h"
#include "formats/chunk_maps.h"

namespace gtadoc::compression {
namespace fs = std::filesystem;

namespace {

uint64_t directory_bytes(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) total += e.file_size();
  return total;
}

}  // namespace

CompressStats CompressJob::write_manifest() {
  // Shard tables to rank 0, which writes the manifest and moves the archive into place.
  std::string table;
  for (const auto& w : work) {
    put(table, w.index);
    const ShardEntry& e = w.entry;
    for (uint64_t v : {uint64_t{e.first_doc}, uint64_t{e.num_docs}, e.input_bytes, e.words, e.rules,
                       e.symbols, uint64_t{e.depth}, e.file_bytes})
      put(table, v);
    table.append(reinterpret_cast<const char*>(e.sha256.data()), e.sha256.size());
    std::vector<uint64_t> maps;
    append_chunk_maps(e.chunk_maps, maps);
    put(table, maps.size());
    for (uint64_t v : maps) put(table, v);
    for (uint32_t i = 0; i < w.plan.num_docs; ++i) {
      put(table, w.doc_bytes[i]);
      put(table, w.doc_words[i]);
    }
  }
  auto tables = comm.gather(bytes_of(table));
  CompressStats stats;
  run_collectively(comm, [&] {
    if (!root) return;
    Manifest manifest;
    manifest.archive_id = archive_id;
    manifest.docs.resize(docs.size());
    for (const InputDocument& d : docs) manifest.doc_names.push_back(d.name);  // in name order
    manifest.shards.resize(plan.size());
    for (const auto& t : tables) {
      size_t pos = 0;
      while (pos < t.size()) {
        uint32_t s = static_cast<uint32_t>(take(t, pos));
        ShardEntry& e = manifest.shards.at(s);
        e.first_doc = static_cast<DocId>(take(t, pos));
        e.num_docs = static_cast<uint32_t>(take(t, pos));
        e.input_bytes = take(t, pos);
        e.words = take(t, pos);
        e.rules = take(t, pos);
        e.symbols = take(t, pos);
        e.depth = static_cast<uint32_t>(take(t, pos));
        e.file_bytes = take(t, pos);
        GTADOC_EXPECTS(pos + e.sha256.size() <= t.size(), "truncated message");
        std::memcpy(e.sha256.data(), t.data() + pos, e.sha256.size());
        pos += e.sha256.size();
        const uint64_t numbers = take(t, pos);
        GTADOC_EXPECTS(numbers <= (t.size() - pos) / 8, "truncated message");
        std::vector<uint64_t> maps(numbers);
        for (uint64_t& v : maps) v = take(t, pos);
        size_t at = 0;
        e.chunk_maps = take_chunk_maps(maps, at);
        for (uint32_t i = 0; i < e.num_docs; ++i) {
          DocEntry& d = manifest.docs.at(e.first_doc + i);
          d.bytes = take(t, pos);
          d.words = take(t, pos);
          d.shard = s;
        }
        stats.words += e.words;
        stats.input_bytes += e.input_bytes;
        stats.rules += e.rules;
        stats.symbols += e.symbols;
      }
    }
    manifest.dict =
        dict_spilled ? read_dictionary_spill(dictionary_spill_file(dir)) : std::move(dict);
    stats.vocabulary = manifest.dict.size();
    Timer tail;  // the shard digests came with the tables (computed as each file was written)
    write_manifest_file(dir / kManifestFile, manifest, {options.deflate_level, threads});
    const double written = tail.seconds();
    stats.archive_bytes = directory_bytes(dir);
    output->commit();
    spdlog::debug("compress: manifest written {:.2f}s, committed {:.2f}s", written,
                  tail.seconds() - written);
  });
  stats.documents = docs.size();
  stats.shards = plan.size();
  stats.seconds = timer.seconds();
  spdlog::debug("compress: peak resident memory {} (budget {}, planned peak {})",
                format_bytes(peak_rss_bytes()), format_bytes(budget), format_bytes(gate.peak()));
  return stats;
}

}  // namespace gtadoc::compression
