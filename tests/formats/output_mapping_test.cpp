// OutputMapping: ranges of one file written through mappings by separate writers (as ranks do)
// give the same bytes as pwrite; ranges at any offset, of any size; the fallbacks (below the
// threshold, GTADOC_OUTPUT_MAP=0, a disk file system by default) hand back an empty mapping;
// tmpfs maps by default (without fallocate) for enough writers only; GTADOC_OUTPUT_MAP=all maps
// a disk file system after fallocate, with a cap on the threads writing into it at a time; a bad
// setting is a usage error.
#include "formats/output_mapping.h"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/statfs.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/settings.h"
#include "tests/testutil/corpus.h"

namespace gtadoc {
namespace {

namespace fs = std::filesystem;

struct EnvGuard {  // sets (nullptr: unsets) a variable for one test, restores it after
  std::string name;
  std::string old;
  bool had;
  EnvGuard(const char* n, const char* value) : name(n) {
    const char* o = std::getenv(n);
    had = o != nullptr;
    if (had) old = o;
    if (value == nullptr)
      ::unsetenv(n);
    else
      ::setenv(n, value, 1);
    settings::reread_for_tests();
  }
  ~EnvGuard() {
    if (had)
      ::setenv(name.c_str(), old.c_str(), 1);
    else
      ::unsetenv(name.c_str());
    settings::reread_for_tests();
  }
};

std::string pattern(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(size, '\0');
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

/// Writes `bytes` into a new file as `cuts` ranges, each by its own OutputFile (a writer of its
/// own, as ranks are); returns what the mappings said.
std::vector<std::string> write_in_ranges(const fs::path& file, const std::string& bytes,
                                         const std::vector<uint64_t>& cuts) {
  OutputFile(file, OutputFile::Mode::kCreateNew).close();
  std::vector<std::string> how;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    OutputFile f(file, OutputFile::Mode::kOpenExisting);
    const uint64_t size = cuts[i + 1] - cuts[i];
    OutputMapping m = OutputMapping::map(f, bytes.size(), cuts[i], size, kTmpfsMappingWriters);
    how.push_back(m.how());
    if (m) {
      EXPECT_EQ(m.size(), size);
      std::memcpy(m.data(), bytes.data() + cuts[i], size);
      m.finish();
    } else {
      f.write_at(cuts[i], bytes.data() + cuts[i], size);
    }
    f.close();
  }
  return how;
}

TEST(OutputMapping, RangesAtAnyOffsetGiveTheBytesOfTheirWriters) {
  testutil::TempDir dir;
  EnvGuard min("GTADOC_OUTPUT_MAP_MIN_BYTES", "0");
  EnvGuard on("GTADOC_OUTPUT_MAP", "all");
  const std::string bytes = pattern(3 * 4096 + 1234, 7);
  // Unaligned cuts, a one-byte range and an empty one (written, not mapped).
  const std::vector<uint64_t> cuts = {0, 1, 4095, 4097, 4097, 9000, bytes.size()};
  const fs::path file = dir.path() / "out";
  const std::vector<std::string> how = write_in_ranges(file, bytes, cuts);
  EXPECT_EQ(testutil::read_file(file), bytes);
  EXPECT_EQ(fs::file_size(file), bytes.size());
  // Written, in any order of the writers: the last range first.
  const fs::path file2 = dir.path() / "out2";
  OutputFile(file2, OutputFile::Mode::kCreateNew).close();
  for (size_t i = cuts.size() - 1; i-- > 0;) {
    OutputFile f(file2, OutputFile::Mode::kOpenExisting);
    OutputMapping m =
        OutputMapping::map(f, bytes.size(), cuts[i], cuts[i + 1] - cuts[i], kTmpfsMappingWriters);
    if (m) {
      std::memcpy(m.data(), bytes.data() + cuts[i], m.size());
      m.finish();
    } else {
      f.write_at(cuts[i], bytes.data() + cuts[i], cuts[i + 1] - cuts[i]);
    }
  }
  EXPECT_EQ(testutil::read_file(file2), bytes);
  // Every non-empty range was mapped, on whatever file system the scratch directory is.
  struct statfs fs {};
  ASSERT_EQ(::statfs(dir.path().c_str(), &fs), 0);
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    if (cuts[i + 1] == cuts[i]) continue;
    if (how[i].rfind("no ", 0) == 0 || how[i] == "tmpfs without room to spare")
      GTEST_SKIP() << "this file system cannot map here: " << how[i];
    EXPECT_TRUE(how[i] == "fallocate" || how[i] == "tmpfs") << how[i];
  }
  // By default a disk file system is written with pwrite.
  if (static_cast<unsigned long>(fs.f_type) != TMPFS_MAGIC) {
    EnvGuard dflt("GTADOC_OUTPUT_MAP", nullptr);
    OutputFile f(dir.path() / "out3", OutputFile::Mode::kCreateNew);
    OutputMapping m = OutputMapping::map(f, 100, 0, 100, kTmpfsMappingWriters);
    EXPECT_FALSE(m);
    EXPECT_EQ(m.how(), "not tmpfs");
  }
}

TEST(OutputMapping, SmallRangesAndTheSwitchFallBackToWrites) {
  testutil::TempDir dir;
  const fs::path file = dir.path() / "out";
  OutputFile f(file, OutputFile::Mode::kCreateNew);
  {
    EnvGuard min("GTADOC_OUTPUT_MAP_MIN_BYTES", "1m");
    EnvGuard on("GTADOC_OUTPUT_MAP", nullptr);
    EXPECT_EQ(output_map_min_bytes(), uint64_t{1} << 20);
    OutputMapping m = OutputMapping::map(f, 4096, 0, 4096, kTmpfsMappingWriters);
    EXPECT_FALSE(m);
    EXPECT_NE(m.how().find("below"), std::string::npos) << m.how();
  }
  {
    EnvGuard min("GTADOC_OUTPUT_MAP_MIN_BYTES", "0");
    EnvGuard off("GTADOC_OUTPUT_MAP", "0");
    OutputMapping m = OutputMapping::map(f, 4096, 0, 4096, kTmpfsMappingWriters);
    EXPECT_FALSE(m);
    EXPECT_EQ(m.how(), "GTADOC_OUTPUT_MAP=0");
  }
  {
    EnvGuard min("GTADOC_OUTPUT_MAP_MIN_BYTES", "lots");
    EXPECT_THROW(output_map_min_bytes(), UsageError);
  }
  {
    EnvGuard min("GTADOC_OUTPUT_MAP_MIN_BYTES", "0");
    EnvGuard bad("GTADOC_OUTPUT_MAP", "yes");
    EXPECT_THROW(OutputMapping::map(f, 4096, 0, 4096, kTmpfsMappingWriters), UsageError);
  }
  {
    EnvGuard min("GTADOC_OUTPUT_MAP_MIN_BYTES", "0");
    EnvGuard dflt("GTADOC_OUTPUT_MAP", "tmpfs");
    const OutputMapping m = OutputMapping::map(f, 4096, 0, 4096, kTmpfsMappingWriters);
    EXPECT_TRUE(m.how() == "tmpfs" || m.how() == "not tmpfs") << m.how();
  }
  EnvGuard unset("GTADOC_OUTPUT_MAP_MIN_BYTES", nullptr);
  EXPECT_EQ(output_map_min_bytes(), uint64_t{8} << 20);
}

TEST(OutputMapping, TmpfsIsMappedForEnoughWritersOnly) {
  // Few threads fill a tmpfs mapping slower than they pwrite (a page fault per page): by default
  // a range on tmpfs is mapped from kTmpfsMappingWriters writers up; GTADOC_OUTPUT_MAP=all maps it
  // for any number.
  const fs::path shm = "/dev/shm";
  struct statfs st {};
  if (::statfs(shm.c_str(), &st) != 0 || static_cast<unsigned long>(st.f_type) != TMPFS_MAGIC)
    GTEST_SKIP() << "/dev/shm is not a tmpfs here";
  std::string dir = (shm / "gtadoc-map-test.XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  struct Remove {
    fs::path p;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } remove{dir};
  EnvGuard min("GTADOC_OUTPUT_MAP_MIN_BYTES", "0");
  OutputFile f(fs::path(dir) / "out", OutputFile::Mode::kCreateNew);
  auto how = [&](const char* setting, unsigned writers) {
    EnvGuard where("GTADOC_OUTPUT_MAP", setting);
    const OutputMapping m = OutputMapping::map(f, 4096, 0, 4096, writers);
    EXPECT_EQ(static_cast<bool>(m), m.how() == "tmpfs") << m.how();
    return m.how();
  };
  const std::string mapped = how(nullptr, kTmpfsMappingWriters);
  if (mapped == "tmpfs without room to spare") GTEST_SKIP() << "no room to map on /dev/shm";
  EXPECT_EQ(mapped, "tmpfs");
  EXPECT_EQ(how(nullptr, kTmpfsMappingWriters - 1),
            "tmpfs, fewer than " + std::to_string(kTmpfsMappingWriters) + " writers");
  EXPECT_EQ(how("tmpfs", 1), how(nullptr, 1));
  EXPECT_EQ(how("all", 1), "tmpfs");
  EXPECT_EQ(how("0", kTmpfsMappingWriters), "GTADOC_OUTPUT_MAP=0");
}

TEST(OutputMapping, MovesOwnTheMapping) {
  testutil::TempDir dir;
  EnvGuard min("GTADOC_OUTPUT_MAP_MIN_BYTES", "0");
  EnvGuard on("GTADOC_OUTPUT_MAP", "all");
  const fs::path file = dir.path() / "out";
  OutputFile f(file, OutputFile::Mode::kCreateNew);
  OutputMapping a = OutputMapping::map(f, 100, 10, 90, kTmpfsMappingWriters);
  if (!a) GTEST_SKIP() << "this file system cannot map here: " << a.how();
  EXPECT_EQ(a.max_writers(), a.how() == "fallocate" ? kDiskMappingWriters : 0u);
  OutputMapping b = std::move(a);
  EXPECT_FALSE(a);
  ASSERT_TRUE(b);
  std::memset(b.data(), 'x', b.size());
  b.finish();
  EXPECT_FALSE(b);
  b.finish();  // a second finish does nothing
  f.close();
  EXPECT_EQ(testutil::read_file(file), std::string(10, '\0') + std::string(90, 'x'));
}

TEST(OutputMapping, TmpfsMapsWithoutReservingBlocks) {
  const fs::path shm = "/dev/shm";
  struct statfs fs {};
  if (::statfs(shm.c_str(), &fs) != 0 || static_cast<unsigned long>(fs.f_type) != TMPFS_MAGIC)
    GTEST_SKIP() << "no tmpfs at /dev/shm";
  EnvGuard min("GTADOC_OUTPUT_MAP_MIN_BYTES", "0");
  EnvGuard on("GTADOC_OUTPUT_MAP", nullptr);
  const fs::path file = shm / ("gtadoc-mapping-test-" + std::to_string(::getpid()));
  const std::string bytes = pattern(100000, 3);
  const std::vector<std::string> how = write_in_ranges(file, bytes, {0, 50001, bytes.size()});
  const std::string got = testutil::read_file(file);
  fs::remove(file);
  EXPECT_EQ(got, bytes);
  for (const std::string& h : how) EXPECT_TRUE(h == "tmpfs" || h == "tmpfs without room to spare");
}

}  // namespace
}  // namespace gtadoc
