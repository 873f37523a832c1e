// Training (one pass over the corpus into a token stream, then counts and pruning) and the model
// file format.
#include "scripts/datasets/gen/model.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>

#include "common/log.h"
#include "scripts/datasets/gen/util.h"

namespace gtagen {

namespace {

bool has_newline(std::string_view gap) {
  return gap.find('\n') != std::string_view::npos;
}

/// Counts of distinct strings, turned into a distribution of the `keep` most frequent ones.
StringDist make_dist(const StringTable& t, const std::vector<uint64_t>& counts, size_t keep) {
  std::vector<uint32_t> ids(t.size());
  std::iota(ids.begin(), ids.end(), 0u);
  std::sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) {
    return counts[a] != counts[b] ? counts[a] > counts[b] : t.str(a) < t.str(b);
  });
  if (ids.size() > keep) ids.resize(keep);
  StringDist d;
  uint64_t cum = 0;
  for (uint32_t id : ids) {
    if (counts[id] == 0) continue;
    cum += counts[id];
    d.values.emplace_back(t.str(id));
    d.cum.push_back(cum);
  }
  return d;
}

/// Appends a pruned successor list (the entries of one context, sorted by count descending) to
/// `pool`: the first `keep` entries seen at least `min_count` times. The rest of the mass is
/// left for the lower order: the Witten-Bell backoff mass (the number of distinct successors)
/// plus the pruned entries' counts. Counts are scaled into 32 bits when needed.
Context add_successors(std::vector<Entry>& pool,
                       const std::vector<std::pair<uint32_t, uint64_t>>& succ, size_t keep,
                       uint64_t min_count = 1, bool backoff = true) {
  uint64_t n = 0;
  for (const auto& s : succ) n += s.second;
  uint64_t total = n + (backoff ? succ.size() : 0);
  unsigned shift = 0;
  while ((total >> shift) > 0xfff00000ULL) ++shift;
  if (pool.size() + keep > 0xffff0000ULL) throw Error("model too large (successor pool)");
  Context c{static_cast<uint32_t>(pool.size()), 0, 0, 0};
  uint64_t cum = 0;
  size_t k = std::min(keep, succ.size());
  while (k > 0 && succ[k - 1].second < min_count) --k;
  for (size_t i = 0; i < k; ++i) {
    cum += std::max<uint64_t>(1, succ[i].second >> shift);
    pool.push_back(Entry{static_cast<uint32_t>(cum), succ[i].first});
  }
  c.count = static_cast<uint32_t>(k);
  c.kept = static_cast<uint32_t>(cum);
  c.total = static_cast<uint32_t>(backoff ? std::max<uint64_t>(total >> shift, cum + 1) : cum);
  return c;
}

}  // namespace

