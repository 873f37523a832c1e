// Document sampling (Markov chain with backoff, gaps, novel words) and the parallel corpus writer.
#include "scripts/datasets/gen/generate.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "common/parallel.h"

namespace gtagen {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- sampler

Sampler::Sampler(const Model& m) : m_(m) {
  const uint32_t V = m.tokens();
  if (V >= (1u << kIdBits)) throw Error("the model has more tokens than 2^21");
  // P(use a list) = kept / total, in 2^-32 (kept < total: 0 when nothing was kept).
  auto use = [](const Context& c) {
    return c.total == 0 ? 0u
                        : static_cast<uint32_t>((static_cast<uint64_t>(c.kept) << 32) / c.total);
  };
  tok_ = HugeArray<Tok>(V);
  o1_ = HugeArray<List>(V);
  for (uint32_t t = 0; t < V; ++t) o1_[t] = List{m.o1[t].begin, m.o1[t].count, use(m.o1[t])};
  for (uint32_t t = 0; t < V; ++t) {
    Tok& x = tok_[t];
    std::memset(x.bytes, 0, sizeof x.bytes);
    const std::string_view s = m.token(t);
    x.len = static_cast<uint32_t>(s.size());
    if (s.size() <= sizeof x.bytes) {
      std::memcpy(x.bytes, s.data(), s.size());
    } else {
      const uint64_t off = m.token_off[t];
      std::memcpy(x.bytes, &off, sizeof off);
    }
    if (t == kBos) {
      x.kind = kSpecial;
    } else if (t == kUnk) {
      x.kind = kUnknown;
    } else if (m.is_gap(t)) {
      x.kind = kGap;
    } else {
      x.kind = kWord;  // kRare for some: calibrate()
    }
  }

  // Order-2 contexts: open addressing.
  size_t slots = 16;
  while (slots < m.o2_key.size() * 3 / 2) slots *= 2;  // load 1/3 to 2/3
  ctx2_ = HugeArray<Slot2>(slots, Slot2{UINT64_MAX, 0, 0});
  ctx2_mask_ = slots - 1;
  for (size_t i = 0; i < m.o2_key.size(); ++i) {
    const uint64_t key = ((m.o2_key[i] >> 32) << kIdBits) | (m.o2_key[i] & 0xffffffffULL);
    size_t s = gtadoc::mix64(key) & ctx2_mask_;
    while (ctx2_[s].key != UINT64_MAX) s = (s + 1) & ctx2_mask_;
    if (m.o2[i].count >= (1u << kCoinBits)) throw Error("an order-2 list longer than 2^22");
    ctx2_[s] = Slot2{key | (static_cast<uint64_t>(m.o2[i].count) << (2 * kIdBits)), m.o2[i].begin,
                     use(m.o2[i])};
  }

  // Alias tables: the successor lists (weights from their cumulative counts) and the unigram
  // distribution.
  pool_ = HugeArray<Alias>(m.succ.size());
  std::vector<uint64_t> w;
  std::vector<uint32_t> ids;
  auto lists = [&](const std::vector<Context>& cs) {
    for (const Context& c : cs) {
      w.resize(c.count);
      ids.resize(c.count);
      for (uint32_t i = 0; i < c.count; ++i) {
        const Entry& e = m.succ[c.begin + i];
        w[i] = e.cum - (i ? m.succ[c.begin + i - 1].cum : 0);
        ids[i] = e.id;
      }
      build_alias(w.data(), ids.data(), c.count, pool_.data() + c.begin);
    }
  };
  lists(m.o1);
  lists(m.o2);
  ids.resize(V);
  for (uint32_t t = 0; t < V; ++t) ids[t] = t;
  uni_ = HugeArray<Alias>(V);
  build_alias(m.unigram.data(), ids.data(), V, uni_.data());

  // Vocabulary words (novel words must not be one) and the rare types novel words come from.
  size_t bits = 1 << 16;
  while (bits < static_cast<size_t>(V) * 16) bits *= 2;
  vocab_bits_ = HugeArray<uint64_t>(bits / 64, 0);
  vocab_mask_ = bits - 1;
  for (uint32_t t = 2; t < V; ++t) {
    if (tok_[t].kind != kWord) continue;  // (kRare is set later, by calibrate())
    const uint64_t h = hash_bytes(m.token(t)) & vocab_mask_;
    vocab_bits_[h >> 6] |= uint64_t{1} << (h & 63);
  }

  const size_t types = m.tail_off.size() - 1;
  tail_ = HugeArray<TailWord>(types);
  for (size_t i = 0; i < types; ++i) {
    const size_t len = std::min<size_t>(m.tail_off[i + 1] - m.tail_off[i], 31);
    std::memcpy(tail_[i].bytes, m.tail_bytes.data() + m.tail_off[i], len);
    tail_[i].len = static_cast<uint8_t>(len);
  }

  calibrate();
}

void Sampler::calibrate() {
  // Novel words keep the distinct-word count on the training corpus's Heaps law V = K N^beta:
  // a corpus of N words meets new words at dV/dN = beta K N^(beta-1). The chain meets its
  // vocabulary words at sum_w p_w exp(-p_w N), p_w = how often it emits w, which falls to zero
  // once N is well past the training size. The difference is made up by UNK tokens (words
  // outside the capped vocabulary) becoming novel words with probability u(N) (else a sampled
  // rare type), and when that is not enough by replacing words of count <= R by novel ones with
  // probability q(N).
  //
  // The chain does not emit words at their training frequency (pruned successor lists favour
  // frequent words), so p_w is measured: a calibration run of the chain (fixed seed, no novel
  // words) gives the emission rate of each frequency class (training counts in [2^k, 2^(k+1)))
  // relative to the training rate. R is the smallest power of two whose class share covers the
  // largest rate needed.
  const Model& m = m_;
  const uint32_t V = m.tokens();
  std::vector<uint32_t> emitted(V, 0);
  const uint64_t want = std::clamp<uint64_t>(m.info.words, 300000, 2000000);  // calibration words
  uint64_t got = 0, next_k = 0;
  {
    std::vector<Doc> docs(16);
    std::vector<Doc*> active;
    auto claim = [&](Doc& d) {
      while (got < want) {
        start(d, 0x63616c6962ULL, next_k++);
        d.q = d.q_unk = 0;
        d.counts = emitted.data();
        if (!d.finished) return true;
      }
      return false;
    };
    for (Doc& d : docs)
      if (claim(d)) active.push_back(&d);
    while (!active.empty()) {
      step(active.data(), active.size());
      for (size_t i = 0; i < active.size();) {
        if (!active[i]->finished) {
          ++i;
          continue;
        }
        got += active[i]->words;
        if (!claim(*active[i])) {
          active[i] = active.back();
          active.pop_back();
        }
      }
    }
  }
  double W = 0;  // training word tokens
  std::vector<double> class_train(65, 0), class_emit(65, 0);
  std::map<uint64_t, uint64_t> by_count;  // training count -> vocabulary words with it
  auto cls = [](uint64_t c) { return static_cast<size_t>(std::bit_width(c) - 1); };
  double emitted_words = static_cast<double>(emitted[kUnk]);
  for (uint32_t t = 2; t < V; ++t) {
    if (tok_[t].kind != kWord || m.unigram[t] == 0) continue;
    W += static_cast<double>(m.unigram[t]);
    class_train[cls(m.unigram[t])] += static_cast<double>(m.unigram[t]);
    class_emit[cls(m.unigram[t])] += emitted[t];
    emitted_words += emitted[t];
    ++by_count[m.unigram[t]];
  }
  W += static_cast<double>(m.unigram[kUnk]);
  if (W == 0 || emitted_words == 0) {
    novel_.assign(16 * 64, 0.0);
    return;
  }
  std::vector<double> factor(65, 1.0);  // emission rate / training rate, per class
  for (size_t k = 0; k < 65; ++k)
    if (class_train[k] > 0) factor[k] = (class_emit[k] / emitted_words) / (class_train[k] / W);
  struct Group {
    uint64_t count;
    double words, p;  // vocabulary words with this count; the chain's rate for each
  };
  std::vector<Group> groups;
  for (const auto& [c, n] : by_count)
    groups.push_back({c, static_cast<double>(n), static_cast<double>(c) / W * factor[cls(c)]});
  const double unk_share = emitted[kUnk] / emitted_words;
  const double K = m.info.heaps_k, beta = m.info.heaps_beta;
  const bool heaps_ok = std::isfinite(K) && std::isfinite(beta) && K > 0 && beta > 0 && beta < 1.5;

  auto meet = [&](double N, uint64_t R, double q) {  // rate of meeting vocabulary words
    double r = 0;
    for (const Group& g : groups) {
      const double p = g.count <= R ? g.p * (1 - q) : g.p;
      if (p * N < 700) r += g.words * p * std::exp(-p * N);
    }
    return r;
  };
  auto heaps_rate = [&](double N) { return heaps_ok ? beta * K * std::pow(N, beta - 1) : 0.0; };
  auto need = [&](double N) { return heaps_rate(N) - unk_share; };
  // The grid: N = 2^(i/16); documents start at N >= half a mean document.
  novel_.assign(16 * 64, 0.0);
  unk_novel_.assign(16 * 64, 0.0);
  const double first = std::max(1.0, m.info.doc_words_mean / 2);
  double peak = 0;
  for (size_t i = 0; i < novel_.size(); ++i) {
    const double N = std::exp2(static_cast<double>(i) / 16.0);
    if (N >= first) peak = std::max(peak, need(N) - meet(N, 0, 0));
  }
  uint64_t R = std::max<uint64_t>(1, m.rare_max_count);
  auto share = [&](uint64_t limit) {
    double h = 0;
    for (const Group& g : groups)
      if (g.count <= limit) h += g.words * g.p;
    return h;
  };
  while (R < (uint64_t{1} << 20) && share(R) < peak) R *= 2;
  rare_limit_ = R;
  const double h = share(R);
  for (uint32_t t = 2; t < V; ++t)
    if (tok_[t].kind == kWord && m.unigram[t] <= R) tok_[t].kind = kRare;
  for (size_t i = 0; i < novel_.size(); ++i) {
    const double N = std::exp2(static_cast<double>(i) / 16.0);
    const double short_of = heaps_rate(N) - meet(N, 0, 0);  // new words missing per word
    const double u = unk_share > 0 ? std::clamp(short_of / unk_share, 0.0, 1.0) : 0.0;
    unk_novel_[i] = u;
    double q = 0;
    if (short_of > unk_share)                  // UNK tokens are not enough
      for (int it = 0; it < 8 && h > 0; ++it)  // replaced words are met less: a fixed point
        q = std::clamp((need(N) - meet(N, R, q)) / h, 0.0, 1.0);
    novel_[i] = q;
  }
}

void Sampler::build_alias(const uint64_t* w, const uint32_t* ids, size_t n, Alias* out) {
  auto entry = [](uint64_t keep, uint32_t id, uint32_t alias) {
    return (keep << (2 * kIdBits)) | (static_cast<uint64_t>(alias) << kIdBits) | id;
  };
  constexpr uint64_t kAlways = (uint64_t{1} << kCoinBits) - 1;
  if (n == 0) return;
  unsigned __int128 total = 0;
  for (size_t i = 0; i < n; ++i) total += w[i];
  if (total == 0) {
    for (size_t i = 0; i < n; ++i) out[i] = entry(kAlways, ids[i], ids[i]);
    return;
  }
  // Scaled weights s_i = w_i * n; every bucket holds `total`.
  std::vector<unsigned __int128> s(n);
  std::vector<size_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    s[i] = static_cast<unsigned __int128>(w[i]) * n;
    (s[i] < total ? small : large).push_back(i);
  }
  while (!small.empty() && !large.empty()) {
    const size_t l = small.back();
    small.pop_back();
    const size_t g = large.back();
    out[l] = entry(static_cast<uint64_t>((s[l] << kCoinBits) / total), ids[l], ids[g]);
    s[g] -= total - s[l];
    if (s[g] < total) {
      large.pop_back();
      small.push_back(g);
    }
  }
  for (size_t i : large) out[i] = entry(kAlways, ids[i], ids[i]);
  for (size_t i : small) out[i] = entry(kAlways, ids[i], ids[i]);  // rounding leftovers
}

