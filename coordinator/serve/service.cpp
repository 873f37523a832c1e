#include "coordinator/serve/service.h"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "common/big_alloc.h"
#include "common/error.h"
#include "common/settings.h"
#include "common/timer.h"
#include "coordinator/crash_report.h"
#include "coordinator/info.h"
#include "coordinator/pipeline/archive_session.h"
#include "coordinator/pipeline/query_pipeline.h"
#include "coordinator/search/phrase_search.h"
#include "coordinator/search/point_lookup.h"
#include "coordinator/search/resident_index.h"
#include "coordinator/serve/documents.h"
#include "coordinator/serve/http_server.h"
#include "coordinator/serve/response_pipe.h"
#include "coordinator/serve/response_writer.h"
#include "coordinator/serve/service_state.h"
#include "worker/engine.h"

namespace gtadoc {

namespace asio = boost::asio;

namespace {

constexpr uint64_t kStreamChunk = uint64_t{4} << 20;
/// The longest timeout an option may set (a day): larger values are typing errors.
constexpr double kMaxTimeoutSeconds = 86400;

struct Listen {
  asio::ip::address address;
  uint16_t port = 0;
  std::string shown;  ///< host as given, for the "listening on" line
};

Listen parse_listen(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size())
    throw UsageError("--listen '" + text + "': expected HOST:PORT (e.g. 127.0.0.1:8080)");
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  Listen l;
  try {
    size_t used = 0;
    const unsigned long p = std::stoul(port_text, &used);
    if (used != port_text.size() || p > 65535) throw std::out_of_range("port");
    l.port = static_cast<uint16_t>(p);
  } catch (const std::exception&) {
    throw UsageError("--listen '" + text + "': '" + port_text + "' is not a port (0..65535)");
  }
  boost::system::error_code ec;
  l.address = asio::ip::make_address(host, ec);
  if (ec) {  // a host name: its first address
    asio::io_context ioc;
    asio::ip::tcp::resolver resolver(ioc);
    auto results = resolver.resolve(host, port_text, ec);
    if (ec || results.empty())
      throw UsageError("--listen '" + text + "': cannot resolve host '" + host + "'");
    l.address = results.begin()->endpoint().address();
  }
  l.shown = l.address.is_v6() ? "[" + l.address.to_string() + "]" : l.address.to_string();
  return l;
}

std::string read_token(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file + ": cannot read the token file");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t'))
    token.pop_back();
  if (token.empty()) throw UsageError(file + ": the token file is empty");
  if (token.find_first_of("\r\n") != std::string::npos)
    throw UsageError(file + ": the token must be one line");
  return token;
}

/// The message every rank receives for a request: its kind (0 query, 1 search), its format,
/// then the request body.
std::vector<uint8_t> encode(bool search, OutputFormat format, const std::string& body) {
  std::vector<uint8_t> msg(body.size() + 2);
  msg[0] = search ? 1 : 0;
  msg[1] = static_cast<uint8_t>(format);
  std::copy(body.begin(), body.end(), msg.begin() + 2);
  return msg;
}

bool is_search(const std::vector<uint8_t>& msg) {
  return msg.at(0) == 1;
}

std::string_view body_of(const std::vector<uint8_t>& msg) {
  return std::string_view(reinterpret_cast<const char*>(msg.data()) + 2, msg.size() - 2);
}

QuerySpec decode(const std::vector<uint8_t>& msg) {
  QuerySpec spec = query_from_json(body_of(msg));
  spec.format = static_cast<OutputFormat>(msg[1]);
  spec.format_given = true;
  return spec;
}

/// Collective: bytes resident and GPU memory of every rank, into `metrics` on rank 0.
void update_memory(Comm& comm, const ArchiveSession& session, const ResidentSearchIndex* index,
                   Metrics* metrics) {
  uint64_t used = 0, total = 0;
  if (session.engine_name() == "gpu") gpu_memory(comm.local_rank(), &used, &total);
  std::vector<uint64_t> resident = comm.allgather(session.resident_bytes());
  std::vector<uint64_t> u = comm.allgather(used), t = comm.allgather(total);
  std::vector<uint64_t> searching = comm.allgather(index != nullptr ? index->bytes() : 0);
  if (metrics != nullptr) {
    metrics->set_rank_memory(resident, u, t);
    metrics->set_search_index(searching);
  }
}

