// `gtadoc info`: a summary of an archive (documents, bytes, words, vocabulary, shards, rules,
// symbols, DAG depth, sizes, ratio, content digest) as text or as JSON (with the per-shard
// table). Info reads the manifest only; with `verify` it also runs gtadoc verify's checks and says
// whether the archive passed them.
#pragma once

#include <filesystem>
#include <string>

namespace gtadoc {

struct Manifest;

/// With `verify`, `*verified` (when given) says whether the archive passed.
std::string archive_info(const std::filesystem::path& archive, bool json, bool verify = false,
                         bool* verified = nullptr);
/// The same summary (unverified) of a manifest already read: the service's `/v1/archive`, made
/// from its session's manifest without reading and decoding the manifest again (its dictionary
/// and document names are not needed: only their numbers).
std::string archive_info(const std::filesystem::path& archive, const Manifest& manifest, bool json);

}  // namespace gtadoc