double Sampler::novel_rate(double words, bool unknown) const {
  const std::vector<double>& table = unknown ? unk_novel_ : novel_;
  if (table.empty()) return 0;  // during calibration
  if (words < 1) words = 1;
  const size_t i = std::min(table.size() - 1, static_cast<size_t>(std::log2(words) * 16.0));
  return table[i];
}

const std::string& Sampler::gap(const StringDist& d, Rng& rng) const {
  static const std::string kEmpty;
  if (d.cum.empty()) return kEmpty;
  const uint64_t u = rng.below64(d.cum.back());
  if (u < d.cum[0]) return d.values[0];
  const size_t i =
      static_cast<size_t>(std::upper_bound(d.cum.begin(), d.cum.end(), u) - d.cum.begin());
  return d.values[i];
}

bool Sampler::in_vocabulary(const char* p, size_t n) const {
  const uint64_t h = hash_bytes(std::string_view(p, n)) & vocab_mask_;
  return (vocab_bits_[h >> 6] >> (h & 63)) & 1;
}

void Sampler::novel_word(Rng& rng, std::string& out) const {
  // Pieces of rare types joined where they have the same character, so every character pair of
  // the result occurs in a real word: the head of one type a[0..i), then from the next type b
  // (with b[j-1] == the last character so far) its tail b[j..), or, for half of the words, a
  // middle piece b[j..k) and the tail of a third type (more distinct results: fewer repeats at
  // scale). Retried while a piece has no such j or the result may be a vocabulary word or is
  // shorter than 3 bytes; then two types end to end; a random suffix is the last resort.
  const size_t types = tail_.size();
  char w[128];
  size_t len = 0;
  auto draw = [&]() -> const TailWord& {
    return tail_[static_cast<size_t>(((rng.next() & 0xffffffffULL) * types) >> 32)];
  };
  // Appends b[j..k) for a j with b[j-1] == w[len-1] (first match from a random start) and k = the
  // end (a tail) or a random cut after j (a middle piece); false when b has no such j.
  auto join = [&](const TailWord& b, bool tail) {
    const size_t lb = b.len;
    if (lb < 2) return false;
    const uint64_t r = rng.next();
    const size_t j0 = static_cast<size_t>(((r & 0xffffffffULL) * (lb - 1)) >> 32);
    const char c = w[len - 1];
    for (size_t s = 0; s + 1 < lb; ++s) {
      const size_t j = 1 + (j0 + s) % (lb - 1);
      if (b.bytes[j - 1] != c) continue;
      const size_t k = tail ? lb : j + 1 + static_cast<size_t>(((r >> 32) * (lb - j)) >> 32);
      std::memcpy(w + len, b.bytes + j, k - j);
      len += k - j;
      return true;
    }
    return false;
  };
  for (int attempt = 0; types > 0 && attempt < 24; ++attempt) {
    const TailWord& a = draw();
    if (a.len < 1) continue;
    const uint64_t r = rng.next();
    len = 1 + static_cast<size_t>(((r & 0xffffffffULL) * a.len) >> 32);  // [1, la]
    std::memcpy(w, a.bytes, len);
    if ((r >> 63) != 0 && !join(draw(), false)) continue;  // a middle piece, for half
    if (!join(draw(), true)) continue;
    if (len >= 3 && !in_vocabulary(w, len)) {
      out.append(w, len);
      return;
    }
  }
  len = 0;
  if (types > 0) {
    const TailWord& a = draw();
    const TailWord& b = draw();
    std::memcpy(w, a.bytes, a.len);
    std::memcpy(w + a.len, b.bytes, b.len);
    len = a.len + b.len;
    if (len >= 3 && !in_vocabulary(w, len)) {
      out.append(w, len);
      return;
    }
  }
  if (len == 0) {
    std::memcpy(w, "zq", 2);
    len = 2;
  }
  const uint64_t r = rng.next();
  w[len++] = '_';
  for (int i = 0; i < 8; ++i)
    w[len++] = "abcdefghijklmnopqrstuvwxyz0123456789"[(r >> (6 * i)) % 36];
  out.append(w, len);
}

