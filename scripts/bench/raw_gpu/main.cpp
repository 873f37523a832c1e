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
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "scripts/bench/raw_gpu/raw_gpu.cuh"
#include "worker/query.h"

namespace fs = std::filesystem;
using gtadoc::InputError;
using gtadoc::UsageError;

namespace {

constexpr const char* kUsage =
    "usage: raw_gpu DIR TASK [--n N] [--top K] [--min-count M] [--per-doc] [--ids]\n"
    "                        [--lowercase] [--alnum] [--format tsv|json] [--timings]\n"
    "TASK: word-count sort inverted-index term-vector sequence-count ranked-inverted-index\n"
    "Defaults: --n 3, --top 0 (all; term-vector: 10), --min-count 1, --format tsv.\n";

gtadoc::Task task_from_name(const std::string& name) {
  if (name == "word-count") return gtadoc::Task::kWordCount;
  if (name == "sort") return gtadoc::Task::kSort;
  if (name == "inverted-index") return gtadoc::Task::kInvertedIndex;
  if (name == "term-vector") return gtadoc::Task::kTermVector;
  if (name == "sequence-count") return gtadoc::Task::kSequenceCount;
  if (name == "ranked-inverted-index") return gtadoc::Task::kRankedInvertedIndex;
  throw UsageError("unknown task '" + name + "'");
}

uint64_t parse_count(const std::string& option, const std::string& value) {
  uint64_t result = 0;
  const char* first = value.data();
  const char* last = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(first, last, result);
  if (value.empty() || ec != std::errc() || ptr != last) {
    throw UsageError(option + ": expected a non-negative integer, got '" + value + "'");
  }
  return result;
}

std::string read_whole_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open for reading");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw InputError(file.string() + ": read failed");
  return bytes.str();
}

void collect(const fs::path& dir, const std::string& prefix,
             std::vector<gtadoc::RawDocument>& docs) {
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    std::string name = prefix + entry.path().filename().string();
    if (fs::is_directory(entry.symlink_status())) {
      collect(entry.path(), name + "/", docs);
    } else if (entry.is_regular_file()) {
      docs.push_back({name, read_whole_file(entry.path())});
    }
  }
}

int run(int argc, char** argv) {
  std::vector<std::string> positional;
  gtadoc::QueryOptions q;
  gtadoc::OutputFormat fmt = gtadoc::OutputFormat::kTsv;
  bool top_given = false;
  bool print_timings = false;

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + ": missing value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--n") {
      uint64_t n = parse_count(arg, value());
      if (n < 2 || n > 8) throw UsageError("--n must be between 2 and 8, got " + std::to_string(n));
      q.n = static_cast<uint32_t>(n);
    } else if (arg == "--top") {
      q.top = parse_count(arg, value());
      top_given = true;
    } else if (arg == "--min-count") {
      q.min_count = parse_count(arg, value());
    } else if (arg == "--per-doc") {
      q.per_doc = true;
    } else if (arg == "--ids") {
      q.ids = true;
    } else if (arg == "--lowercase") {
      q.lowercase = true;
    } else if (arg == "--alnum") {
      q.alnum = true;
    } else if (arg == "--timings") {
      print_timings = true;
    } else if (arg == "--format") {
      std::string f = value();
      if (f == "tsv") {
        fmt = gtadoc::OutputFormat::kTsv;
      } else if (f == "json") {
        fmt = gtadoc::OutputFormat::kJson;
      } else {
        throw UsageError("--format: expected tsv or json, got '" + f + "'");
      }
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError("unknown option '" + arg + "'");
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2) throw UsageError("expected DIR and TASK");
  q.task = task_from_name(positional[1]);
  if (q.task == gtadoc::Task::kTermVector && !top_given) q.top = 10;

  const auto read_begin = std::chrono::steady_clock::now();
  const fs::path input = positional[0];
  std::vector<gtadoc::RawDocument> docs;
  if (fs::is_directory(input)) {
    collect(input, "", docs);
  } else if (fs::is_regular_file(input)) {
    docs.push_back({input.filename().string(), read_whole_file(input)});
  } else {
    throw InputError(input.string() + ": no such file or directory");
  }
  const double read_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - read_begin).count();

  gtadoc::RawGpuTimings t;
  const std::string output = gtadoc::raw_gpu_output(docs, q, fmt, &t);
  if (std::fwrite(output.data(), 1, output.size(), stdout) != output.size() ||
      std::fflush(stdout) != 0) {
    throw InputError("stdout: write failed");
  }
  if (print_timings) {
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
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "raw_gpu: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const gtadoc::Error& e) {
    std::cerr << "raw_gpu: " << e.what() << "\n";
    return e.exit_code();
  } catch (const fs::filesystem_error& e) {
    std::cerr << "raw_gpu: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "raw_gpu: " << e.what() << "\n";
    return 1;
  }
}
