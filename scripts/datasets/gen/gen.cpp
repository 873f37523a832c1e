// gtadoc_gen: a synthetic scale corpus generator trained on a real corpus
// (scripts/datasets/README.md).
//
//   gtadoc_gen train CORPUS... -o MODEL        learn words, phrases, layout, document lengths
//   gtadoc_gen generate MODEL -o OUTDIR --bytes 20G [--seed N] [--threads N] [--files-per-dir N]
//   gtadoc_gen stats DIR... [--json]           words, distinct words, Zipf and Heaps fits, ...
//
// Synthetic text is for scale only; real corpora are the reference for correctness.
// Exit codes: 0 ok, 1 error (unreadable input, missing model, write failure), 2 usage error.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "common/cpus.h"
#include "common/log.h"
#include "scripts/datasets/gen/generate.h"
#include "scripts/datasets/gen/model.h"
#include "scripts/datasets/gen/stats.h"
#include "scripts/datasets/gen/util.h"

namespace {

using namespace gtagen;

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.size() > 300) s = s.substr(0, 297) + "...";
  return s;
}

CLI::Validator count_range(uint64_t lo, uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        const std::string want =
            "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
        if (v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos)
          return "'" + v + "' is not " + want;
        unsigned long long x = 0;
        try {
          x = std::stoull(v);
        } catch (const std::exception&) {  // out of range
          return "'" + v + "' is not " + want;
        }
        if (x < lo || x > hi) return "'" + v + "' is not " + want;
        return "";
      },
      "INT", "count_range");
}

void print_train_summary(const Model& m, const std::string& path) {
  uint64_t words = 0, layout = 0;
  for (uint32_t t = 2; t < m.tokens(); ++t) (m.is_gap(t) ? layout : words)++;
  std::printf("training corpus    %llu documents, %llu bytes, %llu words, %llu distinct\n",
              static_cast<unsigned long long>(m.info.documents),
              static_cast<unsigned long long>(m.info.bytes),
              static_cast<unsigned long long>(m.info.words),
              static_cast<unsigned long long>(m.info.distinct_words));
  std::printf("heaps law          V = %.2f * N^%.3f\n", m.info.heaps_k, m.info.heaps_beta);
  if (m.min_successor_count > 1)
    std::printf("pruned             successors seen fewer than %llu times (--max-entries)\n",
                static_cast<unsigned long long>(m.min_successor_count));
  std::printf("doc words mean     %.1f\n", m.info.doc_words_mean);
  uint64_t succ1 = 0;
  for (const Context& c : m.o1) succ1 += c.count;
  std::error_code ec;
  const uint64_t file_bytes = std::filesystem::file_size(path, ec);
  std::printf(
      "model              %s, %llu bytes: %llu words, %llu gap tokens, %llu successors of "
      "tokens, %llu order-2 contexts with %llu successors, %llu rare types\n",
      path.c_str(), static_cast<unsigned long long>(file_bytes),
      static_cast<unsigned long long>(words), static_cast<unsigned long long>(layout),
      static_cast<unsigned long long>(succ1), static_cast<unsigned long long>(m.o2_key.size()),
      static_cast<unsigned long long>(m.succ.size() - succ1),
      static_cast<unsigned long long>(m.tail_off.size() - 1));
}

