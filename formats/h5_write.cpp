// The chunk writer of formats/h5.h (write_raw, filter_array, write_filtered): the chunks of a
// 1-D dataset filtered exactly as HDF5's pipeline filters them (converted, shuffled, deflated,
// Fletcher32 appended) on threads, outside HDF5, then stored in order with H5Dwrite_chunk; HDF5's
// own pipeline where the options or GTADOC_H5_SERIAL_WRITE ask for it. Both store the same bytes.
#include "formats/h5.h"

#include <hdf5.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/parallel.h"
#include "common/settings.h"
#include "formats/h5_internal.h"
#include "formats/zlib_codec.h"

namespace gtadoc::h5 {
namespace {

/// Chunk k of a dataset of n elements (chunk elements each, the last one padded with zeros as
/// HDF5 pads it) as HDF5's pipeline stores it: elements converted to `store` (little-endian),
/// packed by the N-bit filter (uses_nbit) or byte-shuffled (deflate with shuffle, elements wider
/// than a byte, chunks of more than one element), deflated at the level (formats/zlib_codec.h: a
/// zlib stream, as the deflate filter writes, with an output bound it never overflows), then the
/// Fletcher32 sum of those bytes appended little-endian.
std::vector<unsigned char> filter_chunk(const void* data, uint64_t n, Width mem, Width store,
                                        uint64_t chunk, uint64_t k, const WriteOptions& o) {
  // Scratch reused by the thread across chunks and datasets (fresh 1 MiB buffers per chunk cost
  // more in page faults than the deflate).
  thread_local std::vector<unsigned char> plain, shuffled, packed;
  const size_t es = static_cast<size_t>(store);
  const uint64_t first = k * chunk, count = std::min(chunk, n - first);
  const size_t chunk_bytes = static_cast<size_t>(chunk) * es;
  plain.resize(chunk_bytes);
  if (mem == store) {
    std::memcpy(plain.data(), static_cast<const unsigned char*>(data) + first * es, count * es);
  } else {
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t v = load_uint(data, first + i, mem);
      std::memcpy(plain.data() + i * es, &v, es);  // little-endian: the low bytes
    }
  }
  std::fill(plain.begin() + static_cast<std::ptrdiff_t>(count * es), plain.end(), 0);
  const unsigned char* stored = plain.data();
  size_t len = chunk_bytes;
  if (uses_nbit(o, store)) {  // the whole chunk packed, its zero padding too, as the filter does
    len = (chunk * o.nbit) / 8 + 1;
    packed.resize(len);
    nbit_pack(plain.data(), chunk, store, o.nbit, packed.data());
    stored = packed.data();
  } else if (o.deflate_level > 0) {
    const unsigned char* src = plain.data();
    if (o.shuffle && es > 1 && chunk > 1) {
      shuffled.resize(chunk_bytes);
      for (uint64_t i = 0; i < chunk; ++i)
        for (size_t b = 0; b < es; ++b) shuffled[b * chunk + i] = plain[i * es + b];
      src = shuffled.data();
    }
    packed.resize(zlib_bound(chunk_bytes));
    len = zlib_compress(src, chunk_bytes, packed.data(), packed.size(), o.deflate_level);
    stored = packed.data();
  }
  std::vector<unsigned char> out(len + 4);
  std::memcpy(out.data(), stored, len);
  const uint32_t sum = fletcher32(out.data(), len);
  for (int i = 0; i < 4; ++i) out[len + i] = static_cast<unsigned char>(sum >> (8 * i));
  return out;
}

/// Stores filtered chunk k (of `chunk` elements each) as it is.
void store_chunk(hid_t ds, uint64_t k, uint64_t chunk, const std::vector<unsigned char>& bytes) {
  const hsize_t offset[1] = {k * chunk};
  H5_TRY(H5Dwrite_chunk(ds, H5P_DEFAULT, 0, offset, bytes.size(), bytes.data()));
}

/// Filters the chunks of a new dataset on threads, a window at a time, and stores each window's
/// chunks in order with H5Dwrite_chunk. Transient memory: about 3 MiB per thread filtering plus
/// the window's filtered chunks (at most 2 per thread, 1 MiB each before deflate).
void write_chunks(hid_t ds, const void* data, uint64_t n, Width mem, Width store, uint64_t chunk,
                  const WriteOptions& o) {
  const uint64_t chunks = (n + chunk - 1) / chunk;
  const unsigned threads = resolve_threads(o.threads);
  const uint64_t window = uint64_t{2} * threads;
  std::vector<std::vector<unsigned char>> filtered;
  for (uint64_t lo = 0; lo < chunks; lo += window) {
    const uint64_t hi = std::min(chunks, lo + window);
    filtered.assign(hi - lo, {});
    parallel_for(hi - lo, threads, [&](size_t i) {
      filtered[i] = filter_chunk(data, n, mem, store, chunk, lo + i, o);
    });
    for (uint64_t k = lo; k < hi; ++k) store_chunk(ds, k, chunk, filtered[k - lo]);
  }
}

void check_fits(const std::string& name, const void* data, uint64_t n, Width mem, Width store,
                const WriteOptions& options) {
  GTADOC_EXPECTS(options.deflate_level >= 0 && options.deflate_level <= 9,
                 "deflate level must be 0..9");
  GTADOC_EXPECTS(!uses_nbit(options, store) || options.nbit <= 32, "nbit: at most 32 bits");
  if (store < mem || uses_nbit(options, store)) {
    uint64_t limit =
        uses_nbit(options, store) ? (uint64_t{1} << options.nbit) - 1 : max_of_width(store);
    for (uint64_t i = 0; i < n; ++i)
      GTADOC_EXPECTS(load_uint(data, i, mem) <= limit, "value too wide for dataset " + name);
  }
}

/// Elements per chunk of a dataset of n elements stored as `store`.
uint64_t chunk_elements(uint64_t n, Width store) {
  return std::clamp<uint64_t>(n, 1, kMaxChunkBytes / static_cast<uint64_t>(store));
}

/// Whether chunks are filtered here (else HDF5's pipeline filters them inside H5Dwrite).
bool filter_here(uint64_t n, const WriteOptions& options) {
  return n > 0 && options.parallel && !settings::flag("GTADOC_H5_SERIAL_WRITE") &&
         std::endian::native == std::endian::little;
}

/// A new 1-D chunked dataset with the filters of `options` (N-bit: the type's precision too) and
/// a Fletcher32 checksum.
Dataset create_chunked(Id loc, const std::string& name, uint64_t n, Width store,
                       const WriteOptions& options) {
  const uint64_t elem = static_cast<uint64_t>(store);
  hsize_t dims[1] = {n};
  hsize_t maxdims[1] = {n == 0 ? H5S_UNLIMITED : n};
  Dataspace space(H5_TRY(H5Screate_simple(1, dims, maxdims)));
  PropList dcpl(H5_TRY(H5Pcreate(H5P_DATASET_CREATE)));
  H5_TRY(H5Pset_obj_track_times(dcpl.id(), false));
#if H5_VERSION_GE(1, 10, 5)
  H5_TRY(H5Pset_dset_no_attrs_hint(dcpl.id(), true));  // minimal object headers
#endif
  hsize_t chunk[1] = {chunk_elements(n, store)};
  H5_TRY(H5Pset_chunk(dcpl.id(), 1, chunk));
  Datatype type(H5_TRY(H5Tcopy(file_type(store))));
  if (uses_nbit(options, store)) {
    H5_TRY(H5Tset_precision(type.id(), options.nbit));
    H5_TRY(H5Pset_nbit(dcpl.id()));
  } else if (options.deflate_level > 0) {
    if (options.shuffle && elem > 1) H5_TRY(H5Pset_shuffle(dcpl.id()));
    H5_TRY(H5Pset_deflate(dcpl.id(), static_cast<unsigned>(options.deflate_level)));
  }
  // Last in the pipeline: the checksum covers the bytes as stored, so it is verified first
  // on read, before any decompression.
  H5_TRY(H5Pset_fletcher32(dcpl.id()));
  return Dataset(H5_TRY(
      H5Dcreate2(loc, name.c_str(), type.id(), space.id(), H5P_DEFAULT, dcpl.id(), H5P_DEFAULT)));
}

}  // namespace

