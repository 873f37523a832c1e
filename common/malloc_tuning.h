// How the process's allocator treats blocks below the large-array allocators' size (common/
// big_alloc.h maps 4 MiB and up itself). glibc's defaults give a freed block of a few MiB back to
// the system (its own mapping, or the heap's top trimmed) and fault fresh zeroed pages in for the
// next one: a query reading shard after shard then spends a third of its CPU time in page faults
// for the same sizes again. keep_freed_blocks() makes glibc serve blocks up to 32 MiB from its
// heaps (M_MMAP_THRESHOLD) and keep up to 256 MiB free at a heap's top (M_TRIM_THRESHOLD), so the
// next shard reuses the pages the last one touched.
#pragma once

namespace gtadoc {

/// Applies the thresholds above unless GTADOC_MALLOC_KEEP=0 or GLIBC_TUNABLES sets the
/// allocator's own (the user's choice wins). Call it once, first thing in main, before any thread
/// starts, in processes whose memory budget does not count on freed memory going back (the CLI
/// calls it for every command but compress). Returns whether it changed them. Without glibc it
/// does nothing.
bool keep_freed_blocks();

}  // namespace gtadoc
