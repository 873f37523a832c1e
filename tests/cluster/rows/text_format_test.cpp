// cluster/rows/text_format against its references: nlohmann::json's dump (error_handler replace)
// for JSON strings, std::to_string for decimals and escape_tsv_name's rule for TSV names, on
// hand-written edge cases and seeded random inputs.
#include "cluster/rows/text_format.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace gtadoc {
namespace {

constexpr char kGuard = '\xA5';
constexpr size_t kGuardBytes = 16;

std::string hex(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    if (!h.empty()) h += ' ';
    h += kHex[c >> 4];
    h += kHex[c & 15];
  }
  return "[" + h + "]";
}

// nlohmann's string serialization without the surrounding quotes.
std::string reference_json(std::string_view s) {
  const std::string d =
      nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  EXPECT_GE(d.size(), 2u);
  EXPECT_EQ(d.front(), '"');
  EXPECT_EQ(d.back(), '"');
  return d.size() >= 2 ? d.substr(1, d.size() - 2) : std::string();
}

// Runs the unit on an exactly sized copy of `s` (so sanitizers see reads past the end) into an
// exactly sized buffer followed by guard bytes; checks the end pointer and the guard.
std::string ours_json(std::string_view s) {
  const std::vector<char> input(s.begin(), s.end());
  const std::string_view in(input.data(), input.size());
  const size_t n = json_escaped_size(in);
  std::vector<char> buf(n + kGuardBytes, kGuard);
  char* const end = write_json_escaped(in, buf.data());
  EXPECT_EQ(end - buf.data(), static_cast<std::ptrdiff_t>(n)) << hex(s);
  for (size_t i = n; i < buf.size(); ++i) EXPECT_EQ(buf[i], kGuard) << "wrote past end " << hex(s);
  return std::string(buf.data(), n);
}

// Compares one input; returns false on a mismatch (so loops can stop early).
bool check_json(std::string_view s) {
  const std::string want = reference_json(s);
  const std::string got = ours_json(s);
  EXPECT_EQ(got, want) << "input " << hex(s) << "\n got " << hex(got) << "\nwant " << hex(want);
  EXPECT_EQ(json_plain(s), want == s) << "input " << hex(s);
  return got == want && json_plain(s) == (want == s);
}

constexpr int kMaxFailures = 20;

void append_utf8(std::string& out, uint32_t cp, int len) {
  // Encodes cp with exactly `len` bytes (len larger than needed gives an overlong form).
  if (len == 1) {
    out += static_cast<char>(cp);
    return;
  }
  static constexpr unsigned kLead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  out += static_cast<char>(kLead[len] | (cp >> (6 * (len - 1))));
  for (int i = len - 2; i >= 0; --i) out += static_cast<char>(0x80 | ((cp >> (6 * i)) & 0x3F));
}

int utf8_len(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

// Seeded generator of byte strings biased towards what the escaper treats specially.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  std::string next() {
    const size_t target = pick(41);
    std::string s;
    while (s.size() < target) piece(s);
    s.resize(target);  // may cut a sequence at the end
    return s;
  }

 private:
  size_t pick(size_t n) { return static_cast<size_t>(rng_() % n); }
  uint32_t range(uint32_t lo, uint32_t hi) {
    return lo + static_cast<uint32_t>(rng_() % (hi - lo + 1));
  }

  uint32_t codepoint() {
    static constexpr uint32_t kEdges[] = {0x80,    0x81,     0x7FF,    0x800,   0x801,   0xD7FF,
                                          0xE000,  0xFFFD,   0xFFFE,   0xFFFF,  0x10000, 0x10001,
                                          0xFFFFF, 0x100000, 0x10FFFE, 0x10FFFF};
    switch (pick(5)) {
      case 0:
        return range(0x80, 0x7FF);
      case 1: {
        const uint32_t c = range(0x800, 0xFFFF - 0x800);
        return c >= 0xD800 ? c + 0x800 : c;  // skip surrogates
      }
      case 2:
        return range(0x10000, 0x10FFFF);
      case 3:
        return range(0x10FF00, 0x10FFFF);
      default:
        return kEdges[pick(std::size(kEdges))];
    }
  }

  void piece(std::string& s) {
    switch (pick(12)) {
      case 0:  // control bytes and space
        s += static_cast<char>(range(0x00, 0x20));
        break;
      case 1:  // high bytes and DEL
        s += static_cast<char>(range(0x7F, 0xFF));
        break;
      case 2:
        s += "\"\\"[pick(2)];
        break;
      case 3: {  // a run of plain ASCII (exercises the block path)
        const size_t n = 1 + pick(20);
        for (size_t i = 0; i < n; ++i) s += static_cast<char>(range(0x20, 0x7E));
        break;
      }
      case 4:
      case 5: {  // valid UTF-8
        const uint32_t c = codepoint();
        append_utf8(s, c, utf8_len(c));
        break;
      }
      case 6: {  // valid sequence cut short
        std::string t;
        const uint32_t c = codepoint();
        append_utf8(t, c, utf8_len(c));
        s.append(t, 0, 1 + pick(t.size() - 1));
        break;
      }
      case 7: {  // overlong form
        const uint32_t c = pick(2)   ? range(0, 0x7F)
                           : pick(2) ? range(0x80, 0x7FF)
                                     : range(0x800, 0xFFFF);
        const int min = utf8_len(c);
        if (min < 4) append_utf8(s, c, min + 1 + static_cast<int>(pick(4 - min)));
        break;
      }
      case 8:  // surrogate (CESU-style)
        append_utf8(s, range(0xD800, 0xDFFF), 3);
        break;
      case 9: {  // 4-byte forms above U+10FFFF, and leads F5..FF with continuations
        if (pick(2)) {
          append_utf8(s, range(0x110000, 0x1FFFFF), 4);
        } else {
          s += static_cast<char>(range(0xF5, 0xFF));
          const size_t n = pick(4);
          for (size_t i = 0; i < n; ++i) s += static_cast<char>(range(0x80, 0xBF));
        }
        break;
      }
      case 10: {  // valid sequence with one continuation byte replaced
        std::string t;
        const uint32_t c = range(0x80, 0x10FFFF);
        append_utf8(t, c, utf8_len(c));
        t[1 + pick(t.size() - 1)] = static_cast<char>(pick(2) ? range(0, 0xFF) : range(0x80, 0xBF));
        s += t;
        break;
      }
      default:  // stray continuation bytes
        s += static_cast<char>(range(0x80, 0xBF));
        break;
    }
  }

  std::mt19937_64 rng_;
};

