// Thin RAII layer over the HDF5 C API for the archive code: move-only handles that close on
// destruction, and checked helpers for 1-D integer/byte datasets and scalar attributes. Every
// failure throws InputError with a one-line message (never printed by HDF5 itself).
#pragma once

// This header deliberately does not include <hdf5.h> (HDF5 is a private dependency of the
// formats layer); `Id` is HDF5's hid_t, checked by a static_assert in h5.cpp.

#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/big_alloc.h"

namespace gtadoc::h5 {

using Id = int64_t;  ///< hid_t
inline constexpr Id kInvalidId = -1;

/// Turns off HDF5's automatic error printing for the calling thread (idempotent, cheap).
/// Every helper below calls it; call it yourself before raw HDF5 calls wrapped in H5_TRY.
void init();

/// Serializes HDF5 use inside the process (a non-thread-safe HDF5 build must not be entered
/// concurrently; a thread-safe one serializes anyway). The archive functions hold it; code that
/// uses the helpers below from several threads must hold it around each sequence of calls.
class Lock {
 public:
  Lock();
  ~Lock();
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  std::unique_lock<std::recursive_mutex> lock_;
};

enum class Kind { kFile, kGroup, kDataset, kDataspace, kDatatype, kPropList, kAttribute };

/// Closes `id` with the H5*close call of `kind`; returns false on failure (the error is kept on
/// the HDF5 error stack).
bool close_id(Kind kind, Id id) noexcept;

/// Move-only owner of one HDF5 id of kind K. Destruction closes it and ignores errors; `close()`
/// closes it and throws on failure (use it for files being written: closing flushes them).
template <Kind K>
class Handle {
 public:
  Handle() = default;
  explicit Handle(Id id) : id_(id) {}
  Handle(Handle&& o) noexcept : id_(o.release()) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.release();
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  Id id() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  Id release() {
    Id id = id_;
    id_ = kInvalidId;
    return id;
  }
  void reset() {
    if (id_ >= 0) close_id(K, release());
  }
  void close();  // defined in h5.cpp for every K

