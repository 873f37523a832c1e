#include "coordinator/serve/http_server.h"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <csignal>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "coordinator/pipeline/query_pipeline.h"

namespace gtadoc {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

using Headers = std::vector<std::pair<http::field, std::string>>;

std::string_view sv(beast::string_view s) {
  return {s.data(), s.size()};
}

/// Compares in time that depends only on the lengths, not on where the strings differ.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

/// The format a query asks for in its body, else the one its Accept header prefers (JSON).
OutputFormat negotiate(const QuerySpec& spec, std::string_view accept) {
  if (spec.format_given) return spec.format;
  if (accept.find("application/x-ndjson") != std::string_view::npos ||
      accept.find("application/ndjson") != std::string_view::npos)
    return OutputFormat::kNdjson;
  if (accept.find("text/tab-separated-values") != std::string_view::npos ||
      accept.find("text/plain") != std::string_view::npos)
    return OutputFormat::kTsv;
  return OutputFormat::kJson;
}

/// The metrics label of a request target.
std::string endpoint_label(std::string_view target) {
  for (const char* known : {"/v1/query", "/v1/archive", "/healthz", "/metrics"})
    if (target == known) return known;
  return "other";
}

/// Wakes a session waiting for the executor (posted to the session's strand).
struct Waiter {
  explicit Waiter(const asio::any_io_executor& ex) : timer(ex) {
    timer.expires_at(asio::steady_timer::time_point::max());
  }
  asio::steady_timer timer;
  std::atomic<bool> finished{false};
  bool reusable = false;
};

class Session {
 public:
  Session(ServiceState& state, tcp::socket socket)
      : state_(state), socket_(std::move(socket)), watchdog_(socket_.get_executor()) {}

  asio::awaitable<void> run() {
    ++state_.connections;
    struct Leave {
      ServiceState& s;
      ~Leave() { --s.connections; }
    } leave{state_};
    if (state_.connections > state_.max_connections) co_return;  // refused: over the limit
    beast::error_code ec;  // responses are written whole; never wait for more bytes
    socket_.set_option(tcp::no_delay(true), ec);
    for (bool open = true; open;) open = co_await serve_one();
    socket_.shutdown(tcp::socket::shutdown_send, ec);
  }

 private:
  /// Arms the watchdog: when `limit` passes before disarm(), pending I/O on the socket is
  /// cancelled (not closed, so a 408 can still be written).
  void arm(std::chrono::milliseconds limit) {
    timed_out_ = false;
    watchdog_.expires_after(limit);
    watchdog_.async_wait([this](const beast::error_code& ec) {
      if (ec) return;  // disarmed
      timed_out_ = true;
      beast::error_code ignored;
      socket_.cancel(ignored);
    });
  }
  void disarm() { watchdog_.cancel(); }

  /// Reads and answers one request; false when the connection must close.
  asio::awaitable<bool> serve_one() {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 * 1024);
    parser.body_limit(state_.max_body);
    beast::error_code ec;
    arm(state_.read_timeout);
    co_await http::async_read(socket_, buffer_, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    disarm();
    if (ec) {
      if (timed_out_) {
        // Idle keep-alive connections just close; a request left half-sent gets a 408.
        if (parser.got_some())
          co_await reply_error(408, "the request did not arrive within the time limit", false,
                               "other");
        co_return false;
      }
      if (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
          ec == asio::error::eof || ec == asio::error::operation_aborted)
        co_return false;
      if (ec == http::error::body_limit)
        co_await reply_error(
            413, "request body larger than " + std::to_string(state_.max_body) + " bytes", false,
            "other");
      else if (ec == http::error::header_limit)
        co_await reply_error(431, "request headers too large", false, "other");
      else
        co_await reply_error(400, "malformed HTTP request (" + ec.message() + ")", false, "other");
      co_return false;
    }
    http::request<http::string_body> req = parser.release();
    http10_ = req.version() < 11;
    const bool keep = req.keep_alive() && !state_.draining;
    const std::string target(sv(req.target()));
    const std::string label = endpoint_label(target);
    if (target != "/healthz" && !state_.token.empty()) {
      const std::string_view auth = sv(req[http::field::authorization]);
      const std::string_view prefix = "Bearer ";
      const bool ok = auth.size() > prefix.size() && auth.substr(0, prefix.size()) == prefix &&
                      constant_time_equal(auth.substr(prefix.size()), state_.token);
      if (!ok) {
        Headers h;
        h.emplace_back(http::field::www_authenticate, "Bearer realm=\"gtadoc\"");
        co_return co_await reply(401, error_body(401, "missing or wrong bearer token"),
                                 "application/json", keep, label, std::move(h));
      }
    }
    if (target == "/healthz") {
      if (req.method() != http::verb::get)
        co_return co_await method_not_allowed("GET", keep, label);
      const bool draining = state_.draining;
      const std::string_view text = draining ? std::string_view("draining\n") : "ok\n";
      co_return co_await reply(draining ? 503 : 200, text, "text/plain", keep, label);
    }
    if (target == "/metrics") {
      if (req.method() != http::verb::get)
        co_return co_await method_not_allowed("GET", keep, label);
      state_.metrics.set_queue_depth(static_cast<int64_t>(state_.queue.depth()));
      co_return co_await reply(200, state_.metrics.render(state_.cache),
                               "text/plain; version=0.0.4; charset=utf-8", keep, label);
    }
    if (target == "/v1/archive") {
      if (req.method() != http::verb::get)
        co_return co_await method_not_allowed("GET", keep, label);
      co_return co_await reply(200, state_.archive_json, "application/json", keep, label);
    }
    if (target == "/v1/query") {
      if (req.method() != http::verb::post)
        co_return co_await method_not_allowed("POST", keep, label);
      co_return co_await query(req, keep);
    }
    co_return co_await reply_error(404, "no such endpoint (try POST /v1/query)", keep, label);
  }

