// The temporaries this process is writing (`<target>.tmp-<pid>-<n>-<host>`, formats/
// atomic_output.h), so that a stop request (SIGINT, SIGTERM; coordinator/crash_report.h) can
// remove them before the process exits, and so that a later run can recognize and remove the
// stale temporaries of processes that died without cleaning up (SIGKILL, a crash).
//
// The registry is guarded by one mutex that a commit (the rename into place) also holds: a stop
// request handled on the stop thread either sees the temporary (and removes it, the output never
// appears) or sees the output committed (and leaves it).
#pragma once

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace gtadoc {

/// The mutex guarding the registry; hold it around a commit (rename + unregister_temporary).
std::mutex& temporaries_mutex();

/// Adds / removes a path (these lock; the _locked ones expect the caller to hold the mutex).
void register_temporary(const std::filesystem::path& path);
void unregister_temporary(const std::filesystem::path& path);
void register_temporary_locked(const std::filesystem::path& path);
void unregister_temporary_locked(const std::filesystem::path& path);
/// As unregister_temporary, for a caller that already holds temporaries_mutex(); also records
/// that this process has committed an output (see output_committed()).
void unregister_committed_locked(const std::filesystem::path& path);

/// Removes every registered temporary (directory trees included), retrying a few times when
/// other threads are still creating files in it; the caller holds temporaries_mutex(). Returns
/// the paths removed.
std::vector<std::filesystem::path> remove_temporaries_locked();

/// True once an output of this process was renamed into place (caller holds the mutex).
bool output_committed_locked();

/// This host's name as used in temporary names: [A-Za-z0-9._] only (other bytes become '_').
const std::string& temporary_host();

/// The name suffix of a new temporary of this process: ".tmp-<pid>-<n>-<host>".
std::string temporary_suffix(unsigned n);

/// Removes the temporaries next to `target` (`<target>.tmp-<pid>-<n>-<host>`) left by processes
/// of this host that no longer run (gone, or zombies: exited but not reaped); returns how many
/// were removed. Temporaries of other hosts
/// (a shared filesystem) and of live processes are left alone.
size_t remove_stale_temporaries(const std::filesystem::path& target);

}  // namespace gtadoc