 private:
  Id id_ = kInvalidId;
};

using File = Handle<Kind::kFile>;
using Group = Handle<Kind::kGroup>;
using Dataset = Handle<Kind::kDataset>;
using Dataspace = Handle<Kind::kDataspace>;
using Datatype = Handle<Kind::kDatatype>;
using PropList = Handle<Kind::kPropList>;
using Attribute = Handle<Kind::kAttribute>;

/// Number of HDF5 files, groups, datasets, datatypes and attributes open in the process (tests
/// use it to check that no handle leaks, on error paths included).
int64_t open_object_count();

// ------------------------------------------------------------------------------------ files
// Messages of the helpers below name the object inside the file ("dataset /a/b: ...") but never
// the file itself: callers prefix the file path.

/// Creates `file`, which must not exist (H5F_ACC_EXCL; else "cannot create: File exists").
/// Files use the HDF5 1.10 object format (checksummed metadata, compact chunk indexes) and no
/// file locking.
File create_file(const std::filesystem::path& file);
/// Opens an existing file read-only (or read-write). Throws InputError "cannot open: no such
/// file" / "cannot open: Permission denied" / "cannot open (not an HDF5 file, truncated or
/// unreadable): <HDF5's reason>".
File open_file(const std::filesystem::path& file, bool writable = false);

Group create_group(Id loc, const std::string& name);
Group open_group(Id loc, const std::string& name);
/// Whether a link `name` exists directly below `loc`.
bool has_link(Id loc, const std::string& name);

// ------------------------------------------------------------------------------------ datasets
/// Storage type of an integer dataset; memory types are always the native C++ type.
enum class Width { kU8 = 1, kU16 = 2, kU32 = 4, kU64 = 8 };
/// The smallest unsigned width that holds `max_value`.
Width min_width(uint64_t max_value);
template <class T>
constexpr Width width_of() {
  static_assert(std::is_unsigned_v<T> || std::is_same_v<T, char>);
  return static_cast<Width>(sizeof(T));
}

struct WriteOptions {
  int deflate_level = 0;  ///< 0: no deflate; 1..9: shuffle + deflate at that level
  bool shuffle = true;    ///< with deflate: byte shuffle first (useless for 1-byte elements)
  unsigned threads = 0;   ///< threads that filter chunks (0: every usable CPU)
  /// Filter chunks on threads and store them with H5Dwrite_chunk (false, or the environment
  /// variable GTADOC_H5_SERIAL_WRITE set: H5Dwrite, HDF5's own serial pipeline). Both store the
  /// same bytes (tests/formats/h5_write_test.cpp).
  bool parallel = true;
  /// Bits kept of each value, when above 0 and below the stored width's: the dataset's type gets
  /// that precision and HDF5's N-bit filter packs the values (in place of shuffle and deflate;
  /// every value must fit). For arrays of near-random ids, which deflate barely shrinks and
  /// inflates slowly.
  unsigned nbit = 0;
};

/// Whether `options` store values of width `store` through the N-bit filter.
constexpr bool uses_nbit(const WriteOptions& options, Width store) {
  return options.nbit > 0 && options.nbit < 8 * static_cast<unsigned>(store);
}

/// Packs `count` values of `mem` width (each below 2^bits, 1 <= bits <= 32) as HDF5's N-bit
/// filter packs an unsigned little-endian integer type of precision `bits` and offset 0: each
/// value's bits, most significant first, one after the other from the first byte's high bit on.
/// Writes (count * bits) / 8 + 1 bytes, the size the filter gives a chunk, into `out`.
void nbit_pack(const void* values, uint64_t count, Width mem, unsigned bits, unsigned char* out);
/// The inverse: `count` values of `bits` bits from `packed` (`packed_bytes` bytes, at least
/// ceil(count * bits / 8)) into `out`, `mem` wide. False when `packed` is too short.
bool nbit_unpack(const unsigned char* packed, uint64_t packed_bytes, uint64_t count, unsigned bits,
                 Width mem, void* out);
/// Whether nbit_unpack may use the processor's SIMD instructions (AVX2, where it has them; on by
/// default): sets it (`on` is ignored without them) and returns the previous setting. For tests
/// and benchmarks comparing the two paths; not to be called while another thread unpacks.
bool nbit_simd(bool on);

/// Largest chunk, in bytes, of the datasets written here.
inline constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 20;

/// Writes a 1-D chunked dataset with a Fletcher32 checksum on every chunk (plus shuffle and
/// deflate per `options`). `data` holds `n` elements of `mem` width; they are stored as `store`
/// (values must fit). An empty dataset gets an unlimited maximum size. The chunks are filtered
/// (converted, shuffled, deflated, summed exactly as HDF5's pipeline does) on `options.threads`
/// threads without entering HDF5, which is not thread-safe, and stored in order by
/// H5Dwrite_chunk: HDF5's own pipeline runs on the calling thread only, under the process-wide
/// lock, so it serialized the deflate of every shard a compression writes.
void write_raw(Id loc, const std::string& name, const void* data, uint64_t n, Width mem,
               Width store, const WriteOptions& options);

/// A 1-D array made ready for write_filtered without entering HDF5: its chunks filtered as
/// write_raw stores them. Built on any thread, outside the HDF5 lock, so that the deflate of many
/// files being written at once does not queue on the lock. Where write_raw would use HDF5's own
/// pipeline (options.parallel off, GTADOC_H5_SERIAL_WRITE, a big-endian host) it keeps a pointer
/// to the data instead, which must then outlive the write.
struct FilteredArray {
  uint64_t n = 0;
  Width store = Width::kU8;
  WriteOptions options;
  std::vector<std::vector<unsigned char>> chunks;  ///< as stored, in order
  const void* data = nullptr;                      ///< for HDF5's pipeline (chunks empty)
  Width mem = Width::kU8;
};
FilteredArray filter_array(const void* data, uint64_t n, Width mem, Width store,
                           const WriteOptions& options);
/// Creates dataset `name` below `loc` as write_raw does and stores the chunks: the same bytes as
/// write_raw(loc, name, data, n, mem, store, options).
void write_filtered(Id loc, const std::string& name, const FilteredArray& array);

template <class T>
FilteredArray filter_array(std::span<const T> data, Width store, const WriteOptions& options) {
  return filter_array(data.data(), data.size(), width_of<T>(), store, options);
}
/// filter_array with the smallest width that holds the values' maximum.
template <class T>
FilteredArray filter_array_min_width(std::span<const T> data, const WriteOptions& options) {
  T max = 0;
  for (T v : data) max = v > max ? v : max;
  return filter_array(data, min_width(max), options);
}

template <class T>
void write_array(Id loc, const std::string& name, std::span<const T> data, Width store,
                 const WriteOptions& options) {
  write_raw(loc, name, data.data(), data.size(), width_of<T>(), store, options);
}
/// Stores the values with the smallest width that holds their maximum.
template <class T>
void write_array_min_width(Id loc, const std::string& name, std::span<const T> data,
                           const WriteOptions& options) {
  T max = 0;
  for (T v : data) max = v > max ? v : max;
  write_array(loc, name, data, min_width(max), options);
}

/// Number of elements of a 1-D dataset (throws if the dataset is missing or not 1-D).
uint64_t dataset_size(Id loc, const std::string& name);
/// The values of a whole 1-D unsigned integer dataset whose stored width fits T (chunks decoded
/// on threads, see BatchRead). A checksum failure throws "dataset NAME: checksum mismatch
/// (corrupted data)".
template <class T>
std::vector<T> read_array(Id loc, const std::string& name);

/// Elements [first, first + count) of a 1-D unsigned integer dataset whose stored width fits T:
/// only the chunks holding them are read, checked against their Fletcher32 sums and inflated,
/// as BatchRead does (pread and the codec of formats/zlib_codec.h, outside the HDF5 lock), else
/// by H5Dread of a hyperslab (whose values and errors are then HDF5's). `*size` (when given)
/// receives the dataset's number of elements.
/// Throws InputError when the range lies beyond the dataset ("elements [a, b) requested, the
/// dataset has n"), naming the dataset as read_array does. The caller holds h5::Lock.
template <class T>
std::vector<T> read_array_range(Id loc, const std::string& name, uint64_t first, uint64_t count,
                                uint64_t* size = nullptr);
/// read_array_range's reader: sizes the output by `resize` (count elements of width `mem`) only
/// once the range is known to lie in the dataset.
void read_range_raw(Id loc, const std::string& name, uint64_t first, uint64_t count, Width mem,
                    const std::function<void*(uint64_t)>& resize, uint64_t* size);

/// Where the stored chunks of a 1-D unsigned integer dataset lie in its file and how they are
/// filtered: what BatchRead::add_located needs to read the dataset without any HDF5 call. Only
/// datasets whose chunks all carry a Fletcher32 checksum have one, so that a map which does not
/// match its file is caught by the checksums (or by a stream that does not inflate).
struct ChunkMap {
  uint64_t n = 0;              ///< elements
  uint32_t element_bytes = 0;  ///< stored element size: 1, 2, 4 or 8
  uint64_t chunk = 0;          ///< elements per chunk
  bool shuffle = false, deflate = false;
  std::vector<uint64_t> offsets;  ///< file offset of each chunk's stored bytes
  std::vector<uint64_t> sizes;    ///< stored bytes of each chunk, checksum included
  uint32_t bits = 0;              ///< N-bit filter: the bits of each packed value (0: not packed)
  bool operator==(const ChunkMap&) const = default;
};
/// The chunk map of dataset `name` below `loc` when every chunk can be read directly (the
/// conditions of BatchRead's direct path, Fletcher32 on every chunk, at most 4096 chunks);
/// nullopt otherwise. Throws InputError when the dataset is missing. The caller holds h5::Lock.
std::optional<ChunkMap> chunk_map(Id loc, const std::string& name);
/// Why `map` cannot describe a dataset (empty when it can): element size, chunk length,
/// number of chunks for `n`, stored sizes and offsets within bounds. For maps read from a file.
std::string chunk_map_problem(const ChunkMap& map);

/// Whether GTADOC_H5_LOCKED_READ asks for HDF5's own chunk reads under the lock (measurements and
/// tests): BatchRead then locates no chunk, and shards are not read by their chunk maps.
bool locked_read_asked();

/// Reads several whole 1-D unsigned integer datasets in one go. `run()`:
/// 1. (HDF5 calls, on the calling thread) opens and checks every dataset and learns where each of
///    its chunks lies in the file and how many bytes it stores (H5Dget_chunk_info_by_coord), and
///    the file's descriptor (H5Fget_vfd_handle; files of HDF5's default sec2 driver);
/// 2. (no HDF5 call) sizes the outputs and first touches the stored chunks' buffers on threads;
/// 3. (no HDF5 call) reads every chunk's stored bytes with pread, verifies its Fletcher32
///    checksum, inflates, unshuffles and widens it to the memory type on `threads` threads (0:
///    every hardware thread). The datasets stay open meanwhile, so their files' descriptors do.
/// A dataset whose chunks are not located so (another file driver, HDF5 older than 1.10.5, more
/// than 4096 chunks, or the environment variable GTADOC_H5_LOCKED_READ set) has its chunks read
/// as stored by H5Dread_chunk, on the calling thread between 2 and 3. A dataset this path does
/// not take as a whole (another layout or filter, a filter skipped for a chunk, a chunk that
/// pread does not read whole, a checksum mismatch, a stream that does not inflate to exactly one
/// chunk) is read again by H5Dread in `finish`, so values and error messages are exactly HDF5's.
/// Errors are kept per dataset and thrown when the caller asks for that dataset: `size(i)` throws
/// what opening it threw (missing, not 1-D, wrong type), `finish(i)` that or a read error, so the
/// caller meets them in the order of its own checks. The caller holds h5::Lock throughout (run()
/// lets it go in 2 and 3, which enter no HDF5 call, and takes it back), and uses an output only
/// after `finish` returned for it.
class BatchRead {
 public:
  explicit BatchRead(unsigned threads = 0);
  ~BatchRead();
  BatchRead(const BatchRead&) = delete;
  BatchRead& operator=(const BatchRead&) = delete;

