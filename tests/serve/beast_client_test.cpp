// `gtadoc serve` from a C++ client (Boost.Beast, synchronous): the service runs as a subprocess
// (binary from the GTADOC_BINARY environment variable, sample corpus from GTADOC_SOURCE_DIR);
// every task in TSV equals `gtadoc run`'s output (read through popen), several requests share
// one keep-alive connection, and a chunked result of more than 1 MB arrives whole.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string quote(const std::string& s) {
  return "'" + s + "'";
}

/// Standard output of a shell command (its exit status must be 0).
std::string capture(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe.get())) > 0) out.append(buf, n);
  const int status = pclose(pipe.release());
  EXPECT_EQ(status, 0) << command;
  return out;
}

struct Service {
  std::string bin, source;
  fs::path dir, archive;
  pid_t pid = -1;
  uint16_t port = 0;
};
Service* g = nullptr;

class BeastClient : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    g = new Service;
    g->bin = env_or("GTADOC_BINARY", "");
    g->source = env_or("GTADOC_SOURCE_DIR", "");
    ASSERT_FALSE(g->bin.empty()) << "set GTADOC_BINARY";
    ASSERT_FALSE(g->source.empty()) << "set GTADOC_SOURCE_DIR";
    char tmpl[] = "/tmp/gtadoc-beast-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    g->dir = tmpl;
    // 60 documents of the bundled sample, 3 shards.
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(fs::path(g->source) / "data/sample"))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    ASSERT_GE(files.size(), 60u);
    const fs::path in = g->dir / "in", sample = fs::path(g->source) / "data/sample";
    for (size_t i = 0; i < 60; ++i) {
      const fs::path to = in / fs::relative(files[i], sample);
      fs::create_directories(to.parent_path());
      fs::copy_file(files[i], to);
    }
    g->archive = g->dir / "a.gtd";
    ASSERT_EQ(std::system((quote(g->bin) + " compress " + quote(in.string()) + " -o " +
                           quote(g->archive.string()) + " --shards 3 2>/dev/null")
                              .c_str()),
              0);
    // The service, its standard error into a file we watch for the listening line.
    const fs::path log = g->dir / "serve.log";
    g->pid = fork();
    ASSERT_GE(g->pid, 0);
    if (g->pid == 0) {
      FILE* f = std::fopen(log.c_str(), "w");
      if (f == nullptr) _exit(127);
      dup2(fileno(f), 2);
      execl(g->bin.c_str(), g->bin.c_str(), "serve", g->archive.c_str(), "--listen", "127.0.0.1:0",
            "--engine", "cpu", "--threads", "2", static_cast<char*>(nullptr));
      _exit(127);
    }
    const std::string prefix = "gtadoc serve: listening on http://127.0.0.1:";
    for (int i = 0; i < 600 && g->port == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const std::string text = read_all(log);
      const size_t at = text.find(prefix);
      if (at != std::string::npos && text.find('\n', at) != std::string::npos)
        g->port = static_cast<uint16_t>(std::stoi(text.substr(at + prefix.size())));
      int status = 0;
      ASSERT_EQ(waitpid(g->pid, &status, WNOHANG), 0) << "the service exited: " << text;
    }
    ASSERT_NE(g->port, 0) << "no listening line: " << read_all(log);
  }

  static void TearDownTestSuite() {
    if (g == nullptr) return;
    if (g->pid > 0) {
      kill(g->pid, SIGTERM);
      int status = 0;
      pid_t r = 0;
      for (int i = 0; i < 300 && (r = waitpid(g->pid, &status, WNOHANG)) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (r == 0) {
        kill(g->pid, SIGKILL);
        waitpid(g->pid, &status, 0);
        ADD_FAILURE() << "the service did not stop within 30 s of SIGTERM";
      } else {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
      }
    }
    std::error_code ec;
    fs::remove_all(g->dir, ec);
    delete g;
    g = nullptr;
  }

 protected:
  /// `gtadoc run` on the archive (CPU engine), its standard output.
  static std::string run(const std::string& args) {
    return capture(quote(g->bin) + " run " + quote(g->archive.string()) + " " + args +
                   " --engine cpu");
  }

  /// A synchronous keep-alive connection.
  struct Connection {
    asio::io_context ioc;
    beast::tcp_stream stream{ioc};
    beast::flat_buffer buffer;
    Connection() {
      tcp::resolver resolver(ioc);
      stream.connect(resolver.resolve("127.0.0.1", std::to_string(g->port)));
    }
    ~Connection() {
      beast::error_code ec;
      stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    }
    http::response<http::string_body> request(http::verb verb, const std::string& target,
                                              const std::string& body = "") {
      http::request<http::string_body> req{verb, target, 11};
      req.set(http::field::host, "127.0.0.1");
      req.set(http::field::user_agent, "gtadoc-beast-test");
      if (verb == http::verb::post) req.set(http::field::content_type, "application/json");
      req.keep_alive(true);
      req.body() = body;
      req.prepare_payload();
      stream.expires_after(std::chrono::seconds(60));
      http::write(stream, req);
      http::response_parser<http::string_body> parser;
      parser.body_limit(boost::none);
      http::read(stream, buffer, parser);
      return parser.release();
    }
    http::response<http::string_body> query(const std::string& body) {
      return request(http::verb::post, "/v1/query", body);
    }
  };
};

