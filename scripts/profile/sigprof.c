// A sampling profiler for machines without perf (the GPU machine's image has none), loaded into
// any process with LD_PRELOAD. Every PROF_US microseconds of the process's CPU time (ITIMER_PROF,
// user + system; default 500) the kernel sends SIGPROF to the thread that is running; the
// handler records that thread's program counter and up to 15 return addresses found by following
// frame pointers (read with process_vm_readv, so a bad pointer ends the walk instead of faulting;
// build the profiled code with -fno-omit-frame-pointer for callers). At exit it writes the
// samples and /proc/self/maps to $PROF_OUT.<pid>; scripts/profile/report.py names them. Without
// PROF_OUT it does nothing. Time the kernel spends on the thread's behalf (page faults, copies
// in read(2)) is sampled at the user instruction that caused it.
//
//   gcc -O2 -shared -fPIC -o /tmp/libsigprof.so scripts/profile/sigprof.c -lpthread
//   PROF_OUT=/tmp/p PROF_US=1000 LD_PRELOAD=/tmp/libsigprof.so build/gtadoc run A word-count ...
//   scripts/profile/report.py /tmp/p.<pid> 50       # on the machine that ran it (addr2line)
//
// The kernel merges expiries that arrive before a signal is handled: with many busy threads the
// samples come at most once per scheduler tick, still in proportion to each thread's CPU time.
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>
#define DEPTH 16
#define MAXS 2000000
static uintptr_t (*samples)[DEPTH];
static atomic_long nsamp;

static void on_prof(int sig, siginfo_t* si, void* uc_) {
  (void)sig;
  (void)si;
  ucontext_t* uc = uc_;
  long i = atomic_fetch_add(&nsamp, 1);
  if (i >= MAXS) return;
  uintptr_t* s = samples[i];
  memset(s, 0, sizeof(uintptr_t) * DEPTH);
  s[0] = uc->uc_mcontext.gregs[REG_RIP];
  uintptr_t fp = uc->uc_mcontext.gregs[REG_RBP];
  uintptr_t sp = uc->uc_mcontext.gregs[REG_RSP];
  for (int d = 1; d < DEPTH; ++d) {
    if (fp < sp || fp > sp + (64u << 20) || (fp & 7)) break;
    uintptr_t pair[2];
    struct iovec l = {pair, 16}, r = {(void*)fp, 16};
    if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 16) break;
    uintptr_t next = pair[0], ret = pair[1];
    s[d] = ret;
    if (next <= fp) break;
    fp = next;
  }
}

static void dump(void) {
  const char* out = getenv("PROF_OUT");
  if (!out) return;
  struct itimerval z = {0};
  setitimer(ITIMER_PROF, &z, NULL);
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", out, (int)getpid());
  FILE* f = fopen(path, "w");
  if (!f) return;
  long n = atomic_load(&nsamp);
  if (n > MAXS) n = MAXS;
  fprintf(f, "samples %ld\n", n);
  for (long i = 0; i < n; ++i) {
    for (int d = 0; d < DEPTH && samples[i][d]; ++d)
      fprintf(f, "%lx ", (unsigned long)samples[i][d]);
    fputc('\n', f);
  }
  fprintf(f, "maps\n");
  FILE* m = fopen("/proc/self/maps", "r");
  char line[8192];
  while (m && fgets(line, sizeof line, m)) fputs(line, f);
  if (m) fclose(m);
  fclose(f);
}

__attribute__((constructor)) static void start(void) {
  if (!getenv("PROF_OUT")) return;
  samples = calloc(MAXS, sizeof *samples);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  long us = getenv("PROF_US") ? atol(getenv("PROF_US")) : 500;
  struct itimerval t = {{0, us}, {0, us}};
  setitimer(ITIMER_PROF, &t, NULL);
  atexit(dump);
}
