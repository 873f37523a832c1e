// Load generator for `gtadoc serve` (benchmarks, not tests): C connections with keep-alive, each
// sending its share of N requests (POST /v1/query with one body) one after another, timing each
// from the first request byte written to the last response byte read. Prints one JSON object:
// latency percentiles (ms), status counts, response bytes and the Server-Timing of the last
// response. Bodies stream through a fixed buffer, so gigabyte results cost no memory.
//
//   serve_load --port 8080 --body '{"task":"word-count","top":100}' --connections 64 --requests 640
//   serve_load --port 8080 --body-file q.json --requests 1 --save first.tsv
#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

struct Shared {
  std::mutex mu;
  std::vector<double> ms;
  std::map<int, uint64_t> status;
  uint64_t errors = 0, bytes = 0;
  std::string server_timing, error;
};

void client(const std::string& host, const std::string& port, const std::string& body,
            const std::string& token, const std::string& accept, bool no_cache, int requests,
            const std::string& save, Shared& out) {
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  tcp::socket socket(ioc);
  // Beast reads into the free capacity of the buffer (at least 512 bytes): with the default
  // capacity a large answer took one recv per ~512 bytes (0.2 GB/s on loopback, the client's
  // limit, not the server's); 1 MiB of capacity makes recvs of up to 1 MiB.
  beast::flat_buffer buffer;
  buffer.reserve(1 << 20);
  bool connected = false;
  std::vector<char> chunk(1 << 20);
  for (int i = 0; i < requests; ++i) {
    beast::error_code ec;
    if (!connected) {
      asio::connect(socket, resolver.resolve(host, port), ec);
      if (ec) {
        std::lock_guard lock(out.mu);
        ++out.errors;
        out.error = "connect: " + ec.message();
        continue;
      }
      connected = true;
      buffer.clear();
    }
    http::request<http::string_body> req{http::verb::post, "/v1/query", 11};
    req.set(http::field::host, host);
    req.set(http::field::content_type, "application/json");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    if (!accept.empty()) req.set(http::field::accept, accept);
    if (no_cache) req.set(http::field::cache_control, "no-cache");
    req.body() = body;
    req.keep_alive(true);
    req.prepare_payload();
    const auto t0 = std::chrono::steady_clock::now();
    http::write(socket, req, ec);
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (!ec) http::read_header(socket, buffer, parser, ec);
    uint64_t got = 0;
    std::ofstream file;
    if (!save.empty() && i == 0) file.open(save, std::ios::binary | std::ios::trunc);
    while (!ec && !parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      http::read(socket, buffer, parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      const size_t n = chunk.size() - parser.get().body().size;
      got += n;
      if (file.is_open()) file.write(chunk.data(), static_cast<std::streamsize>(n));
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard lock(out.mu);
    if (ec) {
      ++out.errors;
      out.error = ec.message();
      socket.close(ec);
      connected = false;
      continue;
    }
    const int status = parser.get().result_int();
    ++out.status[status];
    if (status == 200) out.ms.push_back(ms);
    out.bytes = std::max(out.bytes, got);
    std::string timing;  // the header's and the trailer's (rendering) fields
    for (auto it = parser.get().find("Server-Timing");
         it != parser.get().end() && beast::iequals(it->name_string(), "Server-Timing"); ++it)
      timing += (timing.empty() ? "" : ", ") + std::string(it->value());
    if (!timing.empty()) out.server_timing = timing;
    if (!parser.get().keep_alive()) {
      socket.close(ec);
      connected = false;
    }
  }
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Load generator for gtadoc serve"};
  std::string host = "127.0.0.1", port = "8080", body, body_file, token_file, accept, save;
  int connections = 1, requests = 10;
  bool no_cache = false;
  app.add_flag("--no-cache", no_cache,
               "send Cache-Control: no-cache (a fresh answer, not the cache's)");
  app.add_option("--host", host);
  app.add_option("--port", port)->required();
  app.add_option("--body", body, "request body (JSON)");
  app.add_option("--body-file", body_file, "file holding the request body");
  app.add_option("--token-file", token_file);
  app.add_option("--accept", accept, "Accept header");
  app.add_option("--connections", connections)->check(CLI::PositiveNumber);
  app.add_option("--requests", requests, "total requests")->check(CLI::PositiveNumber);
  app.add_option("--save", save, "write the first response body here");
  CLI11_PARSE(app, argc, argv);
  if (!body_file.empty()) {
    std::ifstream in(body_file);
    std::stringstream ss;
    ss << in.rdbuf();
    body = ss.str();
  }
  std::string token;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::getline(in, token);
  }
  Shared out;
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < connections; ++c) {
    const int mine = requests / connections + (c < requests % connections ? 1 : 0);
    threads.emplace_back(client, host, port, body, token, accept, no_cache, mine,
                         c == 0 ? save : "", std::ref(out));
  }
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::ordered_json j;
  j["requests"] = requests;
  j["connections"] = connections;
  j["ok"] = out.ms.size();
  j["errors"] = out.errors;
  nlohmann::ordered_json st;
  for (auto& [k, v] : out.status) st[std::to_string(k)] = v;
  j["status"] = st;
  j["p50_ms"] = percentile(out.ms, 50);
  j["p90_ms"] = percentile(out.ms, 90);
  j["p99_ms"] = percentile(out.ms, 99);
  j["min_ms"] = percentile(out.ms, 0);
  j["max_ms"] = percentile(out.ms, 100);
  j["wall_s"] = wall;
  j["response_bytes"] = out.bytes;
  j["server_timing"] = out.server_timing;
  if (!out.error.empty()) j["last_error"] = out.error;
  std::cout << j.dump() << std::endl;
  return out.errors > 0 ? 1 : 0;
}
