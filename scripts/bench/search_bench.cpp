// Phrase search on resident grammars, as the service runs it (docs/PERFORMANCE.md, "Phrase
// search"): reads every shard of an archive, builds the search indexes, then times each phrase
// with the index and with one pass over every grammar, on every core. Phrases are sampled from
// the archive itself (k consecutive words at random places of random documents, so they occur at
// least once and span every frequency), or read from a file, one per line.
//
//   gtadoc_search_bench ARCHIVE [--sample N] [--words K,...] [--phrases FILE] [--repeat R]
//                               [--threads T] [--seed S] [--shares S,...]
//
// Prints one TSV row per phrase (words, documents, occurrences, index ms, full-pass ms, then the
// index's ms with each --shares value as the share of a shard's rules past which it takes the
// full pass) and a summary per phrase length: p50 / p99 of each, and the index's build time and
// memory.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/parallel.h"
#include "coordinator/search/phrase_search.h"
#include "formats/archive.h"
#include "worker/search/shard_index.h"

using namespace gtadoc;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Phrase search on resident grammars: the index against a full pass"};
  std::string archive, phrases_file, words_list = "1,2,3", shares_list;
  unsigned sample = 30, repeat = 5, threads = 0;
  uint64_t seed = 1;
  app.add_option("ARCHIVE", archive)->required();
  app.add_option("--sample", sample, "phrases per length, sampled from the archive");
  app.add_option("--words", words_list, "phrase lengths to sample, e.g. 1,2,3");
  app.add_option("--phrases", phrases_file, "phrases to time, one per line (no sampling)");
  app.add_option("--repeat", repeat, "timed runs per phrase (the median is kept)");
  app.add_option("--threads", threads, "threads (default: every usable CPU)");
  app.add_option("--seed", seed);
  app.add_option("--shares", shares_list, "other full-pass shares to time the index with, e.g. 0.0625,0.25");
  CLI11_PARSE(app, argc, argv);
  threads = resolve_threads(threads);

  double t0 = now_s();
  const Manifest m = read_manifest(archive);
  std::vector<ShardGrammar> grammars(m.shards.size());
  parallel_for(m.shards.size(), threads, [&](size_t s) {
    grammars[s] = read_shard_grammar(archive, m, static_cast<uint32_t>(s), 1);
  });
  const double read_s = now_s() - t0;
  t0 = now_s();
  std::vector<std::unique_ptr<ShardSearchIndex>> indexes(grammars.size());
  parallel_for(grammars.size(), threads,
               [&](size_t s) { indexes[s] = std::make_unique<ShardSearchIndex>(grammars[s]); });
  const double index_s = now_s() - t0;
  uint64_t index_bytes = 0, symbols = 0;
  for (size_t s = 0; s < grammars.size(); ++s) {
    index_bytes += indexes[s]->bytes();
    symbols += grammars[s].symbols.size();
  }
  std::printf("# %s: %zu shards, %zu documents, %llu symbols; read %.2f s; index built in %.3f s, "
              "%.1f MB (%.2f bytes per symbol), %u threads\n",
              archive.c_str(), m.shards.size(), m.docs.size(),
              static_cast<unsigned long long>(symbols), read_s, index_s, index_bytes / 1e6,
              static_cast<double>(index_bytes) / static_cast<double>(std::max<uint64_t>(1, symbols)),
              threads);

  std::vector<std::string> phrases;
  if (!phrases_file.empty()) {
    std::ifstream in(phrases_file);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) phrases.push_back(line);
  } else {
    std::mt19937_64 rng(seed);
    std::vector<WordId> words;
    for (size_t at = 0; at < words_list.size();) {
      const size_t comma = std::min(words_list.find(',', at), words_list.size());
      const unsigned k = static_cast<unsigned>(std::stoul(words_list.substr(at, comma - at)));
      at = comma + 1;
      for (unsigned i = 0, tries = 0; i < sample && tries < 100 * sample; ++tries) {
        const ShardGrammar& g = grammars[rng() % grammars.size()];
        if (g.num_docs == 0) continue;
        words.clear();
        expand_document(g, static_cast<uint32_t>(rng() % g.num_docs), words);
        if (words.size() < k) continue;
        const size_t p = rng() % (words.size() - k + 1);
        std::string phrase;
        for (size_t j = 0; j < k; ++j) phrase += (j ? " " : "") + std::string(m.dict[words[p + j]]);
        phrases.push_back(phrase);
        ++i;
      }
    }
  }

  const Normalization norm = normalize_dictionary(m.dict, false, false);
  std::vector<SearchTarget> indexed, full;
  for (size_t s = 0; s < grammars.size(); ++s) {
    indexed.push_back({static_cast<uint32_t>(s), &grammars[s], indexes[s].get()});
    full.push_back({static_cast<uint32_t>(s), &grammars[s], nullptr});
  }
  std::vector<double> shares;
  for (size_t at = 0; at < shares_list.size();) {
    const size_t comma = std::min(shares_list.find(',', at), shares_list.size());
    shares.push_back(std::stod(shares_list.substr(at, comma - at)));
    at = comma + 1;
  }
  std::map<size_t, std::vector<double>> index_ms, full_ms;
  std::map<std::pair<size_t, size_t>, std::vector<double>> share_ms;
  std::printf("words\tdocuments\toccurrences\tindex_ms\tfull_ms\tphrase");
  for (double sh : shares) std::printf("\tindex_ms@%g", sh);
  std::printf("\n");
  for (const std::string& phrase : phrases) {
    SearchSpec spec;
    spec.phrases = {phrase};
    PreparedSearch search;
    try {
      search = prepare_search(spec, norm);
    } catch (const std::exception& e) {
      continue;  // e.g. more than 64 words in a line of the file
    }
    const size_t k = search.phrases[0].words.size();
    auto time_it = [&](const std::vector<SearchTarget>& targets, unsigned runs, SearchHits* out) {
      std::vector<double> ms;
      for (unsigned r = 0; r < runs; ++r) {
        const double t = now_s();
        SearchHits h = search_grammars(archive, m, targets, search, norm, threads);
        ms.push_back((now_s() - t) * 1e3);
        if (out != nullptr) *out = std::move(h);
      }
      return percentile(ms, 0.5);
    };
    SearchHits hits;
    const double i_ms = time_it(indexed, repeat, &hits);
    const double f_ms = time_it(full, std::max(1u, repeat / 2), nullptr);
    Count occurrences = 0;
    for (Count c : hits.counts) occurrences += c;
    index_ms[k].push_back(i_ms);
    full_ms[k].push_back(f_ms);
    std::printf("%zu\t%zu\t%llu\t%.3f\t%.3f\t%s", k, hits.docs.size(),
                static_cast<unsigned long long>(occurrences), i_ms, f_ms, phrase.c_str());
    for (size_t i = 0; i < shares.size(); ++i) {
      search.full_pass_share = shares[i];
      const double ms = time_it(indexed, repeat, nullptr);
      share_ms[{k, i}].push_back(ms);
      std::printf("\t%.3f", ms);
    }
    search.full_pass_share = kFullPassShare;
    std::printf("\n");
  }
  for (const auto& [k, v] : index_ms)
    std::printf("# %zu-word phrases (%zu): index p50 %.2f ms p99 %.2f ms; full pass p50 %.2f ms "
                "p99 %.2f ms\n",
                k, v.size(), percentile(v, 0.5), percentile(v, 0.99), percentile(full_ms[k], 0.5),
                percentile(full_ms[k], 0.99));
  for (const auto& [key, v] : share_ms)
    std::printf("# %zu-word phrases, full pass past a share of %g of a shard's rules: index p50 "
                "%.2f ms p99 %.2f ms\n",
                key.first, shares[key.second], percentile(v, 0.5), percentile(v, 0.99));
  return 0;
}
