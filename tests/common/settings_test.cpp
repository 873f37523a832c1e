// common/settings.h: every kind of value parsed strictly (good values, each kind of bad value a
// one-line UsageError naming the variable and the value, ranges, size suffixes), defaults when
// unset or empty, values read once until reread, the table consistent with itself, and the set
// GTADOC_* names gtadoc does not read found.
#include "common/settings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "tests/testutil/scoped_env.h"

namespace gtadoc {
namespace {

using settings::Type;
using settings::Variable;
using testutil::ScopedEnv;

constexpr Variable kFlag = settings::flag_var("GTADOC_T_FLAG", settings::kDebug, "0", "m");
constexpr Variable kWord =
    settings::word_var("GTADOC_T_WORD", settings::kOperator, "auto|nccl|mpi", "auto", "m");
constexpr Variable kCount =
    settings::count_var("GTADOC_T_COUNT", settings::kTuning, 1, 256, "", "m");
constexpr Variable kAnyCount =
    settings::count_var("GTADOC_T_ANY", settings::kTuning, 0, settings::kUnbounded, "0", "m");
constexpr Variable kBytes = settings::bytes_var("GTADOC_T_BYTES", settings::kOperator, 1, "", "m");
constexpr Variable kAnyBytes =
    settings::bytes_var("GTADOC_T_ANY_BYTES", settings::kOperator, 0, "", "m");
constexpr Variable kSeconds =
    settings::seconds_var("GTADOC_T_SECONDS", settings::kOperator, 0, 3600, "10", "m");
constexpr Variable kText = settings::text_var("GTADOC_T_TEXT", settings::kTest, "m");

/// The message of check(v, value)'s UsageError ("" when it accepts the value).
std::string refusal(const Variable& v, const std::string& value) {
  try {
    settings::check(v, value);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

/// check(v, value) refuses with one line that names the variable and quotes the value.
void expect_refused(const Variable& v, const std::string& value) {
  const std::string m = refusal(v, value);
  SCOPED_TRACE(std::string(v.name) + "=" + value + ": " + m);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.rfind(std::string(v.name) + ": '", 0), 0u);
  EXPECT_NE(m.find("'" + one_line(value, 40)), std::string::npos);
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_LT(m.size(), 200u);
}

TEST(Settings, FlagsAreZeroOrOne) {
  EXPECT_EQ(refusal(kFlag, "0"), "");
  EXPECT_EQ(refusal(kFlag, "1"), "");
  for (const char* bad : {"yes", "on", "true", "2", "01", " 1", "1 ", "-1", "off"})
    expect_refused(kFlag, bad);
  EXPECT_EQ(refusal(kFlag, "yes"), "GTADOC_T_FLAG: 'yes' is not 0 (off) or 1 (on)");
}

TEST(Settings, WordsAreOneOfTheListed) {
  for (const char* good : {"auto", "nccl", "mpi"}) EXPECT_EQ(refusal(kWord, good), "") << good;
  for (const char* bad : {"AUTO", "nc", "mpi ", "auto|nccl", "|", "host"})
    expect_refused(kWord, bad);
  EXPECT_EQ(refusal(kWord, "bogus"), "GTADOC_T_WORD: 'bogus' is not auto, nccl or mpi");
}

TEST(Settings, CountsAreDigitsWithinTheRange) {
  for (const char* good : {"1", "2", "256", "0001"}) EXPECT_EQ(refusal(kCount, good), "") << good;
  for (const char* bad : {"0", "257", "-1", "+3", "1e3", "3k", "8 ", "abc", "99999999999999999999"})
    expect_refused(kCount, bad);
  EXPECT_EQ(refusal(kCount, "257"), "GTADOC_T_COUNT: '257' is not an integer from 1 to 256");
  EXPECT_EQ(refusal(kAnyCount, "0"), "");
  EXPECT_EQ(refusal(kAnyCount, "18446744073709551615"), "");
  expect_refused(kAnyCount, "18446744073709551616");  // one past 64 bits
  EXPECT_EQ(refusal(kAnyCount, "x"), "GTADOC_T_ANY: 'x' is not a non-negative integer");
}

TEST(Settings, ByteSizesTakeSuffixes) {
  for (const char* good : {"1", "100B", "64k", "64K", "64KiB", "512m", "1MB", "1GiB", "2t"})
    EXPECT_EQ(refusal(kBytes, good), "") << good;
  for (const char* bad : {"0", "12q", "-1", "1.5G", "G", "1 G", "99999999999T"})
    expect_refused(kBytes, bad);
  EXPECT_EQ(refusal(kBytes, "0"), "GTADOC_T_BYTES: '0' is not a positive size");
  EXPECT_EQ(refusal(kAnyBytes, "0"), "");
  EXPECT_NE(refusal(kAnyBytes, "12q").find("512m"), std::string::npos);  // says what a size is
}

TEST(Settings, SecondsAreWholeNumbersWithinTheRange) {
  for (const char* good : {"0", "1", "3600"}) EXPECT_EQ(refusal(kSeconds, good), "") << good;
  for (const char* bad : {"5s", "3601", "-5", "1.5", "10 "}) expect_refused(kSeconds, bad);
  EXPECT_EQ(refusal(kSeconds, "5s"),
            "GTADOC_T_SECONDS: '5s' is not a whole number of seconds from 0 to 3600");
}

TEST(Settings, TextsPassAsTheyAre) {
  EXPECT_EQ(refusal(kText, "1:3:kill"), "");
  EXPECT_EQ(refusal(kText, "none"), "");
}

TEST(Settings, ALongOrUnprintableValueStaysOnOneShortLine) {
  expect_refused(kCount, std::string(500, '7'));
  expect_refused(kWord, "a\nb\x01");
  EXPECT_NE(refusal(kWord, "a\nb").find("a\\x0ab"), std::string::npos);
}

TEST(Settings, DefaultsWhenUnsetOrEmpty) {
  for (const char* value : {static_cast<const char*>(nullptr), ""}) {
    const std::optional<std::string> v =
        value == nullptr ? std::nullopt : std::optional<std::string>(value);
    ScopedEnv a("GTADOC_GPU_LOAD_LANES", v), b("GTADOC_SHUFFLE", v),
        c("GTADOC_SERVE_RESPONSE_MEMORY", v), d("GTADOC_HEARTBEAT_TIMEOUT", v),
        e("GTADOC_TOP_TO_ROOT", v), f("GTADOC_GPU_PHASES", v), g("GTADOC_PREFETCH_DEPTH", v),
        h("GTADOC_MPI", v), i("GTADOC_FAULT_INJECT", v), j("GTADOC_OUTPUT_MAP_MIN_BYTES", v);
    EXPECT_EQ(settings::count("GTADOC_GPU_LOAD_LANES"), 4u);
    EXPECT_EQ(settings::word("GTADOC_SHUFFLE"), "auto");
    EXPECT_EQ(settings::bytes("GTADOC_SERVE_RESPONSE_MEMORY"), uint64_t{64} << 20);
    EXPECT_EQ(settings::bytes("GTADOC_OUTPUT_MAP_MIN_BYTES"), uint64_t{8} << 20);
    EXPECT_EQ(settings::seconds("GTADOC_HEARTBEAT_TIMEOUT"), 10u);
    EXPECT_TRUE(settings::flag("GTADOC_TOP_TO_ROOT"));
    EXPECT_FALSE(settings::flag("GTADOC_GPU_PHASES"));
    EXPECT_EQ(settings::count_if_set("GTADOC_PREFETCH_DEPTH"), std::nullopt);
    EXPECT_EQ(settings::flag_if_set("GTADOC_MPI"), std::nullopt);
    EXPECT_EQ(settings::text_if_set("GTADOC_FAULT_INJECT"), std::nullopt);
  }
  static_assert(settings::default_number("GTADOC_GPU_LOAD_LANES") == 4);
  static_assert(settings::default_number("GTADOC_HEARTBEAT_TIMEOUT") == 10);
}

TEST(Settings, SetValues) {
  ScopedEnv a("GTADOC_GPU_LOAD_LANES", "16"), b("GTADOC_SHUFFLE", "host"),
      c("GTADOC_SERVE_RESPONSE_MEMORY", "1g"), d("GTADOC_HEARTBEAT_TIMEOUT", "0"),
      e("GTADOC_TOP_TO_ROOT", "0"), f("GTADOC_GPU_PHASES", "1"), g("GTADOC_PREFETCH_DEPTH", "8"),
      h("GTADOC_MPI", "0"), i("GTADOC_FAULT_INJECT", "1:2:throw"), j("GTADOC_MPI_PML", "default");
  EXPECT_EQ(settings::count("GTADOC_GPU_LOAD_LANES"), 16u);
  EXPECT_EQ(settings::word("GTADOC_SHUFFLE"), "host");
  EXPECT_EQ(settings::bytes("GTADOC_SERVE_RESPONSE_MEMORY"), uint64_t{1} << 30);
  EXPECT_EQ(settings::seconds("GTADOC_HEARTBEAT_TIMEOUT"), 0u);
  EXPECT_FALSE(settings::flag("GTADOC_TOP_TO_ROOT"));
  EXPECT_TRUE(settings::flag("GTADOC_GPU_PHASES"));
  EXPECT_EQ(settings::count_if_set("GTADOC_PREFETCH_DEPTH"), 8u);
  EXPECT_EQ(settings::flag_if_set("GTADOC_MPI"), false);
  EXPECT_EQ(settings::text_if_set("GTADOC_FAULT_INJECT"), "1:2:throw");
  EXPECT_EQ(settings::word_if_set("GTADOC_MPI_PML"), "default");
  EXPECT_NO_THROW(settings::check_environment());
}

TEST(Settings, ABadValueThrowsAtEveryUseAndInTheCheck) {
  ScopedEnv lanes("GTADOC_GPU_LOAD_LANES", "17");
  for (int i = 0; i < 2; ++i) {
    try {
      settings::count("GTADOC_GPU_LOAD_LANES");
      ADD_FAILURE() << "17 lanes accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                "GTADOC_GPU_LOAD_LANES: '17' is not an integer from 1 to 16");
      EXPECT_EQ(e.exit_code(), 2);
    }
  }
  EXPECT_THROW(settings::check_environment(), UsageError);
  ScopedEnv shuffle("GTADOC_SHUFFLE", "bogus");
  EXPECT_THROW(settings::word("GTADOC_SHUFFLE"), UsageError);
  EXPECT_THROW(settings::word_if_set("GTADOC_SHUFFLE"), UsageError);
}

TEST(Settings, ReadOnceUntilReread) {
  ScopedEnv depth("GTADOC_PREFETCH_DEPTH", "3");
  EXPECT_EQ(settings::count_if_set("GTADOC_PREFETCH_DEPTH"), 3u);
  setenv("GTADOC_PREFETCH_DEPTH", "5", 1);
  EXPECT_EQ(settings::count_if_set("GTADOC_PREFETCH_DEPTH"), 3u);  // kept
  settings::reread_for_tests();
  EXPECT_EQ(settings::count_if_set("GTADOC_PREFETCH_DEPTH"), 5u);
}

TEST(Settings, ManyThreadsReadTogether) {
  ScopedEnv depth("GTADOC_PREFETCH_DEPTH", "7");
  std::vector<std::thread> threads;
  std::vector<uint64_t> got(8);
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i)
        got[t] = settings::count_if_set("GTADOC_PREFETCH_DEPTH").value();
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(std::count(got.begin(), got.end(), 7u), 8);
}

TEST(Settings, TheTableIsConsistent) {
  std::set<std::string_view> names;
  for (const Variable& v : settings::kVariables) {
    SCOPED_TRACE(std::string(v.name));
    EXPECT_TRUE(names.insert(v.name).second) << "declared twice";
    EXPECT_EQ(v.name.rfind("GTADOC_", 0), 0u);
    EXPECT_FALSE(v.meaning.empty());
    EXPECT_LE(v.min, v.max);
    if (v.type == Type::kWord) EXPECT_FALSE(v.words.empty());
    if (!v.fallback.empty()) EXPECT_EQ(refusal(v, std::string(v.fallback)), "");
    for (std::string_view other : settings::kReadElsewhere)
      EXPECT_FALSE(other.ends_with('_') ? v.name.starts_with(other) : v.name == other);
  }
}

TEST(Settings, UnknownGtadocVariablesAreFound) {
  ScopedEnv typo("GTADOC_PREFECH_DEPTH", "8"), known("GTADOC_PREFETCH_DEPTH", "8"),
      tool("GTADOC_BINARY", "/bin/true"), macro("GTADOC_HAVE_CUDA", "1"),
      script("GTADOC_PKG_LINUX", "linux-source"), other("NOT_GTADOC_X", "1");
  const std::vector<std::string> unknown = settings::unknown_variables();
  EXPECT_NE(std::find(unknown.begin(), unknown.end(), "GTADOC_PREFECH_DEPTH"), unknown.end());
  for (const char* fine : {"GTADOC_PREFETCH_DEPTH", "GTADOC_BINARY", "GTADOC_HAVE_CUDA",
                           "GTADOC_PKG_LINUX", "NOT_GTADOC_X"})
    EXPECT_EQ(std::find(unknown.begin(), unknown.end(), fine), unknown.end()) << fine;
}

}  // namespace
}  // namespace gtadoc
