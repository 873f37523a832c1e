#include "coordinator/serve/socket_writer.h"

#include <poll.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <cerrno>

namespace gtadoc {

std::string_view status_reason(int status) {
  switch (status) {
    case 200:
      return "OK";
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

namespace {
constexpr size_t kCoalesce = 64 * 1024;
}

void SocketWriter::put(const char* data, size_t size) {
  if (pending_.size() + size > kCoalesce) {
    flush();
    if (size > kCoalesce) {
      send_all(data, size);
      return;
    }
  }
  pending_.append(data, size);
}

bool SocketWriter::flush() {
  if (!pending_.empty()) send_all(pending_.data(), pending_.size());
  pending_.clear();
  return ok_;
}

bool SocketWriter::raw(const char* data, size_t size) {
  put(data, size);
  return ok_;
}

bool SocketWriter::send_all(const char* data, size_t size) {
  while (ok_ && size > 0) {
    const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline_ - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        ok_ = false;
        break;
      }
      pollfd p{fd_, POLLOUT, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
      if (r < 0 && errno != EINTR) ok_ = false;
      if (r > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) ok_ = false;
      continue;
    }
    ok_ = false;  // peer gone or another error
  }
  return ok_;
}

bool SocketWriter::head(int status, const std::vector<std::pair<std::string, std::string>>& headers,
                        long long content_length, bool keep_alive) {
  std::string h =
      fmt::format("HTTP/1.1 {} {}\r\nServer: gtadoc\r\n", status, status_reason(status));
  for (const auto& [k, v] : headers) h += k + ": " + v + "\r\n";
  if (content_length >= 0) {
    h += fmt::format("Content-Length: {}\r\n", content_length);
  } else if (chunked_) {
    h += "Transfer-Encoding: chunked\r\n";
  } else {
    keep_alive = false;  // HTTP/1.0: the body ends with the connection
  }
  h += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  put(h.data(), h.size());
  return ok_;
}

bool SocketWriter::chunk(const char* data, size_t size) {
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

bool SocketWriter::finish(const std::vector<std::pair<std::string, std::string>>& trailers) {
  if (!chunked_) return flush();
  std::string end = "0\r\n";
  for (const auto& [k, v] : trailers) end += k + ": " + v + "\r\n";
  end += "\r\n";
  put(end.data(), end.size());
  return flush();
}

}  // namespace gtadoc