void Sampler::start(Doc& d, uint64_t seed, uint64_t k) const {
  d.k = k;
  d.rng = Rng(gtadoc::mix64(seed + 0x632be59bd9b4e019ULL) + k * 0x9e3779b97f4a7c15ULL);
  d.text.clear();
  d.words = 0;
  d.counts = nullptr;
  d.a = d.b = kBos;
  d.after_gap = true;
  d.length = m_.doc_words[d.rng.below32(static_cast<uint32_t>(m_.doc_words.size()))];
  d.finished = d.length == 0;  // an empty document
  if (d.finished) return;
  // Where this document sits in the corpus, in words: documents have mean length on average.
  const double at = static_cast<double>(k) * m_.info.doc_words_mean + d.length / 2.0;
  d.q = novel_rate(at, false);
  d.q_unk = novel_rate(at, true);
  d.text.reserve(static_cast<size_t>(d.length) * 8 + 256);
  d.text += gap(m_.lead_gaps, d.rng);
  prefetch_context(d, kBos, kBos);
}

void Sampler::emit(Doc& d, uint32_t t) const {
  const Tok& x = tok_[t];
  auto append = [&] {
    if (x.len <= sizeof x.bytes) {
      d.text.append(x.bytes, x.len);
    } else {
      uint64_t off;
      std::memcpy(&off, x.bytes, sizeof off);
      d.text.append(m_.token_bytes.data() + off, x.len);
    }
  };
  if (x.kind == kGap) {
    if (!d.after_gap) {  // two gap tokens in a row (after a backoff) make one gap
      append();
      d.after_gap = true;
    }
  } else if (x.kind != kSpecial) {
    if (d.counts != nullptr) ++d.counts[t];
    if (!d.after_gap) d.text.push_back(' ');
    if (x.kind == kRare && d.q > 0 && d.rng.uniform() < d.q) {
      novel_word(d.rng, d.text);
    } else if (x.kind == kUnknown) {  // a word outside the vocabulary: novel, or a rare type
      if (d.q_unk > 0 && d.rng.uniform() < d.q_unk) {
        novel_word(d.rng, d.text);
      } else {
        const size_t types = m_.tail_off.size() - 1;
        const size_t i = static_cast<size_t>(((d.rng.next() & 0xffffffffULL) * types) >> 32);
        d.text.append(m_.tail_bytes.data() + m_.tail_off[i], m_.tail_off[i + 1] - m_.tail_off[i]);
      }
    } else {
      append();
    }
    ++d.words;
    d.after_gap = false;
  }
  d.a = d.b;
  d.b = t;
  if (d.words >= d.length) {
    d.text += gap(m_.trail_gaps, d.rng);
    d.finished = true;
  }
}

