// The GTADOC_* environment variables gtadoc reads, each declared once in one table (kVariables):
// name, type, the values allowed, default, category and a one-line meaning. docs/ENVIRONMENT.md
// documents the same table; a test checks that the two list the same variables and categories.
//
// What the accessors guarantee:
// - A name the table does not declare, declares with another type, or declares without a default
//   where the accessor returns one, does not compile: the accessors take the name as a constant
//   checked against the table, e.g. settings::count_if_set("GTADOC_PREFETCH_DEPTH").
// - Each variable is read from the environment once, at its first use, and kept; any thread may
//   ask at any time.
// - An empty value counts as unset. A set value is parsed strictly: one that does not parse or is
//   out of range throws UsageError, one line naming the variable, the value and what is allowed
//   (the CLI exits 2 with it). The CLI checks every set variable once MPI has started
//   (check_environment), so that a bad value ends a job with one line before any work.
// - Flags are 1 (on) or 0 (off). Counts and seconds are digits only. Byte sizes are digits with an
//   optional k, m, g or t (powers of 1024) and an optional B or iB, as the command line's sizes.
//   Words are one of those the table lists. Texts (test hooks) are passed on as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gtadoc::settings {

enum class Type { kFlag, kWord, kCount, kBytes, kSeconds, kText };

/// operator: safe in production, never changes the output; tuning: how work is scheduled, output
/// identical; debug: more logging or an older path kept for comparison; test: hooks of the tests.
enum class Category { kOperator, kTuning, kDebug, kTest };
using enum Category;

inline constexpr uint64_t kUnbounded = UINT64_MAX;

/// One row of the table.
struct Variable {
  std::string_view name;
  Type type;
  Category category;
  /// The default, written as the variable would be ("1", "auto", "64M"); empty: unset means the
  /// reader's own choice (computed, or a behaviour without a value).
  std::string_view fallback;
  uint64_t min = 0, max = 0;  ///< counts, byte sizes and seconds: the range allowed
  std::string_view words;     ///< words: the values allowed, separated by '|'
  std::string_view meaning;
};

constexpr Variable flag_var(std::string_view name, Category c, std::string_view fallback,
                            std::string_view meaning) {
  return {name, Type::kFlag, c, fallback, 0, 1, "", meaning};
}
constexpr Variable word_var(std::string_view name, Category c, std::string_view words,
                            std::string_view fallback, std::string_view meaning) {
  return {name, Type::kWord, c, fallback, 0, 0, words, meaning};
}
constexpr Variable count_var(std::string_view name, Category c, uint64_t min, uint64_t max,
                             std::string_view fallback, std::string_view meaning) {
  return {name, Type::kCount, c, fallback, min, max, "", meaning};
}
constexpr Variable bytes_var(std::string_view name, Category c, uint64_t min,
                             std::string_view fallback, std::string_view meaning) {
  return {name, Type::kBytes, c, fallback, min, kUnbounded, "", meaning};
}
constexpr Variable seconds_var(std::string_view name, Category c, uint64_t min, uint64_t max,
                               std::string_view fallback, std::string_view meaning) {
  return {name, Type::kSeconds, c, fallback, min, max, "", meaning};
}
constexpr Variable text_var(std::string_view name, Category c, std::string_view meaning) {
  return {name, Type::kText, c, "", 0, 0, "", meaning};
}

