// `gtadoc info`: a summary of an archive (documents, bytes, words, vocabulary, shards, rules,
// symbols, DAG depth, sizes, ratio) as text or as JSON (with the per-shard table).
#pragma once

#include <filesystem>
#include <string>

namespace gtadoc {

std::string archive_info(const std::filesystem::path& archive, bool json);

}  // namespace gtadoc
