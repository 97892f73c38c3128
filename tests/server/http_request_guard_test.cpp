// The HTTP request guard on requests built in memory: each rule's decision, and the order in
// which they are asked. tests/server/http_test.cpp sends the same attacks over a socket.
#include "server/transport/http_request_guard.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <string>

#include <nlohmann/json.hpp>

#include "server/mcp/mcp_server.h"

namespace stickler {
namespace {

using nlohmann::json;

const std::string kToken = "s3cret-token-of-some-length";

// What a well-behaved client sends to /mcp: the guard lets it through.
httplib::Request cleanPost(const std::string& path = "/mcp") {
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.headers.emplace("Host", "localhost:8765");
  request.headers.emplace("Content-Type", "application/json");
  request.headers.emplace("Content-Length", "2");
  request.headers.emplace("Accept", "application/json, text/event-stream");
  return request;
}

HttpOptions withToken() {
  HttpOptions options;
  options.bearer_token = kToken;
  return options;
}

int statusOf(const std::optional<GuardAnswer>& answer) {
  return answer ? answer->status : 0;
}

// Fails the test unless `answer` is a JSON-RPC refusal with this status and message.
void expectRefusal(const std::optional<GuardAnswer>& answer, int status, const std::string& message,
                   bool closes) {
  ASSERT_TRUE(answer.has_value()) << "allowed; expected " << status << " " << message;
  EXPECT_EQ(answer->status, status);
  EXPECT_EQ(answer->form, GuardAnswer::Form::kRpcError);
  EXPECT_EQ(answer->message, message);
  EXPECT_EQ(answer->close_connection, closes);
}

TEST(HttpRequestGuard, ACleanRequestIsAllowed) {
  const HttpRequestGuard guard{HttpOptions{}};
  EXPECT_FALSE(guard.beforeRouting(cleanPost()).has_value());
  auto tabbed = cleanPost();
  tabbed.headers.emplace("User-Agent", "a\tclient");  // a tab is no control character here
  EXPECT_FALSE(guard.beforeRouting(tabbed).has_value());
  auto chunked = cleanPost();  // a chunked body alone is unambiguous
  chunked.headers.erase("Content-Length");
  chunked.headers.emplace("Transfer-Encoding", "chunked");
  EXPECT_FALSE(guard.beforeRouting(chunked).has_value());
  EXPECT_FALSE(HttpRequestGuard::protocolVersion(cleanPost()).has_value());
}

TEST(HttpRequestGuard, EachFramingHeaderMayComeOnlyOnce) {
  const HttpRequestGuard guard{HttpOptions{}};
  auto twice = cleanPost();
  twice.headers.emplace("Content-Length", "2");  // the same value twice is refused too
  expectRefusal(guard.beforeRouting(twice), 400, "more than one Content-Length header", true);
  for (const char* name :
       {"Host", "Origin", "Authorization", "Mcp-Session-Id", "MCP-Protocol-Version"}) {
    auto request = cleanPost();
    request.headers.emplace(name, "a");
    request.headers.emplace(name, "b");
    expectRefusal(guard.beforeRouting(request), 400,
                  std::string("more than one ") + name + " header", true);
  }
}

TEST(HttpRequestGuard, AControlCharacterInAHeaderIsRefused) {
  const HttpRequestGuard guard{HttpOptions{}};
  // A reader that stops at the NUL sees an allowed host.
  auto nul = cleanPost();
  nul.headers.erase("Host");
  nul.headers.emplace("Host", std::string("localhost") + '\0' + ".evil.example");
  expectRefusal(guard.beforeRouting(nul), 400, "header Host holds a control character", true);
  auto del = cleanPost();
  del.headers.emplace("X-Note", "a\x7f");
  expectRefusal(guard.beforeRouting(del), 400, "header X-Note holds a control character", true);
}

TEST(HttpRequestGuard, AByteBeyondAsciiInAHeaderItReadsIsRefused) {
  const HttpRequestGuard guard{withToken()};
  for (const char* name : {"Host", "Origin", "Authorization", "MCP-Protocol-Version"}) {
    auto request = cleanPost();
    request.headers.erase(name);
    request.headers.emplace(name, "local\xffhost");
    expectRefusal(guard.beforeRouting(request), 400,
                  std::string("header ") + name + " holds a byte that is not ASCII", true);
  }
  // Other headers may carry obsolete text (RFC 9110): the guard neither reads nor quotes them.
  auto agent = cleanPost();
  agent.headers.emplace("User-Agent", "caf\xc3\xa9");
  agent.headers.emplace("Authorization", "Bearer " + kToken);
  EXPECT_FALSE(guard.beforeRouting(agent).has_value());
}

TEST(HttpRequestGuard, ContentLengthMustBeOnePlainDecimalWithinTheLimit) {
  HttpOptions options;
  options.max_request_bytes = 1000;
  const HttpRequestGuard guard{options};
  auto both = cleanPost();
  both.headers.emplace("Transfer-Encoding", "chunked");
  expectRefusal(guard.beforeRouting(both), 400,
                "both Content-Length and Transfer-Encoding: the body's end is ambiguous", true);
  auto negative = cleanPost();
  negative.headers.erase("Content-Length");
  negative.headers.emplace("Content-Length", "-5");
  expectRefusal(guard.beforeRouting(negative), 400,
                "Content-Length '-5' is not a non-negative decimal number", true);
  auto large = cleanPost();
  large.headers.erase("Content-Length");
  large.headers.emplace("Content-Length", "1001");
  expectRefusal(guard.beforeRouting(large), 413,
                "request body of 1001 bytes is larger than the limit of 1000 bytes", true);
  auto at_limit = cleanPost();
  at_limit.headers.erase("Content-Length");
  at_limit.headers.emplace("Content-Length", "1000");
  EXPECT_FALSE(guard.beforeRouting(at_limit).has_value());
}

// With any other coding, or none on a POST, cpp-httplib read the body until the client closed
// (30 s for `Transfer-Encoding: identity`, issue 34 item 8).
TEST(HttpRequestGuard, ABodyIsFramedByContentLengthOrChunkedAndNothingElse) {
  const HttpRequestGuard guard{HttpOptions{}};
  const auto withCoding = [](const std::string& coding) {
    auto request = cleanPost();
    request.headers.erase("Content-Length");
    request.headers.emplace("Transfer-Encoding", coding);
    return request;
  };
  EXPECT_FALSE(guard.beforeRouting(withCoding("chunked")).has_value());
  EXPECT_FALSE(guard.beforeRouting(withCoding("Chunked")).has_value());
  for (const std::string coding : {"identity", "gzip, chunked", "chunked, gzip", ""}) {
    expectRefusal(guard.beforeRouting(withCoding(coding)), 400,
                  "Transfer-Encoding '" + coding +
                      "' is not supported: send the body with Content-Length, or chunked",
                  true);
  }
  auto twice = withCoding("chunked");
  twice.headers.emplace("Transfer-Encoding", "chunked");
  EXPECT_EQ(statusOf(guard.beforeRouting(twice)), 400);
  auto unframed = cleanPost();
  unframed.headers.erase("Content-Length");
  expectRefusal(guard.beforeRouting(unframed), 411,
                "a POST needs Content-Length or Transfer-Encoding: chunked", true);
  auto get = unframed;  // a GET or a DELETE carries no body: nothing is read
  get.method = "GET";
  EXPECT_FALSE(guard.beforeRouting(get).has_value());
}

TEST(HttpRequestGuard, OnlyAcceptedHostsAndOriginsAreServed) {
  HttpOptions options;
  options.port = 8765;
  options.allowed_origins = {"https://tools.example.com"};
  const HttpRequestGuard guard{options};
  auto evil_origin = cleanPost();
  evil_origin.headers.emplace("Origin", "http://Evil.example.com");
  expectRefusal(guard.beforeRouting(evil_origin), 403,
                "Origin 'http://evil.example.com' is not allowed", false);
  auto evil_host = cleanPost();
  evil_host.headers.erase("Host");
  evil_host.headers.emplace("Host", "evil.example.com:8765");
  expectRefusal(guard.beforeRouting(evil_host), 403, "Host 'evil.example.com' is not allowed",
                false);
  auto listed = cleanPost();
  listed.headers.emplace("Origin", "https://tools.example.com");
  EXPECT_FALSE(guard.beforeRouting(listed).has_value());
  auto local = cleanPost();  // the server's own origin, under any accepted host
  local.headers.emplace("Origin", "http://[::1]:8765");
  EXPECT_FALSE(guard.beforeRouting(local).has_value());
}

// A page served from another port of an accepted host (another local server) could post
// review decisions and drive /mcp (issue 34 item 6): only the server's own origin is accepted,
// and others only when configured.
TEST(HttpRequestGuard, AnOriginOnAnAcceptedHostMustAlsoBeTheServersSchemeAndPort) {
  HttpOptions options;
  options.port = 8765;
  options.allowed_origins = {"http://localhost:3000"};
  HttpRequestGuard guard{options};
  const auto withOrigin = [](const std::string& origin) {
    auto request = cleanPost();
    request.headers.emplace("Origin", origin);
    return request;
  };
  for (const std::string origin :
       {"http://localhost:1234", "http://127.0.0.1:8766", "http://localhost",
        "https://localhost:8765", "http://localhost:8765.evil.example", "http://localhost:08765",
        "http://[::1]:1234"}) {
    expectRefusal(guard.beforeRouting(withOrigin(origin)), 403,
                  "Origin '" + origin + "' is not allowed", false);
  }
  for (const std::string origin : {"http://localhost:8765", "http://127.0.0.1:8765",
                                   "http://LOCALHOST:8765", "http://localhost:3000"}) {
    EXPECT_FALSE(guard.beforeRouting(withOrigin(origin)).has_value()) << origin;
  }
  // Port 0 asks for any free port: the origin is the one bound, told once listening.
  HttpRequestGuard unbound{HttpOptions{}};
  EXPECT_EQ(statusOf(unbound.beforeRouting(withOrigin("http://localhost:8765"))), 403);
  unbound.listeningOn(8765);
  EXPECT_FALSE(unbound.beforeRouting(withOrigin("http://localhost:8765")).has_value());
  HttpOptions on_80;
  on_80.port = 80;
  EXPECT_FALSE(HttpRequestGuard{on_80}.beforeRouting(withOrigin("http://localhost")).has_value());
}

TEST(HttpRequestGuard, ATokenWhenConfiguredIsRequiredAsABearer) {
  const HttpRequestGuard guard{withToken()};
  const auto missing = guard.beforeRouting(cleanPost());
  expectRefusal(missing, 401, "missing or wrong bearer token", false);
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->headers.count("WWW-Authenticate"), 1u);
  EXPECT_EQ(missing->headers.find("WWW-Authenticate")->second, "Bearer");
  const std::string wrong[] = {"Bearer wrong-token-of-some-length",
                               "Bearer " + kToken.substr(0, 10), kToken, "Bearer " + kToken + "x"};
  for (const std::string& given : wrong) {
    auto request = cleanPost();
    request.headers.emplace("Authorization", given);
    expectRefusal(guard.beforeRouting(request), 401, "missing or wrong bearer token", false);
  }
  auto right = cleanPost();
  right.headers.emplace("Authorization", "Bearer " + kToken);
  EXPECT_FALSE(guard.beforeRouting(right).has_value());
}

TEST(HttpRequestGuard, AnUnsupportedProtocolVersionIsRefusedByTheHandlers) {
  auto request = cleanPost();
  request.headers.emplace("MCP-Protocol-Version", "1999-01-01");
  expectRefusal(HttpRequestGuard::protocolVersion(request), 400,
                "unsupported MCP-Protocol-Version '1999-01-01'", false);
  // Not before routing: a POST's body is parsed before its version header is looked at.
  EXPECT_FALSE(HttpRequestGuard{HttpOptions{}}.beforeRouting(request).has_value());
  for (const std::string& version : McpServer::supportedProtocolVersions()) {
    auto supported = cleanPost();
    supported.headers.emplace("MCP-Protocol-Version", version);
    EXPECT_FALSE(HttpRequestGuard::protocolVersion(supported).has_value()) << version;
  }
}

TEST(HttpRequestGuard, FramingComesFirstThenHostAndOriginThenTheToken) {
  const HttpRequestGuard guard{withToken()};
  auto everything_wrong = cleanPost();
  everything_wrong.headers.erase("Host");
  everything_wrong.headers.emplace("Host", "evil.example.com");
  everything_wrong.headers.emplace("Origin", "http://evil.example.com");
  auto framed = everything_wrong;
  framed.headers.emplace("Content-Length", "2");
  expectRefusal(guard.beforeRouting(framed), 400, "more than one Content-Length header", true);
  expectRefusal(guard.beforeRouting(everything_wrong), 403,
                "Host 'evil.example.com' is not allowed", false);
  // Elsewhere than /mcp only the framing is asked: the request goes on to a 404.
  auto elsewhere = everything_wrong;
  elsewhere.path = "/elsewhere";
  EXPECT_FALSE(guard.beforeRouting(elsewhere).has_value());
  elsewhere.headers.erase("Content-Length");
  elsewhere.headers.emplace("Content-Length", "107374182400");
  EXPECT_EQ(statusOf(guard.beforeRouting(elsewhere)), 413);
}

TEST(HttpRequestGuard, TheReviewPageTakesTheTokenAsABearerACookieOrOnceInItsAddress) {
  HttpOptions options = withToken();
  options.port = 8765;
  options.review_root = "/nonexistent-workspace";  // the guard only asks whether there is one
  const HttpRequestGuard guard{options};
  auto get = [] {
    httplib::Request request;
    request.method = "GET";
    request.path = "/review/3";
    request.headers.emplace("Host", "127.0.0.1:8765");
    return request;
  };
  const auto bare = guard.beforeRouting(get());
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->status, 401);
  EXPECT_EQ(bare->form, GuardAnswer::Form::kPage);
  EXPECT_EQ(bare->headers.count("WWW-Authenticate"), 1u);

