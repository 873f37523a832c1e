// Raw-text GPU baseline: the device pipeline (see raw_gpu.cuh for the design in one page).
//
// Invariants the code relies on:
//  * The device text is the documents in id order, each followed by one ' ' separator, so no
//    word spans two documents and every word ends before the end of the buffer; document d
//    starts at doc_start[d] (strictly increasing: each document has at least its separator).
//  * Words are kept in text order (stream compaction is order preserving), so word index order
//    is (document, position) order and an n-gram window is n consecutive word indices whose
//    first and last words lie in the same document.
//  * Word ids are byte-order ranks of the distinct normalized words, so sorting by id is sorting
//    by the word's bytes; for sequences the leading words use their rank in the order of
//    "word + ' '" (raw_gpu_device.h: space_less), which makes the rank tuple order equal to the
//    joined-string order.
//  * Every sort that decides an output order is a stable LSD radix sort, so a later pass by a
//    more significant key keeps the order of the earlier ones for ties.
#include "tests/reference/gpu/raw_gpu.cuh"

#include <cuda_runtime.h>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/cub.cuh>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "tests/reference/gpu/raw_gpu_device.h"
#include "worker/device/device_buffer.cuh"
#include "worker/device/primitives.cuh"

namespace gtadoc {
namespace rawgpu {
namespace {

using gpu::bits_for;
using gpu::DeviceBuffer;
using gpu::global_stride;
using gpu::global_thread;
using gpu::MemoryPool;
using gpu::Stream;

constexpr int kMaxFields = 9;                  ///< a document plus 8 words
constexpr uint64_t kMaxWords = 0xFFFFFFFEull;  ///< word indices, counts and ids are u32

/// One word: its normalized bytes are text[begin, begin + len); doc is its document id.
struct Span {
  uint64_t begin;
  uint32_t len;
  uint32_t doc;
};

/// Launches a grid-stride kernel over n items (nothing for n == 0) and checks the launch.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), uint64_t n, cudaStream_t stream, Args&&... args) {
  if (n == 0) return;
  kernel<<<gpu::grid_for(n), gpu::kBlock, 0, stream>>>(std::forward<Args>(args)...);
  GTADOC_CHECK_LAUNCH();
}

/// Runs a CUB device-wide call twice: once for its temporary storage size, once for real.
template <class Call>
void cub_call(MemoryPool& pool, Call&& call) {
  size_t bytes = 0;
  CUDA_TRY(call(static_cast<void*>(nullptr), bytes));
  DeviceBuffer<uint8_t> temp(std::max<size_t>(bytes, 1), pool);
  CUDA_TRY(call(static_cast<void*>(temp.data()), bytes));
}

/// Page-locked host memory (the concatenated text: fast upload, and the host's copy of the
/// words for formatting).
class PinnedText {
 public:
  explicit PinnedText(size_t n) : n_(n) {
    if (n_ != 0) CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&p_), n_));
  }
  ~PinnedText() {
    if (p_ != nullptr) cudaFreeHost(p_);
  }
  PinnedText(const PinnedText&) = delete;
  PinnedText& operator=(const PinnedText&) = delete;
  char* data() { return p_; }

 private:
  char* p_ = nullptr;
  size_t n_ = 0;
};

class Clock {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// ------------------------------------------------------------------ parallel split (tokenize)

__global__ void lowercase_kernel(uint8_t* text, uint64_t n) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) text[i] = ascii_lower(text[i]);
}

/// Byte i starts a word: it is not whitespace and the byte before it is (or there is none).
struct IsWordStart {
  const uint8_t* text;
  __device__ bool operator()(uint64_t i) const {
    return !is_ws(text[i]) && (i == 0 || is_ws(text[i - 1]));
  }
};
struct WordStartCount {
  const uint8_t* text;
  __device__ uint64_t operator()(uint64_t i) const { return IsWordStart{text}(i) ? 1 : 0; }
};
/// Byte i ends a word (is its last byte): not whitespace, and the next byte is (or none).
struct IsWordLast {
  const uint8_t* text;
  uint64_t n;
  __device__ bool operator()(uint64_t i) const {
    return !is_ws(text[i]) && (i + 1 == n || is_ws(text[i + 1]));
  }
};

