// Large uint32 arrays handed from a stage that is done with them to the next one that fills an
// array of about the same size: the shard reader's symbols and the GPU layout's bodies, given
// back once the shard is on the device. Filling fresh memory costs a page fault and the kernel's
// zeroing per page (on a VM the larger part of reading a shard); a handed-back array has its
// pages in place. Thread-safe; holds at most capacity() bytes (the oldest go first), and a
// process that stops loading shards calls clear().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gtadoc::recycled {

/// Arrays smaller than this are neither kept nor looked for (malloc reuses them anyway).
constexpr size_t kMinBytes = size_t{1} << 20;

/// An empty vector with room for `n` values: a handed-back one of capacity [n, 2n] when one is
/// held, else an empty vector (the caller allocates as before).
std::vector<uint32_t> take(size_t n);
/// Keeps `v`'s memory for a later take() (cleared; freed at once when small or over capacity).
void give(std::vector<uint32_t>&& v) noexcept;
/// Frees every array held.
void clear() noexcept;
uint64_t held();
/// Bytes held at most (default 1 GiB).
void set_capacity(uint64_t bytes);

}  // namespace gtadoc::recycled