  auto with_param = get();
  with_param.params.emplace("token", kToken);
  const auto redirect = guard.beforeRouting(with_param);
  ASSERT_TRUE(redirect.has_value());
  EXPECT_EQ(redirect->form, GuardAnswer::Form::kRedirect);
  EXPECT_EQ(redirect->status, 303);
  EXPECT_EQ(redirect->location, "/review/3");
  ASSERT_EQ(redirect->headers.count("Set-Cookie"), 1u);
  EXPECT_EQ(redirect->headers.find("Set-Cookie")->second,
            "stickler_review=" + kToken + "; Path=/review; HttpOnly; SameSite=Strict");
  auto wrong_param = get();
  wrong_param.params.emplace("token", "wrong-token-of-some-length");
  EXPECT_EQ(statusOf(guard.beforeRouting(wrong_param)), 401);

  auto with_cookie = get();
  with_cookie.headers.emplace("Cookie", "theme=dark; stickler_review=" + kToken);
  EXPECT_FALSE(guard.beforeRouting(with_cookie).has_value());
  auto with_bearer = get();
  with_bearer.headers.emplace("Authorization", "Bearer " + kToken);
  EXPECT_FALSE(guard.beforeRouting(with_bearer).has_value());

  auto form_post = with_cookie;
  form_post.method = "POST";
  form_post.headers.emplace("Content-Length", "9");
  const auto no_origin = guard.beforeRouting(form_post);
  ASSERT_TRUE(no_origin.has_value());
  EXPECT_EQ(no_origin->status, 403);
  EXPECT_EQ(no_origin->form, GuardAnswer::Form::kPage);
  EXPECT_EQ(no_origin->message, "a form post must carry Origin");
  form_post.headers.emplace("Origin", "http://127.0.0.1:8765");
  EXPECT_FALSE(guard.beforeRouting(form_post).has_value());
}

TEST(HttpRequestGuard, AnAnswerIsWrittenAsTheResponse) {
  GuardAnswer refusal;
  refusal.status = 413;
  refusal.message = "too large";
  refusal.close_connection = true;
  httplib::Response response;
  writeGuardAnswer(refusal, response);
  EXPECT_EQ(response.status, 413);
  EXPECT_EQ(response.get_header_value("Connection"), "close");
  EXPECT_EQ(response.get_header_value("Content-Type"), "application/json");
  const json body = json::parse(response.body);
  EXPECT_EQ(body.at("error").at("code"), -32600);
  EXPECT_EQ(body.at("error").at("message"), "too large");
  EXPECT_TRUE(body.at("id").is_null());

  // A message quoting bytes that are not UTF-8 cannot be JSON: cpp-httplib answers the exception
  // with a 500, and the connection is still marked to close, its body unread.
  refusal.message = "Content-Length '5\xff' is not a non-negative decimal number";
  httplib::Response unquotable;
  EXPECT_THROW(writeGuardAnswer(refusal, unquotable), json::exception);
  EXPECT_EQ(unquotable.get_header_value("Connection"), "close");
}

}  // namespace
}  // namespace stickler