/// The k-th word start pairs with the k-th word end. Applies --alnum and finds the document.
__global__ void spans_kernel(const uint64_t* starts, const uint64_t* lasts, uint64_t n,
                             const uint8_t* text, const uint64_t* doc_start, uint32_t ndocs,
                             bool alnum, Span* out, unsigned* too_long) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    uint64_t begin = starts[i];
    uint64_t end = lasts[i] + 1;
    uint32_t lo = 0, hi = ndocs;  // doc_start[lo] <= begin < doc_start[hi]
    while (hi - lo > 1) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (doc_start[mid] <= begin) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    if (alnum) alnum_trim(text, begin, end);
    if (end - begin > 0xFFFFFFFFull) {
      *too_long = 1u;
      end = begin;
    }
    out[i] = Span{begin, static_cast<uint32_t>(end - begin), lo};
  }
}

struct NonEmpty {
  __device__ bool operator()(const Span& s) const { return s.len != 0; }
};

// ------------------------------------------------------------------ group (identify words)

__global__ void hash_kernel(const Span* spans, uint64_t n, const uint8_t* text, uint64_t mask,
                            uint64_t* hashes, uint32_t* idx) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const Span s = spans[i];
    hashes[i] = word_hash(text + s.begin, s.len) & mask;
    idx[i] = static_cast<uint32_t>(i);
  }
}

/// Over hash-sorted words: a group starts where the hash changes; equal neighbouring hashes
/// must be equal words, otherwise the hash collided and *collision is set.
__global__ void hash_heads_kernel(const uint64_t* hashes, const uint32_t* idx, uint64_t n,
                                  const Span* spans, const uint8_t* text, uint32_t* heads,
                                  unsigned* collision) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    if (i == 0 || hashes[i] != hashes[i - 1]) {
      heads[i] = 1;
      continue;
    }
    heads[i] = 0;
    const Span a = spans[idx[i]];
    const Span b = spans[idx[i - 1]];
    if (!bytes_equal(text + a.begin, a.len, text + b.begin, b.len)) *collision = 1u;
  }
}

/// Over byte-sorted words: a group starts where the bytes change.
__global__ void byte_heads_kernel(const uint32_t* idx, uint64_t n, const Span* spans,
                                  const uint8_t* text, uint32_t* heads) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    if (i == 0) {
      heads[i] = 1;
      continue;
    }
    const Span a = spans[idx[i]];
    const Span b = spans[idx[i - 1]];
    heads[i] = bytes_equal(text + a.begin, a.len, text + b.begin, b.len) ? 0u : 1u;
  }
}

/// Byte order of words given by index (through `rep` when not null: group -> word).
struct ByteLess {
  const Span* spans;
  const uint32_t* rep;
  const uint8_t* text;
  __device__ bool operator()(uint32_t a, uint32_t b) const {
    const Span x = spans[rep != nullptr ? rep[a] : a];
    const Span y = spans[rep != nullptr ? rep[b] : b];
    return bytes_compare(text + x.begin, x.len, text + y.begin, y.len) < 0;
  }
};
/// Order of "word + ' '" of words given by index (through `rep`).
struct SpaceLess {
  const Span* spans;
  const uint32_t* rep;
  const uint8_t* text;
  __device__ bool operator()(uint32_t a, uint32_t b) const {
    const Span x = spans[rep[a]];
    const Span y = spans[rep[b]];
    return space_less(text + x.begin, x.len, text + y.begin, y.len);
  }
};

template <class Less>
void merge_sort_u32(DeviceBuffer<uint32_t>& keys, uint64_t n, Less less, MemoryPool& pool) {
  if (n < 2) return;
  uint32_t* k = keys.data();
  cub_call(pool, [&](void* t, size_t& b) {
    return cub::DeviceMergeSort::SortKeys(t, b, k, static_cast<int64_t>(n), less, pool.stream());
  });
}

/// rank[perm[r]] = r, and by_rank[r] = rep[perm[r]] (when rep is not null).
__global__ void invert_kernel(const uint32_t* perm, uint64_t n, const uint32_t* rep, uint32_t* rank,
                              uint32_t* by_rank) {
  for (uint64_t r = global_thread(); r < n; r += global_stride()) {
    rank[perm[r]] = static_cast<uint32_t>(r);
    if (rep != nullptr) by_rank[r] = rep[perm[r]];
  }
}

