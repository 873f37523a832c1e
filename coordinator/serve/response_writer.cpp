#include "coordinator/serve/response_writer.h"

#include <fmt/format.h>
#include <algorithm>

#include "coordinator/serve/response_pipe.h"

namespace gtadoc {

std::string_view status_reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 206:
      return "Partial Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Range Not Satisfiable";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

std::string response_head(int status, const HeaderList& headers, long long content_length,
                          bool chunked, bool* keep_alive) {
  std::string h =
      fmt::format("HTTP/1.1 {} {}\r\nServer: gtadoc\r\n", status, status_reason(status));
  for (const auto& [k, v] : headers) h += k + ": " + v + "\r\n";
  if (status == 304 || status == 204 || status / 100 == 1) {
    // no body, no framing
  } else if (content_length >= 0) {
    h += fmt::format("Content-Length: {}\r\n", content_length);
  } else if (chunked) {
    h += "Transfer-Encoding: chunked\r\n";
  } else {
    *keep_alive = false;  // HTTP/1.0: the body ends with the connection
  }
  h += *keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return h;
}

namespace {
constexpr size_t kCoalesce = 64 * 1024;
}

void ResponseWriter::put(const char* data, size_t size) {
  if (!ok_) return;
  if (pending_.size() + size > kCoalesce) {
    // What is pending (a head, a chunk's size line) leaves with the first bytes of the data.
    const size_t first = kCoalesce - std::min(kCoalesce, pending_.size());
    pending_.append(data, std::min(first, size));
    data += std::min(first, size);
    size -= std::min(first, size);
    flush();
    if (size > kCoalesce) {
      ok_ = ok_ && pipe_.append(data, size);
      return;
    }
  }
  pending_.append(data, size);
}

void ResponseWriter::flush() {
  if (ok_ && !pending_.empty()) ok_ = pipe_.append(pending_.data(), pending_.size());
  pending_.clear();
}

bool ResponseWriter::raw(const char* data, size_t size) {
  put(data, size);
  return ok_;
}

bool ResponseWriter::head(int status, const HeaderList& headers, long long content_length,
                          bool keep_alive) {
  keep_alive_ = keep_alive;
  const std::string h = response_head(status, headers, content_length, chunked_, &keep_alive_);
  put(h.data(), h.size());
  return ok_;
}

bool ResponseWriter::chunk(const char* data, size_t size) {
  if (size == 0) return ok_;
  if (!chunked_) {
    put(data, size);
    return ok_;
  }
  const std::string len = fmt::format("{:x}\r\n", size);
  put(len.data(), len.size());
  put(data, size);
  put("\r\n", 2);
  return ok_;
}

bool ResponseWriter::finish(const HeaderList& trailers) {
  if (!chunked_) return ok_;
  std::string last = "0\r\n";
  for (const auto& [k, v] : trailers) last += k + ": " + v + "\r\n";
  last += "\r\n";
  put(last.data(), last.size());
  return ok_;
}

bool ResponseWriter::end() {
  flush();
  pipe_.close(ok_ && keep_alive_);
  return ok_;
}

}  // namespace gtadoc
