// libFuzzer target for what `gtadoc serve` does with untrusted bytes before anything runs:
//  - the input as a request body: the JSON budget of coordinator/serve/json_budget.h (a refusal
//    is one line), then for a body within it query_from_json (a spec or a UsageError, nothing
//    else), and for an accepted spec query_key plus the invariants validate_query promises;
//  - the input as raw HTTP: Beast's request_parser with the limits of
//    coordinator/serve/http_server.cpp (16 KiB of headers, a body limit), fed in two pieces
//    (split where the first input byte says); the framing rules and the bearer check of
//    coordinator/serve/http_checks.h on its header (a request they accept has at most one
//    Content-Length and no Transfer-Encoding but chunked, never both), the byte range of its
//    Range header and the percent-decoding of its target (GET /v1/docs), then the body of a
//    complete request through the same query parsing.
// Built with clang++ -fsanitize=fuzzer,address,undefined (tests/CMakeLists.txt, only when clang
// can); ctest fuzz.query_request runs it for a bounded time on tests/fuzz/corpus/.
#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "coordinator/pipeline/query_spec.h"
#include "coordinator/serve/http_checks.h"
#include "coordinator/serve/json_budget.h"

namespace {

namespace http = boost::beast::http;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void fuzz_body(std::string_view body) {
  const std::string over = gtadoc::json_over_budget(body, gtadoc::max_json_values(64 * 1024));
  if (!over.empty()) {
    check(over.find('\n') == std::string::npos);
    return;  // the service answers 400 without parsing
  }
  try {  // the body as a search: a validated search or a one-line UsageError
    bool format_given = false;
    const gtadoc::SearchSpec search = gtadoc::search_from_json(body, &format_given);
    check(!search.phrases.empty());
    check(!gtadoc::search_key(search).empty());
  } catch (const gtadoc::UsageError& e) {
    check(std::string_view(e.what()).find('\n') == std::string_view::npos);  // one line
  }
  gtadoc::QuerySpec spec;
  try {
    spec = gtadoc::query_from_json(body);
  } catch (const gtadoc::UsageError& e) {
    check(std::string_view(e.what()).find('\n') == std::string_view::npos);  // one line
    return;
  }
  // What validate_query guarantees for an accepted query.
  check(spec.q.n >= 2 && spec.q.n <= 8);
  check(!spec.q.per_doc || spec.q.task == gtadoc::Task::kSequenceCount);
  check(spec.docs_given || (spec.docs.empty() && spec.doc_ids.empty()));
  check(spec.words_given || spec.words.empty());
  for (const std::string& d : spec.docs) check(!d.empty());
  const std::string key = gtadoc::query_key(spec);
  check(!key.empty() && key.front() == '{' && key.back() == '}');
  // The key does not depend on the format being given in the body or negotiated later.
  gtadoc::QuerySpec again = spec;
  again.format_given = !again.format_given;
  check(gtadoc::query_key(again) == key);
}

void fuzz_http(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const size_t split = data[0] % (size + 1);
  const uint8_t* p = data + 1;
  const size_t n = size - 1;
  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(64 * 1024);
  parser.eager(true);
  boost::beast::error_code ec;
  size_t used = 0;
  // Two deliveries, as a socket would give them; each put() consumes what it can.
  for (size_t end : {std::min(split, n), n}) {
    while (!ec && !parser.is_done() && used < end) {
      // As http::read_some does: the bytes put() used are consumed even with need_more.
      const size_t k = parser.put(boost::asio::buffer(p + used, end - used), ec);
      used += k;
      if (ec == http::error::need_more) {
        ec = {};
        break;
      }
      if (k == 0) break;
    }
    if (ec) return;
  }
  if (parser.is_header_done()) {
    const std::string framing = gtadoc::framing_error(parser.get(), parser.get().version());
    if (!framing.empty()) return;  // a 400, and the connection closes
    size_t lengths = 0, encodings = 0;
    for (const auto& f : parser.get()) {
      lengths += f.name() == http::field::content_length;
      encodings += f.name() == http::field::transfer_encoding;
    }
    check(lengths <= 1 && encodings <= 1 && lengths + encodings <= 1);
    check(encodings == 0 || parser.chunked());
    const auto auth = parser.get()[http::field::authorization];
    (void)gtadoc::bearer_matches(std::string_view(auth.data(), auth.size()), "token");
    // GET /v1/docs: the one byte range a Range header asks of documents of a few sizes lies in
    // the document, and a decoded name is never longer than the path it came from.
    const auto range = parser.get()[http::field::range];
    for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{100}, ~uint64_t{0}}) {
      const gtadoc::ByteRange r =
          gtadoc::parse_byte_range(std::string_view(range.data(), range.size()), size);
      if (r.kind == gtadoc::ByteRange::kPart) check(r.begin < r.end && r.end <= size);
      if (r.kind == gtadoc::ByteRange::kWhole) check(r.begin == 0 && r.end == size);
    }
    const auto target = parser.get().target();
    const std::optional<std::string> name =
        gtadoc::percent_decode(std::string_view(target.data(), target.size()));
    check(!name || name->size() <= target.size());
  }
  if (!parser.is_done()) {
    if (!parser.got_some()) return;  // nothing parsed yet (async_read reports end_of_stream)
    parser.put_eof(ec);              // the peer closed
    if (ec || !parser.is_done()) return;
  }
  http::request<http::string_body> req = parser.release();
  check(req.body().size() <= 64 * 1024);
  (void)req.target();
  (void)req.keep_alive();
  (void)req[http::field::authorization];
  fuzz_body(req.body());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz_body(std::string_view(reinterpret_cast<const char*>(data), size));
  fuzz_http(data, size);
  return 0;
}
