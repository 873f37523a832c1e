#include "coordinator/info.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "coordinator/cli.h"
#include "coordinator/verify.h"
#include "formats/archive.h"
#include "worker/search/shard_index.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

std::string describe(const fs::path& archive, const Manifest& m, bool json,
                     const std::optional<VerifyReport>& report) {
  uint64_t input = 0, words = 0, rules = 0, symbols = 0, shard_bytes = 0, index_bound = 0;
  uint32_t depth = 0;
  for (const auto& s : m.shards) {
    // The shard's distinct words: its local_words' size where the chunk maps record it, else
    // at most its words and its symbols.
    const uint64_t distinct =
        s.chunk_maps.empty() ? std::min(s.words, s.symbols) : s.chunk_maps[0].n;
    index_bound += search_index_bytes_bound(distinct, s.rules, s.symbols);
    input += s.input_bytes;
    words += s.words;
    rules += s.rules;
    symbols += s.symbols;
    shard_bytes += s.file_bytes;
    depth = std::max(depth, s.depth);
  }
  std::error_code ec;
  uint64_t manifest_bytes = fs::file_size(archive / kManifestFile, ec);
  uint64_t total = shard_bytes + manifest_bytes;
  double ratio = total ? static_cast<double>(input) / static_cast<double>(total) : 0.0;

  if (json) {
    nlohmann::ordered_json j;
    j["archive"] = archive.string();
    j["format_version"] = m.format_version;
    j["documents"] = m.docs.size();
    j["input_bytes"] = input;
    j["words"] = words;
    j["vocabulary"] = m.dict.size();
    j["shards"] = m.shards.size();
    j["rules"] = rules;
    j["symbols"] = symbols;
    j["dag_depth"] = depth;
    j["manifest_bytes"] = manifest_bytes;
    j["shard_bytes"] = shard_bytes;
    j["archive_bytes"] = total;
    j["compression_ratio"] = ratio;
    j["search_index_bytes_bound"] = index_bound;
    if (m.content_sha256)
      j["content_sha256"] = to_hex(*m.content_sha256);
    else
      j["content_sha256"] = nullptr;
    if (report) {
      j["verified"] = report->ok;
      if (!report->ok) j["verify_failure"] = report->first_failure();
    } else {
      j["verified"] = nullptr;  // not checked: info reads the manifest only
    }
    auto& arr = j["shard_table"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < m.shards.size(); ++i) {
      const auto& s = m.shards[i];
      arr.push_back({{"shard", i},
                     {"first_doc", s.first_doc},
                     {"documents", s.num_docs},
                     {"input_bytes", s.input_bytes},
                     {"words", s.words},
                     {"rules", s.rules},
                     {"symbols", s.symbols},
                     {"dag_depth", s.depth},
                     {"file_bytes", s.file_bytes}});
    }
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string out;
  auto line = [&](const char* key, const std::string& value) {
    out += fmt::format("{:<18}{}\n", key, value);
  };
  line("archive", archive.string());
  line("format version", std::to_string(m.format_version));
  line("documents", std::to_string(m.docs.size()));
  line("input bytes", std::to_string(input));
  line("words", std::to_string(words));
  line("vocabulary", std::to_string(m.dict.size()));
  line("shards", std::to_string(m.shards.size()));
  line("rules", std::to_string(rules));
  line("symbols", std::to_string(symbols));
  line("DAG depth", std::to_string(depth));
  line("archive bytes",
       fmt::format("{} (manifest {}, shards {})", total, manifest_bytes, shard_bytes));
  line("ratio", fmt::format("{:.2f}x", ratio));
  line("search index",
       fmt::format("at most {} bytes (built in memory by gtadoc serve)", index_bound));
  line("content digest", m.content_sha256 ? "sha256:" + to_hex(*m.content_sha256)
                                          : std::string("none (written before digests existed)"));
  if (!report)
    line("verified",
         "not checked (info reads the manifest; gtadoc verify or info --verify reads "
         "everything)");
  else if (report->ok)
    line("verified", fmt::format("yes ({}, {} read)", counted(report->shards, "shard"),
                                 counted(report->bytes_read, "byte")));
  else
    line("verified", "NO: " + report->first_failure());
  return out;
}

}  // namespace

std::string archive_info(const fs::path& archive, bool json, bool verify, bool* verified) {
  const Manifest m = read_manifest(archive);
  std::optional<VerifyReport> report;
  if (verify) report = verify_archive(archive, 0);
  if (verified) *verified = report && report->ok;
  return describe(archive, m, json, report);
}

std::string archive_info(const fs::path& archive, const Manifest& manifest, bool json) {
  return describe(archive, manifest, json, std::nullopt);
}

}  // namespace gtadoc