/// wid[idx[i]] = rank of the group of sorted position i (gid is the inclusive scan of heads).
__global__ void word_ids_kernel(const uint32_t* idx, const uint32_t* gid, uint64_t n,
                                const uint32_t* rank, uint32_t* wid) {
  for (uint64_t i = global_thread(); i < n; i += global_stride()) {
    const uint32_t g = gid[i] - 1;
    wid[idx[i]] = rank != nullptr ? rank[g] : g;
  }
}

// ------------------------------------------------------------------ reduce (task tuples)

/// Key fields of a word occurrence i. mode 0: [w]; 1: [w, doc]; 2: [doc, w].
struct WordFields {
  const Span* spans;
  const uint32_t* wid;
  int mode;
  __device__ uint32_t key(uint32_t i, int f) const {
    const bool is_doc = (mode == 1 && f == 1) || (mode == 2 && f == 0);
    return is_doc ? spans[i].doc : wid[i];
  }
  __device__ uint32_t out(uint32_t i, int f) const { return key(i, f); }
};

/// Key fields of n-gram window i (starting at word win[i]). mode 0: [s1..sn]; 1: [doc, s1..sn];
/// 2: [s1..sn, doc]. In keys the first n-1 words are space ranks and the last a plain rank
/// (joined-string order); in output rows all words are plain ranks (word ids).
struct SeqFields {
  const Span* spans;
  const uint32_t* wid;
  const uint32_t* space_rank;
  const uint32_t* win;
  int n;
  int mode;
  __device__ uint32_t value(uint32_t i, int f, bool as_key) const {
    const uint32_t p = win[i];
    if (mode == 1) {
      if (f == 0) return spans[p].doc;
      --f;
    } else if (mode == 2 && f == n) {
      return spans[p].doc;
    }
    const uint32_t w = wid[p + f];
    return (as_key && f < n - 1) ? space_rank[w] : w;
  }
  __device__ uint32_t key(uint32_t i, int f) const { return value(i, f, true); }
  __device__ uint32_t out(uint32_t i, int f) const { return value(i, f, false); }
};

/// Window p (n words from word p) is valid when its first and last words share a document.
struct WindowInDoc {
  const Span* spans;
  uint32_t n;
  __device__ bool operator()(uint32_t p) const { return spans[p].doc == spans[p + n - 1].doc; }
};

struct ChunkSpec {
  int first;
  int last;
  int bits[kMaxFields];
};

template <class F>
__global__ void chunk_keys_kernel(const uint32_t* perm, uint64_t m, F fields, ChunkSpec spec,
                                  uint64_t* keys) {
  for (uint64_t k = global_thread(); k < m; k += global_stride()) {
    const uint32_t item = perm[k];
    uint64_t key = 0;
    for (int f = spec.first; f <= spec.last; ++f) {
      key = (key << spec.bits[f]) | fields.key(item, f);
    }
    keys[k] = key;
  }
}

/// heads[k] = 1 where the sorted item perm[k] differs from perm[k - 1] in one of the first nf
/// key fields.
template <class F>
__global__ void field_heads_kernel(const uint32_t* perm, uint64_t m, F fields, int nf,
                                   uint32_t* heads) {
  for (uint64_t k = global_thread(); k < m; k += global_stride()) {
    uint32_t head = k == 0 ? 1u : 0u;
    if (k != 0) {
      const uint32_t a = perm[k];
      const uint32_t b = perm[k - 1];
      for (int f = 0; f < nf; ++f) {
        if (fields.key(a, f) != fields.key(b, f)) {
          head = 1u;
          break;
        }
      }
    }
    heads[k] = head;
  }
}

/// Run r covers sorted positions [pos[r], pos[r + 1]) (pos[R] = m).
__global__ void runs_kernel(const uint32_t* perm, const uint32_t* pos, uint64_t runs,
                            uint32_t* rep_item, uint32_t* count) {
  for (uint64_t r = global_thread(); r < runs; r += global_stride()) {
    rep_item[r] = perm[pos[r]];
    count[r] = pos[r + 1] - pos[r];
  }
}

enum class OrderMode { kKeep, kCount, kDocCount, kGroupCount };

