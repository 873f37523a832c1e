// The zlib streams of archive chunks (HDF5's deflate filter stores a zlib stream per chunk):
// compressed and inflated whole, on the caller's thread. With libdeflate (found at configure
// time: GTADOC_HAVE_LIBDEFLATE) both directions use it — whole-buffer DEFLATE, 2-3x faster than
// zlib at the same level — otherwise zlib. Either way the streams are standard zlib: HDF5's own
// filter, zlib and libdeflate read what the other wrote, so archives stay readable by any of
// them; the compressed bytes (not the data) differ between the two libraries.
#pragma once

#include <cstddef>

namespace gtadoc {

/// Bytes a zlib stream of `n` input bytes can take at most.
size_t zlib_bound(size_t n);

/// Compresses `n` bytes at `src` into a zlib stream at `dst` (capacity `cap` >= zlib_bound(n)) at
/// `level` (1..9, zlib's scale); returns its length. ResourceError on failure.
size_t zlib_compress(const void* src, size_t n, void* dst, size_t cap, int level);

/// Inflates the zlib stream `src` (`len` bytes) into exactly `n` bytes at `dst`; false unless the
/// stream is valid and ends there.
bool zlib_inflate_exact(const void* src, size_t len, void* dst, size_t n);

/// "libdeflate" or "zlib": which library this build uses.
const char* zlib_codec_name();

}  // namespace gtadoc
