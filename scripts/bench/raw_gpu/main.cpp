// raw_gpu: the raw-text GPU baseline as a command-line tool (same interface as
// gtadoc_reference, see docs/OUTPUT.md), for benchmarks and for checking engines against it.
//
//   raw_gpu DIR TASK [--n N] [--top K] [--min-count M] [--per-doc] [--ids]
//                    [--lowercase] [--alnum] [--format tsv|json] [--timings]
//
// Every regular file below DIR (recursively; symbolic links to files are read, symbolic links
// to directories are not entered) is one document named by its path relative to DIR, with '/'
// between components; DIR may also be a single file (one document named by its base name).
// Output goes to stdout; --timings writes one JSON line of phase timings to stderr.
// Exit codes: 0 ok, 2 usage error, 1 unreadable input or no usable GPU, 70 internal error.
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tests/reference/gpu/raw_gpu.cuh"
#include "tests/reference/raw_tool.h"

namespace {

constexpr const char* kUsage =
    "usage: raw_gpu DIR TASK [--n N] [--top K] [--min-count M] [--per-doc] [--ids]\n"
    "                        [--lowercase] [--alnum] [--format tsv|json] [--timings]\n"
    "TASK: word-count sort inverted-index term-vector sequence-count ranked-inverted-index\n"
    "Defaults: --n 3, --top 0 (all; term-vector: 10), --min-count 1, --format tsv.\n";

void run(const gtadoc::RawToolArgs& a) {
  const auto read_begin = std::chrono::steady_clock::now();
  std::vector<gtadoc::RawDocument> docs = gtadoc::read_raw_documents(a.input);
  const double read_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - read_begin).count();
  gtadoc::RawGpuTimings t;
  gtadoc::write_stdout(gtadoc::raw_gpu_output(docs, a.q, a.format, &t));
  if (!a.timings) return;
  nlohmann::ordered_json j;
  j["read_s"] = read_s;
  j["upload_s"] = t.upload_s;
  j["tokenize_s"] = t.tokenize_s;
  j["group_s"] = t.group_s;
  j["reduce_s"] = t.reduce_s;
  j["format_s"] = t.format_s;
  j["total_s"] = t.upload_s + t.tokenize_s + t.group_s + t.reduce_s + t.format_s;
  j["bytes"] = t.bytes;
  j["words"] = t.words;
  j["distinct_words"] = t.distinct_words;
  j["rows"] = t.rows;
  j["hash_fallback"] = t.hash_fallback;
  std::cerr << j.dump() << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  return gtadoc::run_raw_tool(argc, argv, "raw_gpu", kUsage, true, run);
}
