// Failing together: a rank that hits an error mid-job must not leave the others waiting in a
// collective, and the job must end with one message and nothing half-written. Every rank calls
// raise_if_any_failed at agreed points with its local failure (or none); if any rank failed,
// every rank throws CollectiveError carrying the lowest failing rank's message, so all ranks
// unwind (temporary outputs are removed) and exit with the same code.
#pragma once

#include <exception>
#include <string>

#include "common/error.h"

namespace gtadoc {

class Comm;

/// An error every rank knows about; only rank 0 prints it.
class CollectiveError : public Error {
 public:
  /// `file`/`line`: where the first failing rank raised it (empty when unknown).
  CollectiveError(ErrorKind kind, const std::string& message, const std::string& file = "",
                  int line = 0)
      : Error(kind, message, file.empty() ? nullptr : file.c_str(), line) {}
};

/// Collective. Returns when no rank failed; otherwise throws CollectiveError on every rank.
/// A non-gtadoc exception counts as an internal error.
void raise_if_any_failed(Comm& comm, const std::exception_ptr& local_failure);

/// Runs f() and then raise_if_any_failed with whatever it threw.
template <typename F>
void run_collectively(Comm& comm, F&& f) {
  std::exception_ptr failure;
  try {
    f();
  } catch (...) {
    failure = std::current_exception();
  }
  raise_if_any_failed(comm, failure);
}

}  // namespace gtadoc
