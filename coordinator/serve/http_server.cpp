#include "coordinator/serve/http_server.h"

#include <spdlog/spdlog.h>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <csignal>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/timer.h"
#include "coordinator/pipeline/query_pipeline.h"
#include "coordinator/serve/documents.h"
#include "coordinator/serve/http_checks.h"
#include "coordinator/serve/json_budget.h"
#include "coordinator/serve/response_pipe.h"
#include "coordinator/serve/response_writer.h"

namespace gtadoc {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string_view sv(beast::string_view s) {
  return {s.data(), s.size()};
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

/// The path of a request target (what precedes its query string).
std::string_view target_path(std::string_view target) {
  return target.substr(0, target.find('?'));
}

/// Whether a path is one of GET /v1/docs's: /v1/docs (by id) or /v1/docs/NAME.
bool is_docs_path(std::string_view path) {
  return path == "/v1/docs" || path.starts_with("/v1/docs/");
}

/// The metrics label of a request target.
std::string endpoint_label(std::string_view target) {
  for (const char* known : {"/v1/query", "/v1/search", "/v1/archive", "/healthz", "/metrics"})
    if (target == known) return known;
  if (is_docs_path(target_path(target))) return "/v1/docs";
  return "other";
}

/// Bytes of a document rendered at a time (on the documents' pool) and then written: what one
/// response holds of its document's text (besides its words, 4 bytes each).
constexpr uint64_t kDocPiece = uint64_t{2} << 20;

/// Wakes a session waiting for its response's next bytes (set and cancelled on the session's
/// strand).
struct Waiter {
  explicit Waiter(const asio::any_io_executor& ex) : timer(ex) {
    timer.expires_at(asio::steady_timer::time_point::max());
  }
  void wake() {
    woken = true;
    timer.cancel();
  }
  asio::steady_timer timer;
  bool woken = false;
};

/// Counts a response being written for as long as it lives (the drain at shutdown waits for 0).
struct Writing {
  explicit Writing(ServiceState& s) : state(s) { ++state.responses_writing; }
  ~Writing() { --state.responses_writing; }
  ServiceState& state;
};

/// Bytes read and dropped after an error response before the connection closes, at most.
constexpr size_t kLingerBytes = 64 * 1024;
constexpr auto kLingerTime = std::chrono::seconds(1);

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(ServiceState& state, tcp::socket socket, asio::thread_pool& docs_pool)
      : state_(state),
        socket_(std::move(socket)),
        watchdog_(socket_.get_executor()),
        docs_pool_(docs_pool) {}

  void set_id(uint64_t id) { id_ = id; }

  /// Closes the connection to make room for another (on the session's strand): pending and
  /// later I/O fails, a wait for the response's bytes ends.
  void cut() {
    if (cut_) return;
    cut_ = true;
    state_.metrics.connection_evicted();
    beast::error_code ec;
    socket_.close(ec);
    disarm();
    if (waiter_) waiter_->wake();
  }

  asio::awaitable<void> run() {
    ++state_.connections;
    struct Leave {
      ServiceState& s;
      uint64_t id;
      ~Leave() {
        s.connection_table.leave(id);
        --s.connections;
      }
    } leave{state_, id_};
    beast::error_code ec;  // responses are written whole; never wait for more bytes
    socket_.set_option(tcp::no_delay(true), ec);
    for (bool open = true; open && !cut_;) open = co_await serve_one();
    if (cut_) co_return;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    if (linger_) co_await linger();
  }

 private:
  /// Arms the watchdog: when `limit` passes before disarm(), pending I/O on the socket is
  /// cancelled (not closed, so a 408 can still be written).
  void arm(Clock::duration limit) {
    const uint64_t generation = ++watch_generation_;
    timed_out_ = false;
    watchdog_.expires_after(limit);
    watchdog_.async_wait([this, generation](const beast::error_code& ec) {
      if (ec || generation != watch_generation_) return;  // disarmed
      timed_out_ = true;
      beast::error_code ignored;
      socket_.cancel(ignored);
    });
  }
  void disarm() {
    ++watch_generation_;
    watchdog_.cancel();
  }