  /// Queues dataset `name` below `loc` (which must stay open until run() returns); run() resizes
  /// `out` to the dataset's size and fills it. Returns the dataset's index.
  template <class T>
  size_t add(Id loc, const std::string& name, std::vector<T>& out) {
    return add_raw(loc, name, width_of<T>(), [&out](uint64_t n) -> void* {
      out.clear();
      resize_on_huge_pages(out, n);
      return out.data();
    });
  }
  /// As add(), for a dataset whose number of elements is known beforehand: any other size is
  /// the dataset's error ("<what> is N, expected <expected>"), found before anything is
  /// allocated for it.
  template <class T>
  size_t add(Id loc, const std::string& name, std::vector<T>& out, uint64_t expected,
             std::string what) {
    const size_t i = add(loc, name, out);
    expect_size(i, expected, std::move(what));
    return i;
  }
  /// Queues a dataset known by its chunk map (chunk_map; chunk_map_problem must be empty) in the
  /// file open on `fd`, which must stay open until run() returns: run() reads it with no HDF5
  /// call, and needs no h5::Lock when every queued dataset is located so. When its stored bytes
  /// do not decode as the map says (or its elements are wider than T), `direct(i)` is false and
  /// `finish(i)` throws InputError; the caller then reads the file through HDF5.
  template <class T>
  size_t add_located(int fd, const ChunkMap& map, std::vector<T>& out) {
    return add_located_raw(fd, map, width_of<T>(), [&out](uint64_t n) -> void* {
      out.clear();
      resize_on_huge_pages(out, n);
      return out.data();
    });
  }
  /// Reads every queued dataset (see above); throws only on failures outside the data (memory).
  void run();
  /// Where run()'s time went, in seconds: under the HDF5 lock (datasets opened, chunks
  /// located), sizing and first touch of the outputs and buffers (wall), then summed over the
  /// threads: the stored chunks' reads, their checksums, inflating, and unshuffling/widening.
  struct Times {
    double locate = 0, touch = 0, pread = 0, checksum = 0, inflate = 0, unpack = 0;
  };
  const Times& times() const { return times_; }
  /// Elements of dataset i; throws what opening it threw.
  uint64_t size(size_t i) const;
  /// Completes dataset i (reading it with H5Dread where the fast path gave up); throws its error.
  void finish(size_t i);
  /// Whether run() read dataset i by its chunks (false: finish reads it with H5Dread).
  bool direct(size_t i) const;
  /// Whether run() read dataset i's stored chunks with pread, outside the HDF5 lock, none of them
  /// coming short (whatever their decoding then found; false: H5Dread_chunk read them, or the
  /// dataset was not read by its chunks).
  bool unlocked(size_t i) const;

