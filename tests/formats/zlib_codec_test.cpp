// formats/zlib_codec.h: archive chunks' zlib streams. Round trips at every level; the streams
// are plain zlib both ways (zlib inflates what the codec writes and the codec inflates what zlib
// writes, as HDF5's deflate filter must); a damaged or short stream is refused.
#include "formats/zlib_codec.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <random>
#include <vector>

namespace gtadoc {
namespace {

std::vector<unsigned char> sample(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  // Runs of small integers (shuffled archive bytes look like this) and some noise.
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<unsigned char>((i / 7) % 13 + (rng() % 64 == 0 ? rng() : 0));
  return v;
}

TEST(ZlibCodec, RoundTripsAtEveryLevel) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{65536}, size_t{1} << 20}) {
    const auto in = sample(n, static_cast<uint32_t>(n));
    for (int level = 1; level <= 9; ++level) {
      std::vector<unsigned char> z(zlib_bound(n));
      const size_t len = zlib_compress(in.data(), n, z.data(), z.size(), level);
      ASSERT_LE(len, z.size());
      std::vector<unsigned char> out(n + 1, 0xee);
      ASSERT_TRUE(zlib_inflate_exact(z.data(), len, out.data(), n)) << n << " " << level;
      EXPECT_TRUE(std::equal(in.begin(), in.end(), out.begin())) << n << " " << level;
      EXPECT_EQ(out[n], 0xee);  // nothing past n
    }
  }
}

TEST(ZlibCodec, PlainZlibStreamsBothWays) {
  const auto in = sample(300000, 7);
  std::vector<unsigned char> z(zlib_bound(in.size()));
  const size_t len = zlib_compress(in.data(), in.size(), z.data(), z.size(), 4);
  std::vector<unsigned char> out(in.size());
  uLongf out_len = static_cast<uLongf>(out.size());
  ASSERT_EQ(uncompress(out.data(), &out_len, z.data(), static_cast<uLong>(len)), Z_OK);
  EXPECT_EQ(out_len, in.size());
  EXPECT_EQ(out, in);

  uLongf zl = compressBound(static_cast<uLong>(in.size()));
  std::vector<unsigned char> zz(zl);
  ASSERT_EQ(compress2(zz.data(), &zl, in.data(), static_cast<uLong>(in.size()), 6), Z_OK);
  std::fill(out.begin(), out.end(), 0);
  ASSERT_TRUE(zlib_inflate_exact(zz.data(), zl, out.data(), out.size()));
  EXPECT_EQ(out, in);
}

TEST(ZlibCodec, RefusesDamagedShortAndLongStreams) {
  const auto in = sample(100000, 3);
  std::vector<unsigned char> z(zlib_bound(in.size()));
  const size_t len = zlib_compress(in.data(), in.size(), z.data(), z.size(), 4);
  std::vector<unsigned char> out(in.size() + 10);
  EXPECT_FALSE(zlib_inflate_exact(z.data(), len / 2, out.data(), in.size()));   // cut
  EXPECT_FALSE(zlib_inflate_exact(z.data(), len, out.data(), in.size() - 1));   // longer data
  EXPECT_FALSE(zlib_inflate_exact(z.data(), len, out.data(), in.size() + 10));  // shorter data
  auto bad = z;
  bad[len - 1] ^= 0xff;  // the Adler-32 check
  EXPECT_FALSE(zlib_inflate_exact(bad.data(), len, out.data(), in.size()));
  EXPECT_TRUE(zlib_inflate_exact(z.data(), len, out.data(), in.size()));
}

TEST(ZlibCodec, NamesItsLibrary) {
  const std::string name = zlib_codec_name();
  EXPECT_TRUE(name == "libdeflate" || name == "zlib") << name;
}

}  // namespace
}  // namespace gtadoc