inline constexpr Variable kVariables[] = {
    bytes_var("GTADOC_GPU_MEMORY_LIMIT", kOperator, 1, "",
              "GPU memory the GPU engine may take, resident shards and queries together "
              "(run and serve --gpu-memory-limit win); unset: the whole device"),
    bytes_var("GTADOC_GPU_QUERY_MEMORY_LIMIT", kOperator, 1, "",
              "GPU memory one query may allocate beyond the resident shards"),
    word_var("GTADOC_SHUFFLE", kOperator, "auto|nccl|mpi|host", "auto",
             "how GPU ranks move their records"),
    flag_var("GTADOC_SHUFFLE_CMA", kOperator, "1",
             "0: ranks on one machine never read each other's memory; MPI moves the records"),
    flag_var("GTADOC_NARROW_GPUS", kOperator, "1",
             "0: a rank never narrows CUDA_VISIBLE_DEVICES to its own GPU"),
    word_var("GTADOC_MPI_PML", kOperator, "default", "",
             "default: leave Open MPI's transport choice alone on one machine"),
    word_var("GTADOC_OUTPUT_MAP", kOperator, "tmpfs|all|0", "tmpfs",
             "where result files are written through a memory mapping"),
    bytes_var("GTADOC_SERVE_RESPONSE_MEMORY", kOperator, 1, "64M",
              "serve: host memory answers in flight may hold before spilling to $TMPDIR"),
    seconds_var("GTADOC_HEARTBEAT_TIMEOUT", kOperator, 0, 3600, "10",
                "a rank silent this long ends the job (0: no heartbeat)"),
    bytes_var("GTADOC_BLOCK_CACHE_BYTES", kOperator, 0, "",
              "freed large host blocks kept for reuse (0: none)"),

    count_var("GTADOC_PREFETCH_DEPTH", kTuning, 1, 256, "",
              "shards read and prepared ahead of the one being loaded"),
    count_var("GTADOC_PREPARE_THREADS", kTuning, 1, 4096, "",
              "threads each shard's host preparation takes after the first shard"),
    count_var("GTADOC_READS_AT_ONCE", kTuning, 1, 256, "",
              "shard reads in flight at once (at most the prefetch depth)"),
    count_var("GTADOC_GPU_LOAD_LANES", kTuning, 1, 16, "4",
              "shards the GPU engine loads side by side"),
    count_var("GTADOC_OUTPUT_MAP_WRITERS", kTuning, 0, 4096, "4",
              "threads copying into a mapped result file on a disk file system (0: no limit)"),
    bytes_var("GTADOC_OUTPUT_MAP_MIN_BYTES", kTuning, 0, "8M",
              "result ranges smaller than this are written with pwrite"),
    bytes_var("GTADOC_CPU_TABLE_BUDGET", kTuning, 0, "",
              "memory a bottom-up traversal's tables may take in the CPU engine"),
    count_var("GTADOC_CPU_BATCH_SYMBOLS", kTuning, 1, kUnbounded, "4194304",
              "symbols a streamed query's shards hold together before the CPU engine runs them "
              "as a batch (and at least four shards per thread)"),
    count_var("GTADOC_MAX_PIECE_SYMBOLS", kTuning, 0, kUnbounded, "0",
              "largest document-range piece a shard is loaded in, in grammar symbols "
              "(0: the pipeline's choice)"),
    flag_var("GTADOC_TOP_TO_ROOT", kTuning, "1",
             "0: a small count-ordered --top is exchanged by ranges, not sent to rank 0"),
    word_var("GTADOC_SERVE_WARM_UP", kTuning, "auto|1|0", "auto",
             "serve's warm-up queries before it says it is ready: auto (the GPU engine), 1 "
             "(every engine) or 0 (none; see SERVICE.md)"),
    word_var("GTADOC_CUDA_WAIT", kTuning, "spin|yield|block", "spin",
             "how a thread waiting for the GPU waits: spin (CUDA's default with fewer contexts "
             "than cores), yield its core to other threads between polls, or block"),
    word_var("GTADOC_GPU_UPLOAD", kTuning, "staged|double|registered|pageable", "staged",
             "how large host arrays reach the GPU: through pinned slots (staged), through two "
             "half slots per thread (double), registered for the copy, or by the driver"),
    flag_var("GTADOC_MALLOC_KEEP", kTuning, "1",
             "0: glibc's allocator gives freed blocks of a few MiB back to the system at once "
             "(its defaults) instead of keeping them for the next shard"),
    flag_var("GTADOC_GPU_WARMUP", kTuning, "1",
             "0: --engine gpu does not start CUDA beside MPI's start"),

    flag_var("GTADOC_GPU_PHASES", kDebug, "0", "1: the GPU engine's per-phase times at -vv"),
    flag_var("GTADOC_DEVICE_RECORDS", kDebug, "1",
             "0: a GPU's records are downloaded after the traversal and reduced on the host"),
    flag_var("GTADOC_DEVICE_ROW_ORDER", kDebug, "1",
             "0: count-ordered rows are planned on the host"),
    word_var("GTADOC_POINT_LOOKUP", kDebug, "auto|index|traversal", "auto",
             "serve: where a query filtered by words takes its records"),
    flag_var("GTADOC_GPU_PREPARE", kDebug, "1",
             "0: the GPU engine's per-query shard estimates are made shard by shard"),
    flag_var("GTADOC_GPU_HOST_BAGS", kDebug, "0",
             "1: the GPU layout's re-encoded bodies and bags are built on the host"),
    flag_var("GTADOC_GPU_DEVICE_CHECKS", kDebug, "1",
             "0: a shard read for the GPU engine has its whole grammar checked on the host, not "
             "its frame on the host and its bodies on the device"),
    flag_var("GTADOC_H5_SERIAL_WRITE", kDebug, "0",
             "1: archive chunks are compressed by HDF5's serial pipeline, not on threads"),
    flag_var("GTADOC_H5_LOCKED_READ", kDebug, "0",
             "1: shard reads decode their chunks under the HDF5 lock"),
    flag_var("GTADOC_CHUNK_MAPS", kDebug, "1",
             "0: shards are read through HDF5 even where the manifest records their chunk maps"),

    text_var("GTADOC_FAULT_INJECT", kTest,
             "RANK:SHARD:kill|segv|throw: that rank fails when a query starts on that shard"),
    text_var("GTADOC_FAULT_PAUSE", kTest,
             "RANK:CALL:SECONDS[:FILE]: that rank sleeps on entering the MPI collective CALL"),
    count_var("GTADOC_LOCAL_RANKS", kTest, 1, 64, "",
              "without a launcher, run that many ranks as threads of the process"),
    flag_var("GTADOC_MPI", kTest, "", "forces the launcher detection: 1 starts MPI, 0 does not"),
};

