// `gtadoc grep ARCHIVE PHRASE...` (docs/REFERENCE.md "gtadoc grep"): every rank reads its shards
// (balanced by size), counts the phrases on each grammar as it is read and drops it, and rank 0
// writes the output: standard output, or -o FILE written under a temporary name and renamed
// when complete.
#pragma once

#include <string>

#include "coordinator/search/phrase_search.h"

namespace gtadoc {

class Comm;

struct GrepCommand {
  std::string archive;
  SearchSpec spec;
  bool all = false, any = false, count = false, lines = false;
  std::string format = "tsv";
  std::string output;  ///< empty or "-": standard output
  bool force = false;
  unsigned threads = 0;  ///< per rank (0: the CPUs this process may use)
};

/// Collective. Throws UsageError for conflicting options or a bad phrase, InputError for a bad
/// archive or an output that exists (without --force).
void execute_grep(GrepCommand& cmd, Comm& comm);

}  // namespace gtadoc