  /// After an error response: the client's unread bytes are read and dropped (at most
  /// kLingerBytes, for at most kLingerTime) so that closing does not reset the connection
  /// before the client has read the response.
  asio::awaitable<void> linger() {
    char sink[4096];
    size_t dropped = 0;
    arm(kLingerTime);
    while (dropped < kLingerBytes && !timed_out_) {
      beast::error_code ec;
      const size_t n = co_await socket_.async_read_some(
          asio::buffer(sink), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      dropped += n;
    }
    disarm();
  }

  /// Writes `head` then `body` (gathered: a client sees them in one piece where the socket
  /// takes it); false (the connection must close) when the client does not accept a byte for
  /// --write-timeout, the deadline passes, or the connection fails.
  asio::awaitable<bool> send(std::string_view head, Clock::time_point deadline,
                             std::string_view body = {}) {
    while (!head.empty() || !body.empty()) {
      if (cut_) co_return false;
      const Clock::duration left = deadline - Clock::now();
      if (left <= Clock::duration::zero()) co_return false;
      arm(std::min<Clock::duration>(state_.write_timeout, left));
      beast::error_code ec;
      const std::array<asio::const_buffer, 2> buffers = {asio::buffer(head.data(), head.size()),
                                                         asio::buffer(body.data(), body.size())};
      size_t n =
          co_await socket_.async_write_some(buffers, asio::redirect_error(asio::use_awaitable, ec));
      disarm();
      if (ec) co_return false;
      const size_t from_head = std::min(n, head.size());
      head.remove_prefix(from_head);
      body.remove_prefix(n - from_head);
    }
    co_return true;
  }

  /// Reads and answers one request; false when the connection must close.
  asio::awaitable<bool> serve_one() {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 * 1024);
    parser.body_limit(state_.max_body);
    state_.connection_table.set_phase(id_, ConnectionTable::Phase::kReading);
    const Clock::time_point start = Clock::now();
    beast::error_code ec;
    // The headers (of a new or idle keep-alive connection) within the header timeout, the
    // whole request within the read timeout.
    arm(std::min(state_.header_timeout, state_.read_timeout));
    co_await http::async_read_header(socket_, buffer_, parser,
                                     asio::redirect_error(asio::use_awaitable, ec));
    disarm();
    if (!ec) {
      const std::string bad = framing_error(parser.get(), parser.get().version());
      if (!bad.empty()) {
        linger_ = true;
        co_await reply_error(400, "malformed HTTP request (" + bad + ")", false, "other");
        co_return false;
      }
    }
    if (!ec && !parser.is_done()) {
      const Clock::duration left = start + state_.read_timeout - Clock::now();
      if (left > Clock::duration::zero()) {
        arm(left);
        co_await http::async_read(socket_, buffer_, parser,
                                  asio::redirect_error(asio::use_awaitable, ec));
        disarm();
      } else {
        timed_out_ = true;
        ec = asio::error::timed_out;
      }
    }
    if (cut_) co_return false;
    if (ec) {
      if (timed_out_) {
        // Idle keep-alive connections just close; a request left half-sent gets a 408.
        if (parser.got_some()) {
          linger_ = true;
          co_await reply_error(408, "the request did not arrive within the time limit", false,
                               "other");
        }
        co_return false;
      }
      if (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
          ec == asio::error::eof || ec == asio::error::operation_aborted)
        co_return false;
      linger_ = true;
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
    if (target != "/healthz" && !state_.token.empty() &&
        !bearer_matches(sv(req[http::field::authorization]), state_.token)) {
      HeaderList h;
      h.emplace_back("WWW-Authenticate", "Bearer realm=\"gtadoc\"");
      co_return co_await reply(401, error_body(401, "missing or wrong bearer token"),
                               "application/json", keep, label, std::move(h));
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
      if (state_.documents != nullptr) {
        const DocumentStore::Stats s = state_.documents->stats();
        state_.metrics.set_doc_cache(s.bytes, s.entries, s.capacity, s.hits, s.misses);
      }
      co_return co_await reply(200, state_.metrics.render(state_.cache),
                               "text/plain; version=0.0.4; charset=utf-8", keep, label);
    }
    if (target == "/v1/archive") {
      if (req.method() != http::verb::get)
        co_return co_await method_not_allowed("GET", keep, label);
      co_return co_await reply(200, state_.archive_json, "application/json", keep, label);
    }
    if (target == "/v1/query" || target == "/v1/search") {
      if (req.method() != http::verb::post)
        co_return co_await method_not_allowed("POST", keep, label);
      co_return co_await query(req, keep, target == "/v1/search");
    }
    if (const std::string_view path = target_path(target); is_docs_path(path)) {
      if (req.method() != http::verb::get && req.method() != http::verb::head)
        co_return co_await method_not_allowed("GET, HEAD", keep, label);
      co_return co_await document(req, path, std::string_view(target).substr(path.size()), keep);
    }
    co_return co_await reply_error(404, "no such endpoint (try POST /v1/query)", keep, label);
  }

  /// GET or HEAD /v1/docs/NAME (NAME percent-decoded) or /v1/docs?id=N: the document's bytes,
  /// or the one byte range a Range header asks for (docs/SERVICE.md). Rank 0 reads them alone
  /// (documents.h), on the documents' pool: this I/O thread serves other connections meanwhile.
  asio::awaitable<bool> document(const http::request<http::string_body>& req, std::string_view path,
                                 std::string_view query, bool keep) {
    const std::string label = "/v1/docs";
    DocumentStore* store = state_.documents;
    if (store == nullptr)
      co_return co_await reply_error(503, "documents are not served", keep, label);
    const Manifest& m = store->manifest();
    DocId doc = 0;
    if (path == "/v1/docs") {
      std::optional<uint64_t> id;
      const std::string_view digits = query.starts_with("?id=") ? query.substr(4) : "";
      if (!digits.empty() && digits.size() <= 19 &&
          digits.find_first_not_of("0123456789") == std::string_view::npos)
        id = std::stoull(std::string(digits));
      if (!id)
        co_return co_await reply_error(
            400, "name the document: /v1/docs/NAME (percent-encoded) or /v1/docs?id=N", keep,
            label);
      if (*id >= m.docs.size())
        co_return co_await reply_error(404,
                                       "no document with id " + std::to_string(*id) +
                                           " (the archive has " + std::to_string(m.docs.size()) +
                                           ")",
                                       keep, label);
      doc = static_cast<DocId>(*id);
    } else {
      const std::optional<std::string> name = percent_decode(path.substr(9));
      if (!name)
        co_return co_await reply_error(
            400, "malformed percent escape in the document name (% must start %XX)", keep, label);
      if (name->find('\0') != std::string::npos)
        co_return co_await reply_error(400, "a document name holds no NUL byte", keep, label);
      const std::optional<DocId> found = store->find(*name);
      if (!found)
        co_return co_await reply_error(404, "no document named '" + printable_name(*name) + "'",
                                       keep, label);
      doc = *found;
    }
    const uint64_t size = m.docs[doc].bytes;
    const std::string etag = "\"" + state_.etag_prefix + "-d" + std::to_string(doc) + "\"";
    HeaderList headers;
    headers.emplace_back("ETag", etag);
    headers.emplace_back("Accept-Ranges", "bytes");
    const std::string_view if_none = sv(req[http::field::if_none_match]);
    if (!if_none.empty() &&
        (if_none.find(etag) != std::string_view::npos || http_trim(if_none) == "*"))
      co_return co_await reply(304, "", "", keep, label, std::move(headers));
    // A Range whose If-Range names another version (or a date) is ignored: the whole document.
    ByteRange range;
    range.end = size;
    const auto if_range = req.find(http::field::if_range);
    if (req.find(http::field::range) != req.end() &&
        (if_range == req.end() || sv(if_range->value()) == etag))
      range = parse_byte_range(sv(req[http::field::range]), size);
    if (range.kind == ByteRange::kUnsatisfiable) {
      headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
      co_return co_await reply(416,
                               error_body(416, "range not satisfiable: the document has " +
                                                   std::to_string(size) + " bytes"),
                               "application/json", keep, label, std::move(headers));
    }
    const int status = range.kind == ByteRange::kPart ? 206 : 200;
    if (status == 206)
      headers.emplace_back("Content-Range", "bytes " + std::to_string(range.begin) + "-" +
                                                std::to_string(range.end - 1) + "/" +
                                                std::to_string(size));
    headers.emplace(headers.begin(), "Content-Type", "application/octet-stream");
    const uint64_t length = range.end - range.begin;
    Writing writing(state_);
    state_.connection_table.set_phase(id_, ConnectionTable::Phase::kWriting);
    const Clock::time_point deadline = Clock::now() + state_.query_timeout;
    keep = keep && !http10_;
    if (req.method() == http::verb::head) {  // the sizes are the manifest's: nothing is read
      const std::string head =
          response_head(status, headers, static_cast<long long>(length), true, &keep);
      state_.metrics.request(label, status);
      co_return co_await send(head, deadline) && keep;
    }
    // The document is read and its first piece rendered on the pool; then piece by piece.
    std::unique_ptr<OpenDocument> open;
    std::string piece;
    std::optional<std::string> error;
    Timer timer;
    try {
      co_await asio::co_spawn(
          docs_pool_,
          [&]() -> asio::awaitable<void> {
            open = store->open(doc);
            open->seek(range.begin);
            piece.reserve(std::min(length, kDocPiece));
            open->read(piece, std::min(length, kDocPiece));
            co_return;
          },
          asio::use_awaitable);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (cut_) co_return false;
    if (error) {
      spdlog::warn("GET /v1/docs: document {}: {}", doc, *error);
      co_return co_await reply_error(500, *error, keep, label);
    }
    char timing[64];
    std::snprintf(timing, sizeof timing, "doc;dur=%.3f", timer.seconds() * 1e3);
    headers.emplace_back("Server-Timing", timing);
    const std::string head =
        response_head(status, headers, static_cast<long long>(length), true, &keep);
    state_.metrics.request(label, status);
    if (!co_await send(head, deadline, piece)) co_return false;
    for (uint64_t sent = piece.size(); sent < length; sent += piece.size()) {
      piece.clear();
      bool failed = false;
      try {
        co_await asio::co_spawn(
            docs_pool_,
            [&]() -> asio::awaitable<void> {
              open->read(piece, std::min(length - sent, kDocPiece));
              co_return;
            },
            asio::use_awaitable);
      } catch (const std::exception& e) {  // memory: the head is sent, so the response is cut
        spdlog::warn("GET /v1/docs: document {}: {}", doc, e.what());
        failed = true;
      }
      if (failed || cut_ || piece.empty() || !co_await send(piece, deadline)) co_return false;
    }
    co_return keep;
  }

  /// POST /v1/query, or POST /v1/search (`search`): both queue a job for the executor.
  asio::awaitable<bool> query(const http::request<http::string_body>& req, bool keep, bool search) {
    const Clock::time_point received = Clock::now();
    auto job = std::make_shared<QueryJob>();
    job->is_search = search;
    const char* endpoint = job->endpoint();
    // Parsing costs at most a fixed multiple of --max-body (json_budget.h).
    std::string invalid = json_over_budget(req.body(), max_json_values(state_.max_body));
    if (invalid.empty()) {
      try {
        if (search) {
          // The format travels in the query spec's fields, which negotiate() reads.
          job->search = search_from_json(req.body(), &job->spec.format_given);
          job->spec.format = job->search.format;
        } else {
          job->spec = query_from_json(req.body());
          if (state_.manifest != nullptr) check_filter_docs(job->spec, *state_.manifest);
        }
      } catch (const Error& e) {
        invalid = e.what();
      }
    }
    if (!invalid.empty()) {
      state_.metrics.query("invalid", 400, 0, false);
      co_return co_await reply_error(400, invalid, keep, endpoint);
    }
    job->spec.format = negotiate(job->spec, sv(req[http::field::accept]));
    job->spec.format_given = true;
    job->body = req.body();
    job->search.format = job->spec.format;
    job->key = search ? search_key(job->search) : query_key(job->spec);
    job->etag = query_etag(state_, job->key);
    const std::string task = job->task();
    HeaderList cache_headers;
    cache_headers.emplace_back("ETag", job->etag);
    cache_headers.emplace_back("Cache-Control", "no-cache");
    if (req[http::field::if_none_match] == job->etag) {
      state_.metrics.query(task, 304, 0, false);
      co_return co_await reply(304, "", "", keep, endpoint, cache_headers);
    }
    // A request with Cache-Control: no-cache wants a fresh answer (benchmarks measure that).
    const bool fresh =
        sv(req[http::field::cache_control]).find("no-cache") != std::string_view::npos;
    if (auto cached = fresh ? nullptr : state_.cache.get(job->key)) {
      cache_headers.emplace_back("X-Gtadoc-Rows", std::to_string(cached->rows));
      const bool open = co_await reply(200, cached->view(), content_type(job->spec.format), keep,
                                       endpoint, cache_headers);
      state_.metrics.query(task, 200,
                           std::chrono::duration<double>(Clock::now() - received).count(), true);
      co_return open;
    }
    state_.metrics.cache_miss();
    if (state_.draining) {
      state_.metrics.query(task, 503, 0, false);
      co_return co_await reply_error(503, "the service is shutting down", false, endpoint);
    }
    auto waiter = std::make_shared<Waiter>(socket_.get_executor());
    job->pipe = std::make_shared<ResponsePipe>(state_.response_memory_shared,
                                               state_.response_memory, state_.spill_dir);
    job->keep_alive = keep;
    job->http10 = http10_;
    job->fresh = fresh;
    job->received = received;
    job->deadline = received + state_.query_timeout;
    asio::any_io_executor ex = socket_.get_executor();
    job->pipe->set_wake([waiter, ex] { asio::post(ex, [waiter] { waiter->wake(); }); });
    Writing writing(state_);  // from now on the executor may answer: count it for the drain
    switch (state_.queue.push(job)) {
      case JobQueue::Push::kOk:
        break;
      case JobQueue::Push::kFull: {
        state_.metrics.query(task, 503, 0, false);
        HeaderList retry;
        retry.emplace_back("Retry-After", "1");
        co_return co_await reply_error(503, "too many queries waiting; retry shortly", keep,
                                       endpoint, std::move(retry));
      }
      case JobQueue::Push::kClosed:
        state_.metrics.query(task, 503, 0, false);
        co_return co_await reply_error(503, "the service is shutting down", false, endpoint);
    }
    state_.metrics.set_queue_depth(static_cast<int64_t>(state_.queue.depth()));
    state_.connection_table.set_phase(id_, ConnectionTable::Phase::kQuery);
    waiter_ = waiter;
    const bool open = co_await drain(*job->pipe, *waiter, job->deadline);
    waiter_.reset();
    co_return open;
  }

  /// Writes the executor's response from `pipe` as its bytes come; false when the connection
  /// must close (the response was cut, or it asks for a close).
  asio::awaitable<bool> drain(ResponsePipe& pipe, Waiter& waiter, Clock::time_point deadline) {
    bool writing = false;
    for (;;) {
      if (cut_) {
        pipe.abandon();
        co_return false;
      }
      ResponsePipe::Piece piece = pipe.take();
      switch (piece.state) {
        case ResponsePipe::State::kData:
          if (!writing) {
            writing = true;
            state_.connection_table.set_phase(id_, ConnectionTable::Phase::kWriting);
          }
          if (!co_await send(piece.bytes, deadline)) {
            pipe.abandon();
            if (!cut_) {
              state_.metrics.response_cut();
              spdlog::info(
                  "serve: a client did not read its response within the time limits: "
                  "the response was cut and its connection closed");
            }
            co_return false;
          }
          break;
        case ResponsePipe::State::kEnd:
          co_return piece.keep_alive;
        case ResponsePipe::State::kFailed:
          state_.metrics.response_cut();
          co_return false;
        case ResponsePipe::State::kWait:
          while (!waiter.woken && !cut_) {
            beast::error_code ec;
            co_await waiter.timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
          }
          waiter.woken = false;
          break;
      }
    }
  }

  asio::awaitable<bool> method_not_allowed(const char* allow, bool keep, const std::string& label) {
    HeaderList h;
    h.emplace_back("Allow", allow);
    co_return co_await reply(405,
                             error_body(405, std::string("method not allowed (use ") + allow + ")"),
                             "application/json", keep, label, std::move(h));
  }

  asio::awaitable<bool> reply_error(int status, const std::string& message, bool keep,
                                    const std::string& label, HeaderList extra = {}) {
    co_return co_await reply(status, error_body(status, message), "application/json", keep, label,
                             std::move(extra));
  }

  /// Writes a complete response (within --write-timeout per byte accepted and --query-timeout
  /// in all); false when the connection must close.
  asio::awaitable<bool> reply(int status, std::string_view body, std::string_view type, bool keep,
                              const std::string& label, HeaderList extra = {}) {
    state_.metrics.request(label, status);
    Writing writing(state_);
    state_.connection_table.set_phase(id_, ConnectionTable::Phase::kWriting);
    HeaderList headers;
    if (!type.empty()) headers.emplace_back("Content-Type", std::string(type));
    for (auto& field : extra) headers.push_back(std::move(field));
    keep = keep && !http10_;
    const std::string head =
        response_head(status, headers, static_cast<long long>(body.size()), true, &keep);
    const bool ok = co_await send(head, Clock::now() + state_.query_timeout, body);
    const bool open = ok && keep;
    co_return open;
  }

  ServiceState& state_;
  tcp::socket socket_;
  asio::steady_timer watchdog_;
  asio::thread_pool& docs_pool_;
  uint64_t watch_generation_ = 0;
  uint64_t id_ = 0;
  std::shared_ptr<Waiter> waiter_;  ///< while waiting for the executor's response
  bool timed_out_ = false;
  bool http10_ = false;
  bool cut_ = false;
  bool linger_ = false;  ///< an error response: drain the client's bytes before closing
  beast::flat_buffer buffer_;
};

asio::awaitable<void> accept_loop(ServiceState& state, tcp::acceptor& acceptor,
                                  asio::thread_pool& docs_pool) {
  for (;;) {
    auto strand = asio::make_strand(acceptor.get_executor());
    tcp::socket socket(strand);
    beast::error_code ec;
    co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (!acceptor.is_open()) co_return;
      continue;  // e.g. too many open files: keep serving the open connections
    }
    const tcp::endpoint peer = socket.remote_endpoint(ec);
    const std::string address = ec ? std::string("unknown") : peer.address().to_string();
    auto session = std::make_shared<Session>(state, std::move(socket), docs_pool);
    std::weak_ptr<Session> weak = session;
    const uint64_t id = state.connection_table.admit(address, [weak, strand] {
      asio::post(strand, [weak] {
        if (auto s = weak.lock()) s->cut();
      });
    });
    if (id == 0) continue;  // full of connections waiting for queries: refused (closed here)
    session->set_id(id);
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
    : state_(state),
      accept_strand_(asio::make_strand(ioc_)),
      acceptor_(ioc_),
      signals_(ioc_, SIGTERM, SIGINT) {
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
  asio::co_spawn(accept_strand_, accept_loop(state_, acceptor_, docs_pool_), asio::detached);
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    threads_.emplace_back([this] { ioc_.run(); });
}

void HttpServer::stop_accepting() {
  asio::post(accept_strand_, [this] {
    beast::error_code ec;
    acceptor_.close(ec);
  });
}

void HttpServer::stop() {
  ioc_.stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  // A document read under way finishes (its sessions are gone with the I/O threads).
  docs_pool_.stop();
  docs_pool_.join();
}

}  // namespace gtadoc
