// Shards' chunk maps: found through HDF5 once, written and read as plain numbers. See
// chunk_maps.h.
#include "formats/chunk_maps.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"

namespace gtadoc {
namespace {
// Where a map's packed bits go in its filters field (below: 1 shuffle, 2 deflate).
constexpr unsigned kBitsShift = 8;
}  // namespace

std::vector<h5::ChunkMap> map_shard_chunks(const std::filesystem::path& file) {
  h5::Lock lock;
  try {
    h5::File f = h5::open_file(file);
    h5::Group g = h5::open_group(f.id(), "grammar");
    std::vector<h5::ChunkMap> maps;
    maps.reserve(kMappedArrays.size());
    for (const char* name : kMappedArrays) {
      std::optional<h5::ChunkMap> m = h5::chunk_map(g.id(), name);
      if (!m) return {};
      maps.push_back(std::move(*m));
    }
    return maps;
  } catch (const InputError& e) {  // named as the archive's readers name a file
    throw InputError(file.string() + ": " + e.what(), e.file().c_str(), e.line());
  }
}

bool chunk_maps_fit(std::span<const h5::ChunkMap> maps, uint64_t file_bytes) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // (offset, end) of every stored chunk
  for (const h5::ChunkMap& m : maps) {
    uint64_t stored = 0;
    for (size_t k = 0; k < m.offsets.size(); ++k) {
      if (m.offsets[k] > file_bytes || m.sizes[k] > file_bytes - m.offsets[k]) return false;
      spans.emplace_back(m.offsets[k], m.offsets[k] + m.sizes[k]);
      stored += m.sizes[k];
    }
    // Deflate expands at most about 1032 times; packed values take `bits` bits each; without
    // either a chunk holds what it stores.
    if (m.bits > 0 ? m.n > stored * 8 / m.bits
                   : m.n > (m.deflate ? stored * 1040 : stored) / m.element_bytes)
      return false;
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second) return false;
  return true;
}

void append_chunk_maps(std::span<const h5::ChunkMap> maps, std::vector<uint64_t>& out) {
  out.push_back(maps.size());
  for (const h5::ChunkMap& m : maps) {
    const uint64_t filters =
        (m.shuffle ? 1u : 0u) | (m.deflate ? 2u : 0u) | (uint64_t{m.bits} << kBitsShift);
    out.insert(out.end(), {m.n, uint64_t{m.element_bytes}, m.chunk, filters, m.offsets.size()});
    out.insert(out.end(), m.offsets.begin(), m.offsets.end());
    out.insert(out.end(), m.sizes.begin(), m.sizes.end());
  }
}

std::vector<h5::ChunkMap> take_chunk_maps(std::span<const uint64_t> in, size_t& pos) {
  auto take = [&](uint64_t count) {
    if (count > in.size() - pos) throw InputError("chunk maps cut short");
    std::span<const uint64_t> s = in.subspan(pos, count);
    pos += count;
    return s;
  };
  const uint64_t count = take(1)[0];
  if (count != 0 && count != kMappedArrays.size())
    throw InputError("a shard has " + std::to_string(count) + " chunk maps, expected 0 or " +
                     std::to_string(kMappedArrays.size()));
  std::vector<h5::ChunkMap> maps(count);
  for (size_t i = 0; i < count; ++i) {
    h5::ChunkMap& m = maps[i];
    const std::span<const uint64_t> head = take(5);
    const uint64_t flags = head[3] & ((uint64_t{1} << kBitsShift) - 1);
    if (head[1] > 8 || flags > 3 || head[3] >> kBitsShift > 32)
      throw InputError("malformed chunk map");
    m.n = head[0];
    m.element_bytes = static_cast<uint32_t>(head[1]);
    m.chunk = head[2];
    m.shuffle = (head[3] & 1) != 0;
    m.deflate = (head[3] & 2) != 0;
    m.bits = static_cast<uint32_t>(head[3] >> kBitsShift);
    const std::span<const uint64_t> offsets = take(head[4]);
    const std::span<const uint64_t> sizes = take(head[4]);
    m.offsets.assign(offsets.begin(), offsets.end());
    m.sizes.assign(sizes.begin(), sizes.end());
    if (std::string why = h5::chunk_map_problem(m); !why.empty())
      throw InputError("chunk map of /grammar/" + std::string(kMappedArrays[i]) + ": " + why);
  }
  return maps;
}

}  // namespace gtadoc
