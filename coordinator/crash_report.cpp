#include "coordinator/crash_report.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/temporaries.h"

namespace gtadoc {

namespace {

constexpr size_t kMax = 240;
char g_context[2][kMax];
std::atomic<int> g_current{-1};  // which buffer holds the context, -1 = none
std::mutex g_context_mutex;      // one writer at a time (ranks that are threads of one process)
// The context set by this thread: a fatal signal is delivered to the thread that caused it, so
// with several ranks in one process the message names the crashing rank's shard. (A thread the
// rank started, e.g. a traversal worker, has none: the process's last context is said.)
thread_local char t_context[kMax];
thread_local std::atomic<bool> t_has_context{false};
char g_rank[32];  // "rank N" under several ranks, else ""
int g_stop_pipe[2] = {-1, -1};

void write_str(const char* s) {
  ssize_t ignored = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

void format_int(int n, char* out) {
  char rev[12];
  int k = 0;
  do {
    rev[k++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0 && k < 11);
  for (int i = 0; i < k; ++i) out[i] = rev[k - 1 - i];
  out[k] = '\0';
}

/// "gtadoc: error: <context>: <what><signal> (<name>)<tail>\n", async-signal-safe.
void report(int sig, const char* what, const char* tail) {
  int cur = g_current.load();
  char num[12];
  format_int(sig, num);
  write_str("gtadoc: error: ");
  if (t_has_context) {
    write_str(t_context);
    write_str(": ");
  } else if (cur >= 0) {
    write_str(g_context[cur]);
    write_str(": ");
  } else if (g_rank[0] != '\0') {
    write_str(g_rank);
    write_str(": ");
  }
  write_str(what);
  write_str(num);
  write_str(" (");
  write_str(strsignal(sig));  // not formally async-signal-safe, but only reads a static table
  write_str(")");
  write_str(tail);
  write_str("\n");
}

void on_fatal(int sig) {
  report(sig, "crashed with signal ", "");
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void on_stop(int sig) {  // async-signal-safe: one write into the pipe
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  ssize_t ignored = ::write(g_stop_pipe[1], &b, 1);
  (void)ignored;
  errno = saved;
}

[[noreturn]] void stop_now(int sig, bool committed, bool removed) {
  std::fflush(stdout);
  report(sig, "stopped by signal ",
         committed ? "; the output was already complete"
         : removed ? "; temporary output removed"
                   : "");
  ::_exit(128 + sig);
}

void stop_thread() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the handler runs on the other threads
  bool deferred = false;
  for (;;) {
    unsigned char b = 0;
    const ssize_t r = ::read(g_stop_pipe[0], &b, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r != 1) return;
    const int sig = b;
    std::unique_lock<std::mutex> lock(temporaries_mutex());  // waits for a commit in progress
    if (output_committed_locked()) {
      if (!deferred) {  // the output is complete: let the process finish and report success
        deferred = true;
        continue;
      }
      stop_now(sig, true, false);
    }
    const bool removed = !remove_temporaries_locked().empty();
    stop_now(sig, false, removed);  // holds the lock: no commit can follow
  }
}

void install_handlers() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_fatal);
  if (::pipe2(g_stop_pipe, O_CLOEXEC) != 0) {  // no pipe: stop requests keep their default
    g_stop_pipe[0] = g_stop_pipe[1] = -1;
    return;
  }
  ::fcntl(g_stop_pipe[1], F_SETFL, O_NONBLOCK);
  std::thread(stop_thread).detach();
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace

void install_crash_report() {
  static std::once_flag once;  // ranks that are threads of one process may call it together
  std::call_once(once, install_handlers);
}

void quiet_crash_report() {
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGINT, SIG_DFL);
}

void set_crash_context(const std::string& context) {
  const size_t n = std::min(context.size(), kMax - 1);
  t_has_context = false;  // while the thread's copy changes
  std::memcpy(t_context, context.data(), n);
  t_context[n] = '\0';
  t_has_context = n > 0;
  std::lock_guard<std::mutex> lock(g_context_mutex);
  if (context.empty()) {
    g_current = -1;
    return;
  }
  int next = g_current.load() == 0 ? 1 : 0;
  std::memcpy(g_context[next], context.data(), n);
  g_context[next][n] = '\0';
  g_current = next;
}

void set_crash_rank(int rank, int ranks) {
  if (ranks <= 1) {
    g_rank[0] = '\0';
    return;
  }
  std::memcpy(g_rank, "rank ", 5);
  format_int(rank, g_rank + 5);
}

}  // namespace gtadoc
