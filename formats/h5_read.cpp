// The dataset reader of formats/h5.h: dataset_size, read_array's BatchRead (every chunk located
// under the HDF5 lock, then read with pread, checked against its Fletcher32 sum, inflated,
// unshuffled and widened on threads outside it; H5Dread where that path gives up), the chunk
// maps that let a reader skip HDF5 altogether, and the storage queries dataset_info and
// list_datasets.
#include "formats/h5.h"

#include <hdf5.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>  // fletcher32's sums, 8 words at a time
#endif

#include "common/big_alloc.h"
#include "common/error.h"
#include "common/parallel.h"
#include "common/recycled_arrays.h"
#include "common/settings.h"
#include "formats/h5_internal.h"
#include "formats/zlib_codec.h"

namespace gtadoc::h5 {
namespace {

// Opens dataset `name` below `loc`, which must exist and be one-dimensional; returns it and its
// number of elements.
std::pair<Dataset, uint64_t> open_1d(Id loc, const std::string& name) {
  if (!has_link(loc, name)) throw InputError("missing");
  Dataset ds(H5_TRY(H5Dopen2(loc, name.c_str(), H5P_DEFAULT)));
  Dataspace space(H5_TRY(H5Dget_space(ds.id())));
  if (H5_TRY(H5Sget_simple_extent_ndims(space.id())) != 1)
    throw InputError("not a one-dimensional array");
  hsize_t dims[1] = {0};
  H5_TRY(H5Sget_simple_extent_dims(space.id(), dims, nullptr));
  return {std::move(ds), static_cast<uint64_t>(dims[0])};
}

}  // namespace

uint64_t dataset_size(Id loc, const std::string& name) {
  return with_context("dataset " + object_path(loc, name),
                      [&] { return open_1d(loc, name).second; });
}

uint32_t fletcher32(const void* data_, size_t bytes) {
  // HDF5's checksum (H5_checksum_fletcher32): over the data as big-endian 16-bit words w_k,
  // sum1 = sum of the words and sum2 = sum of the running sum1s, each folded as it goes
  // ((x & 0xffff) + (x >> 16)). A fold keeps a sum's class mod 65535 and keeps it positive once
  // positive, so the result is 0 while every word is 0 and otherwise the class's representative
  // in [1, 65535]: here the sums are kept mod 65535 as blocks of words are added, in any order
  // of operations, and mapped so at the end. A block of m words adds sum1 * m + the sum of
  // (m - k) w_k to sum2.
  const auto* data = static_cast<const uint8_t*>(data_);
  const size_t words = bytes / 2;
  uint64_t s1 = 0, s2 = 0;
  bool nonzero = false;
  size_t at = 0;
#if defined(__SSE2__)
  // Blocks of 2048 words, 8 at a time: 4-lane sums of the words (a) and of the lanes' running
  // sums before each step (b), in 32 bits (b < 256 * 255 / 2 * 65535 < 2^31).
  constexpr size_t kSteps = 256, kBlock = 8 * kSteps;
  const __m128i zero = _mm_setzero_si128();
  for (; words - at >= kBlock; at += kBlock) {
    const uint8_t* p = data + 2 * at;
    __m128i a_lo = zero, a_hi = zero, b_lo = zero, b_hi = zero;
    for (size_t t = 0; t < kSteps; ++t) {
      __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * t));
      x = _mm_or_si128(_mm_slli_epi16(x, 8), _mm_srli_epi16(x, 8));  // big-endian words
      b_lo = _mm_add_epi32(b_lo, a_lo);
      b_hi = _mm_add_epi32(b_hi, a_hi);
      a_lo = _mm_add_epi32(a_lo, _mm_unpacklo_epi16(x, zero));
      a_hi = _mm_add_epi32(a_hi, _mm_unpackhi_epi16(x, zero));
    }
    alignas(16) uint32_t al[4], ah[4], bl[4], bh[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(al), a_lo);
    _mm_store_si128(reinterpret_cast<__m128i*>(ah), a_hi);
    _mm_store_si128(reinterpret_cast<__m128i*>(bl), b_lo);
    _mm_store_si128(reinterpret_cast<__m128i*>(bh), b_hi);
    // Word 8t + l of the block adds (kBlock - 8t - l) w = 8 (kSteps - 1 - t) w + (8 - l) w.
    uint64_t a = 0, b = 0;
    for (uint32_t l = 0; l < 4; ++l) {
      a += uint64_t{al[l]} + ah[l];
      b += 8 * (uint64_t{bl[l]} + bh[l]) + uint64_t{8u - l} * al[l] + uint64_t{4u - l} * ah[l];
    }
    s2 = (s2 + kBlock * s1 + b) % 65535;
    s1 = (s1 + a) % 65535;
    nonzero |= a != 0;
  }