Model train(const std::vector<std::string>& inputs, const TrainOptions& opt) {
  const std::vector<InputFile> files = list_inputs(inputs);
  if (files.empty()) throw Error("no documents below the given inputs");
  uint64_t total_bytes = 0;
  for (const InputFile& f : files) {
    std::error_code ec;
    total_bytes += std::filesystem::file_size(f.path, ec);
  }

  // ---- pass 1: the token stream with provisional ids (order of first occurrence).
  StringTable strings;  // words and gap tokens
  std::vector<uint64_t> counts;
  std::vector<uint8_t> is_word;
  StringTable lead_t, trail_t;
  std::vector<uint64_t> lead_c, trail_c;
  std::vector<uint32_t> stream;
  std::vector<uint64_t> doc_start;
  std::vector<uint32_t> doc_words;
  std::vector<std::pair<uint64_t, uint64_t>> heaps;  // (words, distinct words) checkpoints
  uint64_t words = 0, distinct = 0;
  double next_cp = 64;
  auto count_in = [](StringTable& t, std::vector<uint64_t>& c, std::string_view s) {
    const uint32_t id = t.intern(s).first;
    if (id >= c.size()) c.resize(id + 1, 0);
    ++c[id];
  };
  gtadoc::Progress progress("train: read", total_bytes, "bytes", opt.progress);
  std::string text;
  for (const InputFile& f : files) {
    read_file(f.path, text);
    doc_start.push_back(stream.size());
    uint32_t nwords = 0;
    std::string_view pending;
    tokenize(
        text, [&](std::string_view gap) { pending = gap; },
        [&](std::string_view w) {
          if (nwords == 0) {
            count_in(lead_t, lead_c, pending);
          } else if (pending != " ") {  // a gap token; a single space is implied
            const auto [id, fresh] = strings.intern(pending);
            if (fresh) {
              counts.push_back(0);
              is_word.push_back(0);
            }
            ++counts[id];
            stream.push_back(id);
          }
          const auto [id, fresh] = strings.intern(w);
          if (fresh) {
            counts.push_back(0);
            is_word.push_back(1);
            ++distinct;
          }
          ++counts[id];
          stream.push_back(id);
          ++nwords;
          if (++words >= next_cp) {
            heaps.emplace_back(words, distinct);
            next_cp *= 1.0905077326652577;  // 2^(1/8)
          }
        });
    if (nwords > 0) count_in(trail_t, trail_c, pending);
    doc_words.push_back(nwords);
    progress.add(text.size());
  }
  progress.finish();
  heaps.emplace_back(words, distinct);
  doc_start.push_back(stream.size());
  if (words == 0) throw Error("the training corpus has no words");

  Model m;
  m.order = opt.order;
  m.rare_max_count = opt.rare_max_count;
  m.info.documents = files.size();
  m.info.bytes = total_bytes;
  m.info.words = words;
  m.info.distinct_words = distinct;
  m.info.doc_words_mean = static_cast<double>(words) / static_cast<double>(files.size());
  // Heaps' law on the upper part of the curve (from 1/1000 of the corpus, at least 1000 words).
  std::tie(m.info.heaps_k, m.info.heaps_beta) =
      heaps_fit(heaps, std::max<uint64_t>(1000, words / 1000));

  // ---- ranks: kept tokens by count (ties: bytes), words and gap tokens capped.
  std::vector<uint32_t> order(strings.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return counts[a] != counts[b] ? counts[a] > counts[b] : strings.str(a) < strings.str(b);
  });
  constexpr uint32_t kDrop = UINT32_MAX;
  std::vector<uint32_t> remap(strings.size(), kUnk);
  uint32_t kept_words = 0, kept_gaps = 0;
  m.token_off = {0, 0, 0};  // BOS, UNK: empty strings
  for (uint32_t prov : order) {
    if (is_word[prov] ? kept_words >= opt.max_vocab : kept_gaps >= opt.max_gaps) continue;
    (is_word[prov] ? kept_words : kept_gaps)++;
    remap[prov] = m.tokens();
    const std::string_view s = strings.str(prov);
    m.token_bytes.insert(m.token_bytes.end(), s.begin(), s.end());
    m.token_off.push_back(m.token_bytes.size());
  }
  // Dropped gap tokens: those with a newline become "\n" (or the most frequent such token),
  // the others a single space (dropped from the stream).
  uint32_t newline = kDrop;
  for (uint32_t prov : order)
    if (!is_word[prov] && remap[prov] != kUnk && has_newline(strings.str(prov)) &&
        (newline == kDrop || strings.str(prov) == "\n")) {
      newline = remap[prov];
      if (strings.str(prov) == "\n") break;
    }
  for (uint32_t prov = 0; prov < strings.size(); ++prov)
    if (!is_word[prov] && remap[prov] == kUnk)
      remap[prov] = has_newline(strings.str(prov)) ? newline : kDrop;

  // ---- a sample of rare word types (at most 16,384 of them, evenly spread).
  {
    std::vector<uint32_t> rare;
    for (uint32_t prov = 0; prov < strings.size(); ++prov)
      if (is_word[prov] && (counts[prov] <= opt.rare_max_count || remap[prov] == kUnk))
        rare.push_back(prov);
    const size_t want = 16384;
    m.tail_off.push_back(0);
    for (size_t i = 0; i < std::min(want, rare.size()); ++i) {
      const std::string_view w = strings.str(rare[i * rare.size() / std::min(want, rare.size())]);
      m.tail_bytes.insert(m.tail_bytes.end(), w.begin(), w.end());
      m.tail_off.push_back(m.tail_bytes.size());
    }
  }

  // ---- final ids in the stream; unigram counts.
  strings = StringTable();  // free the strings: everything below works on ids
  std::vector<uint64_t>().swap(counts);
  {
    uint64_t w = 0;
    for (size_t d = 0; d + 1 < doc_start.size(); ++d) {
      const uint64_t begin = doc_start[d], end = doc_start[d + 1];
      doc_start[d] = w;
      for (uint64_t i = begin; i < end; ++i)
        if (remap[stream[i]] != kDrop) stream[w++] = remap[stream[i]];
    }
    doc_start.back() = w;
    stream.resize(w);
  }
  std::vector<uint32_t>().swap(remap);
  const uint32_t V = m.tokens();
  m.unigram.assign(V, 0);
  for (uint32_t t : stream) ++m.unigram[t];

  // ---- successor counts: order 1 (each token, and BOS: first words of documents) and order 2
  // (token pairs), each sorted by context, then count descending.
  using Counted = std::vector<std::pair<uint64_t, uint64_t>>;  // (key, count)
  auto sorted_entries = [](KeyCounter& kc, unsigned ctx_shift) {
    Counted e;
    e.reserve(kc.size());
    kc.for_each([&](uint64_t k, uint64_t c) { e.emplace_back(k, c); });
    kc.clear();
    std::sort(e.begin(), e.end(), [ctx_shift](const auto& x, const auto& y) {
      const uint64_t cx = x.first >> ctx_shift, cy = y.first >> ctx_shift;
      if (cx != cy) return cx < cy;
      return x.second != y.second ? x.second > y.second : x.first < y.first;
    });
    return e;
  };
  Counted e1, e2;
  {
    KeyCounter bi;  // (a << 32) | b
    for (size_t d = 0; d + 1 < doc_start.size(); ++d) {
      uint32_t prev = kBos;
      for (uint64_t i = doc_start[d]; i < doc_start[d + 1]; ++i) {
        bi.add((static_cast<uint64_t>(prev) << 32) | stream[i]);
        prev = stream[i];
      }
    }
    e1 = sorted_entries(bi, 32);
  }
  // Order-2 contexts seen at least min_context_count times, the most frequent max_contexts.
  struct Ctx {
    uint64_t key21;  // (a << 21) | b
    uint64_t n;
    size_t begin, end;
  };
  std::vector<Ctx> ctxs;
  if (opt.order >= 2) {
    KeyCounter tri;  // (a << 42) | (b << 21) | c
    for (size_t d = 0; d + 1 < doc_start.size(); ++d) {
      uint64_t a = kBos, b = kBos;
      for (uint64_t i = doc_start[d]; i < doc_start[d + 1]; ++i) {
        tri.add((a << 42) | (b << 21) | stream[i]);
        a = b;
        b = stream[i];
      }
    }
    e2 = sorted_entries(tri, 21);
    for (size_t i = 0; i < e2.size();) {
      size_t j = i;
      uint64_t n = 0;
      while (j < e2.size() && (e2[j].first >> 21) == (e2[i].first >> 21)) n += e2[j++].second;
      if (n >= opt.min_context_count) ctxs.push_back({e2[i].first >> 21, n, i, j});
      i = j;
    }
    if (ctxs.size() > opt.max_contexts) {
      std::nth_element(
          ctxs.begin(), ctxs.begin() + opt.max_contexts, ctxs.end(),
          [](const Ctx& x, const Ctx& y) { return x.n != y.n ? x.n > y.n : x.key21 < y.key21; });
      ctxs.resize(opt.max_contexts);
      std::sort(ctxs.begin(), ctxs.end(),
                [](const Ctx& x, const Ctx& y) { return x.key21 < y.key21; });
    }
  }
  std::vector<uint32_t>().swap(stream);

  // The size budget: successors seen fewer than t times are left to the backoff, t the
  // smallest count that keeps at most max_entries successors (1 for small corpora).
  auto kept_at = [&](uint64_t t) {
    uint64_t total = 0;
    for (size_t i = 0; i < e1.size();) {  // order 1: per context, the top K with count >= t
      size_t j = i, k = 0;
      while (j < e1.size() && (e1[j].first >> 32) == (e1[i].first >> 32)) {
        if (e1[j].second >= t && k < opt.max_successors1) ++k;
        ++j;
      }
      total += k;
      i = j;
    }
    for (const Ctx& c : ctxs) {
      size_t k = 0;
      for (size_t j = c.begin; j < c.end && e2[j].second >= t && k < opt.max_successors2; ++j) ++k;
      total += k;
    }
    return total;
  };
  uint64_t min_count = 1;
  while (min_count < (uint64_t{1} << 30) && kept_at(min_count) > opt.max_entries)
    min_count = min_count < 8 ? min_count + 1 : min_count * 2;
  m.min_successor_count = min_count;

  std::vector<std::pair<uint32_t, uint64_t>> succ;
  m.o1.assign(V, Context{0, 0, 0, 0});
  for (size_t i = 0; i < e1.size();) {
    const uint32_t ctx = static_cast<uint32_t>(e1[i].first >> 32);
    succ.clear();
    for (; i < e1.size() && (e1[i].first >> 32) == ctx; ++i)
      succ.emplace_back(static_cast<uint32_t>(e1[i].first), e1[i].second);
    m.o1[ctx] = add_successors(m.succ, succ, opt.max_successors1, min_count);
  }
  Counted().swap(e1);
  for (const Ctx& c : ctxs) {
    succ.clear();
    for (size_t i = c.begin; i < c.end; ++i)
      succ.emplace_back(static_cast<uint32_t>(e2[i].first & 0x1fffff), e2[i].second);
    const size_t mark = m.succ.size();
    const Context list = add_successors(m.succ, succ, opt.max_successors2, min_count);
    if (list.count == 0) {  // nothing kept: the same as no context (backoff)
      m.succ.resize(mark);
      continue;
    }
    m.o2_key.push_back(((c.key21 >> 21) << 32) | (c.key21 & 0x1fffff));
    m.o2.push_back(list);
  }

  // ---- gaps and document lengths.
  m.lead_gaps = make_dist(lead_t, lead_c, 64);
  m.trail_gaps = make_dist(trail_t, trail_c, 64);
  std::sort(doc_words.begin(), doc_words.end());
  const size_t samples = 65536;
  if (doc_words.size() > samples) {  // evenly spaced quantiles
    std::vector<uint32_t> q(samples);
    for (size_t i = 0; i < samples; ++i)
      q[i] = doc_words[(2 * i + 1) * doc_words.size() / (2 * samples)];
    doc_words = std::move(q);
  }
  m.doc_words = std::move(doc_words);
  return m;
}

