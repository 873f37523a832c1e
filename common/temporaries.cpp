#include "common/temporaries.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <fstream>
#include <thread>

namespace gtadoc {
namespace fs = std::filesystem;

namespace {

struct Registry {
  std::mutex mu;
  std::vector<fs::path> paths;
  bool committed = false;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: the stop thread may use it at exit
  return *r;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// False only when pid certainly runs no code any more: no such process, or a zombie (exited, not
// yet reaped; its parent may be a launcher that is gone, and in a container the init process may
// never reap it). A process that exists and cannot be inspected counts as running.
bool process_may_be_running(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return true;
  // "pid (comm) state ...": comm may hold spaces and parentheses, so the state follows the last
  // ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return true;
  return line[close + 2] != 'Z';
}

}  // namespace

std::mutex& temporaries_mutex() {
  return registry().mu;
}

void register_temporary_locked(const fs::path& path) {
  registry().paths.push_back(path);
}

void unregister_temporary_locked(const fs::path& path) {
  auto& p = registry().paths;
  p.erase(std::remove(p.begin(), p.end(), path), p.end());
}

void register_temporary(const fs::path& path) {
  std::lock_guard<std::mutex> lock(registry().mu);
  register_temporary_locked(path);
}

void unregister_temporary(const fs::path& path) {
  std::lock_guard<std::mutex> lock(registry().mu);
  unregister_temporary_locked(path);
}

void unregister_committed_locked(const fs::path& path) {
  unregister_temporary_locked(path);
  registry().committed = true;
}

bool output_committed_locked() {
  return registry().committed;
}

std::vector<fs::path> remove_temporaries_locked() {
  std::vector<fs::path> removed;
  for (const fs::path& p : registry().paths) {
    std::error_code ec;
    // Threads of this process (or other ranks) may still be creating files in a directory being
    // removed; once it is gone their creations fail, so a few attempts suffice.
    for (int attempt = 0; attempt < 50; ++attempt) {
      fs::remove_all(p, ec);
      if (!fs::exists(fs::symlink_status(p, ec))) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    removed.push_back(p);
  }
  registry().paths.clear();
  return removed;
}

const std::string& temporary_host() {
  static const std::string host = [] {
    char buf[HOST_NAME_MAX + 1] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return std::string("host");
    std::string h(buf);
    if (h.size() > 64) h.resize(64);
    for (char& c : h)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '_'))
        c = '_';
    return h;
  }();
  return host;
}

std::string temporary_suffix(unsigned n) {
  return ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(n) + "-" + temporary_host();
}

size_t remove_stale_temporaries(const fs::path& target) {
  const std::string prefix = target.filename().string() + ".tmp-";
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  size_t removed = 0;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    // "<pid>-<n>-<host>"
    const std::string rest = name.substr(prefix.size());
    const size_t a = rest.find('-');
    if (a == std::string::npos) continue;
    const size_t b = rest.find('-', a + 1);
    if (b == std::string::npos) continue;
    const std::string pid_text = rest.substr(0, a), n_text = rest.substr(a + 1, b - a - 1);
    if (!all_digits(pid_text) || !all_digits(n_text) || pid_text.size() > 9) continue;
    if (rest.substr(b + 1) != temporary_host()) continue;  // another host's: it may be alive
    const long pid = std::stol(pid_text);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (process_may_be_running(static_cast<pid_t>(pid))) continue;
    stale.push_back(it->path());
  }
  for (const fs::path& p : stale) {
    std::error_code rec;
    if (fs::remove_all(p, rec) > 0 && !rec) ++removed;
  }
  return removed;
}

}  // namespace gtadoc
