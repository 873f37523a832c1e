#include "cluster/collective_error.h"

#include <cstring>
#include <new>
#include <string>

#include "cluster/comm.h"

namespace gtadoc {

void raise_if_any_failed(Comm& comm, const std::exception_ptr& local_failure) {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
  if (local_failure) {
    try {
      std::rethrow_exception(local_failure);
    } catch (const CollectiveError&) {
      throw;  // already agreed on by every rank
    } catch (const Error& e) {
      kind = e.kind();
      message = e.what();
    } catch (const std::bad_alloc&) {
      kind = ErrorKind::kResource;
      message = "out of memory";
    } catch (const std::exception& e) {
      message = std::string("internal error: ") + e.what();
    } catch (...) {
      message = "internal error: unknown exception";
    }
  }
  if (comm.size() == 1) {
    if (local_failure) throw CollectiveError(kind, message);
    return;
  }
  if (comm.allreduce_and(!local_failure)) return;
  std::string mine;
  if (local_failure) {
    int code = static_cast<int>(kind);
    mine.assign(reinterpret_cast<const char*>(&code), sizeof code);
    mine += message;
  }
  auto all = comm.allgather_bytes({reinterpret_cast<const uint8_t*>(mine.data()), mine.size()});
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (all[r].size() < sizeof(int)) continue;
    int code;
    std::memcpy(&code, all[r].data(), sizeof code);
    std::string text(all[r].begin() + sizeof code, all[r].end());
    throw CollectiveError(static_cast<ErrorKind>(code), "rank " + std::to_string(r) + ": " + text);
  }
  throw CollectiveError(ErrorKind::kInternal, "a rank failed without a message");
}

}  // namespace gtadoc