 private:
  struct Item;
  friend std::optional<ChunkMap> chunk_map(Id loc, const std::string& name);
  friend void read_range_raw(Id loc, const std::string& name, uint64_t first, uint64_t count,
                             Width mem, const std::function<void*(uint64_t)>& resize,
                             uint64_t* size);
  size_t add_raw(Id loc, const std::string& name, Width mem, std::function<void*(uint64_t)> resize);
  size_t add_located_raw(int fd, const ChunkMap& map, Width mem,
                         std::function<void*(uint64_t)> resize);
  void expect_size(size_t i, uint64_t expected, std::string what);
  unsigned threads_;
  std::vector<std::unique_ptr<Item>> items_;
  std::vector<uint32_t> raw_block_;  ///< every dataset's stored chunks, during run()
  Times times_;
};

template <class T>
std::vector<T> read_array(Id loc, const std::string& name) {
  std::vector<T> out;
  BatchRead batch;
  batch.add(loc, name, out);
  batch.run();
  batch.finish(0);
  return out;
}

template <class T>
std::vector<T> read_array_range(Id loc, const std::string& name, uint64_t first, uint64_t count,
                                uint64_t* size) {
  std::vector<T> out;
  read_range_raw(
      loc, name, first, count, width_of<T>(),
      [&out](uint64_t n) -> void* {
        out.resize(n);
        return out.data();
      },
      size);
  return out;
}

/// HDF5's Fletcher32 checksum (H5_checksum_fletcher32: big-endian 16-bit words, sums reduced
/// every 360 words; an odd last byte counts as the high byte of a word).
uint32_t fletcher32(const void* data, size_t bytes);

/// How a dataset is stored (for tests, `gtadoc info` and format checks).
struct DatasetInfo {
  uint64_t size = 0;           ///< elements (1-D)
  uint32_t element_bytes = 0;  ///< stored element size
  bool is_unsigned_integer = false;
  uint64_t chunk = 0;  ///< chunk length in elements (0 when not chunked)
  bool fletcher32 = false, shuffle = false, deflate = false;
  uint32_t nbit = 0;  ///< with the N-bit filter: the bits kept of each value (its type's precision)
};
DatasetInfo dataset_info(Id loc, const std::string& name);
/// Absolute paths of every dataset in the file ("/grammar/symbols", ...), in name order.
std::vector<std::string> list_datasets(Id file);

// ------------------------------------------------------------------------------------ attributes
/// Scalar fixed-length string attribute (ASCII, null-padded, no terminator stored).
void write_string_attr(Id loc, const std::string& name, const std::string& value);
/// Scalar unsigned integer attribute stored with width `store`.
void write_uint_attr(Id loc, const std::string& name, uint64_t value, Width store);
/// Overwrites the value of an existing scalar integer attribute (keeps its type).
void overwrite_uint_attr(Id loc, const std::string& name, uint64_t value);

/// The value of a scalar fixed-length string attribute (trailing NULs stripped); nullopt when
/// the attribute is missing or is not a scalar fixed-length string.
std::optional<std::string> read_string_attr(Id loc, const std::string& name);
/// The value of a scalar unsigned integer attribute; nullopt when missing or not an unsigned
/// integer of at most 8 bytes.
std::optional<uint64_t> read_uint_attr(Id loc, const std::string& name);

}  // namespace gtadoc::h5
