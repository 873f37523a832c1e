// Sampling documents from a model, and writing a corpus of them.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "scripts/datasets/gen/model.h"
#include "scripts/datasets/gen/util.h"

namespace gtagen {

/// A fixed-size array of trivial values on 2 MiB-aligned memory marked for transparent huge
/// pages (the sampler's tables are read at random: on 4 KiB pages most reads would also miss
/// the TLB).
template <typename T>
class HugeArray {
 public:
  HugeArray() = default;
  explicit HugeArray(size_t n, const T& fill = T{}) : n_(n) {
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t bytes = std::max<size_t>(kHuge, (n * sizeof(T) + kHuge - 1) / kHuge * kHuge);
    p_ = static_cast<T*>(std::aligned_alloc(kHuge, bytes));
    if (p_ == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (n * sizeof(T) >= kHuge / 2) ::madvise(p_, bytes, MADV_HUGEPAGE);
#endif
    std::uninitialized_fill(p_, p_ + n, fill);
  }
  HugeArray(HugeArray&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  HugeArray& operator=(HugeArray&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  HugeArray(const HugeArray&) = delete;
  HugeArray& operator=(const HugeArray&) = delete;
  ~HugeArray() {
    std::free(p_);
  }
  T& operator[](size_t i) {
    return p_[i];
  }
  const T& operator[](size_t i) const {
    return p_[i];
  }
  T* data() {
    return p_;
  }
  const T* data() const {
    return p_;
  }
  size_t size() const {
    return n_;
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

/// Read-only sampling structures built from a model; shared by all threads.
///
/// Sampling a token is a chain of dependent memory reads (context slot, successor list, token
/// bytes), each a likely cache miss in a large model. A thread therefore advances a batch of
/// documents together, one token each per round, in phases: every phase prefetches what the
/// next phase of the same document reads, so the misses of the batch overlap. A document's text
/// depends only on (model, seed, document index): each has its own PRNG, drawn in the same order
/// whatever the batch around it.
class Sampler {
 public:
  explicit Sampler(const Model& m);

  /// A document being written.
  struct Doc {
    uint64_t k = 0;
    std::string text;
    uint64_t words = 0;
    uint32_t length = 0;  ///< words wanted
    bool finished = true;
    // private state
    Rng rng{0};
    uint32_t a = kBos, b = kBos;
    bool after_gap = true;
    double q = 0, q_unk = 0;
    uint64_t slot = 0;
    const void* pick = nullptr;  ///< the alias entry drawn
    uint32_t coin = 0;
    uint32_t tok = 0;
    uint32_t* counts = nullptr;  ///< calibration: emissions per token
  };

  /// Starts document k of the corpus of `seed` (its length, leading gap).
  void start(Doc& d, uint64_t seed, uint64_t k) const;
  /// Advances every unfinished document of `docs` by one token; a document that reaches its
  /// length gets its trailing gap and is marked finished.
  void step(Doc* const* docs, size_t n) const;
  /// Document k in one go (tests, single documents).
  uint64_t document(uint64_t seed, uint64_t k, std::string& out) const;

  /// Probability that a rare word (`unknown`: a word outside the vocabulary) is replaced by a
  /// novel one at corpus position `words`.
  double novel_rate(double words, bool unknown) const;
  /// Words with a training count up to this may be replaced by novel words.
  uint64_t rare_limit() const { return rare_limit_; }

 private:
  struct Tok {  ///< a token's bytes inline (<= 24) or an offset into the model, and its kind
    char bytes[24];
    uint32_t len;
    uint32_t kind;
  };
  /// An alias-method entry packed in 64 bits: bits 0-20 the id, 21-41 the alias, 42-63 the
  /// threshold: a 22-bit coin below it keeps the id.
  using Alias = uint64_t;
  static constexpr unsigned kIdBits = 21, kCoinBits = 22;
  /// Alias tables (Vose's method in integers, so every platform builds the same tables) of
  /// weights w[0..n) with values ids[0..n).
  static void build_alias(const uint64_t* w, const uint32_t* ids, size_t n, Alias* out);

  struct TailWord {  ///< a rare word type, at most 31 bytes, in one half cache line
    char bytes[31];
    uint8_t len;
  };
  /// A successor list for sampling: its alias table, and the probability (in 2^-32) of using
  /// it rather than backing off.
  struct List {
    uint32_t begin, count, use;
  };
  struct Slot2 {   ///< order-2 hash table slot
    uint64_t key;  ///< bits 0-20 b, 21-41 a, 42-63 the list's count; UINT64_MAX = empty
    uint32_t begin, use;
  };
  enum Kind : uint8_t { kSpecial, kWord, kRare, kGap, kUnknown };

  void calibrate();
  /// Hashes the order-2 context (a, b) into d.slot and prefetches its slot and b's successors.
  void prefetch_context(Doc& d, uint32_t a, uint32_t b) const;
  void emit(Doc& d, uint32_t t) const;
  const std::string& gap(const StringDist& d, Rng& rng) const;
  void novel_word(Rng& rng, std::string& out) const;
  /// May p[0..n) be a vocabulary word? (false: certainly not)
  bool in_vocabulary(const char* p, size_t n) const;

  const Model& m_;
  HugeArray<Tok> tok_;
  HugeArray<Slot2> ctx2_;
  uint64_t ctx2_mask_ = 0;
  HugeArray<List> o1_;        ///< the model's order-1 contexts
  HugeArray<Alias> pool_;     ///< the model's successor lists as alias tables (same indexes)
  HugeArray<Alias> uni_;      ///< the unigram distribution as an alias table
  HugeArray<TailWord> tail_;  ///< rare word types to splice novel words from
  /// One bit per hash value (16 bits per vocabulary word): a set bit means "may be a vocabulary
  /// word" (novel words are only taken where it is clear).
  HugeArray<uint64_t> vocab_bits_;
  uint64_t vocab_mask_ = 0;  ///< bits - 1
  uint64_t rare_limit_ = 0;
  std::vector<double> novel_;      ///< replacement probability per 1/16 of log2(words)
  std::vector<double> unk_novel_;  ///< the same for UNK tokens
};

struct GenerateOptions {
  uint64_t bytes = 0;
  uint64_t seed = 1;
  unsigned threads = 0;
  uint64_t files_per_dir = 1000;
  unsigned batch = 16;  ///< documents advanced together per thread
  bool progress = false;
};

struct GenerateResult {
  uint64_t documents = 0, bytes = 0, words = 0, directories = 0;
  uint64_t rare_limit = 0;   ///< words seen at most this often may become novel words
  double setup_seconds = 0;  ///< building the sampling tables and calibrating
  double seconds = 0;        ///< writing the documents
  unsigned threads = 0;
};

/// UsageError unless `outdir` is absent or an empty directory.
void check_outdir(const std::string& outdir);

/// Writes documents 0, 1, ... as OUTDIR/dNNNN/fNNNNNN.txt until their total reaches opt.bytes.
/// OUTDIR must not exist or be an empty directory (UsageError otherwise). The corpus is built in
/// a hidden sibling directory and renamed into place when complete.
GenerateResult generate_corpus(const Model& m, const std::string& outdir,
                               const GenerateOptions& opt);

}  // namespace gtagen