/// Rank 0's stages of the query before its rows stream (milliseconds), as Server-Timing.
std::string server_timing(const QueryTimings& t) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "init;dur=%.3f, traversal;dur=%.3f, collect;dur=%.3f, shuffle;dur=%.3f, "
                "rows;dur=%.3f",
                t.init * 1e3, t.traversal * 1e3, t.collect * 1e3, t.shuffle * 1e3, t.merge * 1e3);
  return buf;
}

int status_of(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::kUsage:
      return 400;
    case ErrorKind::kInternal:
      return 500;
    case ErrorKind::kResource:
      return 503;  // no GPU memory now: the client may retry
    default:
      break;
  }
  return 500;  // bad data on the service's side is not the client's fault
}

void reply_error(QueryJob& job, ServiceState& state, int status, const std::string& message,
                 HeaderList headers = {}) {
  const std::string body = error_body(status, message);
  ResponseWriter w(*job.pipe, !job.http10);
  headers.emplace_back("Content-Type", "application/json");
  w.head(status, headers, static_cast<long long>(body.size()), job.keep_alive);
  w.raw(body.data(), body.size());
  w.end();
  state.metrics.request(job.endpoint(), status);
  state.metrics.query(job.task(), status,
                      std::chrono::duration<double>(Clock::now() - job.received).count(), false);
}

/// Every rank: runs one broadcast search over its resident grammars; rank 0 (with `job`)
/// answers it with the whole output (its length known: no chunks).
void execute_search(Comm& comm, ArchiveSession& session, ResidentSearchIndex& index,
                    const std::vector<uint8_t>& msg, QueryJob* job, ServiceState* state) {
  Timer timer;
  std::string text;
  try {
    PreparedSearch search;
    const Normalization* norm = nullptr;
    SearchHits hits;
    run_collectively(comm, [&] {
      SearchSpec spec = search_from_json(body_of(msg), nullptr);
      spec.format = static_cast<OutputFormat>(msg[1]);
      norm = &session.normalization(spec.lowercase, spec.alnum);
      search = prepare_search(spec, *norm);
      hits = search_grammars(session.path(), session.manifest(), index.targets(), search, *norm,
                             session.threads());
    });
    text = gather_search_output(comm, session.manifest(), search, std::move(hits));
  } catch (const CollectiveError& e) {
    if (job != nullptr) reply_error(*job, *state, status_of(e), e.what());
    return;
  }
  if (job == nullptr) return;
  const double searched = timer.seconds();
  char timing[64];
  std::snprintf(timing, sizeof timing, "search;dur=%.3f", searched * 1e3);
  // Rows end with a newline (TSV, NDJSON; no row holds one) or are framed by "[\n" ... "\n]\n".
  const uint64_t rows = static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n')) -
                        (job->spec.format == OutputFormat::kJson ? 2 : 0);
  ResponseWriter w(*job->pipe, !job->http10);
  w.head(200,
         {{"Content-Type", content_type(job->spec.format)},
          {"ETag", job->etag},
          {"Cache-Control", "no-cache"},
          {"X-Gtadoc-Rows", std::to_string(rows)},
          {"Server-Timing", timing}},
         static_cast<long long>(text.size()), job->keep_alive && !job->http10);
  w.raw(text.data(), text.size());
  w.end();
  if (state->cache.admits(text.size())) {
    auto copy = std::make_shared<CachedResult>();
    copy->rows = rows;
    copy->body.resize(text.size());
    std::memcpy(copy->body.data(), text.data(), text.size());
    state->cache.put(job->key, std::move(copy));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - job->received).count();
  state->metrics.request("/v1/search", 200);
  state->metrics.query("search", 200, seconds, false);
  state->metrics.response_spilled(job->pipe->spilled());
  spdlog::info("search {}: {} bytes in {:.3f}s (search {:.3f}s)", job->key, text.size(), seconds,
               searched);
}