TEST(TextFormatJson, Empty) {
  EXPECT_EQ(json_escaped_size(""), 0u);
  EXPECT_TRUE(json_plain(""));
  check_json("");
  check_json(std::string_view());
}

TEST(TextFormatJson, KnownOutputs) {
  // Independent of nlohmann: spells out the rules (and checks nlohmann agrees).
  const std::string fffd = "\xEF\xBF\xBD";
  const std::pair<std::string, std::string> cases[] = {
      {"abc", "abc"},
      {"a\"b\\c", "a\\\"b\\\\c"},
      {"\b\f\n\r\t", "\\b\\f\\n\\r\\t"},
      {std::string("\0", 1), "\\u0000"},
      {"\x01\x0b\x1f", "\\u0001\\u000b\\u001f"},
      {"\x7f", "\x7f"},
      {"/", "/"},
      {"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"},
      {"\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"},
      {"\x80", fffd},
      {"\xFF", fffd},
      {"\xC0\x80", fffd + fffd},
      {"\xC1\xBF", fffd + fffd},
      {"\xE0\x80\x80", fffd + fffd + fffd},
      {"\xF0\x80\x80\x80", fffd + fffd + fffd + fffd},
      {"\xED\xA0\x80", fffd + fffd + fffd},
      {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd},
      {"\xC3", fffd},
      {"\xF0\x9F\x98", fffd},
      {"a\xE2\x82", "a" + fffd},
      {"\xF0\x9F\x98"
       "A",
       fffd + "A"},
      {"\xE2\x82\n", fffd + "\\n"},
      {"\xC3\xC3\xA9", fffd + "\xC3\xA9"},
  };
  for (const auto& [in, want] : cases) {
    EXPECT_EQ(ours_json(in), want) << hex(in);
    EXPECT_EQ(reference_json(in), want) << hex(in);
  }
}

TEST(TextFormatJson, AllSingleBytes) {
  for (int b = 0; b < 256; ++b) check_json(std::string(1, static_cast<char>(b)));
}

TEST(TextFormatJson, AllBytePairs) {
  int failures = 0;
  for (int a = 0; a < 256 && failures < kMaxFailures; ++a) {
    for (int b = 0; b < 256 && failures < kMaxFailures; ++b) {
      const std::string pair = {static_cast<char>(a), static_cast<char>(b)};
      failures += !check_json(pair);
      failures += !check_json(pair + "x\"");
      failures += !check_json("0123456789abcdef" + pair + "0123456789");
    }
  }
}

TEST(TextFormatJson, MultiByteLeadsWithEveryNextByte) {
  // Every lead C0..FF, every second byte, a few third and fourth bytes.
  const unsigned char kThird[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF};
  int failures = 0;
  for (int a = 0xC0; a < 256 && failures < kMaxFailures; ++a) {
    for (int b = 0; b < 256 && failures < kMaxFailures; ++b) {
      for (unsigned char c : kThird) {
        std::string s = {static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)};
        failures += !check_json(s);
        s += static_cast<char>(0x80);
        failures += !check_json(s);
        s += '"';
        failures += !check_json(s);
      }
    }
  }
}

