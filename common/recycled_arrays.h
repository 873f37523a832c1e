// Large uint32/uint64 arrays handed from a stage that is done with them to the next one that
// fills an array of about the same size: the shard reader's symbols and the GPU layout's bodies,
// given back once the shard is on the device, and a read's block of stored chunks and its
// temporary tables, given back when the read ends. Filling fresh memory costs a page fault and the
// kernel's zeroing per page (on a VM the larger part of reading a shard); a handed-back array has
// its pages in place. Thread-safe; holds at most capacity() bytes (the oldest go first), and a
// process that stops loading shards calls clear().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gtadoc::recycled {

/// Arrays smaller than this are neither kept nor looked for (malloc reuses them anyway). Small
/// shards' arrays (a few hundred KiB) are kept: malloc serves sizes from 128 KiB up with fresh
/// mappings, and first touch was a third of reading a 2 MB shard on a VM.
constexpr size_t kMinBytes = size_t{64} << 10;
/// Arrays of each type held at most (the oldest go first), so that a take() scans few.
constexpr size_t kMaxArrays = 256;

/// An empty vector with room for `n` values: a handed-back one of capacity [n, 2n] when one is
/// held, else an empty vector (the caller allocates as before). T: uint32_t or uint64_t (each
/// has arrays of its own; both count towards capacity()).
template <class T = uint32_t>
std::vector<T> take(size_t n);
/// Keeps `v`'s memory for a later take() (cleared; freed at once when small or over capacity).
template <class T>
void give(std::vector<T>&& v) noexcept;
/// Frees every array held.
void clear() noexcept;
uint64_t held();
/// Bytes held at most (default 1 GiB).
void set_capacity(uint64_t bytes);

}  // namespace gtadoc::recycled
