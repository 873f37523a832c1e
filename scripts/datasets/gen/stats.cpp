// `gtadoc_gen stats`: files are tokenized in parallel, batch by batch, into per-file word counts;
// the counts are merged in file order, so the distinct-word curve (Heaps' law) follows the corpus
// order and every figure is independent of the thread count.
#include "scripts/datasets/gen/stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>

#include "common/log.h"
#include "common/parallel.h"
#include "scripts/datasets/gen/util.h"

namespace gtagen {

namespace {

struct FileCounts {
  std::string blob;              ///< the file's distinct words, concatenated
  std::vector<uint64_t> ends;    ///< end of each word in blob
  std::vector<uint64_t> hashes;  ///< hash_bytes of each word
  std::vector<uint64_t> counts;  ///< count of each word
  uint64_t bytes = 0, nwords = 0, lines = 0, nonblank = 0, indented = 0, tab_indented = 0;
};

void count_file(const InputFile& f, FileCounts& out, std::string& text, StringTable& local) {
  read_file(f.path, text);
  local.clear();
  out.bytes = text.size();
  bool line_start = true;
  std::string_view pending;
  tokenize(
      text,
      [&](std::string_view gap) {
        pending = gap;
        const size_t nl = static_cast<size_t>(std::count(gap.begin(), gap.end(), '\n'));
        out.lines += nl;
        if (nl > 0) line_start = true;
      },
      [&](std::string_view w) {
        if (line_start) {
          ++out.nonblank;
          const size_t last_nl = pending.rfind('\n');
          const std::string_view indent =
              last_nl == std::string_view::npos ? pending : pending.substr(last_nl + 1);
          if (!indent.empty()) {
            ++out.indented;
            if (indent.find('\t') != std::string_view::npos) ++out.tab_indented;
          }
          line_start = false;
        }
        const auto [id, fresh] = local.intern(w);
        if (fresh) out.counts.push_back(0);
        ++out.counts[id];
        ++out.nwords;
      });
  if (!text.empty() && text.back() != '\n') ++out.lines;  // an unterminated last line
  out.blob.reserve(local.bytes());
  for (uint32_t id = 0; id < local.size(); ++id) {
    out.blob += local.str(id);
    out.ends.push_back(out.blob.size());
    out.hashes.push_back(local.hash(id));
  }
}

}  // namespace

CorpusStats corpus_stats(const std::vector<std::string>& inputs, unsigned threads,
                         bool progress_on) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<InputFile> files = list_inputs(inputs);
  std::vector<uint64_t> sizes(files.size());
  uint64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    sizes[i] = std::filesystem::file_size(files[i].path, ec);
    total += sizes[i];
  }
  gtadoc::Progress progress("stats", total, "bytes", progress_on);

  CorpusStats s;
  StringTable global;
  std::vector<uint64_t> counts;
  std::vector<uint64_t> doc_words;
  std::vector<std::pair<uint64_t, uint64_t>> heaps;
  const uint64_t batch_bytes = 128ull << 20;
  std::vector<FileCounts> batch;
  for (size_t first = 0; first < files.size();) {
    size_t last = first;
    uint64_t bytes = 0;
    while (last < files.size() && (last == first || bytes + sizes[last] <= batch_bytes) &&
           last - first < 65536)
      bytes += sizes[last++];
    batch.resize(last - first);
    gtadoc::parallel_for(last - first, threads, [&](size_t i) {
      thread_local std::string text;
      thread_local StringTable local;
      count_file(files[first + i], batch[i], text, local);
      progress.add(batch[i].bytes);
    });
    for (FileCounts& fc : batch) {
      for (size_t i = 0, begin = 0; i < fc.ends.size(); begin = fc.ends[i++]) {
        const std::string_view w(fc.blob.data() + begin, fc.ends[i] - begin);
        const auto [id, fresh] = global.intern(w, fc.hashes[i]);
        if (fresh) counts.push_back(0);
        counts[id] += fc.counts[i];
      }
      ++s.documents;
      s.bytes += fc.bytes;
      s.words += fc.nwords;
      s.lines += fc.lines;
      s.nonblank_lines += fc.nonblank;
      s.indented_lines += fc.indented;
      s.tab_indented_lines += fc.tab_indented;
      doc_words.push_back(fc.nwords);
      heaps.emplace_back(s.words, global.size());
      fc = FileCounts();
    }
    first = last;
  }
  progress.finish();
  s.distinct_words = global.size();
  std::sort(counts.begin(), counts.end(), std::greater<>());
  s.zipf_exponent = zipf_exponent(counts);
  std::tie(s.heaps_k, s.heaps_beta) = heaps_fit(heaps, std::max<uint64_t>(1000, s.words / 1000));
  if (!doc_words.empty()) {
    s.doc_words_mean = static_cast<double>(s.words) / static_cast<double>(doc_words.size());
    std::sort(doc_words.begin(), doc_words.end());
    const size_t n = doc_words.size();
    s.doc_words_median =
        n % 2
            ? static_cast<double>(doc_words[n / 2])
            : (static_cast<double>(doc_words[n / 2 - 1]) + static_cast<double>(doc_words[n / 2])) /
                  2.0;
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

namespace {

std::string num(double v, int prec) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

double pct(uint64_t a, uint64_t b) {
  return b == 0 ? 0.0 : 100.0 * static_cast<double>(a) / static_cast<double>(b);
}

}  // namespace

std::string stats_text(const CorpusStats& s) {
  char buf[2048];
  std::snprintf(
      buf, sizeof buf,
      "documents          %llu\n"
      "bytes              %llu\n"
      "words              %llu\n"
      "distinct words     %llu\n"
      "zipf exponent      %s (ranks 10..10000)\n"
      "heaps law          V = %s * N^%s\n"
      "doc words mean     %s\n"
      "doc words median   %s\n"
      "lines              %llu (%.1f%% blank)\n"
      "words per line     %s (non-blank lines)\n"
      "indented lines     %.1f%% of non-blank (%.1f%% with a tab)\n",
      static_cast<unsigned long long>(s.documents), static_cast<unsigned long long>(s.bytes),
      static_cast<unsigned long long>(s.words), static_cast<unsigned long long>(s.distinct_words),
      num(s.zipf_exponent, 3).c_str(), num(s.heaps_k, 2).c_str(), num(s.heaps_beta, 3).c_str(),
      num(s.doc_words_mean, 1).c_str(), num(s.doc_words_median, 1).c_str(),
      static_cast<unsigned long long>(s.lines), pct(s.lines - s.nonblank_lines, s.lines),
      num(s.nonblank_lines ? static_cast<double>(s.words) / static_cast<double>(s.nonblank_lines)
                           : NAN,
          2)
          .c_str(),
      pct(s.indented_lines, s.nonblank_lines), pct(s.tab_indented_lines, s.nonblank_lines));
  return buf;
}

std::string stats_json(const CorpusStats& s) {
  auto u = [](uint64_t v) { return std::to_string(v); };
  std::string j = "{\n";
  j += "  \"documents\": " + u(s.documents) + ",\n";
  j += "  \"bytes\": " + u(s.bytes) + ",\n";
  j += "  \"words\": " + u(s.words) + ",\n";
  j += "  \"distinct_words\": " + u(s.distinct_words) + ",\n";
  j += "  \"zipf_exponent\": " + num(s.zipf_exponent, 4) + ",\n";
  j += "  \"heaps_k\": " + num(s.heaps_k, 4) + ",\n";
  j += "  \"heaps_beta\": " + num(s.heaps_beta, 4) + ",\n";
  j += "  \"doc_words_mean\": " + num(s.doc_words_mean, 2) + ",\n";
  j += "  \"doc_words_median\": " + num(s.doc_words_median, 1) + ",\n";
  j += "  \"lines\": " + u(s.lines) + ",\n";
  j += "  \"nonblank_lines\": " + u(s.nonblank_lines) + ",\n";
  j += "  \"indented_lines\": " + u(s.indented_lines) + ",\n";
  j += "  \"tab_indented_lines\": " + u(s.tab_indented_lines) + ",\n";
  j += "  \"seconds\": " + num(s.seconds, 3) + "\n";
  j += "}\n";
  return j;
}

}  // namespace gtagen