void Sampler::prefetch_context(Doc& d, uint32_t a, uint32_t b) const {
  if (!m_.o2_key.empty()) {
    d.slot = gtadoc::mix64((static_cast<uint64_t>(a) << kIdBits) | b) & ctx2_mask_;
    __builtin_prefetch(&ctx2_[d.slot]);
  }
  __builtin_prefetch(&o1_[b]);
}

void Sampler::step(Doc* const* docs, size_t n) const {
  const bool order2 = !m_.o2_key.empty();
  constexpr uint64_t kKey = (uint64_t{1} << (2 * kIdBits)) - 1;
  constexpr uint64_t kId = (uint64_t{1} << kIdBits) - 1;
  // (The context's slot was hashed and prefetched when its last token was drawn: phase 2 of the
  // previous step, or start().)
  // 1: order 2, else order 1 (Witten-Bell backoff: one 32-bit half of a draw each), else the
  // unigram distribution; then the alias entry (the other draw): prefetch it.
  for (size_t i = 0; i < n; ++i) {
    Doc& d = *docs[i];
    if (d.finished) continue;
    const Alias* table = nullptr;
    uint32_t count = 0;
    const uint64_t r = d.rng.next();
    if (order2) {
      const uint64_t key = (static_cast<uint64_t>(d.a) << kIdBits) | d.b;
      size_t s = d.slot;
      while ((ctx2_[s].key & kKey) != key && ctx2_[s].key != UINT64_MAX) s = (s + 1) & ctx2_mask_;
      const Slot2& slot = ctx2_[s];
      if (slot.key != UINT64_MAX && static_cast<uint32_t>(r >> 32) < slot.use) {
        table = pool_.data() + slot.begin;
        count = static_cast<uint32_t>(slot.key >> (2 * kIdBits));
      }
    }
    if (table == nullptr) {
      const List& c = o1_[d.b];
      if (static_cast<uint32_t>(r) < c.use) {
        table = pool_.data() + c.begin;
        count = c.count;
      }
    }
    if (table == nullptr) {
      table = uni_.data();
      count = static_cast<uint32_t>(uni_.size());
    }
    const uint64_t r2 = d.rng.next();
    const Alias* e = table + (((r2 >> 32) * count) >> 32);
    d.pick = e;
    d.coin = static_cast<uint32_t>(r2) & ((1u << kCoinBits) - 1);
    __builtin_prefetch(e);
  }
  // 2: the token; prefetch its bytes and the next context (b, token).
  for (size_t i = 0; i < n; ++i) {
    Doc& d = *docs[i];
    if (d.finished) continue;
    const Alias e = *static_cast<const Alias*>(d.pick);
    d.tok = static_cast<uint32_t>(d.coin < (e >> (2 * kIdBits)) ? e & kId : (e >> kIdBits) & kId);
    __builtin_prefetch(&tok_[d.tok]);
    prefetch_context(d, d.b, d.tok);
  }
  // 3: write it.
  for (size_t i = 0; i < n; ++i)
    if (!docs[i]->finished) emit(*docs[i], docs[i]->tok);
}

