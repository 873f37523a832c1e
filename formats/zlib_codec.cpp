#include "formats/zlib_codec.h"

#include <zlib.h>

#include <climits>
#include <memory>
#include <string>

#include "common/error.h"

#if defined(GTADOC_HAVE_LIBDEFLATE)
#include <libdeflate.h>
#endif

namespace gtadoc {

#if defined(GTADOC_HAVE_LIBDEFLATE)

namespace {

struct CompressorFree {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};
struct DecompressorFree {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

/// One compressor per thread and level (they hold ~0.5-1 MiB of match-finder state).
libdeflate_compressor* compressor(int level) {
  thread_local std::unique_ptr<libdeflate_compressor, CompressorFree> per_level[10];
  auto& c = per_level[level];
  if (!c) {
    c.reset(libdeflate_alloc_compressor(level));
    if (!c) throw ResourceError("cannot allocate a DEFLATE compressor");
  }
  return c.get();
}

libdeflate_decompressor* decompressor() {
  thread_local std::unique_ptr<libdeflate_decompressor, DecompressorFree> d;
  if (!d) {
    d.reset(libdeflate_alloc_decompressor());
    if (!d) throw ResourceError("cannot allocate a DEFLATE decompressor");
  }
  return d.get();
}

}  // namespace

size_t zlib_bound(size_t n) {
  return libdeflate_zlib_compress_bound(nullptr, n);  // null: valid for every level
}

size_t zlib_compress(const void* src, size_t n, void* dst, size_t cap, int level) {
  GTADOC_EXPECTS(level >= 1 && level <= 9, "zlib level must be 1..9");
  const size_t len = libdeflate_zlib_compress(compressor(level), src, n, dst, cap);
  if (len == 0) throw ResourceError("deflate failed (output larger than its bound)");
  return len;
}

bool zlib_inflate_exact(const void* src, size_t len, void* dst, size_t n) {
  size_t got = 0;
  return libdeflate_zlib_decompress(decompressor(), src, len, dst, n, &got) == LIBDEFLATE_SUCCESS &&
         got == n;
}

const char* zlib_codec_name() {
  return "libdeflate";
}

#else

size_t zlib_bound(size_t n) {
  return compressBound(static_cast<uLong>(n));
}

size_t zlib_compress(const void* src, size_t n, void* dst, size_t cap, int level) {
  GTADOC_EXPECTS(level >= 1 && level <= 9, "zlib level must be 1..9");
  uLongf len = static_cast<uLongf>(cap);
  const int rc = compress2(static_cast<Bytef*>(dst), &len, static_cast<const Bytef*>(src),
                           static_cast<uLong>(n), level);
  if (rc != Z_OK) throw ResourceError("deflate failed (zlib error " + std::to_string(rc) + ")");
  return len;
}

bool zlib_inflate_exact(const void* src, size_t len, void* dst, size_t n) {
  if (len > UINT_MAX || n > UINT_MAX) return false;
  z_stream z{};
  z.next_in = const_cast<Bytef*>(static_cast<const Bytef*>(src));
  z.avail_in = static_cast<uInt>(len);
  z.next_out = static_cast<Bytef*>(dst);
  z.avail_out = static_cast<uInt>(n);
  if (inflateInit(&z) != Z_OK) return false;
  const int rc = inflate(&z, Z_FINISH);
  const bool ok = rc == Z_STREAM_END && z.total_out == n;
  inflateEnd(&z);
  return ok;
}

const char* zlib_codec_name() {
  return "zlib";
}

#endif

}  // namespace gtadoc
