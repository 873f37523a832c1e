// gtadoc_grep_reference: answers a phrase search on raw (uncompressed) text with the raw-text
// reference (tests/reference/raw_grep.h), for comparing against `gtadoc grep` byte for byte.
// Documents are read and named as by the other raw-text tools (tests/reference/raw_tool.h).
// Options may come before, between or after the phrases; "--" ends the options, so that a phrase
// may start with '-'. Exit codes: 0 ok, 2 usage error, 1 unreadable input.
#include <iostream>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/reference/raw_grep.h"
#include "tests/reference/raw_tool.h"

namespace {

constexpr const char* kUsage =
    "usage: gtadoc_grep_reference DIR PHRASE... [--all|--any] [--count|--lines] [--lowercase]\n"
    "                             [--alnum] [--ids] [--format tsv|json]\n"
    "Defaults: --all, one row per selected document, --format tsv. '--' ends the options.\n";

struct GrepArgs {
  std::string input;
  gtadoc::RawGrepOptions o;
  gtadoc::OutputFormat format = gtadoc::OutputFormat::kTsv;
  bool help = false;
};

GrepArgs parse_args(int argc, char** argv) {
  using gtadoc::RawGrepOptions;
  using gtadoc::UsageError;
  GrepArgs a;
  std::vector<std::string> positional;
  bool all_given = false;
  bool any_given = false;
  bool count_given = false;
  bool lines_given = false;
  bool options_end = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (options_end || arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
    } else if (arg == "--") {
      options_end = true;
    } else if (arg == "-h" || arg == "--help") {
      a.help = true;
      return a;
    } else if (arg == "--all") {
      all_given = true;
    } else if (arg == "--any") {
      any_given = true;
    } else if (arg == "--count") {
      count_given = true;
    } else if (arg == "--lines") {
      lines_given = true;
    } else if (arg == "--lowercase") {
      a.o.lowercase = true;
    } else if (arg == "--alnum") {
      a.o.alnum = true;
    } else if (arg == "--ids") {
      a.o.ids = true;
    } else if (arg == "--format") {
      if (i + 1 >= argc) throw UsageError(arg + ": missing value");
      const std::string f = argv[++i];
      if (f == "tsv") {
        a.format = gtadoc::OutputFormat::kTsv;
      } else if (f == "json") {
        a.format = gtadoc::OutputFormat::kJson;
      } else {
        throw UsageError("--format: expected tsv or json, got '" + f + "'");
      }
    } else {
      throw UsageError("unknown option '" + arg + "'");
    }
  }
  if (all_given && any_given) throw UsageError("--all and --any exclude each other");
  if (count_given && lines_given) throw UsageError("--count and --lines exclude each other");
  if (positional.size() < 2) throw UsageError("expected DIR and at least one PHRASE");
  a.input = positional[0];
  a.o.phrases.assign(positional.begin() + 1, positional.end());
  a.o.any = any_given;
  if (count_given) a.o.mode = RawGrepOptions::Mode::kCount;
  if (lines_given) a.o.mode = RawGrepOptions::Mode::kLines;
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr const char* tool = "gtadoc_grep_reference";
  try {
    const GrepArgs a = parse_args(argc, argv);
    if (a.help) {
      std::cout << kUsage;
      return 0;
    }
    gtadoc::raw_grep_phrases(a.o);  // a bad phrase is a usage error before any input is read
    gtadoc::write_stdout(
        gtadoc::raw_grep_output(gtadoc::read_raw_documents(a.input), a.o, a.format));
    return 0;
  } catch (const gtadoc::UsageError& e) {
    std::cerr << tool << ": " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const gtadoc::Error& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return 1;
  }
}
