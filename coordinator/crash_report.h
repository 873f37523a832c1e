// Last words of a process: a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints one
// line naming the rank and the shard it was working on, using only async-signal-safe calls,
// then lets the signal take its default effect. (SIGKILL cannot be caught: then the launcher's
// message names the rank, and the next run of the same output removes the stale temporaries,
// common/temporaries.h.)
//
// A stop request (SIGTERM, SIGINT) is not handled in the signal handler: the handler only writes
// the signal number into a pipe (async-signal-safe). A dedicated stop thread reads it, removes
// the temporaries the process is writing (under the registry lock, so never half a commit),
// prints one line and exits with 128 + signal. A stop request that arrives after the output was
// renamed into place is deferred (the process only has to finish; its exit status then agrees
// with the committed output); a second one exits at once (128 + signal, output complete).
//
// `gtadoc serve` installs its own SIGTERM/SIGINT handling after install_crash_report(), which
// replaces the stop handler; the stop thread then never wakes.
#pragma once

#include <string>

namespace gtadoc {

/// Installs the handlers and starts the stop thread (idempotent).
void install_crash_report();
/// Stops reporting stop requests (SIGTERM, SIGINT): called once the process is ending on an
/// error it already reported, when the launcher may stop the other ranks.
void quiet_crash_report();
/// What the process is doing now, e.g. "rank 2: shard 5 (shard-00005.h5)"; "" when idle.
void set_crash_context(const std::string& context);
/// "rank N" in front of the messages when the job has several ranks and no context is set.
void set_crash_rank(int rank, int ranks);

}  // namespace gtadoc
