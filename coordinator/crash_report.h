// Last words of a rank that crashes: a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT)
// or a stop request (SIGTERM, SIGINT) prints one line naming the rank and the shard it was
// working on, using only async-signal-safe calls, then lets the signal take its default effect.
// (SIGKILL cannot be caught: then the launcher's message names the rank.)
#pragma once

#include <string>

namespace gtadoc {

/// Installs the handlers (idempotent).
void install_crash_report();
/// Stops reporting stop requests (SIGTERM, SIGINT): called once the process is ending on an
/// error it already reported, when the launcher may stop the other ranks.
void quiet_crash_report();
/// What the process is doing now, e.g. "rank 2: shard 5 (shard-00005.h5)"; "" when idle.
void set_crash_context(const std::string& context);

}  // namespace gtadoc
