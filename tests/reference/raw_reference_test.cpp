// The raw-text reference against outputs computed by hand from docs/REFERENCE.md §3-§4 and
// docs/OUTPUT.md. Every expected string below was written from those documents, not produced by the
// code.
#include "tests/reference/raw_reference.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"

namespace gtadoc {
namespace {

using namespace std::string_literals;

QueryOptions query(Task task) {
  QueryOptions q;
  q.task = task;
  return q;
}

std::string tsv(const std::vector<RawDocument>& docs, const QueryOptions& q) {
  return raw_reference_output(docs, q, OutputFormat::kTsv);
}
std::string json(const std::vector<RawDocument>& docs, const QueryOptions& q) {
  return raw_reference_output(docs, q, OutputFormat::kJson);
}

// Given out of order on purpose: ids follow name order (a.txt = 0, b.txt = 1, c/empty = 2).
//   a.txt: The cat sat. the cat
//   b.txt: the cat the dog
std::vector<RawDocument> cats() {
  return {{"b.txt", "the cat the dog\n"}, {"a.txt", "The cat sat. the cat\n"}, {"c/empty", ""}};
}

// For ranked orders: "x y" occurs 2x in d0, 3x in d1; "y x" 1x in d0, 2x in d1, 1x in d2.
std::vector<RawDocument> xy() {
  return {{"d1", "x y x y x y"}, {"d0", "x y x y"}, {"d2", "y x"}};
}

// ------------------------------------------------------------------------------ helpers

TEST(RawReferenceHelpers, SplitsOnTheSixWhitespaceBytesOnly) {
  EXPECT_EQ(rawref::split_words("  a\x0b"
                                "b\x0c"
                                "c\rd\te\nf g  \r\n"),
            (std::vector<std::string>{"a", "b", "c", "d", "e", "f", "g"}));
  // NUL, other control bytes, NBSP (C2 A0) and 0x85 are word bytes.
  EXPECT_EQ(rawref::split_words("a\0b a\xc2\xa0"
                                "b \x1f \x85"s),
            (std::vector<std::string>{"a\0b"s,
                                      "a\xc2\xa0"
                                      "b",
                                      "\x1f", "\x85"}));
  EXPECT_TRUE(rawref::split_words("").empty());
  EXPECT_TRUE(rawref::split_words(" \t\r\n\x0b\x0c").empty());
}

TEST(RawReferenceHelpers, Normalizes) {
  EXPECT_EQ(rawref::normalize_word("HeLLo-World", true, false), "hello-world");
  EXPECT_EQ(rawref::normalize_word("\xc3\x89"
                                   "COLE",
                                   true, false),
            "\xc3\x89"
            "cole");
  EXPECT_EQ(rawref::normalize_word("(Hello!)", false, true), "Hello");
  EXPECT_EQ(rawref::normalize_word("don't", false, true), "don't");
  EXPECT_EQ(rawref::normalize_word("...a.b...", false, true), "a.b");
  EXPECT_EQ(rawref::normalize_word("\xc2\xab"
                                   "x"
                                   "\xc2\xbb",
                                   false, true),
            "\xc2\xab"
            "x"
            "\xc2\xbb");
  EXPECT_EQ(rawref::normalize_word("--.--", false, true), "");
  EXPECT_EQ(rawref::normalize_word("\x7f"
                                   "a\x00"s,
                                   false, true),
            "a");
  EXPECT_EQ(rawref::normalize_word("'ABC'", true, true), "abc");
}

TEST(RawReferenceHelpers, EscapesNames) {
  EXPECT_EQ(rawref::escape_tsv_name("a\tb\nc\\d\re"), "a\\tb\\nc\\\\d\re");
}

TEST(RawReferenceHelpers, ByteOrder) {
  EXPECT_TRUE(rawref::bytes_less("a", "ab"));
  EXPECT_FALSE(rawref::bytes_less("ab", "a"));
  EXPECT_FALSE(rawref::bytes_less("a", "a"));
  EXPECT_TRUE(rawref::bytes_less("z", "\xc3\xa9"));  // unsigned bytes
  EXPECT_TRUE(rawref::bytes_less("Z", "a"));
  EXPECT_TRUE(rawref::bytes_less("a", "a\0"s));
}

// ------------------------------------------------------------------------------ word-count

TEST(RawReference, WordCount) {
  QueryOptions q = query(Task::kWordCount);
  EXPECT_EQ(tsv(cats(), q), "cat\t3\nthe\t3\nThe\t1\ndog\t1\nsat.\t1\n");
  q.top = 2;
  EXPECT_EQ(tsv(cats(), q), "cat\t3\nthe\t3\n");
  q.top = 3;
  EXPECT_EQ(tsv(cats(), q), "cat\t3\nthe\t3\nThe\t1\n");
  q.top = 100;
  EXPECT_EQ(tsv(cats(), q), "cat\t3\nthe\t3\nThe\t1\ndog\t1\nsat.\t1\n");
  EXPECT_EQ(tsv(xy(), query(Task::kWordCount)), "x\t6\ny\t6\n");
}

TEST(RawReference, WordCountJson) {
  EXPECT_EQ(json(cats(), query(Task::kWordCount)),
            "[\n"
            "{\"word\":\"cat\",\"count\":3},\n"
            "{\"word\":\"the\",\"count\":3},\n"
            "{\"word\":\"The\",\"count\":1},\n"
            "{\"word\":\"dog\",\"count\":1},\n"
            "{\"word\":\"sat.\",\"count\":1}\n"
            "]\n");
}

// ------------------------------------------------------------------------------ sort

TEST(RawReference, Sort) {
  QueryOptions q = query(Task::kSort);
  EXPECT_EQ(tsv(cats(), q), "The\t1\ncat\t3\ndog\t1\nsat.\t1\nthe\t3\n");
  q.top = 1;  // sort lists every distinct word; --top does not apply
  EXPECT_EQ(tsv(cats(), q), "The\t1\ncat\t3\ndog\t1\nsat.\t1\nthe\t3\n");
  EXPECT_EQ(json(cats(), query(Task::kSort)),
            "[\n"
            "{\"word\":\"The\",\"count\":1},\n"
            "{\"word\":\"cat\",\"count\":3},\n"
            "{\"word\":\"dog\",\"count\":1},\n"
            "{\"word\":\"sat.\",\"count\":1},\n"
            "{\"word\":\"the\",\"count\":3}\n"
            "]\n");
}

TEST(RawReference, SortIsUnsignedByteOrder) {
  EXPECT_EQ(tsv({{"d", "z Z \xc3\xa9 a"}}, query(Task::kSort)), "Z\t1\na\t1\nz\t1\n\xc3\xa9\t1\n");
  EXPECT_EQ(tsv({{"d", "abc ab a"}}, query(Task::kSort)), "a\t1\nab\t1\nabc\t1\n");
  // Words sharing their first 8 bytes, and a NUL right after a common prefix.
  EXPECT_EQ(
      tsv({{"d", "abcdefghij abcdefghi abcdefgh abcdefghik abcdefgh\0x"s}}, query(Task::kSort)),
      "abcdefgh\t1\nabcdefgh\0x\t1\nabcdefghi\t1\nabcdefghij\t1\nabcdefghik\t1\n"s);
  EXPECT_EQ(tsv({{"d",
                  "a\0b a\xc2\xa0"
                  "b \x1f \x85"s}},
                query(Task::kSort)),
            "\x1f\t1\na\0b\t1\na\xc2\xa0"
            "b\t1\n\x85\t1\n"s);
}

TEST(RawReference, WhitespaceAndCrlf) {
  EXPECT_EQ(tsv({{"w",
                  "  a\x0b"
                  "b\x0c"
                  "c\rd\te\nf g  \r\n"}},
                query(Task::kSort)),
            "a\t1\nb\t1\nc\t1\nd\t1\ne\t1\nf\t1\ng\t1\n");
  EXPECT_EQ(tsv({{"w", "a\r\nb\r\na\r\n"}}, query(Task::kWordCount)), "a\t2\nb\t1\n");
}

TEST(RawReference, WordsAreWrittenRaw) {
  EXPECT_EQ(tsv({{"d", "a\\b"}}, query(Task::kWordCount)), "a\\b\t1\n");
}

// ------------------------------------------------------------------------------ inverted-index

TEST(RawReference, InvertedIndex) {
  QueryOptions q = query(Task::kInvertedIndex);
  EXPECT_EQ(tsv(cats(), q),
            "The\ta.txt\ncat\ta.txt,b.txt\ndog\tb.txt\nsat.\ta.txt\nthe\ta.txt,b.txt\n");
  EXPECT_EQ(tsv(xy(), q), "x\td0,d1,d2\ny\td0,d1,d2\n");
  q.ids = true;
  EXPECT_EQ(tsv(cats(), q), "The\t0\ncat\t0,1\ndog\t1\nsat.\t0\nthe\t0,1\n");
}

TEST(RawReference, InvertedIndexJson) {
  QueryOptions q = query(Task::kInvertedIndex);
  EXPECT_EQ(json(cats(), q),
            "[\n"
            "{\"word\":\"The\",\"docs\":[\"a.txt\"]},\n"
            "{\"word\":\"cat\",\"docs\":[\"a.txt\",\"b.txt\"]},\n"
            "{\"word\":\"dog\",\"docs\":[\"b.txt\"]},\n"
            "{\"word\":\"sat.\",\"docs\":[\"a.txt\"]},\n"
            "{\"word\":\"the\",\"docs\":[\"a.txt\",\"b.txt\"]}\n"
            "]\n");
  q.ids = true;
  EXPECT_EQ(json(cats(), q),
            "[\n"
            "{\"word\":\"The\",\"docs\":[0]},\n"
            "{\"word\":\"cat\",\"docs\":[0,1]},\n"
            "{\"word\":\"dog\",\"docs\":[1]},\n"
            "{\"word\":\"sat.\",\"docs\":[0]},\n"
            "{\"word\":\"the\",\"docs\":[0,1]}\n"
            "]\n");
}

TEST(RawReference, DocumentsOrderedByNameBytes) {
  // '-' (2D) < '/' (2F) < '0' (30) < 'B' < 'Z' < 'a' < C3: whole names compare as bytes.
  std::vector<RawDocument> docs = {{"a0", "w"}, {"\xc3\xa9", "w"}, {"a/b", "w"},
                                   {"B", "w"},  {"a-c", "w"},      {"Z/x", "w"}};
  QueryOptions q = query(Task::kInvertedIndex);
  EXPECT_EQ(tsv(docs, q), "w\tB,Z/x,a-c,a/b,a0,\xc3\xa9\n");
  q.ids = true;
  EXPECT_EQ(tsv(docs, q), "w\t0,1,2,3,4,5\n");
}

TEST(RawReference, DocumentNamesAreEscapedInTsv) {
  std::vector<RawDocument> docs = {
      {"we\tird", "x"}, {"back\\slash", "x"}, {"new\nline", "x"}, {"cr\rname", "x"}};
  EXPECT_EQ(tsv(docs, query(Task::kInvertedIndex)),
            "x\tback\\\\slash,cr\rname,new\\nline,we\\tird\n");
  EXPECT_EQ(tsv(docs, query(Task::kTermVector)),
            "back\\\\slash\tx:1\ncr\rname\tx:1\nnew\\nline\tx:1\nwe\\tird\tx:1\n");
}

// ------------------------------------------------------------------------------ term-vector

TEST(RawReference, TermVector) {
  QueryOptions q = query(Task::kTermVector);
  q.top = 10;  // the CLI default
  EXPECT_EQ(tsv(cats(), q),
            "a.txt\tcat:2 The:1 sat.:1 the:1\nb.txt\tthe:2 cat:1 dog:1\nc/empty\t\n");
  q.top = 2;
  EXPECT_EQ(tsv(cats(), q), "a.txt\tcat:2 The:1\nb.txt\tthe:2 cat:1\nc/empty\t\n");
  q.top = 0;
  q.min_count = 2;
  EXPECT_EQ(tsv(cats(), q), "a.txt\tcat:2\nb.txt\tthe:2\nc/empty\t\n");
  q.min_count = 3;
  EXPECT_EQ(tsv(cats(), q), "a.txt\t\nb.txt\t\nc/empty\t\n");
  q.min_count = 1;
  q.ids = true;
  EXPECT_EQ(tsv(cats(), q), "0\tcat:2 The:1 sat.:1 the:1\n1\tthe:2 cat:1 dog:1\n2\t\n");
  EXPECT_EQ(tsv(xy(), query(Task::kTermVector)), "d0\tx:2 y:2\nd1\tx:3 y:3\nd2\tx:1 y:1\n");
}

TEST(RawReference, TermVectorMinCountThenTop) {
  // counts: a 4, b 3, c 2, d 1 -> min-count 2 keeps a b c; top 2 keeps a b.
  QueryOptions q = query(Task::kTermVector);
  q.min_count = 2;
  q.top = 2;
  EXPECT_EQ(tsv({{"d", "d c c b b b a a a a"}}, q), "d\ta:4 b:3\n");
  q.top = 0;
  EXPECT_EQ(tsv({{"d", "d c c b b b a a a a"}}, q), "d\ta:4 b:3 c:2\n");
}

TEST(RawReference, TermVectorJson) {
  QueryOptions q = query(Task::kTermVector);
  q.top = 2;
  EXPECT_EQ(json(cats(), q),
            "[\n"
            "{\"doc\":\"a.txt\",\"terms\":[{\"word\":\"cat\",\"count\":2},{\"word\":\"The\","
            "\"count\":1}]},\n"
            "{\"doc\":\"b.txt\",\"terms\":[{\"word\":\"the\",\"count\":2},{\"word\":\"cat\","
            "\"count\":1}]},\n"
            "{\"doc\":\"c/empty\",\"terms\":[]}\n"
            "]\n");
  q.ids = true;
  q.min_count = 2;
  EXPECT_EQ(json(cats(), q),
            "[\n"
            "{\"doc\":0,\"terms\":[{\"word\":\"cat\",\"count\":2}]},\n"
            "{\"doc\":1,\"terms\":[{\"word\":\"the\",\"count\":2}]},\n"
            "{\"doc\":2,\"terms\":[]}\n"
            "]\n");
}

// ------------------------------------------------------------------------------ sequence-count

TEST(RawReference, SequenceCount) {
  QueryOptions q = query(Task::kSequenceCount);  // n = 3 by default
  EXPECT_EQ(tsv(cats(), q),
            "The cat sat.\t1\ncat sat. the\t1\ncat the dog\t1\nsat. the cat\t1\nthe cat the\t1\n");
  q.n = 2;
  EXPECT_EQ(tsv(cats(), q),
            "the cat\t2\nThe cat\t1\ncat sat.\t1\ncat the\t1\nsat. the\t1\nthe dog\t1\n");
  q.top = 2;
  EXPECT_EQ(tsv(cats(), q), "the cat\t2\nThe cat\t1\n");
  q.top = 0;
  q.n = 4;
  EXPECT_EQ(tsv(cats(), q), "The cat sat. the\t1\ncat sat. the cat\t1\nthe cat the dog\t1\n");
  q.n = 5;  // b.txt has only 4 words
  EXPECT_EQ(tsv(cats(), q), "The cat sat. the cat\t1\n");
  q.n = 6;
  EXPECT_EQ(tsv(cats(), q), "");
  q.n = 2;
  EXPECT_EQ(tsv(xy(), q), "x y\t5\ny x\t4\n");
}

TEST(RawReference, SequencesNeverCrossDocuments) {
  QueryOptions q = query(Task::kSequenceCount);
  q.n = 2;
  EXPECT_EQ(tsv({{"a", "p q"}, {"b", "r s"}}, q), "p q\t1\nr s\t1\n");
  q.n = 3;
  EXPECT_EQ(tsv({{"a", "p q"}, {"b", "r s"}}, q), "");
}

TEST(RawReference, SequencesCompareAsJoinedStrings) {
  // "a\x01 b" < "a b" as joined strings (01 < 20), although "a" < "a\x01" word by word.
  std::vector<RawDocument> docs = {{"d0", "a b"}, {"d1", "a\x01 b"}};
  QueryOptions q = query(Task::kSequenceCount);
  q.n = 2;
  EXPECT_EQ(tsv(docs, q), "a\x01 b\t1\na b\t1\n");
  q.task = Task::kRankedInvertedIndex;
  EXPECT_EQ(tsv(docs, q), "a\x01 b\td1:1\na b\td0:1\n");
}

TEST(RawReference, SequenceCountPerDoc) {
  QueryOptions q = query(Task::kSequenceCount);
  q.n = 2;
  q.per_doc = true;
  EXPECT_EQ(tsv(cats(), q),
            "a.txt\tThe cat\t1\na.txt\tcat sat.\t1\na.txt\tsat. the\t1\na.txt\tthe cat\t1\n"
            "b.txt\tcat the\t1\nb.txt\tthe cat\t1\nb.txt\tthe dog\t1\n");
  EXPECT_EQ(tsv(xy(), q), "d0\tx y\t2\nd0\ty x\t1\nd1\tx y\t3\nd1\ty x\t2\nd2\ty x\t1\n");
  q.top = 1;  // per document
  EXPECT_EQ(tsv(cats(), q), "a.txt\tThe cat\t1\nb.txt\tcat the\t1\n");
  q.top = 2;
  q.ids = true;
  EXPECT_EQ(tsv(cats(), q), "0\tThe cat\t1\n0\tcat sat.\t1\n1\tcat the\t1\n1\tthe cat\t1\n");
}

TEST(RawReference, SequenceCountJson) {
  QueryOptions q = query(Task::kSequenceCount);
  q.n = 2;
  EXPECT_EQ(json(xy(), q),
            "[\n"
            "{\"sequence\":\"x y\",\"count\":5},\n"
            "{\"sequence\":\"y x\",\"count\":4}\n"
            "]\n");
  q.per_doc = true;
  q.top = 1;
  q.ids = true;
  EXPECT_EQ(json(xy(), q),
            "[\n"
            "{\"doc\":0,\"sequence\":\"x y\",\"count\":2},\n"
            "{\"doc\":1,\"sequence\":\"x y\",\"count\":3},\n"
            "{\"doc\":2,\"sequence\":\"y x\",\"count\":1}\n"
            "]\n");
  q.ids = false;
  EXPECT_EQ(json(xy(), q),
            "[\n"
            "{\"doc\":\"d0\",\"sequence\":\"x y\",\"count\":2},\n"
            "{\"doc\":\"d1\",\"sequence\":\"x y\",\"count\":3},\n"
            "{\"doc\":\"d2\",\"sequence\":\"y x\",\"count\":1}\n"
            "]\n");
}

// ------------------------------------------------------------------------------
// ranked-inverted-index

TEST(RawReference, RankedInvertedIndex) {
  QueryOptions q = query(Task::kRankedInvertedIndex);
  q.n = 2;
  EXPECT_EQ(tsv(cats(), q),
            "The cat\ta.txt:1\ncat sat.\ta.txt:1\ncat the\tb.txt:1\nsat. the\ta.txt:1\n"
            "the cat\ta.txt:1 b.txt:1\nthe dog\tb.txt:1\n");
  // In a row: count desc, then doc id asc.
  EXPECT_EQ(tsv(xy(), q), "x y\td1:3 d0:2\ny x\td1:2 d0:1 d2:1\n");
  q.ids = true;
  EXPECT_EQ(tsv(xy(), q), "x y\t1:3 0:2\ny x\t1:2 0:1 2:1\n");
  q.ids = false;
  q.n = 3;
  EXPECT_EQ(tsv(xy(), q), "x y x\td1:2 d0:1\ny x y\td1:2 d0:1\n");
}

TEST(RawReference, RankedInvertedIndexJson) {
  QueryOptions q = query(Task::kRankedInvertedIndex);
  q.n = 2;
  EXPECT_EQ(
      json(xy(), q),
      "[\n"
      "{\"sequence\":\"x "
      "y\",\"docs\":[{\"doc\":\"d1\",\"count\":3},{\"doc\":\"d0\",\"count\":2}]},\n"
      "{\"sequence\":\"y x\",\"docs\":[{\"doc\":\"d1\",\"count\":2},{\"doc\":\"d0\",\"count\":1},"
      "{\"doc\":\"d2\",\"count\":1}]}\n"
      "]\n");
  q.ids = true;
  EXPECT_EQ(json(xy(), q),
            "[\n"
            "{\"sequence\":\"x y\",\"docs\":[{\"doc\":1,\"count\":3},{\"doc\":0,\"count\":2}]},\n"
            "{\"sequence\":\"y x\",\"docs\":[{\"doc\":1,\"count\":2},{\"doc\":0,\"count\":1},"
            "{\"doc\":2,\"count\":1}]}\n"
            "]\n");
}

// ------------------------------------------------------------------------------ normalization

TEST(RawReference, LowercaseAndAlnum) {
  const std::vector<RawDocument> docs = {{"d", "Hello, WORLD! -- hello... (world) 'x'"}};
  QueryOptions q = query(Task::kWordCount);
  EXPECT_EQ(tsv(docs, q), "'x'\t1\n(world)\t1\n--\t1\nHello,\t1\nWORLD!\t1\nhello...\t1\n");
  q.lowercase = true;
  EXPECT_EQ(tsv(docs, q), "'x'\t1\n(world)\t1\n--\t1\nhello,\t1\nhello...\t1\nworld!\t1\n");
  q.lowercase = false;
  q.alnum = true;
  EXPECT_EQ(tsv(docs, q), "Hello\t1\nWORLD\t1\nhello\t1\nworld\t1\nx\t1\n");
  q.lowercase = true;
  EXPECT_EQ(tsv(docs, q), "hello\t2\nworld\t2\nx\t1\n");
  // The dropped "--" vanishes from the stream: "world hello" is a sequence.
  q.task = Task::kSequenceCount;
  q.n = 2;
  EXPECT_EQ(tsv(docs, q), "hello world\t2\nworld hello\t1\nworld x\t1\n");
}

TEST(RawReference, AlnumKeepsInnerBytesAndHighBytes) {
  QueryOptions q = query(Task::kSort);
  q.alnum = true;
  EXPECT_EQ(tsv({{"d",
                  "don't a.b. \xc2\xab"
                  "x"
                  "\xc2\xbb \xc3\xa9! --.-- 42%"}},
                q),
            "42\t1\na.b\t1\ndon't\t1\n\xc2\xab"
            "x"
            "\xc2\xbb\t1\n\xc3\xa9\t1\n");
  QueryOptions lower = query(Task::kWordCount);
  lower.lowercase = true;  // only ASCII letters change
  EXPECT_EQ(tsv({{"d",
                  "\xc3\x89"
                  "COLE \xc3\x89"
                  "cole"}},
                lower),
            "\xc3\x89"
            "cole\t2\n");
}

TEST(RawReference, DocumentEmptiedByAlnumStillHasATermVectorRow) {
  QueryOptions q = query(Task::kTermVector);
  q.alnum = true;
  q.top = 10;
  EXPECT_EQ(tsv({{"p", "-- ... !"}, {"q", "(ok)"}}, q), "p\t\nq\tok:1\n");
}

// ------------------------------------------------------------------------------ edge cases

TEST(RawReference, EmptyResults) {
  const std::vector<RawDocument> blank = {{"e", ""}, {"f", " \n\t"}};
  for (Task t : {Task::kWordCount, Task::kSort, Task::kInvertedIndex, Task::kSequenceCount,
                 Task::kRankedInvertedIndex}) {
    EXPECT_EQ(tsv(blank, query(t)), "");
    EXPECT_EQ(json(blank, query(t)), "[\n]\n");
    EXPECT_EQ(tsv({}, query(t)), "");
    EXPECT_EQ(json({}, query(t)), "[\n]\n");
  }
  QueryOptions per_doc = query(Task::kSequenceCount);
  per_doc.per_doc = true;
  EXPECT_EQ(tsv(blank, per_doc), "");
  EXPECT_EQ(json(blank, per_doc), "[\n]\n");
  // term-vector has a row per document, even without words; none without documents.
  EXPECT_EQ(tsv(blank, query(Task::kTermVector)), "e\t\nf\t\n");
  EXPECT_EQ(json(blank, query(Task::kTermVector)),
            "[\n{\"doc\":\"e\",\"terms\":[]},\n{\"doc\":\"f\",\"terms\":[]}\n]\n");
  EXPECT_EQ(tsv({}, query(Task::kTermVector)), "");
  EXPECT_EQ(json({}, query(Task::kTermVector)), "[\n]\n");
}

TEST(RawReference, JsonEscapingAndInvalidUtf8) {
  // Words: back\slash, q"uote, é (valid UTF-8, kept), FF (invalid, becomes U+FFFD = EF BF BD).
  const std::vector<RawDocument> docs = {{"t\tx\x01", "\xff q\"uote back\\slash \xc3\xa9"}};
  EXPECT_EQ(json(docs, query(Task::kSort)),
            "[\n"
            "{\"word\":\"back\\\\slash\",\"count\":1},\n"
            "{\"word\":\"q\\\"uote\",\"count\":1},\n"
            "{\"word\":\"\xc3\xa9\",\"count\":1},\n"
            "{\"word\":\"\xef\xbf\xbd\",\"count\":1}\n"
            "]\n");
  // The name is given unescaped to JSON, which escapes tab and control bytes itself.
  QueryOptions q = query(Task::kInvertedIndex);
  EXPECT_EQ(json({{"t\tx\x01", "w"}, {"bad\xfe", "w"}}, q),
            "[\n{\"word\":\"w\",\"docs\":[\"bad\xef\xbf\xbd\",\"t\\tx\\u0001\"]}\n]\n");
  // TSV writes the same bytes as they are (only the name's tab is escaped).
  EXPECT_EQ(tsv({{"t\tx", "\xff"}}, q), "\xff\tt\\tx\n");
}

TEST(RawReference, SequenceLengthRange) {
  QueryOptions q = query(Task::kSequenceCount);
  q.n = 8;
  EXPECT_EQ(tsv({{"d", "1 2 3 4 5 6 7 8 9"}}, q), "1 2 3 4 5 6 7 8\t1\n2 3 4 5 6 7 8 9\t1\n");
  q.n = 1;
  EXPECT_THROW(tsv(cats(), q), UsageError);
  q.n = 9;
  EXPECT_THROW(tsv(cats(), q), UsageError);
  q.task = Task::kRankedInvertedIndex;
  EXPECT_THROW(tsv(cats(), q), UsageError);
  q.task = Task::kWordCount;  // --n only matters to sequence tasks
  EXPECT_EQ(tsv({{"d", "a"}}, q), "a\t1\n");
}

}  // namespace
}  // namespace gtadoc