/// key = (prefix << 32) | (max - count): prefix asc, then count desc; the stable sort keeps
/// the key order of the runs for equal (prefix, count).
template <class F>
__global__ void order_keys_kernel(const uint32_t* rep_item, const uint32_t* count, uint64_t runs,
                                  F fields, OrderMode mode, const uint32_t* group, uint64_t* keys,
                                  uint32_t* vals) {
  for (uint64_t r = global_thread(); r < runs; r += global_stride()) {
    uint64_t prefix = 0;
    if (mode == OrderMode::kDocCount) prefix = fields.key(rep_item[r], 0);
    if (mode == OrderMode::kGroupCount) prefix = group[r];
    keys[r] = (prefix << 32) | static_cast<uint64_t>(0xFFFFFFFFu - count[r]);
    vals[r] = static_cast<uint32_t>(r);
  }
}

template <class F>
__global__ void rows_kernel(const uint32_t* order, uint64_t rows, const uint32_t* rep_item,
                            const uint32_t* count, F fields, int nf, uint32_t* out_fields,
                            uint32_t* out_counts) {
  for (uint64_t r = global_thread(); r < rows; r += global_stride()) {
    const uint32_t run = order != nullptr ? order[r] : static_cast<uint32_t>(r);
    const uint32_t item = rep_item[run];
    for (int f = 0; f < nf; ++f) out_fields[r * nf + f] = fields.out(item, f);
    out_counts[r] = count[run];
  }
}

/// Sorted positions k of `heads` that are set (u32 positions); returns their number.
uint64_t select_heads(const DeviceBuffer<uint32_t>& heads, uint64_t n, DeviceBuffer<uint32_t>& out,
                      MemoryPool& pool) {
  DeviceBuffer<uint64_t> num(1, pool);
  const uint32_t* h = heads.data();
  uint32_t* o = out.data();
  uint64_t* c = num.data();
  cub_call(pool, [&](void* t, size_t& b) {
    return cub::DeviceSelect::Flagged(t, b, thrust::counting_iterator<uint32_t>(0), h, o, c,
                                      static_cast<int64_t>(n), pool.stream());
  });
  return num.get(0);
}

