// Corpus statistics for comparing a generated corpus with its training corpus.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gtagen {

struct CorpusStats {
  uint64_t documents = 0, bytes = 0, words = 0, distinct_words = 0;
  double zipf_exponent = 0;            ///< ranks 10..10000, see util.h zipf_exponent
  double heaps_k = 0, heaps_beta = 0;  ///< V = K N^beta over documents in name order
  double doc_words_mean = 0, doc_words_median = 0;
  uint64_t lines = 0, nonblank_lines = 0, indented_lines = 0, tab_indented_lines = 0;
  double seconds = 0;
};

/// Reads every regular file below `inputs` (threads: 0 = all usable CPUs).
CorpusStats corpus_stats(const std::vector<std::string>& inputs, unsigned threads, bool progress);

std::string stats_text(const CorpusStats& s);
std::string stats_json(const CorpusStats& s);

}  // namespace gtagen
