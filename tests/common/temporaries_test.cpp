// common/temporaries.h: a later run removes the temporaries of processes of this host that no
// longer run (gone, or zombies whose parent never reaped them) and keeps those of live processes,
// of other hosts, and names that are not temporaries of the target.
#include "common/temporaries.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

namespace gtadoc {
namespace {
namespace fs = std::filesystem;

class Temporaries : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gtadoc-temporaries-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path temp_of(long pid, const std::string& host) const {
    return dir_ / ("out.gtd.tmp-" + std::to_string(pid) + "-1-" + host);
  }
  static void make(const fs::path& p) {
    fs::create_directories(p);
    std::ofstream(p / "shard-0.h5") << "partial";
  }
  // A child that exits at once and is not reaped until reap() is called.
  static pid_t zombie() {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    for (int i = 0; i < 500; ++i) {
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string line;
      std::getline(stat, line);
      const size_t close = line.rfind(')');
      if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pid;
  }
  static void reap(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  fs::path dir_;
};

TEST_F(Temporaries, SuffixNamesThisProcessAndHost) {
  EXPECT_EQ(temporary_suffix(7), ".tmp-" + std::to_string(::getpid()) + "-7-" + temporary_host());
  for (char c : temporary_host())
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_') << c;
}

TEST_F(Temporaries, RemovesADeadProcesssTemporaryOnly) {
  const pid_t gone = zombie();
  reap(gone);  // now no such process (pids are not reused this quickly in practice)
  const fs::path dead = temp_of(gone, temporary_host());
  const fs::path live = temp_of(::getppid(), temporary_host());
  const fs::path own = temp_of(::getpid(), temporary_host());
  const fs::path other_host = temp_of(gone, temporary_host() + "x");
  const fs::path other_target =
      dir_ / ("other.gtd.tmp-" + std::to_string(gone) + "-1-" + temporary_host());
  const fs::path malformed =
      dir_ / ("out.gtd.tmp-" + std::to_string(gone) + "-x-" + temporary_host());
  for (const fs::path& p : {dead, live, own, other_host, other_target, malformed}) make(p);

  EXPECT_EQ(remove_stale_temporaries(dir_ / "out.gtd"), 1u);
  EXPECT_FALSE(fs::exists(dead));
  for (const fs::path& p : {live, own, other_host, other_target, malformed})
    EXPECT_TRUE(fs::exists(p)) << p;
}

TEST_F(Temporaries, AZombiesTemporaryIsStale) {
  // A rank SIGKILLed by its launcher mid-cleanup, whose launcher has exited, can stay a zombie for
  // as long as nobody reaps it; it runs no code, so its temporary is debris.
  const pid_t z = zombie();
  const fs::path p = temp_of(z, temporary_host());
  make(p);
  EXPECT_EQ(remove_stale_temporaries(dir_ / "out.gtd"), 1u);
  EXPECT_FALSE(fs::exists(p));
  reap(z);
}

TEST_F(Temporaries, RegisteredTemporariesAreRemovedOnRequest) {
  const fs::path a = dir_ / ("a" + temporary_suffix(1)), b = dir_ / ("b" + temporary_suffix(2));
  make(a);
  std::ofstream(b) << "x";
  register_temporary(a);
  register_temporary(b);
  unregister_temporary(b);
  std::vector<fs::path> removed;
  {
    std::lock_guard<std::mutex> lock(temporaries_mutex());
    removed = remove_temporaries_locked();
  }
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], a);
  EXPECT_FALSE(fs::exists(a));
  EXPECT_TRUE(fs::exists(b));
}

}  // namespace
}  // namespace gtadoc