/// GTADOC_* names that tests, tools and scripts read, never gtadoc: set, they are neither logged
/// nor warned about. A name ending in '_' stands for every name it starts.
inline constexpr std::string_view kReadElsewhere[] = {
    // tests and tools
    "GTADOC_BINARY",
    "GTADOC_SOURCE_DIR",
    "GTADOC_SAMPLE_DIR",
    "GTADOC_BENCH_WORDS",
    "GTADOC_A2A_REPS",
    "GTADOC_LAYOUT_REPS",
    "GTADOC_INTERRUPT_TEST",
    // scripts/slurm, scripts/device-check.sh, scripts/datasets
    "GTADOC_LAUNCH",
    "GTADOC_PORT",
    "GTADOC_LISTEN",
    "GTADOC_SERVE_RESTARTS",
    "GTADOC_SERVE_RESTART_PAUSE",
    "GTADOC_SERVE_RESTART_WAIT",
    "GTADOC_BUILD_BENCH",
    "GTADOC_DATA",
    "GTADOC_PKG_",
};

constexpr std::string_view category_name(Category c) {
  switch (c) {
    case kOperator:
      return "operator";
    case kTuning:
      return "tuning";
    case kDebug:
      return "debug";
    case kTest:
      return "test";
  }
  return "?";
}

namespace detail {

/// Never defined, and not constexpr: the compiler's error names it where an accessor is given a
/// name the table does not declare, declares with another type, or declares without a default.
void not_declared_with_this_type_or_default();

consteval size_t index_of(std::string_view name, Type type, bool with_default) {
  for (size_t i = 0; i < std::size(kVariables); ++i)
    if (kVariables[i].name == name && kVariables[i].type == type &&
        (!with_default || !kVariables[i].fallback.empty()))
      return i;
  not_declared_with_this_type_or_default();
  return 0;
}

}  // namespace detail

/// A declared variable's name, checked at compile time (implicitly made from a string literal).
template <Type T, bool kWithDefault = false>
class Name {
 public:
  consteval Name(const char* name)  // NOLINT(google-explicit-constructor): a literal in, checked
      : index_(detail::index_of(name, T, kWithDefault)) {}
  size_t index() const { return index_; }

 private:
  size_t index_;
};

/// The table's row of `name`, at compile time (for constants that must agree with it).
consteval const Variable& variable(std::string_view name) {
  for (const Variable& v : kVariables)
    if (v.name == name) return v;
  detail::not_declared_with_this_type_or_default();
  return kVariables[0];
}

/// The default of a count or seconds variable as a number, at compile time.
consteval uint64_t default_number(std::string_view name) {
  const Variable& v = variable(name);
  if ((v.type != Type::kCount && v.type != Type::kSeconds) || v.fallback.empty())
    detail::not_declared_with_this_type_or_default();
  uint64_t n = 0;
  for (char c : v.fallback) n = n * 10 + static_cast<uint64_t>(c - '0');
  return n;
}

// The value when set, else the table's default (those without "_if_set"), or nothing.
bool flag(Name<Type::kFlag, true> name);
std::optional<bool> flag_if_set(Name<Type::kFlag> name);
std::string_view word(Name<Type::kWord, true> name);  ///< one of the table's words
std::optional<std::string_view> word_if_set(Name<Type::kWord> name);
uint64_t count(Name<Type::kCount, true> name);
std::optional<uint64_t> count_if_set(Name<Type::kCount> name);
uint64_t bytes(Name<Type::kBytes, true> name);
std::optional<uint64_t> bytes_if_set(Name<Type::kBytes> name);
uint64_t seconds(Name<Type::kSeconds, true> name);
std::optional<std::string> text_if_set(Name<Type::kText> name);

/// Throws UsageError (one line: the name, `value`, what is allowed) unless `v` allows `value`.
void check(const Variable& v, std::string_view value);

/// Parses every variable that is set; throws the first failure's UsageError, in table order.
void check_environment();

/// Once per process, at info level (-v): "settings: NAME=VALUE (category)" for every variable
/// that is set ("(test hook set)" for the test category); and at warning level, one line naming
/// the set GTADOC_* variables gtadoc does not read (a typo), if any.
void log_environment();

/// The set GTADOC_* variables that are neither in the table nor in kReadElsewhere (names of the
/// build's GTADOC_HAVE_* macros aside), sorted.
std::vector<std::string> unknown_variables();

/// Forgets every value read, so that the next use reads the environment again. For tests that
/// change the environment; gtadoc itself never calls it.
void reread_for_tests();

}  // namespace gtadoc::settings