/// The rows of a task: items 0..m-1 (words or windows) sorted by their key fields, runs of
/// equal keys counted, runs put in output order, the first `limit` rows downloaded.
template <class F>
Rows reduce_rows(uint64_t m, const F& fields, const std::vector<int>& bits, OrderMode mode,
                 int group_fields, uint64_t limit, MemoryPool& pool) {
  cudaStream_t st = pool.stream();
  const int nf = static_cast<int>(bits.size());
  GTADOC_EXPECTS(nf >= 1 && nf <= kMaxFields, "too many key fields");
  Rows rows;
  rows.width = static_cast<uint32_t>(nf);
  if (m == 0) return rows;

  // 1. Stable LSD passes over packed 64-bit chunks of the key fields, least significant first.
  DeviceBuffer<uint32_t> perm(m, pool), perm_alt(m, pool);
  gpu::iota_async(perm.data(), m, st);
  {
    DeviceBuffer<uint64_t> keys(m, pool), keys_alt(m, pool);
    for (const KeyChunk& c : plan_key_chunks(bits)) {
      ChunkSpec spec{};
      spec.first = c.first;
      spec.last = c.last;
      for (int f = 0; f < nf; ++f) spec.bits[f] = bits[f];
      launch(chunk_keys_kernel<F>, m, st, perm.data(), m, fields, spec, keys.data());
      gpu::sort_pairs(keys, keys_alt, perm, perm_alt, m, c.bits, pool);
    }
  }
  perm_alt.reset();

  // 2. Runs of equal keys: representative item and count (the work per run is constant, so a
  //    hugely frequent key costs no more than a rare one).
  uint64_t runs = 0;
  DeviceBuffer<uint32_t> rep_item, count;
  {
    DeviceBuffer<uint32_t> heads(m, pool), pos(m + 1, pool);
    launch(field_heads_kernel<F>, m, st, perm.data(), m, fields, nf, heads.data());
    runs = select_heads(heads, m, pos, pool);
    gpu::fill_async(pos.data() + runs, static_cast<uint32_t>(m), 1, st);
    rep_item = DeviceBuffer<uint32_t>(runs, pool);
    count = DeviceBuffer<uint32_t>(runs, pool);
    launch(runs_kernel, runs, st, perm.data(), pos.data(), runs, rep_item.data(), count.data());
  }
  perm.reset();

  // 3. Output order of the runs (they are in key order now).
  DeviceBuffer<uint32_t> order;
  if (mode != OrderMode::kKeep && runs > 1) {
    int prefix_bits = 0;
    DeviceBuffer<uint32_t> group;
    if (mode == OrderMode::kDocCount) prefix_bits = bits[0];
    if (mode == OrderMode::kGroupCount) {
      // Group = 1 + index of the run's sequence among distinct sequences (inclusive scan).
      DeviceBuffer<uint32_t> heads(runs, pool);
      group = DeviceBuffer<uint32_t>(runs, pool);
      launch(field_heads_kernel<F>, runs, st, rep_item.data(), runs, fields, group_fields,
             heads.data());
      const uint32_t* h = heads.data();
      uint32_t* g = group.data();
      cub_call(pool, [&](void* t, size_t& b) {
        return cub::DeviceScan::InclusiveSum(t, b, h, g, runs, st);
      });
      prefix_bits = bits_for(runs);
    }
    DeviceBuffer<uint64_t> keys(runs, pool), keys_alt(runs, pool);
    DeviceBuffer<uint32_t> vals(runs, pool), vals_alt(runs, pool);
    launch(order_keys_kernel<F>, runs, st, rep_item.data(), count.data(), runs, fields, mode,
           group.data(), keys.data(), vals.data());
    gpu::sort_pairs(keys, keys_alt, vals, vals_alt, runs, 32 + prefix_bits, pool);
    order = std::move(vals);
  }

  // 4. Rows in output order, cut to `limit`, to the host.
  const uint64_t out_rows = std::min<uint64_t>(runs, limit);
  DeviceBuffer<uint32_t> out_fields(out_rows * nf, pool), out_counts(out_rows, pool);
  launch(rows_kernel<F>, out_rows, st, order.data(), out_rows, rep_item.data(), count.data(),
         fields, nf, out_fields.data(), out_counts.data());
  rows.fields = out_fields.to_host();
  const std::vector<uint32_t> counts = out_counts.to_host();
  rows.counts.assign(counts.begin(), counts.end());
  return rows;
}

// ------------------------------------------------------------------ the pipeline

