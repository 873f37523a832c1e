#include "worker/records.h"

#include <cstring>

#include "common/error.h"
#include "common/parallel.h"

namespace gtadoc {

RecordBatch concatenate(std::vector<RecordBatch>&& batches, uint32_t width, unsigned threads) {
  if (batches.size() == 1 && batches[0].width == width) return std::move(batches[0]);
  RecordBatch out;
  out.width = width;
  std::vector<size_t> first(batches.size() + 1, 0);  // first record of each batch in `out`
  for (size_t b = 0; b < batches.size(); ++b) {
    GTADOC_EXPECTS(batches[b].size() == 0 || batches[b].width == width,
                   "record batches of different widths");
    first[b + 1] = first[b] + batches[b].size();
  }
  out.keys.resize(first.back() * width);
  out.counts.resize(first.back());
  // Pieces of at most 4 Mi records, so a few large batches still spread over threads.
  constexpr size_t kPiece = size_t{1} << 22;
  std::vector<std::pair<size_t, size_t>> pieces;  // (batch, first record in it)
  for (size_t b = 0; b < batches.size(); ++b)
    for (size_t i = 0; i < batches[b].size(); i += kPiece) pieces.push_back({b, i});
  parallel_for(pieces.size(), threads, [&](size_t p) {
    const auto [b, i] = pieces[p];
    const RecordBatch& in = batches[b];
    const size_t n = std::min(kPiece, in.size() - i);
    std::memcpy(out.keys.data() + (first[b] + i) * width, in.keys.data() + i * width,
                n * width * sizeof(uint32_t));
    std::memcpy(out.counts.data() + first[b] + i, in.counts.data() + i, n * sizeof(uint64_t));
  });
  batches.clear();
  return out;
}

}  // namespace gtadoc
