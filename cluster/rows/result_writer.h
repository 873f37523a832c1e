// The writer stage: every rank renders its slice of the result (rank_rows.h) and writes it
// itself. No rank gathers rows.
//  - One file (-o FILE): ranks learn their byte offsets from the sizes of the slices before
//    them and write their ranges into one temporary file in parallel (pwrite on a shared
//    filesystem); rank 0 renames it into place after every rank succeeded.
//  - --partitioned (-o DIR): part-NNNNN.<ext> per rank (a complete TSV/JSON result of its slice;
//    TSV parts concatenate to the one-file result) and _SUCCESS, renamed into place together.
//  - Standard output (no -o): one rank writes directly; several ranks send rendered bytes to
//    rank 0, which prints them in rank order.
// Rendering and writing overlap (chunks of rows); nothing is left behind on failure.
#pragma once

#include <string>

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

/// Collective. Returns the bytes this rank wrote.
uint64_t write_result(Comm& comm, const RankRows& rows, const RenderContext& ctx,
                      const ResultTarget& target, unsigned threads);

}  // namespace gtadoc
