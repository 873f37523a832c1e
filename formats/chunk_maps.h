// The chunk maps of a shard's grammar arrays (h5::ChunkMap): recorded in the manifest when an
// archive is written, so that a query reads each shard with open(2) and pread alone, outside
// HDF5 and its process-wide lock (formats/archive.cpp, read_shard_grammar). A map is a hint:
// the chunks it points at carry Fletcher32 checksums, and a shard whose stored bytes do not
// decode as its map says is read through HDF5 instead, with HDF5's checks and messages.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "formats/h5.h"

namespace gtadoc {

/// The arrays of /grammar that a shard's maps describe, in their order in ShardEntry::chunk_maps.
inline constexpr std::array<const char*, 7> kMappedArrays = {
    "local_words", "rule_body_lengths", "symbols",           "level_offsets",
    "rule_length", "rule_uses",         "doc_segment_lengths"};

/// The maps of shard file `file`'s grammar arrays, or none when one of them cannot be read
/// directly (then the shard is read through HDF5). Takes h5::Lock; throws InputError as the
/// archive's readers do for a file that is not a readable shard.
std::vector<h5::ChunkMap> map_shard_chunks(const std::filesystem::path& file);

/// Whether `maps` (each with an empty chunk_map_problem) can describe a file of `file_bytes`
/// bytes: every chunk inside it, no two overlapping, and no map claiming more elements than its
/// chunks can hold (deflate expands at most about 1032 times). A reader checks this before it
/// allocates anything for them, as the HDF5 path checks a dataset's claims.
bool chunk_maps_fit(std::span<const h5::ChunkMap> maps, uint64_t file_bytes);

/// Appends one shard's maps (possibly none) to `out`: their count, then for each map its
/// elements, element bytes, chunk length, filters (1: shuffle, 2: deflate, bits 8-15: the packed
/// bits of the N-bit filter) and chunk count,
/// then the chunks' offsets and their stored sizes.
void append_chunk_maps(std::span<const h5::ChunkMap> maps, std::vector<uint64_t>& out);
/// One shard's maps taken from `in` at `pos` (advanced past them). Throws InputError when they
/// are cut short or malformed (a count other than 0 or kMappedArrays' size, chunk_map_problem).
std::vector<h5::ChunkMap> take_chunk_maps(std::span<const uint64_t> in, size_t& pos);

}  // namespace gtadoc