  asio::awaitable<bool> query(const http::request<http::string_body>& req, bool keep) {
    const Clock::time_point received = Clock::now();
    auto job = std::make_shared<QueryJob>();
    std::string invalid;
    try {
      job->spec = query_from_json(req.body());
      if (state_.manifest != nullptr) check_filter_docs(job->spec, *state_.manifest);
    } catch (const Error& e) {
      invalid = e.what();
    }
    if (!invalid.empty()) {
      state_.metrics.query("invalid", 400, 0, false);
      co_return co_await reply_error(400, invalid, keep, "/v1/query");
    }
    job->spec.format = negotiate(job->spec, sv(req[http::field::accept]));
    job->spec.format_given = true;
    job->body = req.body();
    job->key = query_key(job->spec);
    job->etag = query_etag(state_, job->key);
    const std::string task = task_name(job->spec.q.task);
    Headers cache_headers;
    cache_headers.emplace_back(http::field::etag, job->etag);
    cache_headers.emplace_back(http::field::cache_control, "no-cache");
    if (req[http::field::if_none_match] == job->etag) {
      state_.metrics.query(task, 304, 0, false);
      co_return co_await reply(304, "", "", keep, "/v1/query", cache_headers);
    }
    // A request with Cache-Control: no-cache wants a fresh answer (benchmarks measure that).
    const bool fresh =
        sv(req[http::field::cache_control]).find("no-cache") != std::string_view::npos;
    if (auto cached = fresh ? nullptr : state_.cache.get(job->key)) {
      cache_headers.emplace_back(http::field::unknown, std::to_string(cached->rows));
      const bool open = co_await reply(200, cached->view(), content_type(job->spec.format), keep,
                                       "/v1/query", cache_headers);
      state_.metrics.query(task, 200,
                           std::chrono::duration<double>(Clock::now() - received).count(), true);
      co_return open;
    }
    state_.metrics.cache_miss();
    if (state_.draining) {
      state_.metrics.query(task, 503, 0, false);
      co_return co_await reply_error(503, "the service is shutting down", false, "/v1/query");
    }
    auto waiter = std::make_shared<Waiter>(socket_.get_executor());
    job->fd = socket_.native_handle();
    job->keep_alive = keep;
    job->http10 = http10_;
    job->fresh = fresh;
    job->received = received;
    job->deadline = received + state_.query_timeout;
    asio::any_io_executor ex = socket_.get_executor();
    job->done = [waiter, ex](bool reusable) {
      asio::post(ex, [waiter, reusable] {
        waiter->reusable = reusable;
        waiter->finished = true;
        waiter->timer.cancel();
      });
    };
    switch (state_.queue.push(job)) {
      case JobQueue::Push::kOk:
        break;
      case JobQueue::Push::kFull: {
        state_.metrics.query(task, 503, 0, false);
        Headers retry;
        retry.emplace_back(http::field::retry_after, "1");
        co_return co_await reply_error(503, "too many queries waiting; retry shortly", keep,
                                       "/v1/query", std::move(retry));
      }
      case JobQueue::Push::kClosed:
        state_.metrics.query(task, 503, 0, false);
        co_return co_await reply_error(503, "the service is shutting down", false, "/v1/query");
    }
    state_.metrics.set_queue_depth(static_cast<int64_t>(state_.queue.depth()));
    while (!waiter->finished) {
      beast::error_code ec;
      co_await waiter->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return waiter->reusable;
  }

  asio::awaitable<bool> method_not_allowed(const char* allow, bool keep, const std::string& label) {
    Headers h;
    h.emplace_back(http::field::allow, allow);
    co_return co_await reply(405,
                             error_body(405, std::string("method not allowed (use ") + allow + ")"),
                             "application/json", keep, label, std::move(h));
  }

  asio::awaitable<bool> reply_error(int status, const std::string& message, bool keep,
                                    const std::string& label, Headers extra = {}) {
    co_return co_await reply(status, error_body(status, message), "application/json", keep, label,
                             std::move(extra));
  }

  /// Writes a complete response; false when the connection must close.
  asio::awaitable<bool> reply(int status, std::string_view body, std::string_view type, bool keep,
                              const std::string& label, Headers extra = {}) {
    state_.metrics.request(label, status);
    http::response<http::span_body<const char>> res{static_cast<http::status>(status), 11};
    res.set(http::field::server, "gtadoc");
    if (!type.empty())
      res.set(http::field::content_type, beast::string_view(type.data(), type.size()));
    for (auto& [k, v] : extra) {
      if (k == http::field::unknown)  // the one custom header: the rows of a cached answer
        res.set("X-Gtadoc-Rows", v);
      else
        res.set(k, v);
    }
    res.body() = http::span_body<const char>::value_type(body.data(), body.size());
    keep = keep && !http10_;
    res.keep_alive(keep);
    res.prepare_payload();
    beast::error_code ec;
    arm(state_.query_timeout);
    co_await http::async_write(socket_, res, asio::redirect_error(asio::use_awaitable, ec));
    disarm();
    co_return !ec && keep;
  }

  ServiceState& state_;
  tcp::socket socket_;
  asio::steady_timer watchdog_;
  bool timed_out_ = false;
  bool http10_ = false;
  beast::flat_buffer buffer_;
};

asio::awaitable<void> accept_loop(ServiceState& state, tcp::acceptor& acceptor) {
  for (;;) {
    auto strand = asio::make_strand(acceptor.get_executor());
    tcp::socket socket(strand);
    beast::error_code ec;
    co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (!acceptor.is_open()) co_return;
      continue;  // e.g. too many open files: keep serving the open connections
    }
    auto session = std::make_shared<Session>(state, std::move(socket));
    asio::co_spawn(
        strand, [session]() -> asio::awaitable<void> { co_await session->run(); }, asio::detached);
  }
}

}  // namespace

