// The writer stage: every rank renders its slice of the result (rank_rows.h) and writes it
// itself. No rank gathers rows.
//  - One file (-o FILE): ranks learn their byte offsets from the sizes of the slices before
//    them and write their ranges into one temporary file in parallel (pwrite on a shared
//    filesystem); rank 0 renames it into place after every rank succeeded.
//  - --partitioned (-o DIR): part-NNNNN.<ext> per rank (a complete TSV/JSON result of its slice;
//    TSV parts concatenate to the one-file result) and _SUCCESS, renamed into place together.
//    _SUCCESS carries gtadoc's signature, the number of parts, the task and the format
//    (partitioned_marker), so that --force recognizes a previous result by its whole structure
//    (partitioned_output_problem) and never replaces a directory gtadoc did not write.
//  - Standard output (no -o): one rank writes directly; several ranks send rendered bytes to
//    rank 0, which prints them in rank order.
// Rendering and writing overlap (chunks of rows); nothing is left behind on failure.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "cluster/rows/rank_rows.h"
#include "cluster/rows/render.h"

namespace gtadoc {

class Comm;

struct ResultTarget {
  std::string path;  ///< file or directory; empty = standard output
  bool partitioned = false;
  bool force = false;
  std::string archive;    ///< the archive being read: --force never replaces it or anything in it
  bool progress = false;  ///< rank 0 shows the bytes it has written (common/log.h Progress)
};

/// The first line of the _SUCCESS file of a partitioned result (docs/REFERENCE.md §7).
inline constexpr std::string_view kPartitionedSignature = "gtadoc partitioned output v1";

/// The bytes of _SUCCESS for a result of `parts` parts of `task` in `format`: the signature line,
/// then "parts N", "task NAME" and "format tsv|json", one per line.
std::string partitioned_marker(uint32_t parts, std::string_view task, OutputFormat format);

/// Why the directory `dir` is not a partitioned result as gtadoc writes one; empty when it is
/// one. It must hold a regular file _SUCCESS (at most 4 KiB) whose first line is
/// kPartitionedSignature and which names N >= 1 parts, the task and the format, and besides it
/// exactly the regular files part-00000.<ext> to part-<N-1>.<ext> of that format (no other
/// entry). Reads only _SUCCESS (never blocks on a non-regular one) and the directory's listing.
std::string partitioned_output_problem(const std::filesystem::path& dir);

/// Collective. Returns the bytes this rank wrote.
uint64_t write_result(Comm& comm, const RankRows& rows, const RenderContext& ctx,
                      const ResultTarget& target, unsigned threads);

}  // namespace gtadoc