#endif
  // The rest, in blocks of at most 256 words (b < 2^32).
  for (; at < words; at += 256) {
    const uint32_t m = static_cast<uint32_t>(words - at < 256 ? words - at : 256);
    const uint8_t* p = data + 2 * at;
    uint32_t a = 0, b = 0;
    for (uint32_t k = 0; k < m; ++k) {
      const uint32_t w = (uint32_t{p[2 * k]} << 8) | p[2 * k + 1];
      a += w;
      b += (m - k) * w;
    }
    s2 = (s2 + uint64_t{m} * s1 + b) % 65535;
    s1 = (s1 + a) % 65535;
    nonzero |= a != 0;
  }
  if (bytes % 2) {  // a last odd byte is the high byte of a last word
    const uint32_t w = uint32_t{data[bytes - 1]} << 8;
    s1 = (s1 + w) % 65535;
    s2 = (s2 + s1) % 65535;
    nonzero |= w != 0;
  }
  const uint32_t sum1 = !nonzero ? 0 : s1 == 0 ? 65535 : static_cast<uint32_t>(s1);
  const uint32_t sum2 = !nonzero ? 0 : s2 == 0 ? 65535 : static_cast<uint32_t>(s2);
  return (sum2 << 16) | sum1;
}

namespace {

// What the filter pipeline of a dataset does on read, for the pipelines the writer makes:
// [shuffle] [deflate] fletcher32, in that order (any of them may be missing), or nbit
// fletcher32.
struct Pipeline {
  bool shuffle = false, deflate = false, fletcher32 = false;
  uint32_t bits = 0;  ///< N-bit filter: bits of each packed value (0: none)
};

// Whether the N-bit filter's parameters `values` (`nvalues` of them, as HDF5 sets them for a
// dataset) describe unsigned little-endian integers of `element_bytes` bytes, `precision` bits
// at offset 0, packed in chunks of `chunk` elements: the only kind nbit_unpack reads.
bool nbit_as_written(const unsigned* values, size_t nvalues, uint32_t element_bytes,
                     size_t precision, uint64_t chunk) {
  // [0] parameters, [1] "need not compress", [2] elements a chunk, [3] class (1: atomic),
  // [4] size, [5] order (0: little-endian), [6] precision, [7] offset.
  return nvalues == 8 && values[0] == 8 && values[1] == 0 && values[2] == chunk && values[3] == 1 &&
         values[4] == element_bytes && values[5] == 0 && values[6] == precision && values[7] == 0 &&
         precision >= 1 && precision <= 32 && precision < 8 * size_t{element_bytes};
}

// The pipeline of `dcpl`, or nullopt when it holds anything else (another filter, another
// order, a shuffle whose element size is not `element_bytes`, an N-bit filter not as
// nbit_as_written, or a type of fewer bits than its size without one).
std::optional<Pipeline> known_pipeline(hid_t dcpl, uint32_t element_bytes, size_t precision,
                                       uint64_t chunk) {
  int n = H5Pget_nfilters(dcpl);
  if (n < 0) return std::nullopt;
  Pipeline p;
  int stage = 0;  // 1: shuffle seen, 2: deflate or nbit seen, 3: fletcher32 seen
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0;
    size_t nvalues = 8;
    unsigned values[8] = {};
    H5Z_filter_t f = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nvalues, values, 0,
                                    nullptr, nullptr);
    if (f == H5Z_FILTER_NBIT && stage < 1) {
      if (!nbit_as_written(values, nvalues, element_bytes, precision, chunk)) return std::nullopt;
      p.bits = static_cast<uint32_t>(precision);
      stage = 2;
    } else if (f == H5Z_FILTER_SHUFFLE && stage < 1) {
      if (nvalues < 1 || values[0] != element_bytes) return std::nullopt;
      p.shuffle = true;
      stage = 1;
    } else if (f == H5Z_FILTER_DEFLATE && stage < 2) {
      p.deflate = true;
      stage = 2;
    } else if (f == H5Z_FILTER_FLETCHER32 && stage < 3) {
      p.fletcher32 = true;
      stage = 3;
    } else {
      return std::nullopt;
    }
  }
  if (p.bits == 0 && precision != 8 * size_t{element_bytes}) return std::nullopt;
  return p;
}

// Writes `count` values of ES little-endian bytes each into `out` (type M, at least as wide).
// Shuffled data (`plane` > 0) holds byte j of value i at j * plane + i.
template <int ES, class M>
void unpack_as(const unsigned char* src, uint64_t plane, uint64_t count, void* out_) {
  M* out = static_cast<M*>(out_);
  if (plane > 0) {
    for (uint64_t i = 0; i < count; ++i) {
      M v = 0;
      for (int j = 0; j < ES; ++j)
        v |= static_cast<M>(static_cast<M>(src[j * plane + i]) << (8 * j));
      out[i] = v;
    }
  } else {
    for (uint64_t i = 0; i < count; ++i) {
      M v = 0;
      for (int j = 0; j < ES; ++j) v |= static_cast<M>(static_cast<M>(src[i * ES + j]) << (8 * j));
      out[i] = v;
    }
  }
}

template <class M>
void unpack_into(const unsigned char* src, uint32_t es, uint64_t plane, uint64_t count, void* out) {
  switch (es) {
    case 1:
      return unpack_as<1, M>(src, plane, count, out);
    case 2:
      if constexpr (sizeof(M) >= 2) return unpack_as<2, M>(src, plane, count, out);
      break;
    case 4:
      if constexpr (sizeof(M) >= 4) return unpack_as<4, M>(src, plane, count, out);
      break;
    case 8:
      if constexpr (sizeof(M) >= 8) return unpack_as<8, M>(src, plane, count, out);
      break;
  }
  GTADOC_FAIL("unpack: bad element size");
}

