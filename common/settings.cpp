// The GTADOC_* settings registry: reading, parsing, checking and logging. See settings.h.
#include "common/settings.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <mutex>

#include "common/error.h"
#include "common/units.h"

namespace gtadoc::settings {
namespace {

constexpr size_t kDeclared = std::size(kVariables);

/// What was read of each variable: nothing yet, or its value (nullopt: unset or empty).
struct Cache {
  std::mutex mu;
  std::array<bool, kDeclared> read{};
  std::array<std::optional<std::string>, kDeclared> value;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: read during exit too
  return *c;
}

std::optional<std::string> value_of(size_t i) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.read[i]) {
    const char* v = std::getenv(std::string(kVariables[i].name).c_str());
    if (v != nullptr && *v != '\0')
      c.value[i] = v;
    else
      c.value[i].reset();
    c.read[i] = true;
  }
  return c.value[i];
}

/// The value when set, else the table's default.
std::string value_or_default(size_t i) {
  return value_of(i).value_or(std::string(kVariables[i].fallback));
}

[[noreturn]] void refuse(const Variable& v, std::string_view value, const std::string& allowed) {
  throw UsageError(std::string(v.name) + ": '" + one_line(value, 40) + "' is not " + allowed);
}

/// "auto, nccl, mpi or host" of "auto|nccl|mpi|host".
std::string words_text(std::string_view words) {
  std::string out;
  size_t n = 0;
  for (size_t at = 0; at <= words.size(); ++n) {
    const size_t bar = std::min(words.find('|', at), words.size());
    const bool last = bar == words.size();
    out += std::string(n == 0 ? ""
                       : last ? " or "
                              : ", ") +
           std::string(words.substr(at, bar - at));
    at = bar + 1;
  }
  return out;
}

std::string range_text(const Variable& v) {
  const std::string what = v.type == Type::kSeconds ? "a whole number of seconds"
                           : v.type == Type::kBytes ? "a size"
                                                    : "an integer";
  if (v.max != kUnbounded)
    return what + " from " + std::to_string(v.min) + " to " + std::to_string(v.max);
  if (v.min == 0) return v.type == Type::kCount ? "a non-negative integer" : what;
  if (v.min == 1 && v.type == Type::kBytes) return "a positive size";
  return what + " of at least " + std::to_string(v.min);
}

uint64_t whole_number(const Variable& v, std::string_view s) {
  uint64_t n = 0;
  bool ok = !s.empty();
  for (char c : s) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (c < '0' || c > '9' || n > (UINT64_MAX - digit) / 10) {
      ok = false;
      break;
    }
    n = n * 10 + digit;
  }
  if (!ok || n < v.min || n > v.max) refuse(v, s, range_text(v));
  return n;
}

uint64_t size_in_bytes(const Variable& v, std::string_view s) {
  uint64_t n = 0;
  try {
    n = parse_size(std::string(s), "", true);
  } catch (const UsageError&) {
    refuse(v, s, range_text(v) + " (digits, then k, m, g or t and B or iB if wanted, e.g. 512m)");
  }
  if (n < v.min || n > v.max) refuse(v, s, range_text(v));
  return n;
}

bool on_or_off(const Variable& v, std::string_view s) {
  if (s != "0" && s != "1") refuse(v, s, "0 (off) or 1 (on)");
  return s == "1";
}

std::string_view one_of_the_words(const Variable& v, std::string_view s) {
  for (size_t at = 0; at <= v.words.size();) {
    const size_t bar = std::min(v.words.find('|', at), v.words.size());
    if (v.words.substr(at, bar - at) == s) return v.words.substr(at, bar - at);
    at = bar + 1;
  }
  refuse(v, s, words_text(v.words));
}

/// A number of the variable `i` (count, bytes or seconds) from `s`.
uint64_t number(size_t i, std::string_view s) {
  const Variable& v = kVariables[i];
  return v.type == Type::kBytes ? size_in_bytes(v, s) : whole_number(v, s);
}

