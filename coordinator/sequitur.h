// Sequitur (Nevill-Manning & Witten) at word level, in linear expected time over flat arrays.
// Guarantees on the result: expanding the root gives `tokens` exactly; no digram occurs twice
// (non-overlapping) in the whole grammar; every rule other than the root is referenced at least
// twice. Boundary symbols (see common/types.h) are ordinary unique terminals: no rule spans one.
#pragma once

#include <span>

#include "common/types.h"
#include "formats/grammar.h"

namespace gtadoc {

/// Compresses `tokens` (word ids < num_words and boundary symbols) into a grammar whose rule i
/// is referenced as num_words + i (rule 0 = root). Requires num_words + rules < kBoundaryBit.
RawGrammar sequitur(std::span<const Symbol> tokens, uint32_t num_words);

}  // namespace gtadoc
