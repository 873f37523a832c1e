// Symbols packed by HDF5's N-bit filter (formats/h5.h: nbit_pack, nbit_unpack, WriteOptions::nbit):
// the packing against a bit-by-bit model, the chunks filtered here against those HDF5's own
// pipeline stores (byte for byte), the values read back by BatchRead's direct path and by HDF5's
// own filter (H5Dread), for every width, bit count and chunk edge; chunk maps of packed datasets.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "formats/h5.h"
#include "tests/testutil/corpus.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;

// The bit stream the filter writes, one bit at a time: each value's `bits` low bits, most
// significant first, each byte filled from its high bit; (count * bits) / 8 + 1 bytes.
std::vector<unsigned char> model_pack(const std::vector<uint64_t>& values, unsigned bits) {
  std::vector<unsigned char> out(values.size() * bits / 8 + 1, 0);
  uint64_t pos = 0;
  for (uint64_t v : values)
    for (int b = static_cast<int>(bits) - 1; b >= 0; --b, ++pos)
      if ((v >> b) & 1) out[pos / 8] |= static_cast<unsigned char>(0x80u >> (pos % 8));
  return out;
}

TEST(Nbit, PackAndUnpackAgreeWithTheBitModel) {
  std::mt19937_64 rng(11);
  // With the processor's SIMD unpacking (where it has it) and without.
  struct Restore {
    bool simd = h5::nbit_simd(true);
    ~Restore() { h5::nbit_simd(simd); }
  } restore;
  for (bool simd : {true, false})
    for (unsigned bits = 1; bits <= 32; ++bits)
      for (uint64_t n : {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4099}) {
        h5::nbit_simd(simd);
        SCOPED_TRACE(simd ? "simd" : "scalar");
        std::vector<uint64_t> values(n);
        for (uint64_t& v : values) v = rng() & ((uint64_t{1} << bits) - 1);
        if (n > 0) values[n / 2] = (uint64_t{1} << bits) - 1;  // the largest value
        std::vector<unsigned char> packed(n * bits / 8 + 1, 0xa5);
        h5::nbit_pack(values.data(), n, h5::Width::kU64, bits, packed.data());
        ASSERT_EQ(packed, model_pack(values, bits)) << bits << " bits, " << n << " values";
        // Read from exactly the bytes the values take (no slack after them), into every width
        // that holds them.
        const uint64_t need = (n * bits + 7) / 8;
        std::vector<unsigned char> exact(packed.begin(), packed.begin() + need);
        std::vector<uint64_t> back64(n, 7);
        ASSERT_TRUE(h5::nbit_unpack(exact.data(), need, n, bits, h5::Width::kU64, back64.data()));
        ASSERT_EQ(back64, values) << bits << " bits, " << n << " values";
        std::vector<uint32_t> back32(n, 7);
        ASSERT_TRUE(h5::nbit_unpack(exact.data(), need, n, bits, h5::Width::kU32, back32.data()));
        ASSERT_TRUE(std::equal(back32.begin(), back32.end(), values.begin()));
        if (bits <= 16) {
          std::vector<uint16_t> back16(n, 7);
          ASSERT_TRUE(h5::nbit_unpack(exact.data(), need, n, bits, h5::Width::kU16, back16.data()));
          ASSERT_TRUE(std::equal(back16.begin(), back16.end(), values.begin()));
        }
        if (need > 0) {
          EXPECT_FALSE(
              h5::nbit_unpack(exact.data(), need - 1, n, bits, h5::Width::kU64, back64.data()));
        }
      }
  uint32_t one = 0;
  const unsigned char byte = 0xff;
  EXPECT_FALSE(h5::nbit_unpack(&byte, 1, 1, 0, h5::Width::kU32, &one));
  EXPECT_FALSE(h5::nbit_unpack(&byte, 8, 1, 33, h5::Width::kU64, &one));
}

// Dataset "d" of `values` stored `store` wide with `bits` bits, written by HDF5's pipeline
// (`parallel` false) or filtered here; the file's bytes.
std::string write_packed(const fs::path& file, const std::vector<uint64_t>& values, h5::Width store,
                         unsigned bits, bool parallel) {
  fs::remove(file);
  h5::WriteOptions o{6, true, 3, parallel};
  o.nbit = bits;
  h5::Lock lock;
  {
    h5::File f = h5::create_file(file);
    h5::write_raw(f.id(), "d", values.data(), values.size(), h5::Width::kU64, store, o);
  }
  return testutil::read_file(file);
}