TEST_F(BeastClient, EveryTaskInTsvEqualsGtadocRun) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"task": "word-count", "format": "tsv"})", "word-count"},
      {R"({"task": "word-count", "top": 25, "lowercase": true, "format": "tsv"})",
       "word-count --top 25 --lowercase"},
      {R"({"task": "sort", "alnum": true, "format": "tsv"})", "sort --alnum"},
      {R"({"task": "inverted-index", "format": "tsv"})", "inverted-index"},
      {R"({"task": "inverted-index", "ids": true, "format": "tsv"})", "inverted-index --ids"},
      {R"({"task": "term-vector", "format": "tsv"})", "term-vector"},
      {R"({"task": "term-vector", "top": 0, "min-count": 2, "format": "tsv"})",
       "term-vector --top 0 --min-count 2"},
      {R"({"task": "sequence-count", "format": "tsv"})", "sequence-count"},
      {R"({"task": "sequence-count", "n": 4, "per_doc": true, "top": 3, "format": "tsv"})",
       "sequence-count --n 4 --per-doc --top 3"},
      {R"({"task": "ranked-inverted-index", "format": "tsv"})", "ranked-inverted-index"},
      {R"({"task": "ranked-inverted-index", "n": 2, "lowercase": true, "format": "tsv"})",
       "ranked-inverted-index --n 2 --lowercase"},
  };
  for (const auto& [body, args] : cases) {
    Connection c;  // a fresh connection per query
    const auto res = c.query(body);
    ASSERT_EQ(res.result_int(), 200) << body << ": " << res.body();
    EXPECT_NE(std::string(res[http::field::content_type]).find("text/tab-separated-values"),
              std::string::npos)
        << body;
    const std::string want = run(args);
    EXPECT_EQ(res.body().size(), want.size()) << args;
    EXPECT_TRUE(res.body() == want) << "service and gtadoc run differ: " << args;
    const std::string rows(res["X-Gtadoc-Rows"]);
    EXPECT_EQ(rows, std::to_string(std::count(want.begin(), want.end(), '\n'))) << args;
  }
}

TEST_F(BeastClient, KeepAliveServesSeveralRequestsOnOneConnection) {
  Connection c;
  const std::string wc = run("word-count --top 7");
  const std::string sorted = run("sort --lowercase");
  const std::string info =
      capture(quote(g->bin) + " info " + quote(g->archive.string()) + " --json");
  for (int round = 0; round < 3; ++round) {
    auto a = c.query(R"({"task": "word-count", "top": 7, "format": "tsv"})");
    ASSERT_EQ(a.result_int(), 200);
    EXPECT_TRUE(a.keep_alive()) << "the service closes a keep-alive connection";
    EXPECT_EQ(a.body(), wc);
    auto h = c.request(http::verb::get, "/healthz");
    ASSERT_EQ(h.result_int(), 200);
    EXPECT_EQ(h.body(), "ok\n");
    auto s = c.query(R"({"task": "sort", "lowercase": true, "format": "tsv"})");
    ASSERT_EQ(s.result_int(), 200);
    EXPECT_EQ(s.body(), sorted);
    // A bad request is answered on the same connection, which stays usable.
    auto bad = c.query(R"({"task": "word-count", "top": -1})");
    ASSERT_EQ(bad.result_int(), 400);
    EXPECT_NE(bad.body().find("\"status\":400"), std::string::npos) << bad.body();
    EXPECT_TRUE(bad.keep_alive());
    auto arch = c.request(http::verb::get, "/v1/archive");
    ASSERT_EQ(arch.result_int(), 200);
    EXPECT_EQ(arch.body(), info);
    auto m = c.request(http::verb::get, "/metrics");
    ASSERT_EQ(m.result_int(), 200);
    EXPECT_NE(m.body().find("gtadoc_queries_total{task=\"word-count\",code=\"200\"}"),
              std::string::npos);
  }
  // If-None-Match on the same connection.
  auto a = c.query(R"({"task": "word-count", "top": 7, "format": "tsv"})");
  ASSERT_EQ(a.result_int(), 200);
  const std::string etag(a[http::field::etag]);
  ASSERT_FALSE(etag.empty());
  http::request<http::string_body> req{http::verb::post, "/v1/query", 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::if_none_match, etag);
  req.body() = R"({"task": "word-count", "top": 7, "format": "tsv"})";
  req.keep_alive(true);
  req.prepare_payload();
  http::write(c.stream, req);
  http::response_parser<http::string_body> p;
  p.skip(false);
  http::read(c.stream, c.buffer, p);
  EXPECT_EQ(p.get().result_int(), 304);
  EXPECT_TRUE(p.get().body().empty());
}

TEST_F(BeastClient, ChunkedResultOverOneMegabyteArrivesWhole) {
  for (const auto& [body, args] : std::vector<std::pair<std::string, std::string>>{
           {R"({"task": "ranked-inverted-index", "format": "tsv"})", "ranked-inverted-index"},
           {R"({"task": "inverted-index", "format": "json"})", "inverted-index --format json"},
           {R"({"task": "term-vector", "top": 0})", "term-vector --top 0 --format json"}}) {
    Connection c;
    // A fresh run (not the cache) so that the answer is streamed.
    http::request<http::string_body> req{http::verb::post, "/v1/query", 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::cache_control, "no-cache");
    req.body() = body;
    req.keep_alive(true);
    req.prepare_payload();
    http::write(c.stream, req);
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);
    http::read(c.stream, c.buffer, parser);
    const auto& res = parser.get();
    ASSERT_EQ(res.result_int(), 200) << res.body();
    EXPECT_TRUE(parser.chunked()) << "a fresh result is not streamed chunked: " << args;
    const std::string want = run(args);
    ASSERT_GT(want.size(), size_t{1} << 20) << "the test needs a result over 1 MB: " << args;
    EXPECT_EQ(res.body().size(), want.size()) << args;
    EXPECT_TRUE(res.body() == want) << "chunked result differs from gtadoc run: " << args;
    // The connection is still good after a large streamed body.
    auto h = c.request(http::verb::get, "/healthz");
    EXPECT_EQ(h.result_int(), 200);
  }
}

}  // namespace
