// Error vocabulary of gtadoc: typed exceptions that carry an exit code and a source location, and
// the one place where every check macro (EXPECTS, FAIL, H5_TRY, MPI_TRY, CUDA_TRY, NCCL_TRY) is
// defined.
// The CLI turns any gtadoc::Error into a one-line message and its exit code (see coordinator/cli).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gtadoc {

/// What went wrong, which fixes the process exit code.
enum class ErrorKind {
  kUsage = 2,     ///< bad command line: unknown task/option, value out of range
  kInput = 1,     ///< bad input data: missing file, corrupted archive, output exists, disk full
  kResource = 3,  ///< a resource is missing or exhausted: no GPU, GPU memory
  kInternal = 70  ///< a bug or an unexpected library failure (EX_SOFTWARE)
};

/// `text` with every control byte (below 0x20, and 0x7f) written as \xNN, so that a message that
/// echoes user input (a JSON field name, a file name) stays on one line; cut to `max` bytes
/// followed by "..." when longer.
inline std::string one_line(std::string_view text, size_t max = std::string_view::npos) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() < 256 ? text.size() : 256);
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == max) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

/// User-supplied text quoted for a message: "text", one line, at most 80 bytes of it.
inline std::string user_text(std::string_view text) {
  return '"' + one_line(text, 80) + '"';
}

/// Base of every exception gtadoc throws on purpose. `what()` is the user-facing one-liner: the
/// constructor guarantees it has no line break whatever the message echoes.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, const char* file = nullptr, int line = 0)
      : std::runtime_error(one_line(message)), kind_(kind), file_(file ? file : ""), line_(line) {}
  ErrorKind kind() const noexcept { return kind_; }
  int exit_code() const noexcept { return static_cast<int>(kind_); }
  const std::string& file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  ErrorKind kind_;
  std::string file_;
  int line_;
};

class UsageError : public Error {
 public:
  explicit UsageError(const std::string& m, const char* f = nullptr, int l = 0)
      : Error(ErrorKind::kUsage, m, f, l) {}
};
class InputError : public Error {
 public:
  explicit InputError(const std::string& m, const char* f = nullptr, int l = 0)
      : Error(ErrorKind::kInput, m, f, l) {}
};
class ResourceError : public Error {
 public:
  explicit ResourceError(const std::string& m, const char* f = nullptr, int l = 0)
      : Error(ErrorKind::kResource, m, f, l) {}
};
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& m, const char* f = nullptr, int l = 0)
      : Error(ErrorKind::kInternal, m, f, l) {}
};

namespace detail {
// Implemented next to the library they wrap (formats/h5.cpp, cluster/comm.cpp,
// worker/device/cuda_check.cu, cluster/nccl_comm.cpp); each throws a typed Error naming the failed
// call and location.
[[noreturn]] void throw_h5_error(const char* expr, const char* file, int line);
[[noreturn]] void throw_mpi_error(int code, const char* expr, const char* file, int line);
[[noreturn]] void throw_cuda_error(int code, const char* expr, const char* file, int line);
[[noreturn]] void throw_nccl_error(int code, const char* expr, const char* file, int line);
}  // namespace detail

}  // namespace gtadoc

/// Precondition on data or arguments: throws InternalError with location when violated.
#define GTADOC_EXPECTS(cond, msg)                                                     \
  do {                                                                                \
    if (!(cond)) throw ::gtadoc::InternalError(std::string(msg), __FILE__, __LINE__); \
  } while (0)
/// Unconditional internal failure.
#define GTADOC_FAIL(msg) throw ::gtadoc::InternalError(std::string(msg), __FILE__, __LINE__)
/// HDF5 call returning a negative value on failure (herr_t / hid_t / htri_t). Yields the value.
#define H5_TRY(call)                                                                 \
  ([&]() {                                                                           \
    auto h5_try_rc_ = (call);                                                        \
    if (h5_try_rc_ < 0) ::gtadoc::detail::throw_h5_error(#call, __FILE__, __LINE__); \
    return h5_try_rc_;                                                               \
  }())
/// MPI call returning MPI_SUCCESS (0) on success.
#define MPI_TRY(call)                                                            \
  do {                                                                           \
    int mpi_try_rc_ = (call);                                                    \
    if (mpi_try_rc_ != 0)                                                        \
      ::gtadoc::detail::throw_mpi_error(mpi_try_rc_, #call, __FILE__, __LINE__); \
  } while (0)
/// NCCL call returning ncclSuccess (0) on success.
#define NCCL_TRY(call)                                                             \
  do {                                                                             \
    int nccl_try_rc_ = static_cast<int>(call);                                     \
    if (nccl_try_rc_ != 0)                                                         \
      ::gtadoc::detail::throw_nccl_error(nccl_try_rc_, #call, __FILE__, __LINE__); \
  } while (0)
/// CUDA runtime call returning cudaSuccess (0) on success.
#define CUDA_TRY(call)                                                             \
  do {                                                                             \
    int cuda_try_rc_ = static_cast<int>(call);                                     \
    if (cuda_try_rc_ != 0)                                                         \
      ::gtadoc::detail::throw_cuda_error(cuda_try_rc_, #call, __FILE__, __LINE__); \
  } while (0)