std::optional<uint64_t> number_if_set(size_t i) {
  const std::optional<std::string> s = value_of(i);
  if (!s) return std::nullopt;
  return number(i, *s);
}

bool is_known_elsewhere(std::string_view name) {
  if (name.starts_with("GTADOC_HAVE_")) return true;  // the build's macros, not variables
  for (std::string_view known : kReadElsewhere)
    if (known.ends_with('_') ? name.starts_with(known) : name == known) return true;
  return false;
}

}  // namespace

bool flag(Name<Type::kFlag, true> name) {
  return on_or_off(kVariables[name.index()], value_or_default(name.index()));
}

std::optional<bool> flag_if_set(Name<Type::kFlag> name) {
  const std::optional<std::string> s = value_of(name.index());
  if (!s) return std::nullopt;
  return on_or_off(kVariables[name.index()], *s);
}

std::string_view word(Name<Type::kWord, true> name) {
  return one_of_the_words(kVariables[name.index()], value_or_default(name.index()));
}

std::optional<std::string_view> word_if_set(Name<Type::kWord> name) {
  const std::optional<std::string> s = value_of(name.index());
  if (!s) return std::nullopt;
  return one_of_the_words(kVariables[name.index()], *s);
}

uint64_t count(Name<Type::kCount, true> name) {
  return number(name.index(), value_or_default(name.index()));
}

std::optional<uint64_t> count_if_set(Name<Type::kCount> name) {
  return number_if_set(name.index());
}

uint64_t bytes(Name<Type::kBytes, true> name) {
  return number(name.index(), value_or_default(name.index()));
}

std::optional<uint64_t> bytes_if_set(Name<Type::kBytes> name) {
  return number_if_set(name.index());
}

uint64_t seconds(Name<Type::kSeconds, true> name) {
  return number(name.index(), value_or_default(name.index()));
}

std::optional<std::string> text_if_set(Name<Type::kText> name) {
  return value_of(name.index());
}

void check(const Variable& v, std::string_view value) {
  switch (v.type) {
    case Type::kFlag:
      on_or_off(v, value);
      return;
    case Type::kWord:
      one_of_the_words(v, value);
      return;
    case Type::kCount:
    case Type::kSeconds:
      whole_number(v, value);
      return;
    case Type::kBytes:
      size_in_bytes(v, value);
      return;
    case Type::kText:
      return;
  }
}

void check_environment() {
  for (size_t i = 0; i < kDeclared; ++i)
    if (const std::optional<std::string> s = value_of(i)) check(kVariables[i], *s);
}

std::vector<std::string> unknown_variables() {
  std::vector<std::string> unknown;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    if (!name.starts_with("GTADOC_") || is_known_elsewhere(name)) continue;
    if (std::none_of(std::begin(kVariables), std::end(kVariables),
                     [&](const Variable& v) { return v.name == name; }))
      unknown.emplace_back(name);
  }
  std::sort(unknown.begin(), unknown.end());
  return unknown;
}

void log_environment() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (size_t i = 0; i < kDeclared; ++i) {
      const std::optional<std::string> s = value_of(i);
      if (!s) continue;
      const Variable& v = kVariables[i];
      spdlog::info("settings: {}={} ({})", v.name, one_line(*s, 80),
                   v.category == kTest ? "test hook set" : category_name(v.category));
    }
    const std::vector<std::string> unknown = unknown_variables();
    if (unknown.empty()) return;
    std::string names;
    for (const std::string& n : unknown) names += (names.empty() ? "" : ", ") + one_line(n, 60);
    spdlog::warn(
        "settings: {} set, but gtadoc reads no such variable (docs/ENVIRONMENT.md lists "
        "those it reads)",
        names);
  });
}

void reread_for_tests() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.read.fill(false);
}

}  // namespace gtadoc::settings
