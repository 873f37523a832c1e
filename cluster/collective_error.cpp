#include "cluster/collective_error.h"

#include <cstring>
#include <new>
#include <string>

#include "cluster/comm.h"

namespace gtadoc {

void raise_if_any_failed(Comm& comm, const std::exception_ptr& local_failure) {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message, file;  // file: where it was raised (shown with -v), may be empty
  int line = 0;
  if (local_failure) {
    try {
      std::rethrow_exception(local_failure);
    } catch (const CollectiveError&) {
      throw;  // already agreed on by every rank
    } catch (const Error& e) {
      kind = e.kind();
      message = e.what();
      file = e.file();
      line = e.line();
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
    if (local_failure) throw CollectiveError(kind, message, file, line);
    return;
  }
  if (comm.allreduce_and(!local_failure)) return;
  std::string mine;
  if (local_failure) {
    const int head[2] = {static_cast<int>(kind), line};
    mine.assign(reinterpret_cast<const char*>(head), sizeof head);
    mine += file;
    mine += '\0';
    mine += message;
  }
  auto all = comm.allgather_bytes({reinterpret_cast<const uint8_t*>(mine.data()), mine.size()});
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    int head[2];
    if (all[r].size() < sizeof head) continue;
    std::memcpy(head, all[r].data(), sizeof head);
    std::string rest(all[r].begin() + sizeof head, all[r].end());
    const size_t nul = rest.find('\0');
    std::string where = nul == std::string::npos ? "" : rest.substr(0, nul);
    std::string text = nul == std::string::npos ? rest : rest.substr(nul + 1);
    throw CollectiveError(static_cast<ErrorKind>(head[0]),
                          "rank " + std::to_string(r) + ": " + text, where, head[1]);
  }
  throw CollectiveError(ErrorKind::kInternal, "a rank failed without a message");
}

}  // namespace gtadoc
