// gtadoc_layout_bench: the load-time shard layout both engines build (worker/plan/shard_layout.h),
// timed step by step on every shard of an archive, for each thread count given; then every
// shard's vocabulary under --lowercase (worker/plan/vocab.h, one thread).
//
//   gtadoc_layout_bench ARCHIVE [THREADS...]      (default: 1 and every core)
//
// Shards are read once (not timed); then for each thread count every shard's layout is built
// REPS times (GTADOC_LAYOUT_REPS, default 3) and the fastest build of each shard is kept. Prints
// one line per thread count: total seconds over the shards, ns per symbol, and each step's share;
// then one line for the vocabularies (the dictionary's normalization itself is not timed).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/parallel.h"
#include "common/timer.h"
#include "formats/archive.h"
#include "worker/plan/shard_layout.h"
#include "worker/plan/thread_pool.h"
#include "worker/plan/vocab.h"
#include "worker/query.h"

int main(int argc, char** argv) {
  using namespace gtadoc;
  if (argc < 2) {
    std::fprintf(stderr, "usage: gtadoc_layout_bench ARCHIVE [THREADS...]\n");
    return 2;
  }
  try {
    const std::filesystem::path archive = argv[1];
    std::vector<unsigned> counts;
    for (int i = 2; i < argc; ++i) counts.push_back(static_cast<unsigned>(std::atoi(argv[i])));
    if (counts.empty()) counts = {1, resolve_threads(0)};
    const char* reps_env = std::getenv("GTADOC_LAYOUT_REPS");
    const int reps = reps_env != nullptr ? std::max(1, std::atoi(reps_env)) : 3;

    const Manifest manifest = read_manifest(archive);
    std::vector<ShardGrammar> shards;
    uint64_t symbols = 0;
    for (uint32_t s = 0; s < manifest.shards.size(); ++s) {
      shards.push_back(read_shard_grammar(archive, manifest, s));
      symbols += shards.back().symbols.size();
    }
    std::printf("%s: %zu shards, %llu symbols\n", archive.c_str(), shards.size(),
                static_cast<unsigned long long>(symbols));
    for (unsigned threads : counts) {
      if (threads == 0) continue;
      plan::ThreadPool pool(threads);
      const plan::Exec ex{threads > 1 ? &pool : nullptr, threads};
      double total = 0;
      std::map<std::string, double> by_step;
      std::vector<std::string> order;
      for (const ShardGrammar& g : shards) {
        double best = 1e300;
        plan::StepTimes best_steps;
        for (int r = 0; r < reps; ++r) {
          plan::StepTimes steps;
          Timer t;
          const plan::ShardLayout layout = plan::build_shard_layout(g, ex, &steps);
          const double sec = t.seconds();
          if (sec < best) {
            best = sec;
            best_steps = steps;
          }
        }
        total += best;
        for (const auto& [name, sec] : best_steps) {
          if (!by_step.contains(name)) order.push_back(name);
          by_step[name] += sec;
        }
      }
      std::printf("threads %3u: %.4f s, %.1f ns/symbol;", threads, total,
                  total * 1e9 / static_cast<double>(std::max<uint64_t>(symbols, 1)));
      for (const std::string& name : order)
        std::printf(" %s %.1f%%", name.c_str(), 100.0 * by_step[name] / std::max(total, 1e-12));
      std::printf("\n");
    }
    const Normalization lower = normalize_dictionary(manifest.dict, true, false);
    double vocab_s = 0;
    uint64_t local = 0;
    for (const ShardGrammar& g : shards) {
      double best = 1e300;
      for (int r = 0; r < reps; ++r) {
        Timer t;
        const plan::Vocab v = plan::build_vocab(g.local_words, lower);
        best = std::min(best, t.seconds());
        if (v.lnorm.size() != g.local_words.size()) throw InternalError("vocab: wrong size");
      }
      vocab_s += best;
      local += g.local_words.size();
    }
    std::printf("vocab --lowercase: %.4f s, %.1f ns per local word (%llu local words)\n", vocab_s,
                vocab_s * 1e9 / static_cast<double>(std::max<uint64_t>(local, 1)),
                static_cast<unsigned long long>(local));
  } catch (const Error& e) {
    std::fprintf(stderr, "gtadoc_layout_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
