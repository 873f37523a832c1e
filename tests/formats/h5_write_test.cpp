// h5::write_raw's parallel chunk path (chunks filtered on threads, stored with H5Dwrite_chunk)
// against HDF5's own pipeline (H5Dwrite): the same file, byte for byte (when the chunk codec is
// zlib, as HDF5's filter; with libdeflate the same values through HDF5's reader), for every stored
// width, memory width, deflate level, shuffle setting, chunk edge and kind of data (compressible,
// incompressible, zeros); and the values read back equal to those written, on any thread count.
// h5::filter_array + h5::write_filtered (filtered outside the HDF5 lock) store write_raw's bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "formats/h5.h"
#include "formats/zlib_codec.h"
#include "tests/testutil/corpus.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;

uint64_t max_of(h5::Width w) {
  return w == h5::Width::kU64 ? ~uint64_t{0} : (uint64_t{1} << (8 * static_cast<int>(w))) - 1;
}

/// One file holding `values` as dataset "d" stored at `store`, written from `mem`-wide memory,
/// by write_raw or (`filtered`) by filter_array outside the HDF5 lock, then write_filtered.
std::string write_file_bytes(const fs::path& file, const std::vector<uint64_t>& values,
                             h5::Width mem, h5::Width store, h5::WriteOptions o,
                             bool filtered = false) {
  fs::remove(file);
  std::vector<uint32_t> narrow(values.begin(), values.end());
  const void* data = mem == h5::Width::kU64 ? static_cast<const void*>(values.data())
                                            : static_cast<const void*>(narrow.data());
  h5::FilteredArray ready;
  if (filtered) ready = h5::filter_array(data, values.size(), mem, store, o);
  {
    h5::Lock lock;
    h5::File f = h5::create_file(file);
    if (filtered) {
      h5::write_filtered(f.id(), "d", ready);
    } else {
      h5::write_raw(f.id(), "d", data, values.size(), mem, store, o);
    }
  }
  return testutil::read_file(file);
}

TEST(H5Write, ParallelChunksStoreHdf5sBytes) {
  testutil::TempDir dir;
  std::mt19937_64 rng(7);
  // Chunks hold 1 MiB: 2^17 u64, 2^18 u32, 2^19 u16, 2^20 u8 values.
  const std::vector<uint64_t> sizes = {0, 1, 2, 1000, (1u << 17) + 1, (1u << 18) + 3, 5u << 18};
  int cases = 0;
  for (h5::Width store : {h5::Width::kU8, h5::Width::kU16, h5::Width::kU32, h5::Width::kU64})
    for (uint64_t n : sizes)
      for (int kind = 0; kind < 3; ++kind) {
        // 0: small values (compressible), 1: uniform over the width (incompressible), 2: zeros.
        std::vector<uint64_t> values(n);
        for (uint64_t& v : values)
          v = kind == 2   ? 0
              : kind == 0 ? std::min<uint64_t>(rng() % 300, max_of(store))
                          : rng() & max_of(store);
        for (int level : {0, 1, 6, 9})
          for (bool shuffle : {true, false}) {
            if (level == 0 && !shuffle) continue;
            if ((level == 1 || level == 9) && (n > 1000 || kind == 2)) continue;  // time
            const h5::Width mem =
                store == h5::Width::kU64 || kind == 1 ? h5::Width::kU64 : h5::Width::kU32;
            h5::WriteOptions serial{level, shuffle, 1, false};
            h5::WriteOptions parallel{level, shuffle, 3, true};
            const std::string what = "store " + std::to_string(static_cast<int>(store)) + " n " +
                                     std::to_string(n) + " kind " + std::to_string(kind) +
                                     " level " + std::to_string(level) +
                                     (shuffle ? " shuffle" : "");
            const std::string a = write_file_bytes(dir / "a.h5", values, mem, store, serial);
            const std::string b = write_file_bytes(dir / "b.h5", values, mem, store, parallel);
            // Filtered ahead of the write: write_raw's bytes exactly, on either path.
            ASSERT_TRUE(write_file_bytes(dir / "c.h5", values, mem, store, parallel, true) == b)
                << what;
            ASSERT_TRUE(write_file_bytes(dir / "c.h5", values, mem, store, serial, true) == a)
                << what;
            // With zlib the chunks are HDF5's own bytes; libdeflate writes other (valid) zlib
            // streams of the same data, which HDF5's filter reads back below.
            if (level == 0 || std::string(zlib_codec_name()) == "zlib") {
              ASSERT_EQ(a.size(), b.size()) << what;
              ASSERT_TRUE(a == b) << what;
            }
            h5::Lock lock;
            h5::File f = h5::open_file(dir / "b.h5");
            ASSERT_EQ(h5::read_array<uint64_t>(f.id(), "d"), values) << what;
            ++cases;
          }
      }
  EXPECT_GT(cases, 200);
}

}  // namespace
}  // namespace gtadoc