// ---------------------------------------------------------------- model file
//
// "GTADOCGEN1\n" then sections in a fixed order, each a u64 element count followed by the raw
// little-endian elements; strings as (u64 length, bytes). Written to a temporary name and renamed.

namespace {

constexpr char kMagic[] = "GTADOCGEN1\n";

struct Writer {
  std::string buf;
  template <typename T>
  void put(const T& v) {
    buf.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    put<uint64_t>(v.size());
    buf.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void str(std::string_view s) {
    put<uint64_t>(s.size());
    buf.append(s);
  }
  void dist(const StringDist& d) {
    put<uint64_t>(d.values.size());
    for (const std::string& s : d.values) str(s);
    vec(d.cum);
  }
};

struct Reader {
  const std::string& buf;
  const std::string& path;
  size_t pos = 0;
  [[noreturn]] void bad() const { throw Error(path + ": truncated or corrupt gtadoc_gen model"); }
  template <typename T>
  T get() {
    if (buf.size() - pos < sizeof(T)) bad();
    T v;
    std::memcpy(&v, buf.data() + pos, sizeof v);
    pos += sizeof v;
    return v;
  }
  template <typename T>
  void vec(std::vector<T>& v) {
    const uint64_t n = get<uint64_t>();
    if (n > (buf.size() - pos) / sizeof(T)) bad();
    v.resize(n);
    std::memcpy(v.data(), buf.data() + pos, n * sizeof(T));
    pos += n * sizeof(T);
  }
  std::string str() {
    const uint64_t n = get<uint64_t>();
    if (n > buf.size() - pos) bad();
    std::string s = buf.substr(pos, n);
    pos += n;
    return s;
  }
  void dist(StringDist& d) {
    const uint64_t n = get<uint64_t>();
    if (n > buf.size() - pos) bad();
    d.values.resize(n);
    for (std::string& s : d.values) s = str();
    vec(d.cum);
    if (d.cum.size() != n) bad();
  }
};

}  // namespace

void check_model_output(const std::string& path) {
  // Replaced: nothing, or a previous model. Never another file, a directory or a device (the
  // model is renamed into place, which would replace even /dev/null).
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::symlink_status(path, ec);
  if (!std::filesystem::exists(st)) return;
  if (!std::filesystem::is_regular_file(st))
    throw UsageError("-o " + path + ": exists and is not a regular file");
  std::string head;
  {
    std::ifstream in(path, std::ios::binary);
    head.resize(sizeof kMagic - 1);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  }
  if (std::filesystem::file_size(path, ec) > 0 && head != kMagic)
    throw UsageError("-o " + path + ": exists and is not a gtadoc_gen model (not replaced)");
}

void save_model(const Model& m, const std::string& path) {
  check_model_output(path);
  Writer w;
  w.buf.append(kMagic);
  w.put(m.info);
  w.put<uint32_t>(m.rare_max_count);
  w.put<int32_t>(m.order);
  w.put<uint64_t>(m.min_successor_count);
  w.vec(m.token_bytes);
  w.vec(m.token_off);
  w.vec(m.unigram);
  w.vec(m.succ);
  w.vec(m.o1);
  w.vec(m.o2_key);
  w.vec(m.o2);
  w.dist(m.lead_gaps);
  w.dist(m.trail_gaps);
  w.vec(m.doc_words);
  w.vec(m.tail_bytes);
  w.vec(m.tail_off);
  w.buf.append(kMagic);  // trailer: a truncated file is recognised
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path + ": cannot write: " + std::strerror(errno));
    out.write(w.buf.data(), static_cast<std::streamsize>(w.buf.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error(path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw Error(path + ": " + std::strerror(e));
  }
}

Model load_model(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(path + ": no such model file (make one with gtadoc_gen train)");
  std::string buf;
  read_file(path, buf);
  const size_t ml = sizeof kMagic - 1;
  if (buf.size() < 2 * ml || buf.compare(0, ml, kMagic) != 0)
    throw Error(path + ": not a gtadoc_gen model");
  if (buf.compare(buf.size() - ml, ml, kMagic) != 0)
    throw Error(path + ": truncated or corrupt gtadoc_gen model");
  Reader r{buf, path, ml};
  Model m;
  m.info = r.get<TrainInfo>();
  m.rare_max_count = r.get<uint32_t>();
  m.order = r.get<int32_t>();
  m.min_successor_count = r.get<uint64_t>();
  r.vec(m.token_bytes);
  r.vec(m.token_off);
  r.vec(m.unigram);
  r.vec(m.succ);
  r.vec(m.o1);
  r.vec(m.o2_key);
  r.vec(m.o2);
  r.dist(m.lead_gaps);
  r.dist(m.trail_gaps);
  r.vec(m.doc_words);
  r.vec(m.tail_bytes);
  r.vec(m.tail_off);
  if (r.pos + ml != buf.size()) r.bad();
  // Consistency: every index in range and every list ending at its `kept` mass, so sampling
  // never reads out of bounds.
  const uint64_t V = m.token_off.size() ? m.token_off.size() - 1 : 0;
  bool ok = V >= 2 && m.unigram.size() == V && m.o1.size() == V && m.o2.size() == m.o2_key.size() &&
            m.token_off.back() == m.token_bytes.size() && !m.doc_words.empty() &&
            !m.tail_off.empty() && m.tail_off.back() == m.tail_bytes.size() && m.order >= 1 &&
            m.order <= 2;
  for (uint64_t i = 0; ok && i < V; ++i) ok = m.token_off[i] <= m.token_off[i + 1];
  auto list_ok = [](const Context& c, const std::vector<Entry>& pool, uint64_t ids) {
    if (static_cast<uint64_t>(c.begin) + c.count > pool.size() || c.kept > c.total) return false;
    uint32_t prev = 0;
    for (uint32_t i = c.begin; i < c.begin + c.count; ++i) {
      if (pool[i].id >= ids || pool[i].cum <= prev) return false;
      prev = pool[i].cum;
    }
    return prev == c.kept;
  };
  for (const Context& c : m.o1) ok = ok && list_ok(c, m.succ, V);
  for (const Context& c : m.o2) ok = ok && list_ok(c, m.succ, V);
  for (size_t i = 1; ok && i < m.tail_off.size(); ++i) ok = m.tail_off[i - 1] <= m.tail_off[i];
  for (size_t i = 1; ok && i < m.o2_key.size(); ++i) ok = m.o2_key[i - 1] < m.o2_key[i];
  for (const StringDist* d : {&m.lead_gaps, &m.trail_gaps})
    for (size_t i = 0; ok && i < d->cum.size(); ++i) ok = d->cum[i] > (i ? d->cum[i - 1] : 0);
  if (!ok) r.bad();
  return m;
}

}  // namespace gtagen