void unpack(const unsigned char* src, uint32_t es, uint64_t plane, uint64_t count, Width mem,
            void* out) {
  switch (mem) {
    case Width::kU8:
      return unpack_into<uint8_t>(src, es, plane, count, out);
    case Width::kU16:
      return unpack_into<uint16_t>(src, es, plane, count, out);
    case Width::kU32:
      return unpack_into<uint32_t>(src, es, plane, count, out);
    case Width::kU64:
      return unpack_into<uint64_t>(src, es, plane, count, out);
  }
}

// Deflate expands data at most about 1032 times (zlib's largest ratio), with room to spare.
constexpr uint64_t kMaxExpansion = 1040;

// Checks that dataset `ds`, `n` elements of `element_bytes` stored bytes each, can be what its
// header claims: the bytes its chunks take in the file (no more than the file's size; nothing
// when no chunk is stored), expanded as much as a filter can expand them (as they are when no
// filter compresses), must hold n elements. Run before anything is sized by n, so that a header
// claiming billions of elements in a small file costs nothing.
void check_claimed_size(hid_t ds, uint64_t n, size_t element_bytes) {
  if (n == 0) return;
  const uint64_t stored = H5Dget_storage_size(ds);  // 0 also when it cannot tell
  File file(H5_TRY(H5Iget_file_id(ds)));
  hsize_t file_size = 0;
  H5_TRY(H5Fget_filesize(file.id(), &file_size));
  PropList dcpl(H5_TRY(H5Dget_create_plist(ds)));
  bool expands = false;  // some filter may give back more bytes than it stores
  const int filters = H5_TRY(H5Pget_nfilters(dcpl.id()));
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0;
    size_t cd_n = 0;
    const H5Z_filter_t id = H5Pget_filter2(dcpl.id(), static_cast<unsigned>(i), &flags, &cd_n,
                                           nullptr, 0, nullptr, nullptr);
    expands |= id != H5Z_FILTER_SHUFFLE && id != H5Z_FILTER_FLETCHER32;
  }
  const uint64_t held = std::min<uint64_t>(stored, file_size);
  const uint64_t limit = !expands                              ? held
                         : held > ~uint64_t{0} / kMaxExpansion ? ~uint64_t{0}
                                                               : held * kMaxExpansion;
  if (n > limit / std::max<size_t>(element_bytes, 1))
    throw InputError("claims " + std::to_string(n) + " elements, more than the " +
                     std::to_string(held) + " bytes it stores can hold (corrupted)");
}

// Opens dataset `name` below `loc` and checks its element type against `mem` and its claimed
// size against its storage; returns it and its size.
std::pair<Dataset, uint64_t> open_checked(Id loc, const std::string& name, Width mem) {
  auto [ds, n] = open_1d(loc, name);
  Datatype type(H5_TRY(H5Dget_type(ds.id())));
  if (H5_TRY(H5Tget_class(type.id())) != H5T_INTEGER ||
      H5_TRY(H5Tget_sign(type.id())) != H5T_SGN_NONE ||
      H5Tget_size(type.id()) > static_cast<size_t>(mem))
    throw InputError("unexpected element type (expected unsigned integers of at most " +
                     std::to_string(static_cast<int>(mem)) + " bytes)");
  check_claimed_size(ds.id(), n, H5Tget_size(type.id()));
  return {std::move(ds), n};
}

// The file holding a dataset as the operating system sees it: its descriptor and the byte at
// which HDF5's chunk addresses start.
struct FileView {
  int fd = -1;
  uint64_t base = 0;
};

// The view of the file of dataset `ds` when HDF5 reads it with its sec2 driver (whose handle is
// the descriptor) and can tell where chunks are stored (HDF5 1.10.5 and later); nullopt otherwise
// (HDF5's error stack cleared). The descriptor stays valid while `ds` is open.
std::optional<FileView> sec2_view(hid_t ds) {
#if H5_VERSION_GE(1, 10, 5)
  File file(H5Iget_file_id(ds));
  PropList fapl(file.id() >= 0 ? H5Fget_access_plist(file.id()) : H5I_INVALID_HID);
  PropList fcpl(file.id() >= 0 ? H5Fget_create_plist(file.id()) : H5I_INVALID_HID);
  const hid_t sec2 = H5FD_SEC2;
  hsize_t userblock = 0;
  void* handle = nullptr;
  const bool ok = fapl.id() >= 0 && fcpl.id() >= 0 && sec2 >= 0 &&
                  H5Pget_driver(fapl.id()) == sec2 &&
                  H5Pget_userblock(fcpl.id(), &userblock) >= 0 &&
                  H5Fget_vfd_handle(file.id(), fapl.id(), &handle) >= 0 && handle != nullptr;
  if (!ok) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  FileView view;
  view.fd = *static_cast<const int*>(handle);
  // Chunk addresses count from the end of the user block; H5Dget_chunk_info_by_coord adds it
  // itself from HDF5 1.14.4 on (before, the caller had to).
#if H5_VERSION_GE(1, 14, 4)
  view.base = 0;
#else
  view.base = userblock;
#endif
  if (view.fd < 0) return std::nullopt;
  return view;
#else
  (void)ds;
  return std::nullopt;
#endif
}