std::string query_etag(const ServiceState& state, const std::string& key) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the normalized query
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return "\"" + state.etag_prefix + "-" + buf + "\"";
}

std::string error_body(int status, const std::string& message) {
  nlohmann::json j;
  j["error"] = message;
  j["status"] = status;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

const char* content_type(OutputFormat f) {
  switch (f) {
    case OutputFormat::kTsv:
      return "text/tab-separated-values; charset=utf-8";
    case OutputFormat::kJson:
      return "application/json";
    case OutputFormat::kNdjson:
      return "application/x-ndjson";
  }
  return "application/octet-stream";
}

HttpServer::HttpServer(ServiceState& state, const asio::ip::address& address, uint16_t port)
    : state_(state), acceptor_(ioc_), signals_(ioc_, SIGTERM, SIGINT) {
  beast::error_code ec;
  const tcp::endpoint endpoint(address, port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw InputError("--listen " + address.to_string() + ":" + std::to_string(port) +
                     ": cannot listen (" + ec.message() + ")");
  port_ = acceptor_.local_endpoint().port();
}

HttpServer::~HttpServer() {
  stop();
}

void HttpServer::start(unsigned threads, std::function<void()> on_stop_signal) {
  signals_.async_wait([on_stop_signal](const beast::error_code& ec, int) {
    if (!ec && on_stop_signal) on_stop_signal();
  });
  asio::co_spawn(ioc_, accept_loop(state_, acceptor_), asio::detached);
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    threads_.emplace_back([this] { ioc_.run(); });
}

void HttpServer::stop_accepting() {
  asio::post(ioc_, [this] {
    beast::error_code ec;
    acceptor_.close(ec);
  });
}

void HttpServer::stop() {
  ioc_.stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace gtadoc
