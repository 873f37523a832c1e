// gtadoc_reference: answers a task on raw (uncompressed) text with the raw-text reference
// implementation, for comparing against `gtadoc run` byte for byte. Command line and document
// naming: tests/reference/raw_tool.h. Exit codes: 0 ok, 2 usage error, 1 unreadable input.
#include "tests/reference/raw_reference.h"
#include "tests/reference/raw_tool.h"

namespace {

constexpr const char* kUsage =
    "usage: gtadoc_reference DIR TASK [--n N] [--top K] [--min-count M] [--per-doc] [--ids]\n"
    "                        [--lowercase] [--alnum] [--format tsv|json]\n"
    "TASK: word-count sort inverted-index term-vector sequence-count ranked-inverted-index\n"
    "Defaults: --n 3, --top 0 (all; term-vector: 10), --min-count 1, --format tsv.\n";

}  // namespace

int main(int argc, char** argv) {
  return gtadoc::run_raw_tool(
      argc, argv, "gtadoc_reference", kUsage, false, [](const gtadoc::RawToolArgs& a) {
        gtadoc::write_stdout(
            gtadoc::raw_reference_output(gtadoc::read_raw_documents(a.input), a.q, a.format));
      });
}
