// The HTTP/1.1 front of `gtadoc serve` (Boost.Beast on Boost.Asio, C++20 coroutines), on rank 0
// only: accepts connections (at --max-connections a new one takes the place of an idle or slow
// one: connection_table.h), reads requests within the limits (header timeout, read timeout for
// the whole request, header and body size, strict framing: http_checks.h), authenticates
// (bearer token, constant-time compare), answers /healthz, /metrics, /v1/archive and cached or
// conditional (If-None-Match) queries itself, and queues the other queries for the executor
// (full queue -> 503 with Retry-After), then writes the executor's response from its pipe
// (response_pipe.h) at the client's pace. Every write must make progress within the write
// timeout and end within the query timeout, else the connection is cut. Every bad request gets
// a 4xx with a JSON error body; nothing a request does touches the resident data.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/serve/service_state.h"

namespace gtadoc {

class HttpServer {
 public:
  static constexpr unsigned kDocThreads = 2;
  /// Binds `host:port` (port 0 = any free port). Throws InputError when it cannot.
  HttpServer(ServiceState& state, const boost::asio::ip::address& address, uint16_t port);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const { return port_; }
  /// Starts `threads` I/O threads; `on_stop_signal` runs (on an I/O thread) at SIGTERM/SIGINT.
  void start(unsigned threads, std::function<void()> on_stop_signal);
  /// Stops accepting connections (thread-safe; requests on open connections still get answers).
  void stop_accepting();
  /// Stops every connection and joins the I/O threads.
  void stop();

 private:
  ServiceState& state_;
  boost::asio::io_context ioc_;
  /// The accept loop and stop_accepting's close run here, never at once on two I/O threads (an
  /// acceptor is not safe for concurrent use: a close racing an accept's start crashed).
  boost::asio::strand<boost::asio::io_context::executor_type> accept_strand_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::signal_set signals_;
  /// Where GET /v1/docs reads and renders documents (documents.h), off the I/O threads.
  boost::asio::thread_pool docs_pool_{kDocThreads};
  uint16_t port_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace gtadoc
