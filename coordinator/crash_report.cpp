#include "coordinator/crash_report.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace gtadoc {

namespace {

constexpr size_t kMax = 240;
char g_context[2][kMax];
std::atomic<int> g_current{-1};  // which buffer holds the context, -1 = none

void write_str(const char* s) {
  ssize_t ignored = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

void on_signal(int sig) {
  int cur = g_current.load();
  const char* what =
      sig == SIGTERM || sig == SIGINT ? "stopped by signal " : "crashed with signal ";
  char num[8];
  int n = sig, k = 0;
  char rev[8];
  do {
    rev[k++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0 && k < 7);
  for (int i = 0; i < k; ++i) num[i] = rev[k - 1 - i];
  num[k] = '\0';
  write_str("gtadoc: error: ");
  if (cur >= 0) {
    write_str(g_context[cur]);
    write_str(": ");
  }
  write_str(what);
  write_str(num);
  write_str(" (");
  write_str(strsignal(sig));  // not formally async-signal-safe, but only reads a static table
  write_str(")\n");
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void install_crash_report() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT})
    std::signal(sig, on_signal);
}

void quiet_crash_report() {
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGINT, SIG_DFL);
}

void set_crash_context(const std::string& context) {
  if (context.empty()) {
    g_current = -1;
    return;
  }
  int next = g_current.load() == 0 ? 1 : 0;
  size_t n = std::min(context.size(), kMax - 1);
  std::memcpy(g_context[next], context.data(), n);
  g_context[next][n] = '\0';
  g_current = next;
}

}  // namespace gtadoc
