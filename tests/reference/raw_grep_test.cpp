// The phrase-search reference against outputs computed by hand from the specification of
// `gtadoc grep` and docs/OUTPUT.md. Every expected string below was written from those
// documents, not produced by the code.
#include "tests/reference/raw_grep.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"

namespace gtadoc {
namespace {

using namespace std::string_literals;
using Mode = RawGrepOptions::Mode;

RawGrepOptions grep(std::vector<std::string> phrases, Mode mode = Mode::kDocs) {
  RawGrepOptions o;
  o.phrases = std::move(phrases);
  o.mode = mode;
  return o;
}

std::string tsv(const std::vector<RawDocument>& docs, const RawGrepOptions& o) {
  return raw_grep_output(docs, o, OutputFormat::kTsv);
}
std::string json(const std::vector<RawDocument>& docs, const RawGrepOptions& o) {
  return raw_grep_output(docs, o, OutputFormat::kJson);
}

/// The message of the UsageError that `o` raises, or "" when it raises none.
std::string usage_error(const RawGrepOptions& o) {
  try {
    tsv({{"d", "a b"}}, o);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// Given out of order on purpose: ids follow name order (a = 0, b = 1, c = 2).
//   a: "x" twice, "y" once; b: "x" once, no "y"; c: neither.
std::vector<RawDocument> xyz() {
  return {{"c", "q"}, {"a", "x y x"}, {"b", "x z"}};
}

// Lines: 1 "alpha beta", 2 "gamma delta", 3 " \t" (whitespace only), 4 "epsilon\r",
// 5 "beta zeta", 6 "last" (no LF after it).
std::vector<RawDocument> lines_doc() {
  return {{"d", "alpha beta\ngamma delta\n \t\nepsilon\r\nbeta zeta\nlast"}};
}

std::string repeat_word(const std::string& word, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += (i > 0 ? " " : "") + word;
  return out;
}

// ------------------------------------------------------------------------------ matching

TEST(RawGrep, OverlappingOccurrencesAllCount) {
  EXPECT_EQ(tsv({{"d", "a a a"}}, grep({"a a"})), "d\t2\n");
  EXPECT_EQ(tsv({{"d", "a a a a"}}, grep({"a a a"})), "d\t2\n");
  EXPECT_EQ(tsv({{"d", "a a a a"}}, grep({"a a"})), "d\t3\n");
  EXPECT_EQ(tsv({{"d", "a a a"}}, grep({"a"})), "d\t3\n");
  EXPECT_EQ(tsv({{"d", "a b a b a"}}, grep({"a b a"})), "d\t2\n");
}

TEST(RawGrep, PhrasesMatchAcrossAnyWhitespace) {
  EXPECT_EQ(tsv({{"d", "x\ny\tz"}}, grep({"x y z"})), "d\t1\n");
  EXPECT_EQ(tsv({{"d", "x\r\n\x0b\x0cy"}}, grep({"x y"})), "d\t1\n");
  // The phrase is split like a document: its own whitespace does not matter either.
  EXPECT_EQ(tsv({{"d", "x y"}}, grep({" x \t\n y "})), "d\t1\n");
  // Other bytes are word bytes: NBSP (C2 A0) joins, it does not separate.
  EXPECT_EQ(tsv({{"d", "x\xc2\xa0y"}}, grep({"x y"})), "");
  EXPECT_EQ(tsv({{"d", "x\xc2\xa0y"}}, grep({"x\xc2\xa0y"})), "d\t1\n");
}

TEST(RawGrep, PhrasesAtDocumentStartAndEnd) {
  const std::vector<RawDocument> docs = {{"d", "a b c d"}};
  EXPECT_EQ(tsv(docs, grep({"a b"})), "d\t1\n");
  EXPECT_EQ(tsv(docs, grep({"c d"})), "d\t1\n");
  EXPECT_EQ(tsv(docs, grep({"a b c d"})), "d\t1\n");
  EXPECT_EQ(tsv(docs, grep({"a b c d e"})), "");
  EXPECT_EQ(tsv(docs, grep({"z a"})), "");
  EXPECT_EQ(tsv({{"d", ""}}, grep({"a"})), "");
}

TEST(RawGrep, PhrasesNeverSpanDocuments) {
  const std::vector<RawDocument> docs = {{"2", "c d"}, {"1", "a b"}};
  EXPECT_EQ(tsv(docs, grep({"b c"})), "");
  EXPECT_EQ(json(docs, grep({"b c"})), "[\n]\n");
  EXPECT_EQ(tsv(docs, grep({"a b"})), "1\t1\n");
  EXPECT_EQ(tsv(docs, grep({"c d"})), "2\t1\n");
}

TEST(RawGrep, WordsAreCaseSensitiveWithoutOptions) {
  EXPECT_EQ(tsv({{"d", "The the THE"}}, grep({"the"})), "d\t1\n");
  EXPECT_EQ(tsv({{"d", "cat, cat"}}, grep({"cat"})), "d\t1\n");
}

// ------------------------------------------------------------------------------ default rows

TEST(RawGrep, OnePhrase) {
  EXPECT_EQ(tsv(xyz(), grep({"x"})), "a\t2\nb\t1\n");
  EXPECT_EQ(json(xyz(), grep({"x"})),
            "[\n"
            "{\"doc\":\"a\",\"count\":2},\n"
            "{\"doc\":\"b\",\"count\":1}\n"
            "]\n");
  // With one phrase --any selects the same documents as --all.
  RawGrepOptions any = grep({"x"});
  any.any = true;
  EXPECT_EQ(tsv(xyz(), any), "a\t2\nb\t1\n");
}

TEST(RawGrep, SeveralPhrasesAll) {
  EXPECT_EQ(tsv(xyz(), grep({"x", "y"})), "a\t2\t1\n");
  EXPECT_EQ(json(xyz(), grep({"x", "y"})), "[\n{\"doc\":\"a\",\"counts\":[2,1]}\n]\n");
  EXPECT_EQ(tsv(xyz(), grep({"x", "nope"})), "");
  EXPECT_EQ(json(xyz(), grep({"x", "nope"})), "[\n]\n");
  // The same phrase twice is two columns.
  EXPECT_EQ(tsv(xyz(), grep({"x", "x"})), "a\t2\t2\nb\t1\t1\n");
  // Order of the columns is the order given.
  EXPECT_EQ(tsv(xyz(), grep({"y", "x y", "x"})), "a\t1\t1\t2\n");
}

TEST(RawGrep, SeveralPhrasesAny) {
  RawGrepOptions o = grep({"x", "y"});
  o.any = true;
  EXPECT_EQ(tsv(xyz(), o), "a\t2\t1\nb\t1\t0\n");
  EXPECT_EQ(json(xyz(), o),
            "[\n"
            "{\"doc\":\"a\",\"counts\":[2,1]},\n"
            "{\"doc\":\"b\",\"counts\":[1,0]}\n"
            "]\n");
  o.phrases = {"nope", "q", "z"};
  EXPECT_EQ(tsv(xyz(), o), "b\t0\t0\t1\nc\t0\t1\t0\n");
  o.phrases = {"nope", "none"};
  EXPECT_EQ(tsv(xyz(), o), "");
  EXPECT_EQ(json(xyz(), o), "[\n]\n");
}

TEST(RawGrep, Ids) {
  RawGrepOptions o = grep({"x"});
  o.ids = true;
  EXPECT_EQ(tsv(xyz(), o), "0\t2\n1\t1\n");
  EXPECT_EQ(json(xyz(), o), "[\n{\"doc\":0,\"count\":2},\n{\"doc\":1,\"count\":1}\n]\n");
  o.phrases = {"q", "z"};
  o.any = true;
  EXPECT_EQ(tsv(xyz(), o), "1\t0\t1\n2\t1\t0\n");
  EXPECT_EQ(json(xyz(), o), "[\n{\"doc\":1,\"counts\":[0,1]},\n{\"doc\":2,\"counts\":[1,0]}\n]\n");
}

TEST(RawGrep, DocumentNames) {
  // Byte order: "b\\s" (0x62) < "n\nl" (0x6e) < "t\tab" (0x74).
  const std::vector<RawDocument> docs = {{"t\tab", "x"}, {"n\nl", "x"}, {"b\\s", "x"}};
  EXPECT_EQ(tsv(docs, grep({"x"})), "b\\\\s\t1\nn\\nl\t1\nt\\tab\t1\n");
  EXPECT_EQ(tsv(docs, grep({"x"}, Mode::kLines)), "b\\\\s:1:x\nn\\nl:1:x\nt\\tab:1:x\n");
  // JSON gets the raw name, escaped as a JSON string; invalid UTF-8 becomes U+FFFD (EF BF BD).
  EXPECT_EQ(json({{"t\tab", "x"}, {"bad\xfe", "x"}}, grep({"x"})),
            "[\n"
            "{\"doc\":\"bad\xef\xbf\xbd\",\"count\":1},\n"
            "{\"doc\":\"t\\tab\",\"count\":1}\n"
            "]\n");
}

TEST(RawGrep, NoDocuments) {
  EXPECT_EQ(tsv({}, grep({"x"})), "");
  EXPECT_EQ(json({}, grep({"x"})), "[\n]\n");
  EXPECT_EQ(tsv({}, grep({"x"}, Mode::kLines)), "");
  EXPECT_EQ(json({}, grep({"x"}, Mode::kLines)), "[\n]\n");
  EXPECT_EQ(tsv({}, grep({"x", "y"}, Mode::kCount)), "x\t0\ny\t0\n");
}

// ------------------------------------------------------------------------------ --count

TEST(RawGrep, CountTotalsOverSelectedDocuments) {
  // --all: only a is selected (b has no y).
  EXPECT_EQ(tsv(xyz(), grep({"x", "y"}, Mode::kCount)), "x\t2\ny\t1\n");
  // One phrase: every document where it occurs.
  EXPECT_EQ(tsv(xyz(), grep({"x"}, Mode::kCount)), "x\t3\n");
  EXPECT_EQ(json(xyz(), grep({"x"}, Mode::kCount)), "[\n{\"phrase\":\"x\",\"count\":3}\n]\n");
  // Nothing selected: every phrase is still printed, with 0.
  EXPECT_EQ(tsv(xyz(), grep({"x", "nope"}, Mode::kCount)), "x\t0\nnope\t0\n");
  EXPECT_EQ(tsv(xyz(), grep({"nope"}, Mode::kCount)), "nope\t0\n");
  EXPECT_EQ(json(xyz(), grep({"nope"}, Mode::kCount)), "[\n{\"phrase\":\"nope\",\"count\":0}\n]\n");

  RawGrepOptions o = grep({"x", "nope", "y"}, Mode::kCount);
  o.any = true;  // a and b are selected
  EXPECT_EQ(tsv(xyz(), o), "x\t3\nnope\t0\ny\t1\n");
  EXPECT_EQ(json(xyz(), o),
            "[\n"
            "{\"phrase\":\"x\",\"count\":3},\n"
            "{\"phrase\":\"nope\",\"count\":0},\n"
            "{\"phrase\":\"y\",\"count\":1}\n"
            "]\n");
  // --ids does not change --count rows.
  o.ids = true;
  EXPECT_EQ(tsv(xyz(), o), "x\t3\nnope\t0\ny\t1\n");
}

TEST(RawGrep, CountPrintsThePhraseNormalized) {
  // Printed form: the normalized words joined by one space; words written raw.
  EXPECT_EQ(tsv({{"d", "x y"}}, grep({"  x \t y\n"}, Mode::kCount)), "x y\t1\n");
  EXPECT_EQ(tsv({{"d", "a\\b"}}, grep({"a\\b"}, Mode::kCount)), "a\\b\t1\n");
  EXPECT_EQ(json({{"d", "a\\b \"q\""}}, grep({"a\\b \"q\""}, Mode::kCount)),
            "[\n{\"phrase\":\"a\\\\b \\\"q\\\"\",\"count\":1}\n]\n");
  RawGrepOptions o = grep({"(The) CAT,", "a -- b"}, Mode::kCount);
  o.lowercase = true;
  o.alnum = true;
  o.any = true;
  EXPECT_EQ(tsv({{"d", "the cat"}}, o), "the cat\t1\na b\t0\n");
  // Invalid UTF-8 in a phrase is replaced in JSON only.
  EXPECT_EQ(tsv({{"d", "\xff"}}, grep({"\xff"}, Mode::kCount)), "\xff\t1\n");
  EXPECT_EQ(json({{"d", "\xff"}}, grep({"\xff"}, Mode::kCount)),
            "[\n{\"phrase\":\"\xef\xbf\xbd\",\"count\":1}\n]\n");
}

// ------------------------------------------------------------------------------ --lines

TEST(RawGrep, LinesOfOneLineMatches) {
  EXPECT_EQ(tsv(lines_doc(), grep({"beta"}, Mode::kLines)), "d:1:alpha beta\nd:5:beta zeta\n");
  EXPECT_EQ(tsv(lines_doc(), grep({"last"}, Mode::kLines)), "d:6:last\n");
  // A CR stays in the text.
  EXPECT_EQ(tsv(lines_doc(), grep({"epsilon"}, Mode::kLines)), "d:4:epsilon\r\n");
  // Lines before the first word count.
  EXPECT_EQ(tsv({{"d", "\n\nx y\n"}}, grep({"y"}, Mode::kLines)), "d:3:x y\n");
  // A line holding several occurrences, of one phrase or of several, is printed once.
  EXPECT_EQ(tsv({{"d", "x x x\nx"}}, grep({"x"}, Mode::kLines)), "d:1:x x x\nd:2:x\n");
  RawGrepOptions o = grep({"beta", "alpha"}, Mode::kLines);
  EXPECT_EQ(tsv(lines_doc(), o), "d:1:alpha beta\nd:5:beta zeta\n");
}

TEST(RawGrep, LinesOfMatchesSpanningLines) {
  // beta (line 1) gamma (line 2): both lines.
  EXPECT_EQ(tsv(lines_doc(), grep({"beta gamma"}, Mode::kLines)),
            "d:1:alpha beta\nd:2:gamma delta\n");
  // delta (line 2) epsilon (line 4): the whitespace-only line 3 too.
  EXPECT_EQ(tsv(lines_doc(), grep({"delta epsilon"}, Mode::kLines)),
            "d:2:gamma delta\nd:3: \t\nd:4:epsilon\r\n");
  // epsilon\r (line 4) beta (line 5).
  EXPECT_EQ(tsv(lines_doc(), grep({"epsilon beta zeta last"}, Mode::kLines)),
            "d:4:epsilon\r\nd:5:beta zeta\nd:6:last\n");
  // Several phrases: the union of their lines, in line order.
  RawGrepOptions o = grep({"zeta", "beta gamma"}, Mode::kLines);
  EXPECT_EQ(tsv(lines_doc(), o), "d:1:alpha beta\nd:2:gamma delta\nd:5:beta zeta\n");
  // A word dropped by --alnum between the phrase's words: its line lies between theirs.
  RawGrepOptions alnum = grep({"a b"}, Mode::kLines);
  alnum.alnum = true;
  EXPECT_EQ(tsv({{"p", "a\n--\nb"}}, alnum), "p:1:a\np:2:--\np:3:b\n");
}

TEST(RawGrep, LinesSelectDocumentsLikeTheDefault) {
  RawGrepOptions o = grep({"beta", "nope"}, Mode::kLines);
  EXPECT_EQ(tsv(lines_doc(), o), "");
  EXPECT_EQ(json(lines_doc(), o), "[\n]\n");
  o.any = true;
  EXPECT_EQ(tsv(lines_doc(), o), "d:1:alpha beta\nd:5:beta zeta\n");
  // Documents in id order; --ids writes the id.
  std::vector<RawDocument> docs = lines_doc();
  docs.push_back({"e", "beta"});
  docs.push_back({"c", "gamma"});
  RawGrepOptions ids = grep({"beta"}, Mode::kLines);
  ids.ids = true;
  EXPECT_EQ(tsv(docs, ids), "1:1:alpha beta\n1:5:beta zeta\n2:1:beta\n");
  EXPECT_EQ(json(docs, ids),
            "[\n"
            "{\"doc\":1,\"line\":1,\"text\":\"alpha beta\"},\n"
            "{\"doc\":1,\"line\":5,\"text\":\"beta zeta\"},\n"
            "{\"doc\":2,\"line\":1,\"text\":\"beta\"}\n"
            "]\n");
}

TEST(RawGrep, LinesText) {
  // TSV writes the line's bytes raw: tab, backslash, CR, invalid UTF-8.
  EXPECT_EQ(tsv({{"t", "a\\b x\ty\r\xff\nz"}}, grep({"x"}, Mode::kLines)), "t:1:a\\b x\ty\r\xff\n");
  // JSON escapes them as a JSON string, invalid UTF-8 replaced.
  EXPECT_EQ(json({{"t", "a\\b x\ty\r\xff\nz"}}, grep({"x"}, Mode::kLines)),
            "[\n{\"doc\":\"t\",\"line\":1,\"text\":\"a\\\\b x\\ty\\r\xef\xbf\xbd\"}\n]\n");
  EXPECT_EQ(json(lines_doc(), grep({"delta epsilon"}, Mode::kLines)),
            "[\n"
            "{\"doc\":\"d\",\"line\":2,\"text\":\"gamma delta\"},\n"
            "{\"doc\":\"d\",\"line\":3,\"text\":\" \\t\"},\n"
            "{\"doc\":\"d\",\"line\":4,\"text\":\"epsilon\\r\"}\n"
            "]\n");
}

// ------------------------------------------------------------------------------ normalization

TEST(RawGrep, LowercaseAndAlnum) {
  // Words: The | cat, | the | CAT. | (the) | cat
  const std::vector<RawDocument> docs = {{"d", "The cat, the CAT. (the) cat"}};
  RawGrepOptions o = grep({"the cat"});
  EXPECT_EQ(tsv(docs, o), "");
  o.lowercase = true;  // the | cat, | the | cat. | (the) | cat
  EXPECT_EQ(tsv(docs, o), "");
  o.lowercase = false;
  o.alnum = true;  // The | cat | the | CAT | the | cat
  EXPECT_EQ(tsv(docs, o), "d\t1\n");
  o.phrases = {"the CAT"};
  EXPECT_EQ(tsv(docs, o), "d\t1\n");
  o.lowercase = true;  // the | cat | the | cat | the | cat; the phrase is lowercased too
  EXPECT_EQ(tsv(docs, o), "d\t3\n");
  o.phrases = {"(THE) Cat,"};
  EXPECT_EQ(tsv(docs, o), "d\t3\n");
  o.alnum = false;
  o.phrases = {"THE CAT."};
  EXPECT_EQ(tsv(docs, o), "d\t1\n");
}

TEST(RawGrep, AlnumDropsWordsFromDocumentsAndPhrases) {
  RawGrepOptions o = grep({"a b"});
  EXPECT_EQ(tsv({{"d", "a -- b"}}, o), "");
  o.alnum = true;  // "--" is dropped: a and b are consecutive
  EXPECT_EQ(tsv({{"d", "a -- b"}}, o), "d\t1\n");
  EXPECT_EQ(tsv({{"d", "a -- ... b"}}, o), "d\t1\n");
  // A phrase word that --alnum drops is removed from the phrase.
  o.phrases = {"a -- b"};
  EXPECT_EQ(tsv({{"d", "a b"}}, o), "d\t1\n");
  EXPECT_EQ(tsv({{"d", "a b"}}, grep({"a -- b"})), "");
  EXPECT_EQ(tsv({{"d", "a -- b"}}, grep({"a -- b"})), "d\t1\n");
  // Without --alnum, punctuation is an ordinary word.
  EXPECT_EQ(tsv({{"d", "a -- b"}}, grep({"--"})), "d\t1\n");
}

// ------------------------------------------------------------------------------ usage errors

TEST(RawGrep, PhrasesWithoutWords) {
  EXPECT_EQ(usage_error(grep({""})), "phrase 1 ('') has no words");
  EXPECT_EQ(usage_error(grep({"a", "  "})), "phrase 2 ('  ') has no words");
  RawGrepOptions o = grep({"a", "-- ...", "()"});
  EXPECT_EQ(usage_error(o), "");  // without --alnum those are words
  o.alnum = true;
  EXPECT_EQ(usage_error(o), "phrase 2 ('-- ...') has no words");
  EXPECT_EQ(usage_error(grep({})), "at least one PHRASE is required");
  EXPECT_THROW(raw_grep_phrases(o), UsageError);
}

TEST(RawGrep, AtMost64WordsPerPhrase) {
  const std::string w64 = repeat_word("w", 64);
  const std::string w65 = repeat_word("w", 65);
  EXPECT_EQ(usage_error(grep({w64})), "");
  EXPECT_EQ(tsv({{"d", w64}}, grep({w64})), "d\t1\n");
  EXPECT_EQ(tsv({{"d", w65}}, grep({w64})), "d\t2\n");
  EXPECT_EQ(tsv({{"d", w65}}, grep({w64}, Mode::kCount)), repeat_word("w", 64) + "\t2\n");
  EXPECT_EQ(usage_error(grep({w65})), "phrase 1 has 65 words; a phrase holds at most 64");
  EXPECT_EQ(usage_error(grep({"a", w64, w65})), "phrase 3 has 65 words; a phrase holds at most 64");
  // Words are counted after --alnum removed its dropped ones.
  RawGrepOptions o = grep({w64 + " --"});
  EXPECT_EQ(usage_error(o), "phrase 1 has 65 words; a phrase holds at most 64");
  o.alnum = true;
  EXPECT_EQ(usage_error(o), "");
  EXPECT_EQ(raw_grep_phrases(o),
            std::vector<std::vector<std::string>>{std::vector<std::string>(64, "w")});
}

}  // namespace
}  // namespace gtadoc
