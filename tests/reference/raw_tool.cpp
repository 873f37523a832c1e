#include "tests/reference/raw_tool.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/error.h"

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

Task task_from_name(const std::string& name) {
  if (name == "word-count") return Task::kWordCount;
  if (name == "sort") return Task::kSort;
  if (name == "inverted-index") return Task::kInvertedIndex;
  if (name == "term-vector") return Task::kTermVector;
  if (name == "sequence-count") return Task::kSequenceCount;
  if (name == "ranked-inverted-index") return Task::kRankedInvertedIndex;
  throw UsageError("unknown task '" + name + "'");
}

uint64_t parse_count(const std::string& option, const std::string& value) {
  uint64_t result = 0;
  const char* last = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), last, result);
  if (value.empty() || ec != std::errc() || ptr != last)
    throw UsageError(option + ": expected a non-negative integer, got '" + value + "'");
  return result;
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open for reading");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw InputError(file.string() + ": read failed");
  return bytes.str();
}

void collect(const fs::path& dir, const std::string& prefix, std::vector<RawDocument>& docs) {
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    std::string name = prefix + entry.path().filename().string();
    if (fs::is_directory(entry.symlink_status())) {
      collect(entry.path(), name + "/", docs);
    } else if (entry.is_regular_file()) {
      docs.push_back({name, read_file(entry.path())});
    }
  }
}

}  // namespace

RawToolArgs parse_raw_tool_args(int argc, char** argv, bool allow_timings) {
  RawToolArgs a;
  std::vector<std::string> positional;
  bool top_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + ": missing value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      a.help = true;
      return a;
    } else if (arg == "--n") {
      uint64_t n = parse_count(arg, value());
      if (n < 2 || n > 8) throw UsageError("--n must be between 2 and 8, got " + std::to_string(n));
      a.q.n = static_cast<uint32_t>(n);
    } else if (arg == "--top") {
      a.q.top = parse_count(arg, value());
      top_given = true;
    } else if (arg == "--min-count") {
      a.q.min_count = parse_count(arg, value());
    } else if (arg == "--per-doc") {
      a.q.per_doc = true;
    } else if (arg == "--ids") {
      a.q.ids = true;
    } else if (arg == "--lowercase") {
      a.q.lowercase = true;
    } else if (arg == "--alnum") {
      a.q.alnum = true;
    } else if (arg == "--timings" && allow_timings) {
      a.timings = true;
    } else if (arg == "--format") {
      std::string f = value();
      if (f == "tsv") {
        a.format = OutputFormat::kTsv;
      } else if (f == "json") {
        a.format = OutputFormat::kJson;
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
  a.input = positional[0];
  a.q.task = task_from_name(positional[1]);
  if (a.q.task == Task::kTermVector && !top_given) a.q.top = 10;
  return a;
}

std::vector<RawDocument> read_raw_documents(const fs::path& input) {
  std::vector<RawDocument> docs;
  if (fs::is_directory(input)) {
    collect(input, "", docs);
  } else if (fs::is_regular_file(input)) {
    docs.push_back({input.filename().string(), read_file(input)});
  } else {
    throw InputError(input.string() + ": no such file or directory");
  }
  return docs;
}

void write_stdout(const std::string& bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() ||
      std::fflush(stdout) != 0)
    throw InputError("stdout: write failed");
}

int run_raw_tool(int argc, char** argv, const char* tool, const char* usage, bool allow_timings,
                 const std::function<void(const RawToolArgs&)>& body) {
  try {
    RawToolArgs a = parse_raw_tool_args(argc, argv, allow_timings);
    if (a.help) {
      std::cout << usage;
      return 0;
    }
    body(a);
    return 0;
  } catch (const UsageError& e) {
    std::cerr << tool << ": " << e.what() << "\n" << usage;
    return 2;
  } catch (const Error& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gtadoc