// The values of dataset "d" as HDF5's own filter pipeline reads them.
std::vector<uint64_t> hdf5_read(const fs::path& file) {
  h5::Lock lock;
  h5::File f = h5::open_file(file);
  const hid_t ds = H5Dopen2(f.id(), "d", H5P_DEFAULT);
  EXPECT_GE(ds, 0);
  const hid_t space = H5Dget_space(ds);
  std::vector<uint64_t> out(static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
  EXPECT_GE(H5Dread(ds, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), 0);
  H5Sclose(space);
  H5Dclose(ds);
  return out;
}

TEST(Nbit, ChunksStoreHdf5sBytesAndReadBackEitherWay) {
  testutil::TempDir dir;
  std::mt19937_64 rng(5);
  int cases = 0;
  for (h5::Width store : {h5::Width::kU16, h5::Width::kU32, h5::Width::kU64})
    for (unsigned bits : {1u, 3u, 8u, 13u, 20u, 31u, 32u}) {
      if (bits >= 8 * static_cast<unsigned>(store)) continue;
      const uint64_t chunk = h5::kMaxChunkBytes / static_cast<uint64_t>(store);
      for (uint64_t n : {uint64_t{1}, uint64_t{1000}, chunk, 2 * chunk + 5}) {
        std::vector<uint64_t> values(n);
        for (uint64_t& v : values) v = rng() & ((uint64_t{1} << bits) - 1);
        values[n - 1] = (uint64_t{1} << bits) - 1;
        const std::string what = "store " + std::to_string(static_cast<int>(store)) + " bits " +
                                 std::to_string(bits) + " n " + std::to_string(n);
        const std::string theirs = write_packed(dir / "a.h5", values, store, bits, false);
        const std::string ours = write_packed(dir / "b.h5", values, store, bits, true);
        ASSERT_TRUE(theirs == ours) << what;
        ASSERT_EQ(hdf5_read(dir / "b.h5"), values) << what;
        h5::Lock lock;
        h5::File f = h5::open_file(dir / "b.h5");
        ASSERT_EQ(h5::read_array<uint64_t>(f.id(), "d"), values) << what;
        const h5::DatasetInfo info = h5::dataset_info(f.id(), "d");
        EXPECT_EQ(info.nbit, bits) << what;
        EXPECT_FALSE(info.deflate || info.shuffle) << what;
        const std::optional<h5::ChunkMap> map = h5::chunk_map(f.id(), "d");
        ASSERT_TRUE(map.has_value()) << what;
        EXPECT_EQ(map->bits, bits) << what;
        EXPECT_EQ(map->sizes[0], std::min(n, chunk) * bits / 8 + 1 + 4) << what;  // + the sum
        EXPECT_EQ(h5::chunk_map_problem(*map), "") << what;
        ++cases;
      }
    }
  EXPECT_GT(cases, 50);
}

TEST(Nbit, ValuesWiderThanTheBitsAreRefusedAtWrite) {
  testutil::TempDir dir;
  EXPECT_THROW(write_packed(dir / "a.h5", {1, 2, 8}, h5::Width::kU32, 3, true), std::exception);
}

TEST(Nbit, ChunkMapProblemsOfPackedMaps) {
  h5::ChunkMap m{100, 4, 64, false, false, {0, 100}, {50, 60}, 20};
  EXPECT_EQ(h5::chunk_map_problem(m), "");
  for (auto [bits, shuffle, deflate] : {std::tuple{32u, false, false},
                                        {33u, false, false},
                                        {20u, true, false},
                                        {20u, false, true}}) {
    h5::ChunkMap bad = m;
    bad.bits = bits;
    bad.shuffle = shuffle;
    bad.deflate = deflate;
    EXPECT_NE(h5::chunk_map_problem(bad), "") << bits << shuffle << deflate;
  }
}

}  // namespace
}  // namespace gtadoc