/// Every rank: runs one broadcast query; rank 0 (with `job`) answers it.
void execute(Comm& comm, ArchiveSession& session, ResidentSearchIndex& index,
             const std::vector<uint8_t>& msg, QueryJob* job, ServiceState* state) {
  if (is_search(msg)) return execute_search(comm, session, index, msg, job, state);
  const QuerySpec spec = decode(msg);
  QueryTimings t;
  std::unique_ptr<QueryResult> result;
  try {
    ResidentPointLookup lookup(index);
    result = run_query(comm, session, spec, t, &lookup);
  } catch (const CollectiveError& e) {  // every rank knows; rank 0 answers
    if (job != nullptr) reply_error(*job, *state, status_of(e), e.what());
    return;
  }
  if (job == nullptr) {
    stream_query_result(
        comm, *result, kStreamChunk, [](const char*, size_t) { return true; }, session.threads());
    return;
  }
  ResponseWriter w(*job->pipe, !job->http10);
  HeaderList headers = {{"Content-Type", content_type(spec.format)},
                        {"ETag", job->etag},
                        {"Cache-Control", "no-cache"},
                        {"X-Gtadoc-Rows", std::to_string(result->rows.total_rows)},
                        {"Server-Timing", server_timing(t)}};
  if (!job->http10) headers.emplace_back("Trailer", "Server-Timing");
  w.head(200, headers, -1, job->keep_alive && !job->http10);
  Timer render_timer;
  auto copy = std::make_shared<CachedResult>();
  copy->rows = result->rows.total_rows;
  bool keep_copy = false;
  uint64_t copied = 0;
  stream_query_result(
      comm, *result, kStreamChunk,
      [&](const char* data, size_t size) {
        keep_copy = keep_copy && copied + size <= copy->body.size();
        if (keep_copy) {
          std::memcpy(copy->body.data() + copied, data, size);
          copied += size;
        }
        // The cache's copy is completed even when the client is gone.
        const bool sent = w.chunk(data, size);
        return sent || keep_copy;
      },
      session.threads(),
      [&](uint64_t total) {  // the cache's copy, allocated once
        keep_copy = state->cache.admits(total);
        if (keep_copy) copy->body.resize(total);
      });
  keep_copy = keep_copy && copied == copy->body.size();
  char render[64];
  std::snprintf(render, sizeof render, "render;dur=%.3f", render_timer.seconds() * 1e3);
  w.finish({{"Server-Timing", render}});
  const bool rendered = w.end();
  const double seconds = std::chrono::duration<double>(Clock::now() - job->received).count();
  if (keep_copy) state->cache.put(job->key, std::move(copy));
  state->metrics.request("/v1/query", 200);
  state->metrics.query(task_name(spec.q.task), 200, seconds, false);
  state->metrics.response_spilled(job->pipe->spilled());
  spdlog::info("query {}: {} rows in {:.3f}s (traversal {:.3f}s){}", job->key,
               result->rows.total_rows, seconds, t.traversal,
               rendered ? "" : " - the client went away or was too slow");
}

/// Queries whose first run builds what later ones reuse (the host's buffers for rows, the GPU
/// engine's per-shard sequence tables, the sequence order): run once each before the service says
/// it is ready, in this order. The word count comes last: the first word count after a sequence
/// count collected its records in 18.9 ms against 2.0 ms (8.6 GB, one H100). They must be valid
/// queries: every rank runs them as it runs a client's, which rank 0 has checked before sending
/// (the service tests start it every time).
constexpr const char* kWarmUpQueries[] = {
    R"({"task":"sequence-count","top":100})",
    R"({"task":"word-count","top":100})",
};

/// Whether a failure-test hook is set to strike (its value is not "none"): the hooks aim at the
/// clients' queries, so no warm-up query runs then.
bool fault_hook_set() {
  for (const std::optional<std::string>& v :
       {settings::text_if_set("GTADOC_FAULT_INJECT"), settings::text_if_set("GTADOC_FAULT_PAUSE")})
    if (v && *v != "none") return true;
  return false;
}

/// Whether the service warms up (GTADOC_SERVE_WARM_UP): `auto` for the GPU engine only. The CPU
/// engine's warm-up sequence count costs seconds per GB (25.5 s on 1 GB on two cores): it would
/// hold the ready point back far longer than the 1.6-2.4x of a first query it saves.
bool warm_up_wanted(const ArchiveSession& session) {
  const std::string_view v = settings::word("GTADOC_SERVE_WARM_UP");
  if (v == "0" || fault_hook_set()) return false;
  return v == "1" || session.engine().name() != "cpu";
}