TEST(TextFormatJson, EdgeSequences) {
  const char* const cases[] = {
      "\xED\xA0\x80",              // CESU high surrogate
      "\xED\xA0\x80\xED\xB0\x80",  // CESU pair
      "\xED\x9F\xBF",              // U+D7FF
      "\xEE\x80\x80",              // U+E000
      "\xC0\x80",
      "\xE0\x80\x80",
      "\xF0\x80\x80\x80",  // overlong NUL
      "\xE0\x9F\xBF",
      "\xF0\x8F\xBF\xBF",  // overlong boundaries
      "\xE0\xA0\x80",
      "\xF0\x90\x80\x80",  // smallest valid
      "\xF4\x90\x80\x80",
      "\xF4\x8F\xBF\xBF",
      "\xF5\x80\x80\x80",
      "\xF7\xBF\xBF\xBF",
      "\xF8\x88\x80\x80\x80",
      "\xFC\x84\x80\x80\x80\x80",
      "x\xC3",
      "x\xE2\x82",
      "x\xF0\x9F\x98",
      "x\xF0\x9F",
      "x\xF0",
      "\xF0\x9F\x98\x80\xF0\x9F\x98",
      "plain ascii text, longer than a block or two \x7f",
      "0123456\"89abcdef\\123456789\x1f",
  };
  for (const char* c : cases) check_json(c);
}

TEST(TextFormatJson, SeededRandom) {
  Generator gen(0x5eed'7e47'f0e4'a7ull);
  int failures = 0;
  size_t plain = 0;
  constexpr int kCases = 250'000;
  for (int i = 0; i < kCases && failures < kMaxFailures; ++i) {
    const std::string s = gen.next();
    failures += !check_json(s);
    plain += json_plain(s);
  }
  // The mix must exercise both outcomes.
  EXPECT_GT(plain, 1000u);
  EXPECT_LT(plain, static_cast<size_t>(kCases) - 1000);
}

TEST(TextFormatJson, SeededRandomLong) {
  // Longer strings: many blocks, specials at every offset.
  Generator gen(42);
  int failures = 0;
  for (int i = 0; i < 5'000 && failures < kMaxFailures; ++i) {
    std::string s;
    const int parts = 1 + i % 12;
    for (int k = 0; k < parts; ++k) s += gen.next();
    failures += !check_json(s);
  }
}

TEST(TextFormatDecimal, Values) {
  auto check = [](uint64_t v) {
    const std::string want = std::to_string(v);
    EXPECT_EQ(decimal_digits(v), want.size()) << v;
    char buf[32];
    std::fill(std::begin(buf), std::end(buf), kGuard);
    char* const end = write_decimal(v, buf);
    EXPECT_EQ(std::string(buf, end), want);
    for (char* p = end; p < std::end(buf); ++p) EXPECT_EQ(*p, kGuard) << v;
  };
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{9}, uint64_t{10}, uint64_t{11},
                     uint64_t{99}, uint64_t{100}, uint64_t{101}}) {
    check(v);
  }
  uint64_t p = 1;
  for (int k = 0; k < 20; ++k, p *= 10) {
    check(p);
    check(p - 1);
    check(p + 1);
  }
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  check(max);
  check(max - 1);
  for (unsigned b = 0; b < 64; ++b) {
    check(uint64_t{1} << b);
    check((uint64_t{1} << b) - 1);
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200'000; ++i) check(rng() >> (rng() % 64));
}

std::string reference_tsv(std::string_view name) {
  // The rule of escape_tsv_name (cluster/results.cpp).
  std::string out;
  for (char c : name) {
    if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\\')
      out += "\\\\";
    else
      out += c;
  }
  return out;
}

TEST(TextFormatTsv, SeededRandom) {
  std::mt19937_64 rng(11);
  const char kSpecial[] = {'\t', '\n', '\\', '\r', 't', 'n', '\0', '\x80', '\xff', ' '};
  int failures = 0;
  for (int i = 0; i < 100'000 && failures < kMaxFailures; ++i) {
    const size_t len = rng() % 41;
    std::vector<char> input(len);
    for (char& c : input)
      c = rng() % 3 ? static_cast<char>(rng()) : kSpecial[rng() % std::size(kSpecial)];
    const std::string_view in(input.data(), input.size());
    const std::string want = reference_tsv(in);
    const size_t n = tsv_escaped_size(in);
    EXPECT_EQ(n, want.size()) << hex(in);
    std::vector<char> buf(n + kGuardBytes, kGuard);
    char* const end = write_tsv_escaped(in, buf.data());
    EXPECT_EQ(end - buf.data(), static_cast<std::ptrdiff_t>(n)) << hex(in);
    const std::string got(buf.data(), n);
    EXPECT_EQ(got, want) << hex(in);
    for (size_t k = n; k < buf.size(); ++k) EXPECT_EQ(buf[k], kGuard) << hex(in);
    failures += got != want;
  }
  EXPECT_EQ(tsv_escaped_size(""), 0u);
  EXPECT_EQ(reference_tsv("a\tb\nc\\d"), "a\\tb\\nc\\\\d");
  std::string out(tsv_escaped_size("a\tb\nc\\d"), '\0');
  write_tsv_escaped("a\tb\nc\\d", out.data());
  EXPECT_EQ(out, "a\\tb\\nc\\\\d");
}

}  // namespace
}  // namespace gtadoc
