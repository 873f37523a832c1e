// Test helper: ways to break a valid shard grammar, one invariant of validate_grammar each
// (formats/grammar.h), for the tests that compare the checks of a grammar made in different
// places (sequential, parallel, frame on the host and bodies on the device).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "formats/grammar.h"

namespace gtadoc::testutil {

using GrammarMutation = std::pair<std::string, std::function<void(ShardGrammar&)>>;

/// Mutations of grammars like `good` (finalized, at least 4 levels, 5 documents and 3 words),
/// each drawing what it changes from `rng` (which must outlive them). Every one makes a grammar
/// that validate_grammar rejects.
std::vector<GrammarMutation> grammar_mutations(const ShardGrammar& good, std::mt19937_64& rng);

/// The message of validate_grammar on `threads` threads, or "" when it accepts.
std::string validation_message(const ShardGrammar& g, unsigned threads);

}  // namespace gtadoc::testutil