// Reads `len` bytes at byte `offset` of file `fd` into `buf` (several reads where the system
// returns fewer bytes, again when a signal interrupts one); false on an error or at the end of
// the file.
bool pread_whole(int fd, uint64_t offset, unsigned char* buf, size_t len) {
  while (len > 0) {
    const ssize_t got =
        ::pread(fd, buf, std::min<size_t>(len, size_t{1} << 30), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buf += got;
    offset += static_cast<uint64_t>(got);
    len -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

bool locked_read_asked() {
  return settings::flag("GTADOC_H5_LOCKED_READ");
}

// One dataset of a BatchRead.
struct BatchRead::Item {
  Id loc = kInvalidId;
  std::string name;
  Width mem = Width::kU8;
  std::function<void*(uint64_t)> resize;

  std::exception_ptr open_error;  ///< from opening and checking the dataset
  std::optional<uint64_t> expected;  ///< elements the caller knows the dataset holds
  std::string expected_what;
  bool located = false;  ///< added by its chunk map (add_located): no HDF5 id, no HDF5 call
  Dataset ds;
  uint64_t n = 0;
  void* out = nullptr;
  bool done = false;  ///< `out` holds the values

  // Direct chunk path: chunks of `chunk` elements of `es` bytes, stored (filtered) in `raw`
  // at raw_offsets[k] .. raw_offsets[k+1].
  bool fast = false;
  std::atomic<bool> failed{false};
  Pipeline pipeline;
  uint32_t es = 0;
  uint64_t chunk = 0;
  unsigned char* raw = nullptr;  // in the batch's block of stored chunks (BatchRead::run)
  std::vector<uint64_t> raw_offsets;
  // Where chunk k's stored bytes lie in the file open on `fd`: from byte file_offsets[k] on
  // (empty: H5Dread_chunk reads them). `ds` stays open until they are read, so `fd` does.
  int fd = -1;
  std::vector<uint64_t> file_offsets;
  std::atomic<bool> short_read{false};  ///< some chunk was not read whole from `fd`

  uint64_t num_chunks() const { return raw_offsets.empty() ? 0 : raw_offsets.size() - 1; }
  bool unlocked() const { return !file_offsets.empty() && !short_read.load(); }
  // Learns the chunks' layout and stored sizes (raw_offsets) and, given the file's `view`, where
  // they lie in it (file_offsets); false (and HDF5's error stack cleared) when this dataset is
  // not for the direct path.
  bool plan_chunks(const std::optional<FileView>& view);
  // Reads every chunk as stored into `raw` (sized by the caller) with H5Dread_chunk; false as
  // plan_chunks.
  bool read_chunks();
  // Reads chunk k as stored from `fd` into `raw`, entering no HDF5 call; false on any surprise.
  bool pread_chunk(uint64_t k);
  // Checks, inflates, unshuffles and widens chunk k into `out`; false on any surprise. Adds
  // the nanoseconds of each step to `ns` (checksum, inflate, unpack).
  bool decode(uint64_t k, std::atomic<uint64_t>* ns) const;
};

bool BatchRead::Item::plan_chunks(const std::optional<FileView>& view) {
  if constexpr (std::endian::native != std::endian::little) return false;
  PropList dcpl(H5Dget_create_plist(ds.id()));
  Datatype type(H5Dget_type(ds.id()));
  bool ok = dcpl.id() >= 0 && type.id() >= 0 && H5Pget_layout(dcpl.id()) == H5D_CHUNKED;
  hsize_t dims[1] = {0};
  ok = ok && H5Pget_chunk(dcpl.id(), 1, dims) == 1 && dims[0] > 0;
  if (ok) {
    es = static_cast<uint32_t>(H5Tget_size(type.id()));
    ok = (es == 1 || H5Tget_order(type.id()) == H5T_ORDER_LE) && H5Tget_offset(type.id()) == 0 &&
         std::has_single_bit(es) && es <= 8;
    chunk = dims[0];
    // Chunks of the files written here hold at most 1 MiB; anything much larger goes through
    // HDF5 (which then decides what it is).
    ok = ok && chunk <= (uint64_t{1} << 30) / es;
  }
  std::optional<Pipeline> p =
      ok ? known_pipeline(dcpl.id(), es, H5Tget_precision(type.id()), chunk) : std::nullopt;
  if (!p) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  pipeline = *p;
  const uint64_t chunks = (n + chunk - 1) / chunk;
  const uint64_t chunk_bytes = chunk * es;
  raw_offsets.assign(chunks + 1, 0);
  file_offsets.clear();
#if H5_VERSION_GE(1, 10, 5)
  // H5Dget_chunk_info_by_coord walks the chunk index from its start to the chunk (65 ns a chunk
  // passed on a 2-core VM): beyond this many chunks (4 GiB of 1 MiB chunks, 0.5 s), H5Dread_chunk
  // is the quicker way even under the lock.
  constexpr uint64_t kMaxLocatedChunks = 4096;
  if (view && chunks <= kMaxLocatedChunks) {
    // Each chunk's address, stored size and skipped filters in one call. A chunk stored with a
    // filter skipped (mask not 0) is left to H5Dread, as H5Dread_chunk's would be; a chunk whose
    // address this path cannot use leaves the dataset to H5Dread_chunk.
    constexpr uint64_t kMaxOffset = static_cast<uint64_t>(std::numeric_limits<off_t>::max());
    file_offsets.resize(chunks);
    for (uint64_t k = 0; k < chunks; ++k) {
      hsize_t offset[1] = {k * chunk};
      unsigned filter_mask = ~0u;
      haddr_t addr = HADDR_UNDEF;
      hsize_t stored = 0;
      if (H5Dget_chunk_info_by_coord(ds.id(), offset, &filter_mask, &addr, &stored) < 0) {
        H5Eclear2(H5E_DEFAULT);
        file_offsets.clear();
        break;
      }
      if (stored == 0 || stored > 2 * chunk_bytes + 4096 || filter_mask != 0) return false;
      if (addr == HADDR_UNDEF || addr > kMaxOffset - view->base ||
          addr + view->base > kMaxOffset - stored) {
        file_offsets.clear();
        break;
      }
      file_offsets[k] = addr + view->base;
      raw_offsets[k + 1] = raw_offsets[k] + stored;
    }
    if (!file_offsets.empty()) {
      fd = view->fd;
      return true;
    }
  }
#else
  (void)view;
#endif
  for (uint64_t k = 0; k < chunks; ++k) {
    hsize_t offset[1] = {k * chunk};
    hsize_t stored = 0;
    if (H5Dget_chunk_storage_size(ds.id(), offset, &stored) < 0 || stored == 0 ||
        stored > 2 * chunk_bytes + 4096) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    raw_offsets[k + 1] = raw_offsets[k] + stored;
  }
  return true;
}

std::optional<ChunkMap> chunk_map(Id loc, const std::string& name) {
  init();
  return with_context("dataset " + object_path(loc, name), [&]() -> std::optional<ChunkMap> {
    BatchRead::Item it;
    auto [ds, n] = open_checked(loc, name, Width::kU64);
    it.ds = std::move(ds);
    it.n = n;
    ChunkMap map;
    map.n = n;
    if (n == 0) {  // nothing stored: any element size and chunk length describe it
      map.element_bytes = 1;
      map.chunk = 1;
      return map;
    }
    if (!it.plan_chunks(sec2_view(it.ds.id())) || it.file_offsets.empty() ||
        !it.pipeline.fletcher32)
      return std::nullopt;
    map.element_bytes = it.es;
    map.chunk = it.chunk;
    map.shuffle = it.pipeline.shuffle;
    map.deflate = it.pipeline.deflate;
    map.bits = it.pipeline.bits;
    map.offsets = it.file_offsets;
    map.sizes.resize(map.offsets.size());
    for (size_t k = 0; k < map.sizes.size(); ++k)
      map.sizes[k] = it.raw_offsets[k + 1] - it.raw_offsets[k];
    return map;
  });
}

std::string chunk_map_problem(const ChunkMap& m) {
  const uint32_t es = m.element_bytes;
  if (es != 1 && es != 2 && es != 4 && es != 8) return "element size " + std::to_string(es);
  if (m.chunk == 0 || m.chunk > (uint64_t{1} << 30) / es)
    return "chunk length " + std::to_string(m.chunk);
  if (m.bits != 0 && (m.bits > 32 || m.bits >= 8 * es || m.shuffle || m.deflate))
    return std::to_string(m.bits) + " packed bits of " + std::to_string(es) + "-byte elements" +
           (m.shuffle || m.deflate ? " with other filters" : "");
  const uint64_t chunks = m.n / m.chunk + (m.n % m.chunk != 0);
  if (m.offsets.size() != chunks || m.sizes.size() != chunks)
    return std::to_string(m.offsets.size()) + " chunks for " + std::to_string(m.n) +
           " elements in chunks of " + std::to_string(m.chunk);
  constexpr uint64_t kMaxOffset = static_cast<uint64_t>(std::numeric_limits<off_t>::max());
  const uint64_t most = 2 * m.chunk * es + 4096;
  for (uint64_t k = 0; k < chunks; ++k) {
    if (m.sizes[k] < 4 || m.sizes[k] > most)
      return "chunk " + std::to_string(k) + " stores " + std::to_string(m.sizes[k]) + " bytes";
    if (m.offsets[k] > kMaxOffset - m.sizes[k])
      return "chunk " + std::to_string(k) + " lies beyond any file";
  }
  return "";
}

bool BatchRead::Item::read_chunks() {
  for (uint64_t k = 0, chunks = num_chunks(); k < chunks; ++k) {
    hsize_t offset[1] = {k * chunk};
    uint32_t filter_mask = 0;
    if (H5Dread_chunk(ds.id(), H5P_DEFAULT, offset, &filter_mask, raw + raw_offsets[k]) <
            0 ||
        filter_mask != 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
  }
  return true;
}

bool BatchRead::Item::pread_chunk(uint64_t k) {
  return pread_whole(fd, file_offsets[k], raw + raw_offsets[k],
                     raw_offsets[k + 1] - raw_offsets[k]);
}

namespace {
uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}
// Adds the time since `mark` to `into` and moves `mark` to now.
void add_lap(std::atomic<uint64_t>& into, uint64_t& mark) {
  const uint64_t t = now_ns();
  into.fetch_add(t - mark, std::memory_order_relaxed);
  mark = t;
}
}  // namespace

bool BatchRead::Item::decode(uint64_t k, std::atomic<uint64_t>* ns) const {
  uint64_t mark = now_ns();
  const unsigned char* src = raw + raw_offsets[k];
  size_t len = raw_offsets[k + 1] - raw_offsets[k];
  if (pipeline.fletcher32) {
    // As H5Z's fletcher32 filter: the stored sum is little-endian; the byte-swapped sum of
    // HDF5 < 1.6.3 is accepted too.
    if (len < 4) return false;
    len -= 4;
    uint32_t stored = 0;
    for (int i = 3; i >= 0; --i) stored = (stored << 8) | src[len + i];
    const uint32_t sum = fletcher32(src, len);
    const uint32_t reversed = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
    if (stored != sum && stored != reversed) return false;
    add_lap(ns[0], mark);
  }
  const uint64_t first = k * chunk;
  const uint64_t count = std::min(chunk, n - first);
  const size_t chunk_bytes = chunk * es;
  const size_t mem_bytes = static_cast<size_t>(mem);
  unsigned char* dst = static_cast<unsigned char*>(out) + first * mem_bytes;
  if (pipeline.bits > 0) {  // the whole chunk's values are packed; the padding is not kept
    const bool unpacked = nbit_unpack(src, len, count, pipeline.bits, mem, dst);
    add_lap(ns[2], mark);
    return unpacked;
  }
  // HDF5 leaves 1-byte elements and one-element chunks as they are.
  const uint64_t plane = pipeline.shuffle && es > 1 && chunk > 1 ? chunk : 0;
  const bool direct = plane == 0 && es == mem_bytes && count == chunk;
  std::unique_ptr<unsigned char[]> scratch;
  const unsigned char* data = src;
  if (pipeline.deflate) {
    unsigned char* into = dst;
    if (!direct)
      into = (scratch = std::make_unique_for_overwrite<unsigned char[]>(chunk_bytes)).get();
    const bool inflated = zlib_inflate_exact(src, len, into, chunk_bytes);
    add_lap(ns[1], mark);
    if (!inflated) return false;
    if (direct) return true;
    data = into;
  } else if (len != chunk_bytes) {
    return false;
  }
  if (plane == 0 && es == mem_bytes)
    std::memcpy(dst, data, count * es);
  else
    unpack(data, es, plane, count, mem, dst);
  add_lap(ns[2], mark);
  return true;
}

BatchRead::BatchRead(unsigned threads) : threads_(threads) {}
BatchRead::~BatchRead() = default;

size_t BatchRead::add_raw(Id loc, const std::string& name, Width mem,
                          std::function<void*(uint64_t)> resize) {
  auto item = std::make_unique<Item>();
  item->loc = loc;
  item->name = name;
  item->mem = mem;
  item->resize = std::move(resize);
  items_.push_back(std::move(item));
  return items_.size() - 1;
}

size_t BatchRead::add_located_raw(int fd, const ChunkMap& map, Width mem,
                                  std::function<void*(uint64_t)> resize) {
  GTADOC_EXPECTS(chunk_map_problem(map).empty(), "add_located: " + chunk_map_problem(map));
  auto item = std::make_unique<Item>();
  item->located = true;
  item->name = "a located dataset";
  item->mem = mem;
  item->resize = std::move(resize);
  item->n = map.n;
  item->es = map.element_bytes;
  item->chunk = map.chunk;
  item->pipeline = Pipeline{map.shuffle, map.deflate, true, map.bits};
  item->fd = fd;
  item->file_offsets = map.offsets;
  item->raw_offsets.assign(map.sizes.size() + 1, 0);
  for (size_t k = 0; k < map.sizes.size(); ++k)
    item->raw_offsets[k + 1] = item->raw_offsets[k] + map.sizes[k];
  item->fast = true;
  if (map.element_bytes > static_cast<uint32_t>(mem)) {  // not for this memory type
    item->fast = false;
    item->failed.store(true);
    item->n = 0;
  }
  items_.push_back(std::move(item));
  return items_.size() - 1;
}

void BatchRead::run() {
  const bool hdf5 = std::any_of(items_.begin(), items_.end(), [](const auto& it) {
    return !it->located;
  });
  if (hdf5) init();
  const bool locked_read = hdf5 && locked_read_asked();
  uint64_t mark = now_ns();
  std::atomic<uint64_t> locate{0}, touch{0}, pread{0}, steps[3] = {0, 0, 0};
  // 1. HDF5: every dataset opened and checked, where its chunks lie in the file and their stored
  // sizes learnt.
  for (auto& it : items_) {
    if (it->located) continue;
    try {
      with_context("dataset " + object_path(it->loc, it->name), [&] {
        auto [ds, n] = open_checked(it->loc, it->name, it->mem);
        if (it->expected && n != *it->expected)
          throw InputError(it->expected_what + " is " + std::to_string(n) + ", expected " +
                           std::to_string(*it->expected));
        it->ds = std::move(ds);
        it->n = n;
      });
    } catch (const InputError&) {
      it->open_error = std::current_exception();
      continue;
    }
    if (it->n > 0) it->fast = it->plan_chunks(locked_read ? std::nullopt : sec2_view(it->ds.id()));
  }
  add_lap(locate, mark);
  // 2. No HDF5 call: the outputs sized, on threads, and one block for every dataset's stored
  // chunks. First touch of fresh memory is the slow part of a read (0.5 GB/s on a VM's 4 KiB
  // pages); outside the lock, other threads' reads (the next shards) go on meanwhile. The block
  // is a handed-back one where one is held (common/recycled_arrays.h: the previous reads'
  // blocks, their pages in memory), and goes back once the chunks are decoded.
  {
    Unlocked others_may_read;
    parallel_for(items_.size(), resolve_threads(threads_), [&](size_t i) {
      Item& it = *items_[i];
      if (it.open_error) return;
      it.out = it.resize(it.n);
    });
    uint64_t raw_bytes = 0;
    for (auto& it : items_)
      if (!it->open_error && it->fast) raw_bytes += (it->raw_offsets.back() + 63) & ~uint64_t{63};
    const uint64_t words = (raw_bytes + 3) / 4;
    raw_block_ = recycled::take(words);
    resize_on_huge_pages(raw_block_, words);  // a fresh block marked for huge pages
    auto* at = reinterpret_cast<unsigned char*>(raw_block_.data());
    for (auto& it : items_)
      if (!it->open_error && it->fast) {
        it->raw = at;
        at += (it->raw_offsets.back() + 63) & ~uint64_t{63};
      }
  }
  add_lap(touch, mark);
  // 3. HDF5: the chunks not located in step 1 read as stored.
  std::vector<std::pair<Item*, uint64_t>> tasks;  // (dataset, chunk)
  for (auto& it : items_) {
    if (it->open_error) continue;
    if (it->n == 0) {
      it->done = true;
      it->ds.reset();
      continue;
    }
    if (it->fast && it->file_offsets.empty() && !it->read_chunks()) {
      it->fast = false;
      it->raw = nullptr;
    }
    if (!it->fast) continue;
    for (uint64_t k = 0; k < it->num_chunks(); ++k) tasks.emplace_back(it.get(), k);
  }
  add_lap(locate, mark);
  // 4. No HDF5 call: the located chunks read with pread, then every chunk's checksum verified,
  // inflated, unshuffled and widened, on threads. A chunk not read whole (an error, the end of a
  // truncated file) leaves its dataset to H5Dread in finish(), as a failed check does.
  {
    Unlocked others_may_read;
    parallel_for(tasks.size(), resolve_threads(threads_), [&](size_t t) {
      auto [it, k] = tasks[t];
      if (it->failed.load(std::memory_order_relaxed)) return;
      uint64_t started = now_ns();
      const bool whole = it->file_offsets.empty() || it->pread_chunk(k);
      add_lap(pread, started);
      if (!whole) {
        it->short_read.store(true, std::memory_order_relaxed);
        it->failed.store(true, std::memory_order_relaxed);
        return;
      }
      if (!it->decode(k, steps)) it->failed.store(true, std::memory_order_relaxed);
    });
  }
  // The located chunks' reads under the lock (step 3) count as locating them.
  auto sec = [](const std::atomic<uint64_t>& ns) { return static_cast<double>(ns.load()) * 1e-9; };
  times_ = Times{sec(locate), sec(touch), sec(pread), sec(steps[0]), sec(steps[1]), sec(steps[2])};
  // 5. HDF5: what was read closed; the rest waits for finish().
  for (auto& it : items_) {
    if (!it->fast) continue;
    it->raw = nullptr;
    if (!it->failed.load()) {
      it->done = true;
      it->ds.reset();
    }
  }
  recycled::give(std::move(raw_block_));
}

void BatchRead::expect_size(size_t i, uint64_t expected, std::string what) {
  items_.at(i)->expected = expected;
  items_.at(i)->expected_what = std::move(what);
}

uint64_t BatchRead::size(size_t i) const {
  const Item& it = *items_.at(i);
  if (it.open_error) std::rethrow_exception(it.open_error);
  return it.n;
}

bool BatchRead::direct(size_t i) const {
  const Item& it = *items_.at(i);
  return it.fast && !it.failed.load();
}

bool BatchRead::unlocked(size_t i) const {
  const Item& it = *items_.at(i);
  return it.fast && it.unlocked();
}

void BatchRead::finish(size_t i) {
  Item& it = *items_.at(i);
  if (it.open_error) std::rethrow_exception(it.open_error);
  if (it.done) return;
  if (it.located)
    throw InputError("the stored chunks do not match the manifest's chunk map");
  init();
  with_context("dataset " + object_path(it.loc, it.name), [&] {
    H5_TRY(H5Dread(it.ds.id(), mem_type(it.mem), H5S_ALL, H5S_ALL, H5P_DEFAULT, it.out));
  });
  it.done = true;
  it.ds.reset();
}

void read_range_raw(Id loc, const std::string& name, uint64_t first, uint64_t count, Width mem,
                    const std::function<void*(uint64_t)>& resize, uint64_t* size) {
  init();
  with_context("dataset " + object_path(loc, name), [&] {
    auto [ds, n] = open_checked(loc, name, mem);
    if (size != nullptr) *size = n;
    if (first > n || count > n - first)
      throw InputError(
          "elements [" + std::to_string(first) + ", " +
          (count > ~uint64_t{0} - first ? std::string("2^64") : std::to_string(first + count)) +
          ") requested, the dataset has " + std::to_string(n));
    void* out = resize(count);
    if (count == 0) return;
    if (!locked_read_asked()) {
      // The chunks holding the range, located, read with pread and decoded outside the lock as
      // BatchRead's are (HDF5's own filter pipeline inflated one 1 MiB chunk in 3.9 ms on a
      // 2-core VM, this path in about a third of that).
      BatchRead::Item all;
      all.n = n;
      all.mem = mem;
      all.ds = std::move(ds);
      if (all.plan_chunks(sec2_view(all.ds.id())) && !all.file_offsets.empty()) {
        const uint64_t k0 = first / all.chunk, k1 = (first + count - 1) / all.chunk;
        // Chunks k0..k1 alone, numbered from 0, decoded at their stored width (then only the
        // range is widened).
        BatchRead::Item part;
        part.n = std::min(n, (k1 + 1) * all.chunk) - k0 * all.chunk;
        part.mem = static_cast<Width>(all.es);
        part.pipeline = all.pipeline;
        part.es = all.es;
        part.chunk = all.chunk;
        part.fd = all.fd;
        part.file_offsets.assign(all.file_offsets.begin() + k0, all.file_offsets.begin() + k1 + 1);
        part.raw_offsets.assign(k1 - k0 + 2, 0);
        for (uint64_t k = k0; k <= k1; ++k)
          part.raw_offsets[k - k0 + 1] =
              part.raw_offsets[k - k0] + all.raw_offsets[k + 1] - all.raw_offsets[k];
        bool ok = true;
        {
          Unlocked others_may_read;  // the dataset stays open, and so its file's descriptor
          auto raw = std::make_unique_for_overwrite<unsigned char[]>(part.raw_offsets.back());
          auto values = std::make_unique_for_overwrite<unsigned char[]>(part.n * all.es);
          part.raw = raw.get();
          part.out = values.get();
          std::atomic<uint64_t> ns[3] = {};
          for (uint64_t j = 0; ok && j <= k1 - k0; ++j)
            ok = part.pread_chunk(j) && part.decode(j, ns);
          if (ok)
            unpack(values.get() + (first - k0 * all.chunk) * all.es, all.es, 0, count, mem, out);
        }
        if (ok) return;
      }
      H5Eclear2(H5E_DEFAULT);
      ds = std::move(all.ds);
    }
    // Only the chunks the hyperslab touches are read and decoded (HDF5 checks their sums).
    Dataspace file_space(H5_TRY(H5Dget_space(ds.id())));
    const hsize_t start[1] = {first}, length[1] = {count};
    H5_TRY(H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, start, nullptr, length, nullptr));
    Dataspace mem_space(H5_TRY(H5Screate_simple(1, length, nullptr)));
    H5_TRY(H5Dread(ds.id(), mem_type(mem), mem_space.id(), file_space.id(), H5P_DEFAULT, out));
  });
}

DatasetInfo dataset_info(Id loc, const std::string& name) {
  return with_context("dataset " + object_path(loc, name), [&] {
    DatasetInfo info;
    info.size = dataset_size(loc, name);
    Dataset ds(H5_TRY(H5Dopen2(loc, name.c_str(), H5P_DEFAULT)));
    Datatype type(H5_TRY(H5Dget_type(ds.id())));
    info.element_bytes = static_cast<uint32_t>(H5Tget_size(type.id()));
    info.is_unsigned_integer = H5_TRY(H5Tget_class(type.id())) == H5T_INTEGER &&
                               H5_TRY(H5Tget_sign(type.id())) == H5T_SGN_NONE;
    PropList dcpl(H5_TRY(H5Dget_create_plist(ds.id())));
    if (H5_TRY(H5Pget_layout(dcpl.id())) == H5D_CHUNKED) {
      hsize_t chunk[1] = {0};
      H5_TRY(H5Pget_chunk(dcpl.id(), 1, chunk));
      info.chunk = chunk[0];
    }
    int filters = H5_TRY(H5Pget_nfilters(dcpl.id()));
    for (int i = 0; i < filters; ++i) {
      unsigned flags = 0;
      size_t nvalues = 0;
      H5Z_filter_t f = H5_TRY(H5Pget_filter2(dcpl.id(), static_cast<unsigned>(i), &flags, &nvalues,
                                             nullptr, 0, nullptr, nullptr));
      info.fletcher32 |= f == H5Z_FILTER_FLETCHER32;
      info.shuffle |= f == H5Z_FILTER_SHUFFLE;
      info.deflate |= f == H5Z_FILTER_DEFLATE;
      if (f == H5Z_FILTER_NBIT) info.nbit = static_cast<uint32_t>(H5Tget_precision(type.id()));
    }
    return info;
  });
}

namespace {
#if H5_VERSION_GE(1, 12, 0)
using ObjectInfo = H5O_info2_t;
#else
using ObjectInfo = H5O_info_t;
#endif
herr_t collect_dataset(hid_t /*obj*/, const char* name, const ObjectInfo* info, void* data) {
  if (info->type == H5O_TYPE_DATASET)
    static_cast<std::vector<std::string>*>(data)->push_back(std::string("/") + name);
  return 0;
}
}  // namespace

std::vector<std::string> list_datasets(Id file) {
  std::vector<std::string> out;
#if H5_VERSION_GE(1, 12, 0)
  H5_TRY(H5Ovisit3(file, H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &out, H5O_INFO_BASIC));
#else
  H5_TRY(H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &out, H5O_INFO_BASIC));
#endif
  return out;
}

}  // namespace gtadoc::h5