/// Rank 0, before it says it is ready: runs kWarmUpQueries as the other ranks' loop runs a
/// client's query (the broadcast, the query, the memory update; answers are dropped, no query is
/// counted). No client's query can wait behind them: the server accepts none yet.
void warm_up_tasks(Comm& comm, ArchiveSession& session, ResidentSearchIndex& index,
                   ServiceState& state) {
  if (!warm_up_wanted(session)) return;
  Timer timer;
  for (const char* body : kWarmUpQueries) {
    std::vector<uint8_t> msg = encode(false, OutputFormat::kTsv, body);
    comm.broadcast_idle(msg);
    execute(comm, session, index, msg, nullptr, nullptr);
    update_memory(comm, session, &index, &state.metrics);  // collective, as after every query
  }
  spdlog::info("warm-up: {} queries in {:.2f}s", std::size(kWarmUpQueries), timer.seconds());
}

}  // namespace

void serve(Comm& comm, const ServeOptions& o) {
  install_crash_report();
  // Queries allocate the same large sizes again and again: freed blocks are kept for the next
  // (common/big_alloc.h).
  big_block::set_capacity(big_block::resident_capacity());
  Listen listen;
  std::string token;
  // What one response may hold in memory while its client reads it (four times this over all
  // responses); the rest waits in a temporary file (rank 0's).
  uint64_t response_memory = 0;
  std::string spill_dir;
  run_collectively(comm, [&] {
    if (o.queue == 0) throw UsageError("--queue must be at least 1");
    if (!(o.read_timeout_s > 0) || !(o.query_timeout_s > 0) || !(o.header_timeout_s > 0) ||
        !(o.write_timeout_s > 0))
      throw UsageError(
          "--read-timeout, --header-timeout, --write-timeout and --query-timeout must be positive");
    for (double s : {o.read_timeout_s, o.query_timeout_s, o.header_timeout_s, o.write_timeout_s})
      if (s > kMaxTimeoutSeconds)
        throw UsageError("timeouts may be at most " + std::to_string(kMaxTimeoutSeconds) +
                         " seconds");
    if (comm.rank() != 0) return;
    response_memory = settings::bytes("GTADOC_SERVE_RESPONSE_MEMORY");
    const char* tmp = std::getenv("TMPDIR");
    spill_dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    listen = parse_listen(o.listen);
    if (!o.token_file.empty()) token = read_token(o.token_file);
    if (!listen.address.is_loopback() && token.empty())
      throw UsageError("--listen " + o.listen +
                       " is not a loopback address: give --token-file FILE (clients then send "
                       "'Authorization: Bearer <token>')");
  });
  set_gpu_memory_limit(o.gpu_memory_limit);
  SessionOptions so;
  so.archive = o.archive;
  so.engine = o.engine;
  so.threads = o.threads;
  so.resident = true;
  QueryTimings opened;
  Timer timer;
  std::unique_ptr<ArchiveSession> session = ArchiveSession::open(comm, so, &opened);
  // What a first query builds and later ones reuse (the GPU engine's merged DAG of the resident
  // shards: 3.7 s against 18 ms for the next word-count on 8 GB, one H200) is built before the
  // service says it is ready, so the first client's query costs what the later ones do.
  const double warmed = session->warm_up();
  spdlog::debug("resident shards prepared for queries in {:.2f}s", warmed);
  // What a first query of another task would build (the CPU engine's full layouts): built from
  // now on beside the service, at background priority, shard by shard (not with
  // GTADOC_SERVE_WARM_UP=0, which leaves everything to the first queries).
  if (settings::word("GTADOC_SERVE_WARM_UP") != "0") session->prepare_in_background();

  std::unique_ptr<ServiceState> state;
  // Before the server: its documents' pool, joined when it stops, reads from the store.
  std::unique_ptr<DocumentStore> documents;
  std::unique_ptr<HttpServer> server;
  run_collectively(comm, [&] {
    if (comm.rank() != 0) return;
    state =
        std::make_unique<ServiceState>(o.queue, o.cache_bytes, o.max_connections, response_memory);
    state->spill_dir = spill_dir;
    state->token = token;
    state->manifest = &session->manifest();
    documents =
        std::make_unique<DocumentStore>(session->path(), session->manifest(), o.doc_cache_bytes);
    state->documents = documents.get();
    state->max_body = o.max_body;
    state->read_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.read_timeout_s * 1000));
    state->query_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(o.query_timeout_s * 1000));
    state->header_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(o.header_timeout_s * 1000));
    state->write_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(o.write_timeout_s * 1000));
    state->archive_json = archive_info(o.archive, session->manifest(), true);
    char id[24];
    std::snprintf(id, sizeof id, "%016llx",
                  static_cast<unsigned long long>(session->manifest().archive_id));
    state->etag_prefix = id;
    state->metrics.set_queue_capacity(static_cast<int64_t>(o.queue));
    server = std::make_unique<HttpServer>(*state, listen.address, listen.port);
  });
  // Phrase search's indexes of the resident grammars, built while the service already answers.
  ResidentSearchIndex search_index(session->resident_grammars(), session->threads());
  update_memory(comm, *session, &search_index, state ? &state->metrics : nullptr);

  if (comm.rank() != 0) {
    // Stop requests reach every rank; rank 0 decides when the service ends and tells the others.
    if (!comm.is_in_process()) {  // threads of rank 0's process must leave its handlers alone
      std::signal(SIGTERM, SIG_IGN);
      std::signal(SIGINT, SIG_IGN);
    }
    for (;;) {
      std::vector<uint8_t> msg;
      comm.broadcast_idle(msg);
      if (msg.empty()) break;
      execute(comm, *session, search_index, msg, nullptr, nullptr);
      update_memory(comm, *session, &search_index, nullptr);
    }
    return;
  }

  warm_up_tasks(comm, *session, search_index, *state);
  server->start(o.http_threads, [&] {
    spdlog::info("stop requested: answering queued queries, then exiting");
    state->draining = true;
    server->stop_accepting();
    state->queue.close();
  });
  spdlog::info("serving {} ({} shards, {} documents) on {} ranks, engine {}, ready in {:.2f}s",
               o.archive, session->manifest().shards.size(), session->manifest().docs.size(),
               comm.size(), session->engine().name(), timer.seconds());
  std::fprintf(stderr, "gtadoc serve: listening on http://%s:%u\n", listen.shown.c_str(),
               static_cast<unsigned>(server->port()));
  std::fflush(stderr);

  for (;;) {
    std::shared_ptr<QueryJob> job = state->queue.pop();
    if (!job) break;
    state->metrics.set_queue_depth(static_cast<int64_t>(state->queue.depth()));
    if (Clock::now() >= job->deadline) {
      reply_error(*job, *state, 503, "the query waited longer than the time limit; retry later",
                  {{"Retry-After", "1"}});
      continue;
    }
    // Identical queries queued behind one that just ran: the cache has their answer now.
    if (!job->fresh) {
      if (auto cached = state->cache.get(job->key)) {
        ResponseWriter w(*job->pipe, !job->http10);
        w.head(200,
               {{"Content-Type", content_type(job->spec.format)},
                {"ETag", job->etag},
                {"Cache-Control", "no-cache"},
                {"X-Gtadoc-Rows", std::to_string(cached->rows)}},
               static_cast<long long>(cached->body.size()), job->keep_alive && !job->http10);
        w.raw(cached->body.data(), cached->body.size());
        w.end();
        state->metrics.request(job->endpoint(), 200);
        state->metrics.query(job->task(), 200,
                             std::chrono::duration<double>(Clock::now() - job->received).count(),
                             true);
        state->metrics.response_spilled(job->pipe->spilled());
        continue;
      }
    }
    state->metrics.set_in_flight(1);
    std::vector<uint8_t> msg = encode(job->is_search, job->spec.format, job->body);
    comm.broadcast_idle(msg);
    execute(comm, *session, search_index, msg, job.get(), state.get());
    update_memory(comm, *session, &search_index, &state->metrics);
    state->metrics.set_in_flight(0);
  }
  std::vector<uint8_t> stop;
  comm.broadcast_idle(stop);
  // Every response is rendered; the sessions still write them to their clients, each within
  // its deadline (--query-timeout) or cut sooner by --write-timeout.
  const Clock::time_point limit = Clock::now() + state->query_timeout + std::chrono::seconds(1);
  while (state->responses_writing > 0 && Clock::now() < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (int i = 0; i < 50 && state->connections > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  server->stop();
  spdlog::info("stopped");
}

}  // namespace gtadoc