void write_raw(Id loc, const std::string& name, const void* data, uint64_t n, Width mem,
               Width store, const WriteOptions& options) {
  check_fits(name, data, n, mem, store, options);
  with_context("dataset " + object_path(loc, name), [&] {
    Dataset ds = create_chunked(loc, name, n, store, options);
    if (filter_here(n, options)) {
      write_chunks(ds.id(), data, n, mem, store, chunk_elements(n, store), options);
    } else if (n > 0) {
      H5_TRY(H5Dwrite(ds.id(), mem_type(mem), H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
    }
    ds.close();
  });
}

FilteredArray filter_array(const void* data, uint64_t n, Width mem, Width store,
                           const WriteOptions& options) {
  check_fits("(filtered)", data, n, mem, store, options);
  FilteredArray a;
  a.n = n;
  a.store = store;
  a.options = options;
  if (!filter_here(n, options)) {
    a.data = data;
    a.mem = mem;
    return a;
  }
  const uint64_t chunk = chunk_elements(n, store);
  a.chunks.resize((n + chunk - 1) / chunk);
  parallel_for(a.chunks.size(), resolve_threads(options.threads), [&](size_t k) {
    a.chunks[k] = filter_chunk(data, n, mem, store, chunk, k, options);
  });
  return a;
}

void write_filtered(Id loc, const std::string& name, const FilteredArray& a) {
  with_context("dataset " + object_path(loc, name), [&] {
    Dataset ds = create_chunked(loc, name, a.n, a.store, a.options);
    if (!a.chunks.empty()) {
      const uint64_t chunk = chunk_elements(a.n, a.store);
      for (uint64_t k = 0; k < a.chunks.size(); ++k) store_chunk(ds.id(), k, chunk, a.chunks[k]);
    } else if (a.n > 0) {
      H5_TRY(H5Dwrite(ds.id(), mem_type(a.mem), H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data));
    }
    ds.close();
  });
}

}  // namespace gtadoc::h5