uint64_t Sampler::document(uint64_t seed, uint64_t k, std::string& out) const {
  Doc d;
  start(d, seed, k);
  Doc* one = &d;
  while (!d.finished) step(&one, 1);
  out.swap(d.text);
  return d.words;
}

// ---------------------------------------------------------------- corpus writer

namespace {

std::atomic<int> g_signal{0};
extern "C" void on_stop_signal(int sig) {
  g_signal.store(sig);
}

std::string numbered(char prefix, uint64_t n, int width, const char* suffix) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%c%0*llu%s", prefix, width, static_cast<unsigned long long>(n),
                suffix);
  return buf;
}

void write_whole(const std::string& path, const std::string& data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      throw Error(path + ": " + std::strerror(e));
    }
    done += static_cast<size_t>(w);
  }
  if (::close(fd) != 0) throw Error(path + ": " + std::strerror(errno));
}

fs::path normal_outdir(const std::string& outdir_arg) {
  fs::path outdir = fs::path(outdir_arg).lexically_normal();
  if (!outdir.has_filename()) outdir = outdir.parent_path();  // "out/" -> "out"
  return outdir;
}

}  // namespace

void check_outdir(const std::string& outdir_arg) {
  const fs::path outdir = normal_outdir(outdir_arg);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(outdir, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st))
    throw UsageError("-o " + outdir_arg + ": exists and is not a directory");
  if (!fs::is_empty(outdir, ec) || ec)
    throw UsageError("-o " + outdir_arg +
                     ": exists and is not empty (gtadoc_gen never "
                     "overwrites; remove it or choose another directory)");
}