std::string run(const std::vector<RawDocument>& docs, const QueryOptions& q, OutputFormat fmt,
                RawGpuTimings* timings, const DebugOptions& debug) {
  if (is_sequence_task(q.task) && (q.n < 2 || q.n > 8)) {
    throw UsageError("--n must be between 2 and 8, got " + std::to_string(q.n));
  }
  RawGpuTimings t;
  Clock clock;

  const std::vector<size_t> order = sorted_doc_order(docs);
  const uint64_t ndocs = docs.size();
  if (ndocs > 0xFFFFFFFFull) {
    throw ResourceError("raw-text GPU baseline: more than 2^32 - 1 documents");
  }
  std::vector<std::string_view> names(ndocs);
  std::vector<uint64_t> doc_start(ndocs + 1, 0);
  for (uint64_t d = 0; d < ndocs; ++d) {
    names[d] = docs[order[d]].name;
    doc_start[d + 1] = doc_start[d] + docs[order[d]].text.size() + 1;
  }
  const uint64_t total = doc_start[ndocs];
  t.bytes = total;

  Rows rows;
  rows.width = 1;
  std::vector<std::string> words;
  if (total == 0) {
    // No document at all: nothing to put on the device.
    t.upload_s = clock.lap();
    t.format_s = clock.lap();
    std::string out = format_output(names, words, rows, q, fmt);
    if (timings != nullptr) *timings = t;
    return out;
  }

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {  // a probe, not a failure
    (void)cudaGetLastError();
    throw ResourceError("no CUDA device for the raw-text GPU baseline");
  }
  int device = 0;
  CUDA_TRY(cudaGetDevice(&device));
  Stream stream;  // declared before the pool and the buffers: destroyed after them
  MemoryPool pool(device, stream.get());
  cudaStream_t st = stream.get();

  // ---- upload: documents in id order, each followed by one ' '.
  PinnedText host(total);
  for (uint64_t d = 0; d < ndocs; ++d) {
    const std::string& text = docs[order[d]].text;
    if (!text.empty()) std::memcpy(host.data() + doc_start[d], text.data(), text.size());
    host.data()[doc_start[d + 1] - 1] = ' ';
  }
  DeviceBuffer<uint8_t> text(total, pool);
  CUDA_TRY(cudaMemcpyAsync(text.data(), host.data(), total, cudaMemcpyHostToDevice, st));
  DeviceBuffer<uint64_t> dstart(doc_start, pool);
  stream.synchronize();
  t.upload_s = clock.lap();

  // ---- tokenize: flags per byte, compaction of the start and end positions.
  const uint8_t* tx = text.data();
  if (q.lowercase) launch(lowercase_kernel, total, st, text.data(), total);
  uint64_t nwords = 0;
  {
    DeviceBuffer<uint64_t> num(1, pool);
    uint64_t* c = num.data();
    auto flags =
        thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0), WordStartCount{tx});
    cub_call(pool, [&](void* tmp, size_t& b) {
      return cub::DeviceReduce::Sum(tmp, b, flags, c, total, st);
    });
    nwords = num.get(0);
  }
  if (nwords > kMaxWords) {
    throw ResourceError("raw-text GPU baseline: more than 2^32 - 2 words");
  }
  DeviceBuffer<Span> spans;
  {
    DeviceBuffer<uint64_t> starts(nwords, pool), lasts(nwords, pool), num(2, pool);
    uint64_t* s = starts.data();
    uint64_t* l = lasts.data();
    uint64_t* c = num.data();
    if (nwords > 0) {
      cub_call(pool, [&](void* tmp, size_t& b) {
        return cub::DeviceSelect::If(tmp, b, thrust::counting_iterator<uint64_t>(0), s, c,
                                     static_cast<int64_t>(total), IsWordStart{tx}, st);
      });
      cub_call(pool, [&](void* tmp, size_t& b) {
        return cub::DeviceSelect::If(tmp, b, thrust::counting_iterator<uint64_t>(0), l, c + 1,
                                     static_cast<int64_t>(total), IsWordLast{tx, total}, st);
      });
      const std::vector<uint64_t> got = num.to_host();
      GTADOC_EXPECTS(got[0] == nwords && got[1] == nwords, "word starts and ends disagree");
    }
    DeviceBuffer<unsigned> too_long(1, pool);
    too_long.memset_async(0);
    spans = DeviceBuffer<Span>(nwords, pool);
    launch(spans_kernel, nwords, st, starts.data(), lasts.data(), nwords, tx, dstart.data(),
           static_cast<uint32_t>(ndocs), q.alnum, spans.data(), too_long.data());
    if (too_long.get(0) != 0) {
      throw ResourceError("raw-text GPU baseline: a word of 4 GiB or more");
    }
  }
  if (q.alnum && nwords > 0) {
    DeviceBuffer<Span> kept(nwords, pool);
    DeviceBuffer<uint64_t> num(1, pool);
    const Span* in = spans.data();
    Span* out = kept.data();
    uint64_t* c = num.data();
    cub_call(pool, [&](void* tmp, size_t& b) {
      return cub::DeviceSelect::If(tmp, b, in, out, c, static_cast<int64_t>(nwords), NonEmpty{},
                                   st);
    });
    nwords = num.get(0);
    spans = std::move(kept);
  }
  t.words = nwords;
  stream.synchronize();
  t.tokenize_s = clock.lap();

  // ---- group: word ids = byte-order ranks of the distinct words.
  const bool sequences = is_sequence_task(q.task);
  uint64_t distinct = 0;
  DeviceBuffer<uint32_t> wid, space_rank;
  std::vector<Span> rep_spans;  // the representative occurrence of each word id
  if (nwords > 0) {
    DeviceBuffer<uint32_t> idx(nwords, pool);
    DeviceBuffer<uint32_t> heads(nwords, pool);
    bool fallback = debug.force_byte_grouping;
    if (!fallback) {
      DeviceBuffer<uint64_t> hashes(nwords, pool), hashes_alt(nwords, pool);
      DeviceBuffer<uint32_t> idx_alt(nwords, pool);
      launch(hash_kernel, nwords, st, spans.data(), nwords, tx, debug.hash_mask, hashes.data(),
             idx.data());
      gpu::sort_pairs(hashes, hashes_alt, idx, idx_alt, nwords, 64, pool);
      DeviceBuffer<unsigned> collision(1, pool);
      collision.memset_async(0);
      launch(hash_heads_kernel, nwords, st, hashes.data(), idx.data(), nwords, spans.data(), tx,
             heads.data(), collision.data());
      fallback = collision.get(0) != 0;
    }
    if (fallback) {
      // Exact grouping by the bytes themselves: equal words end up adjacent, in byte order.
      gpu::iota_async(idx.data(), nwords, st);
      merge_sort_u32(idx, nwords, ByteLess{spans.data(), nullptr, tx}, pool);
      launch(byte_heads_kernel, nwords, st, idx.data(), nwords, spans.data(), tx, heads.data());
    }
    t.hash_fallback = fallback;

    DeviceBuffer<uint32_t> gid(nwords, pool), head_pos(nwords, pool);
    {
      const uint32_t* h = heads.data();
      uint32_t* g = gid.data();
      cub_call(pool, [&](void* tmp, size_t& b) {
        return cub::DeviceScan::InclusiveSum(tmp, b, h, g, nwords, st);
      });
    }
    distinct = select_heads(heads, nwords, head_pos, pool);
    heads.reset();
    DeviceBuffer<uint32_t> rep_word(distinct, pool);  // group -> one of its occurrences
    gpu::gather_async(idx.data(), head_pos.data(), rep_word.data(), distinct, st);
    head_pos.reset();

    DeviceBuffer<uint32_t> rank, by_rank;  // group -> rank; rank -> occurrence
    if (fallback) {
      by_rank = std::move(rep_word);  // groups are already in byte order
    } else {
      DeviceBuffer<uint32_t> perm(distinct, pool);
      gpu::iota_async(perm.data(), distinct, st);
      merge_sort_u32(perm, distinct, ByteLess{spans.data(), rep_word.data(), tx}, pool);
      rank = DeviceBuffer<uint32_t>(distinct, pool);
      by_rank = DeviceBuffer<uint32_t>(distinct, pool);
      launch(invert_kernel, distinct, st, perm.data(), distinct, rep_word.data(), rank.data(),
             by_rank.data());
    }
    wid = DeviceBuffer<uint32_t>(nwords, pool);
    launch(word_ids_kernel, nwords, st, idx.data(), gid.data(), nwords, rank.data(), wid.data());

    if (sequences) {
      DeviceBuffer<uint32_t> perm(distinct, pool);
      gpu::iota_async(perm.data(), distinct, st);
      merge_sort_u32(perm, distinct, SpaceLess{spans.data(), by_rank.data(), tx}, pool);
      space_rank = DeviceBuffer<uint32_t>(distinct, pool);
      launch(invert_kernel, distinct, st, perm.data(), distinct,
             static_cast<const uint32_t*>(nullptr), space_rank.data(),
             static_cast<uint32_t*>(nullptr));
    }
    DeviceBuffer<Span> reps(distinct, pool);
    gpu::gather_async(spans.data(), by_rank.data(), reps.data(), distinct, st);
    rep_spans = reps.to_host();
  }
  t.distinct_words = distinct;
  stream.synchronize();
  t.group_s = clock.lap();

  // ---- reduce: the task's tuples sorted, counted and ordered.
  if (nwords > 0) {
    const int wbits = bits_for(distinct - 1);
    const int dbits = bits_for(ndocs - 1);
    const uint64_t all = ~uint64_t{0};
    const uint64_t top = q.top == 0 ? all : q.top;
    switch (q.task) {
      case Task::kWordCount:
        rows = reduce_rows(nwords, WordFields{spans.data(), wid.data(), 0}, {wbits},
                           OrderMode::kCount, 0, top, pool);
        break;
      case Task::kSort:
        rows = reduce_rows(nwords, WordFields{spans.data(), wid.data(), 0}, {wbits},
                           OrderMode::kKeep, 0, all, pool);
        break;
      case Task::kInvertedIndex:
        rows = reduce_rows(nwords, WordFields{spans.data(), wid.data(), 1}, {wbits, dbits},
                           OrderMode::kKeep, 0, all, pool);
        break;
      case Task::kTermVector:
        rows = reduce_rows(nwords, WordFields{spans.data(), wid.data(), 2}, {dbits, wbits},
                           OrderMode::kDocCount, 0, all, pool);
        break;
      case Task::kSequenceCount:
      case Task::kRankedInvertedIndex: {
        const uint32_t n = q.n;
        const bool per_doc = q.task == Task::kSequenceCount && q.per_doc;
        const bool ranked = q.task == Task::kRankedInvertedIndex;
        DeviceBuffer<uint32_t> win;
        uint64_t windows = 0;
        if (nwords >= n) {
          const uint64_t candidates = nwords - n + 1;
          win = DeviceBuffer<uint32_t>(candidates, pool);
          DeviceBuffer<uint64_t> num(1, pool);
          uint32_t* w = win.data();
          uint64_t* c = num.data();
          const WindowInDoc ok{spans.data(), n};
          cub_call(pool, [&](void* tmp, size_t& b) {
            return cub::DeviceSelect::If(tmp, b, thrust::counting_iterator<uint32_t>(0), w, c,
                                         static_cast<int64_t>(candidates), ok, st);
          });
          windows = num.get(0);
        }
        const int mode = per_doc ? 1 : (ranked ? 2 : 0);
        std::vector<int> bits(n, wbits);
        if (per_doc) bits.insert(bits.begin(), dbits);
        if (ranked) bits.push_back(dbits);
        const SeqFields fields{spans.data(), wid.data(),          space_rank.data(),
                               win.data(),   static_cast<int>(n), mode};
        if (ranked) {
          rows = reduce_rows(windows, fields, bits, OrderMode::kGroupCount, static_cast<int>(n),
                             all, pool);
        } else if (per_doc) {
          rows = reduce_rows(windows, fields, bits, OrderMode::kDocCount, 0, all, pool);
        } else {
          rows = reduce_rows(windows, fields, bits, OrderMode::kCount, 0, top, pool);
        }
        break;
      }
    }
  }
  t.rows = rows.size();
  stream.synchronize();
  t.reduce_s = clock.lap();

  // ---- format: the words the rows name, then the output bytes.
  words.resize(distinct);
  {
    std::vector<bool> used(distinct, false);
    auto mark = [&](uint32_t w) {
      if (used[w]) return;
      used[w] = true;
      const Span& s = rep_spans[w];
      std::string word(host.data() + s.begin, s.len);
      if (q.lowercase) {
        for (char& ch : word) ch = static_cast<char>(ascii_lower(static_cast<uint8_t>(ch)));
      }
      words[w] = std::move(word);
    };
    const uint64_t nrows = rows.size();
    const uint32_t width = rows.width;
    for (uint64_t r = 0; r < nrows; ++r) {
      const uint32_t* f = &rows.fields[r * width];
      switch (q.task) {
        case Task::kWordCount:
        case Task::kSort:
        case Task::kInvertedIndex:
          mark(f[0]);
          break;
        case Task::kTermVector:
          mark(f[1]);
          break;
        case Task::kSequenceCount:
        case Task::kRankedInvertedIndex: {
          const uint32_t first = (q.task == Task::kSequenceCount && q.per_doc) ? 1 : 0;
          for (uint32_t k = 0; k < q.n; ++k) mark(f[first + k]);
          break;
        }
      }
    }
  }
  std::string out = format_output(names, words, rows, q, fmt);
  t.format_s = clock.lap();
  if (timings != nullptr) *timings = t;
  return out;
}

}  // namespace

std::string raw_gpu_output_debug(const std::vector<RawDocument>& docs, const QueryOptions& q,
                                 OutputFormat fmt, RawGpuTimings* timings,
                                 const DebugOptions& debug) {
  return run(docs, q, fmt, timings, debug);
}

}  // namespace rawgpu

std::string raw_gpu_output(const std::vector<RawDocument>& docs, const QueryOptions& q,
                           OutputFormat fmt, RawGpuTimings* timings) {
  return rawgpu::run(docs, q, fmt, timings, rawgpu::DebugOptions{});
}

}  // namespace gtadoc
