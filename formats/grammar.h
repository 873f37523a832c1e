// In-memory form of one shard's grammar (a Sequitur DAG over the shard's own word ids) and of its
// layout stream (the whitespace between words). This is what the archive stores and what every
// engine traverses. Words are numbered in the shard (0 .. num_words-1, in the order of their
// global dictionary ids), so that nothing a shard holds or a per-shard pass allocates is sized by
// the archive's whole vocabulary; `local_words` maps them to the dictionary. Invariants after
// `finalize`: rules are numbered by height ascending (a rule only references rules with smaller
// ids), the root is the last rule, and every array below is filled.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"

namespace gtadoc {

struct ShardGrammar {
  uint32_t num_words = 0;  ///< L, the shard's own vocabulary; symbols < L are (local) words
  /// Local word -> global dictionary id: L entries, strictly ascending, each word used in some
  /// body. Ordering local ids is ordering global ids, hence ordering the words' bytes.
  std::vector<WordId> local_words;
  DocId first_doc = 0;    ///< global id of the shard's first document
  uint32_t num_docs = 0;  ///< documents in this shard (ids first_doc .. first_doc+num_docs-1)

  /// Rule bodies in CSR form: rule r is symbols[rule_offsets[r] .. rule_offsets[r+1]).
  std::vector<uint64_t> rule_offsets;  ///< num_rules + 1 entries, starts at 0
  std::vector<Symbol> symbols;

  /// Height levels: rules of height h (0 = only words below) are ids
  /// [level_offsets[h], level_offsets[h+1]). The root alone has the greatest height.
  std::vector<uint32_t> level_offsets;
  std::vector<uint64_t> rule_length;  ///< number of words a rule expands to (root: whole shard)
  std::vector<uint32_t> rule_uses;    ///< occurrences of the rule in other rule bodies (root: 0)

  /// Root body = seg_0 B_0 seg_1 B_1 ... seg_{D-1}, one unique boundary symbol between documents.
  /// doc_root_offsets[d] is where seg_d starts; doc_root_offsets[D] is the root length + 1, so
  /// seg_d is [doc_root_offsets[d], doc_root_offsets[d+1] - 1) for every d.
  std::vector<uint64_t> doc_root_offsets;

  uint32_t num_rules() const { return static_cast<uint32_t>(rule_offsets.size() - 1); }
  RuleId root() const { return num_rules() - 1; }
  uint32_t num_levels() const { return static_cast<uint32_t>(level_offsets.size() - 1); }
  uint64_t body_begin(RuleId r) const { return rule_offsets[r]; }
  uint64_t body_end(RuleId r) const { return rule_offsets[r + 1]; }
  /// Absolute [begin, end) of document d's (shard-local) segment in `symbols`.
  std::pair<uint64_t, uint64_t> doc_segment(uint32_t d) const {
    uint64_t base = rule_offsets[root()];
    return {base + doc_root_offsets[d], base + doc_root_offsets[d + 1] - 1};
  }
};

/// Whitespace layout of a shard: document d (shard-local) with k words has k+1 gaps (leading,
/// between words, trailing), each an index into `ws_dict`; gaps of all documents concatenated.
struct ShardLayout {
  std::vector<std::string> ws_dict;  ///< distinct whitespace runs ("" included when used)
  std::vector<uint32_t> gaps;
};

/// Rule bodies as Sequitur produces them, in CSR form: rule 0 is the root (documents separated by
/// boundary symbols), rule i >= 1 is referenced in bodies as the symbol num_words + i, where
/// num_words is the size of the word space the symbols below it come from (finalize_grammar's).
struct RawGrammar {
  std::vector<uint64_t> offsets{0};  ///< rules + 1 entries
  std::vector<Symbol> symbols;
};

/// Builds a finalized grammar from Sequitur's output: renumbers the words the grammar uses into
/// local ids (local_words = those of the `num_words` ids of `raw` that occur, ascending) and the
/// rules by height (root last), rewrites symbols, and computes every metadata array. `raw` must be
/// a valid acyclic grammar whose root holds exactly num_docs - 1 boundary symbols.
ShardGrammar finalize_grammar(uint32_t num_words, DocId first_doc, uint32_t num_docs,
                              const RawGrammar& raw);

/// Hands `g`'s arrays to the next shard's read (common/recycled_arrays.h): a process that reads
/// shards one after another and drops each when its query is done (the CPU engine's streamed
/// shards) then fills memory whose pages are already in place. Leaves `g` empty.
void recycle_grammar(ShardGrammar&& g) noexcept;

/// Renumbers the words of `g`, whose symbols below g.num_words are ids of a word space of that
/// size (global dictionary ids, as archives of format version 1 store them), into local ids:
/// sets local_words to the ids that occur, ascending, and rewrites words and rule symbols.
/// Cost: the symbols, plus a bit per id of the space when that is no more than the symbols take
/// (else a sort of the word symbols). `g` must satisfy validate_grammar's structure (any
/// local_words it holds is ignored and replaced).
void localize_words(ShardGrammar& g);

/// Checks every structural invariant (local words strictly ascending and each used, ids in range,
/// acyclic by height, offsets, lengths, uses, boundaries). Throws InputError naming `what` and the
/// first violation. Used after every read. Large grammars are checked on `threads` threads (0:
/// every hardware thread; 1: the sequential checks only); a violation is then named by the
/// sequential checks, so the message is the same.
void validate_grammar(const ShardGrammar& g, std::string_view what, unsigned threads = 0);

/// How much of validate_grammar a read does. kFrame: every check that does not read the rule
/// bodies symbol by symbol (check_grammar_frame) — what a consumer that checks the bodies itself
/// needs before it may index anything by the grammar's offsets (the GPU engine's load, which
/// checks the bodies on the device). kFull: validate_grammar.
enum class GrammarChecks { kFull, kFrame };

/// The checks of validate_grammar that cost no more than the rules, documents and levels: the
/// local words, the sizes and order of every offset array, the levels spanning the rules with the
/// root alone on top, the root used by no rule, and the documents' separators in the root (each
/// a boundary, at the recorded offset, with distinct ids). A grammar that passes, and whose body
/// symbols then meet the body checks below, passes validate_grammar. Throws the
/// InputError validate_grammar would throw (its message names the first violation in its order,
/// which may lie in a body).
void check_grammar_frame(const ShardGrammar& g, std::string_view what);

/// The body checks a consumer of a frame-checked grammar makes (the GPU engine on the device),
/// spelled out: every body symbol is a word below num_words, a rule whose id is below the
/// body's own rule (the root: any other rule), or, in the root only, a boundary at one of the
/// documents' separators; every local word occurs in some body; a rule's stored length is the
/// sum over its body (without overflow) of 1 per word and its children's stored lengths, and the
/// root's the same over the documents; a rule's stored uses are its occurrences in the bodies
/// (modulo 2^32); a rule at level h > 0 has its largest child at level h - 1, one at level 0 no
/// child, and the root its largest child on the level below its own.

namespace detail {
/// The parallel checks behind validate_grammar: true when every invariant holds (exposed for
/// tests, which compare it with the sequential checks).
bool grammar_valid_in_parallel(const ShardGrammar& g, unsigned threads);
}  // namespace detail

/// Appends the global word ids (local_words) of document d (shard-local) to `out`, in text order.
void expand_document(const ShardGrammar& g, uint32_t d, std::vector<WordId>& out);

/// Depth of the DAG: the root's height (0 when the root holds only words).
inline uint32_t dag_depth(const ShardGrammar& g) {
  return g.num_levels() - 1;
}

}  // namespace gtadoc