GenerateResult generate_corpus(const Model& m, const std::string& outdir_arg,
                               const GenerateOptions& opt) {
  // OUTDIR: absent or an empty directory.
  check_outdir(outdir_arg);
  const fs::path outdir = normal_outdir(outdir_arg);
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(outdir, ec));
  const fs::path abs = fs::absolute(outdir, ec);
  const fs::path parent = abs.parent_path();
  if (!fs::is_directory(parent, ec))
    throw Error("-o " + outdir_arg + ": parent directory " + parent.string() + " does not exist");

  const auto t_setup = std::chrono::steady_clock::now();
  const Sampler sampler(m);
  const unsigned threads = gtadoc::resolve_threads(opt.threads);

  std::string tmp_name = ".";  // (built step by step: GCC 12 warns wrongly on "." + string)
  tmp_name += abs.filename().string();
  tmp_name += ".gen-tmp-";
  tmp_name += std::to_string(::getpid());
  const fs::path tmp = parent / tmp_name;
  if (!fs::create_directory(tmp, ec) || ec)
    throw Error(tmp.string() + ": cannot create: " + (ec ? ec.message() : "exists"));

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESETHAND;  // a second signal ends the process at once
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  const auto t0 = std::chrono::steady_clock::now();
  gtadoc::Progress progress("generate", opt.bytes, "bytes", opt.progress);

  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> stop_at{UINT64_MAX};  // document count, once the prefix reaches the target
  std::mutex mu;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> done;  // k -> (bytes, words), out of order
  uint64_t prefix_docs = 0, prefix_bytes = 0, prefix_words = 0;
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  const int width_dir = 4, width_file = 6;

  // Each thread advances opt.batch documents together (Sampler::step); a finished document is
  // written at once and its place taken by the next unclaimed index.
  auto worker = [&] {
    std::vector<Sampler::Doc> docs(std::max(1u, opt.batch));
    std::vector<Sampler::Doc*> active;
    uint64_t made_dir = UINT64_MAX;
    auto claim = [&](Sampler::Doc& d) {
      if (failed.load() || g_signal.load() != 0) return false;
      const uint64_t k = next.fetch_add(1);
      if (k >= stop_at.load()) return false;
      sampler.start(d, opt.seed, k);
      return true;
    };
    auto finish = [&](const Sampler::Doc& d) {
      const uint64_t dir = d.k / opt.files_per_dir;
      const fs::path dpath = tmp / numbered('d', dir, width_dir, "");
      if (dir != made_dir) {
        if (::mkdir(dpath.c_str(), 0755) != 0 && errno != EEXIST)
          throw Error(dpath.string() + ": " + std::strerror(errno));
        made_dir = dir;
      }
      write_whole((dpath / numbered('f', d.k, width_file, ".txt")).string(), d.text);
      progress.add(d.text.size());
      std::lock_guard<std::mutex> lock(mu);
      done.emplace(d.k, std::make_pair(d.text.size(), d.words));
      // Extend the complete prefix 0..prefix_docs-1 until it reaches the target.
      for (auto it = done.begin();
           it != done.end() && it->first == prefix_docs && stop_at.load() == UINT64_MAX;
           it = done.erase(it)) {
        prefix_bytes += it->second.first;
        prefix_words += it->second.second;
        ++prefix_docs;
        if (prefix_bytes >= opt.bytes) stop_at = prefix_docs;
      }
    };
    try {
      for (Sampler::Doc& d : docs)
        if (claim(d)) active.push_back(&d);
      while (!active.empty()) {
        if (failed.load() || g_signal.load() != 0) return;
        sampler.step(active.data(), active.size());
        for (size_t i = 0; i < active.size();) {
          Sampler::Doc& d = *active[i];
          if (!d.finished) {
            ++i;
            continue;
          }
          finish(d);
          if (!claim(d)) {  // else look at slot i again: the new document may be empty
            active[i] = active.back();
            active.pop_back();
          }
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  gtadoc::run_on_threads(threads, [&](unsigned) { worker(); });
  progress.finish();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);

  if (error || g_signal.load() != 0) {
    fs::remove_all(tmp, ec);
    if (error) std::rethrow_exception(error);
    const int sig = g_signal.load();
    throw Interrupted("stopped by signal " + std::to_string(sig) + "; " + outdir_arg +
                          " was not written (temporary removed)",
                      sig);
  }

  // Documents past the target (written by threads that had started them) go again.
  const uint64_t count = stop_at.load();
  const uint64_t claimed = next.load();
  for (uint64_t k = count; k < claimed; ++k) {
    const fs::path d = tmp / numbered('d', k / opt.files_per_dir, width_dir, "");
    fs::remove(d / numbered('f', k, width_file, ".txt"), ec);
  }
  for (uint64_t dir = count / opt.files_per_dir;
       claimed > 0 && dir <= (claimed - 1) / opt.files_per_dir; ++dir)
    if (dir * opt.files_per_dir >= count)  // a folder of surplus documents only
      fs::remove(tmp / numbered('d', dir, width_dir, ""), ec);

  // Into place: rename the whole tree (replaces an empty OUTDIR), else move its folders.
  if (::rename(tmp.c_str(), abs.c_str()) != 0) {
    const int e = errno;
    if (!exists) {
      fs::remove_all(tmp, ec);
      throw Error("-o " + outdir_arg + ": " + std::strerror(e));
    }
    for (const auto& entry : fs::directory_iterator(tmp)) {
      fs::rename(entry.path(), abs / entry.path().filename(), ec);
      if (ec) throw Error(abs.string() + ": " + ec.message() + " (partial corpus left there)");
    }
    fs::remove(tmp, ec);
  }

  GenerateResult r;
  r.documents = count;
  r.bytes = prefix_bytes;
  r.words = prefix_words;
  r.directories = count == 0 ? 0 : (count - 1) / opt.files_per_dir + 1;
  r.threads = threads;
  r.rare_limit = sampler.rare_limit();
  r.setup_seconds = std::chrono::duration<double>(t0 - t_setup).count();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace gtagen
