// Formatting one HTTP/1.1 response for the query executor into a ResponsePipe (response_pipe.h):
// the status line and headers, then the body as chunks (Transfer-Encoding: chunked) or in one
// piece. The executor never waits for the client: the pipe keeps what the client has not read
// yet, and the connection's session writes it at the client's pace. Once the pipe refuses bytes
// (the client was cut, or spilling failed) the writer stays failed and drops the rest.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gtadoc {

class ResponsePipe;

using HeaderList = std::vector<std::pair<std::string, std::string>>;

/// The status line and header block of a response: `Server: gtadoc`, the given headers, then
/// nothing for a status without a body (1xx, 204, 304), Content-Length when `content_length` >= 0,
/// else `Transfer-Encoding: chunked` when `chunked`,
/// else no framing (HTTP/1.0: the body ends with the connection, which then closes), and
/// Connection. `*keep_alive` is cleared when the framing forces a close.
std::string response_head(int status, const HeaderList& headers, long long content_length,
                          bool chunked, bool* keep_alive);

class ResponseWriter {
 public:
  /// `chunked` = false for HTTP/1.0 clients: a body of unknown length is then sent as it is and
  /// ends when the connection closes.
  ResponseWriter(ResponsePipe& pipe, bool chunked) : pipe_(pipe), chunked_(chunked) {}

  /// Status line and headers (see response_head).
  bool head(int status, const HeaderList& headers, long long content_length, bool keep_alive);
  /// One chunk of a chunked body (empty data writes nothing).
  bool chunk(const char* data, size_t size);
  /// The last chunk of a chunked body, with trailer fields (announced by a Trailer header).
  bool finish(const HeaderList& trailers = {});
  /// Raw bytes (a body with Content-Length).
  bool raw(const char* data, size_t size);
  /// Hands what is coalesced to the pipe and closes it: the response is complete.
  bool end();
  bool ok() const { return ok_; }

 private:
  void put(const char* data, size_t size);
  void flush();

  ResponsePipe& pipe_;
  std::string pending_;
  bool chunked_;
  bool keep_alive_ = false;
  bool ok_ = true;
};

/// The reason phrase of an HTTP status code.
std::string_view status_reason(int status);

}  // namespace gtadoc
