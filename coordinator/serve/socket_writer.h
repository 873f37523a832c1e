// Writing one HTTP/1.1 response on a connected socket from the query executor's thread, with a
// deadline: the status line and headers, then the body as chunks (Transfer-Encoding: chunked)
// or in one piece. A client that stops reading cannot hold the cluster longer than the
// deadline: every write waits at most until then, after which the writer fails (and stays
// failed; the connection must be closed).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gtadoc {

class SocketWriter {
 public:
  /// `chunked` = false for HTTP/1.0 clients: a body of unknown length is then sent as it is and
  /// ends when the connection closes.
  SocketWriter(int fd, std::chrono::steady_clock::time_point deadline, bool chunked = true)
      : fd_(fd), deadline_(deadline), chunked_(chunked) {}

  /// Status line and headers (Content-Length when `content_length` >= 0, else chunked, or for
  /// HTTP/1.0 no framing and Connection: close).
  bool head(int status, const std::vector<std::pair<std::string, std::string>>& headers,
            long long content_length, bool keep_alive);
  /// One chunk of a chunked body (empty data writes nothing).
  bool chunk(const char* data, size_t size);
  /// The last chunk of a chunked body, with trailer fields (announced by a Trailer header).
  bool finish(const std::vector<std::pair<std::string, std::string>>& trailers = {});
  /// Raw bytes (a body with Content-Length).
  bool raw(const char* data, size_t size);
  /// Sends what is buffered (head(), small chunks and finish() are coalesced into few sends).
  bool flush();
  bool ok() const { return ok_; }

 private:
  bool send_all(const char* data, size_t size);
  void put(const char* data, size_t size);

  std::string pending_;
  int fd_;
  std::chrono::steady_clock::time_point deadline_;
  bool chunked_;
  bool ok_ = true;
};

/// The reason phrase of an HTTP status code.
std::string_view status_reason(int status);

}  // namespace gtadoc