int real_main(int argc, char** argv) {
  CLI::App app{
      "gtadoc_gen: synthetic scale corpora trained on a real corpus (for scale only; real corpora "
      "are the reference for correctness)"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help on every command");
  const std::string sizes = "sizes: digits, then optionally k/m/g/t (powers of 1024) and B or iB";

  // train
  CLI::App* tr = app.add_subcommand("train", "Learn a model from real text");
  std::vector<std::string> corpus;
  std::string model_out;
  TrainOptions topt;
  tr->add_option("CORPUS", corpus, "Directories (every regular file below) or files")->required();
  tr->add_option("-o,--output", model_out, "Model file to write")->required();
  tr->add_option("--max-vocab", topt.max_vocab,
                 "Words kept, most frequent first; rarer ones are modelled as the tail "
                 "(default 1000000)")
      ->check(count_range(1, kMaxVocab));
  tr->add_option("--order", topt.order, "Markov order of the phrase model, 1 or 2 (default 2)")
      ->check(count_range(1, 2));
  tr->add_option("--min-context-count", topt.min_context_count,
                 "Order-2 contexts seen fewer times are dropped (default 2)")
      ->check(count_range(1, 1000000000));
  tr->add_option("--max-contexts", topt.max_contexts,
                 "Order-2 contexts kept, most frequent first (default 4000000)")
      ->check(count_range(0, 1000000000));
  tr->add_option("--max-successors", topt.max_successors1,
                 "Successors kept per order-1 context (default 1024)")
      ->check(count_range(1, 1000000));
  tr->add_option("--max-successors2", topt.max_successors2,
                 "Successors kept per order-2 context (default 64)")
      ->check(count_range(1, 1000000));
  tr->add_option("--max-entries", topt.max_entries,
                 "Successors kept in all, the rarest pruned first: bounds the model size "
                 "(default 8000000, 8 bytes each)")
      ->check(count_range(1, 4000000000ULL));

  // generate
  CLI::App* ge = app.add_subcommand("generate", "Write a synthetic corpus from a model");
  std::string model_in, outdir, bytes_text;
  GenerateOptions gopt;
  ge->add_option("MODEL", model_in, "Model file (gtadoc_gen train)")->required();
  ge->add_option("-o,--output", outdir,
                 "Directory to create (absent or empty): OUTDIR/dNNNN/fNNNNNN.txt")
      ->required();
  ge->add_option("--bytes", bytes_text, "Total size to write, e.g. 20G (" + sizes + ")")
      ->required();
  ge->add_option("--seed", gopt.seed, "Seed (default 1): same seed, same corpus")
      ->check(count_range(0, UINT64_MAX));
  ge->add_option("--threads", gopt.threads,
                 "Threads, 1..4096 (default: the CPUs this process may use); the output does "
                 "not depend on it")
      ->check(count_range(1, 4096));
  ge->add_option("--files-per-dir", gopt.files_per_dir, "Documents per dNNNN folder (default 1000)")
      ->check(count_range(1, 100000000));
  ge->add_option("--batch", gopt.batch,
                 "Documents each thread advances together to overlap memory latency (default 16; "
                 "does not change the output)")
      ->check(count_range(1, 4096))
      ->group("");  // tuning only: hidden from --help

  // stats
  CLI::App* st = app.add_subcommand("stats", "Statistics of a corpus (real or generated)");
  std::vector<std::string> stats_in;
  bool json = false;
  unsigned stats_threads = 0;
  st->add_option("DIR", stats_in, "Directories (every regular file below) or files")->required();
  st->add_flag("--json", json, "JSON instead of text");
  st->add_option("--threads", stats_threads, "Threads (default: the CPUs this process may use)")
      ->check(count_range(1, 4096));

  // The first word that is not an option names the command: say so when it names none.
  for (int a = 1; a < argc; ++a) {
    const std::string word = argv[a];
    if (word.empty() || word[0] == '-') continue;
    if (word != "train" && word != "generate" && word != "stats")
      throw UsageError("unknown command '" + one_line(word.substr(0, 60)) +
                       "' (expected train, generate or stats)");
    break;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    throw UsageError(one_line(e.what()) + " (see gtadoc_gen --help)");
  }
  const bool progress = gtadoc::stderr_is_terminal();

  if (tr->parsed()) {
    if (model_out.empty()) throw UsageError("-o: the model path is empty");
    topt.progress = progress;
    check_model_output(model_out);  // before reading the corpus
    const Model m = train(corpus, topt);
    save_model(m, model_out);
    print_train_summary(m, model_out);
    return 0;
  }
  if (ge->parsed()) {
    if (outdir.empty()) throw UsageError("-o: the output directory is empty");
    gopt.bytes = parse_size(bytes_text, "--bytes");
    gopt.progress = progress;
    check_outdir(outdir);  // before the (possibly long) model load
    const Model m = load_model(model_in);
    const GenerateResult r = generate_corpus(m, outdir, gopt);
    const double mb = static_cast<double>(r.bytes) / 1e6;
    std::printf(
        "wrote %llu documents (%llu folders), %llu bytes, %llu words to %s in %.2f s: "
        "%.1f MB/s, %.1f MB/s per thread (%u threads; model set up in %.2f s; novel words "
        "replace words seen <= %llu times)\n",
        static_cast<unsigned long long>(r.documents),
        static_cast<unsigned long long>(r.directories), static_cast<unsigned long long>(r.bytes),
        static_cast<unsigned long long>(r.words), outdir.c_str(), r.seconds, mb / r.seconds,
        mb / r.seconds / r.threads, r.threads, r.setup_seconds,
        static_cast<unsigned long long>(r.rare_limit));
    return 0;
  }
  if (st->parsed()) {
    const CorpusStats s = corpus_stats(stats_in, stats_threads, progress);
    std::fputs((json ? stats_json(s) : stats_text(s)).c_str(), stdout);
    return 0;
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return real_main(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gtadoc_gen: %s\n", one_line(e.what()).c_str());
    return 2;
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "gtadoc_gen: %s\n", one_line(e.what()).c_str());
    return 128 + e.signal;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gtadoc_gen: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gtadoc_gen: %s\n", one_line(e.what()).c_str());
    return 1;
  }
}
