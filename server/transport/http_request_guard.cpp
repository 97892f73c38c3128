#include "server/transport/http_request_guard.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_server.h"
#include "server/transport/http_connection_gate.h"
#include "server/transport/review_page.h"
#include "simulator/support/text_format.h"

namespace stickler {
namespace {

constexpr const char* kPageCookie = "stickler_review";

// "example.com:8080" -> "example.com"; "[::1]:8080" -> "[::1]".
std::string hostWithoutPort(const std::string& host) {
  if (!host.empty() && host.front() == '[') {
    const auto end = host.find(']');
    return end == std::string::npos ? host : host.substr(0, end + 1);
  }
  const auto colon = host.rfind(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

GuardAnswer refusal(GuardAnswer::Form form, int status, const std::string& message) {
  GuardAnswer answer;
  answer.form = form;
  answer.status = status;
  answer.message = message;
  return answer;
}

GuardAnswer rpcRefusal(int status, const std::string& message) {
  return refusal(GuardAnswer::Form::kRpcError, status, message);
}

// A browser shows the review page's refusals: they are pages, not JSON-RPC errors.
GuardAnswer pageRefusal(int status, const std::string& message) {
  return refusal(GuardAnswer::Form::kPage, status, message);
}

// Compared in time independent of where they differ.
bool sameSecret(const std::string& given, const std::string& expected) {
  unsigned char difference = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    difference |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ expected[i]);
  }
  return difference == 0;
}

std::string cookieValue(const httplib::Request& request, const std::string& name) {
  const std::string cookies = request.get_header_value("Cookie");
  size_t start = 0;
  while (start < cookies.size()) {
    size_t end = cookies.find(';', start);
    if (end == std::string::npos) end = cookies.size();
    std::string pair = cookies.substr(start, end - start);
    pair.erase(0, pair.find_first_not_of(' '));
    if (pair.rfind(name + "=", 0) == 0) return pair.substr(name.size() + 1);
    start = end + 1;
  }
  return "";
}

}  // namespace

void writeGuardAnswer(const GuardAnswer& answer, httplib::Response& response) {
  for (const auto& [name, value] : answer.headers) response.set_header(name, value);
  if (answer.close_connection) {
    response.set_header("Connection", "close");
    closeConnectionAfterResponse();
  }
  switch (answer.form) {
    case GuardAnswer::Form::kRedirect:
      response.set_redirect(answer.location, answer.status);
      break;
    case GuardAnswer::Form::kRpcError:
      response.status = answer.status;
      response.set_content(rpcError(nullptr, rpc_error::kInvalidRequest, answer.message).dump(),
                           "application/json");
      break;
    case GuardAnswer::Form::kPage:
      response.status = answer.status;
      response.set_content("<!DOCTYPE html><p>" + answer.message + "</p>\n",
                           "text/html; charset=utf-8");
      break;
  }
}

HttpRequestGuard::HttpRequestGuard(const HttpOptions& options)
    : options_(options), port_(options.port) {
  allowed_hosts_ = {"localhost", "127.0.0.1", "[::1]", "::1"};
  if (options.host != "0.0.0.0" && options.host != "::")
    allowed_hosts_.push_back(asciiLower(options.host));
  for (const auto& host : options.allowed_hosts) allowed_hosts_.push_back(asciiLower(host));
}

std::optional<GuardAnswer> HttpRequestGuard::beforeRouting(const httplib::Request& request) const {
  if (auto refused = framing(request)) return refused;
  const bool page = !options_.review_root.empty() && isReviewPagePath(request.path);
  if (request.path != "/mcp" && !page) return std::nullopt;
  if (auto refused = hostAndOrigin(request)) return refused;
  if (page) return reviewPage(request);
  if (options_.bearer_token &&
      !sameSecret(request.get_header_value("Authorization"), "Bearer " + *options_.bearer_token)) {
    GuardAnswer refused = rpcRefusal(401, "missing or wrong bearer token");
    refused.headers.emplace("WWW-Authenticate", "Bearer");
    return refused;
  }
  return std::nullopt;
}

// What a request says about itself must be one thing, said once: one Host and one Origin
// without control characters (a second one, or a NUL, could make two readers see two hosts),
// and a body length that is a plain decimal within the limit, never beside a chunked body.
// Answered at once, before any body is read, and the connection closed.
std::optional<GuardAnswer> HttpRequestGuard::framing(const httplib::Request& request) const {
  const auto refuse = [](int status, const std::string& message) {
    GuardAnswer answer = rpcRefusal(status, message);
    answer.close_connection = true;
    return answer;
  };
  for (const char* name :
       {"Host", "Origin", "Content-Length", "Authorization", kSessionHeader, kVersionHeader}) {
    if (request.headers.count(name) > 1) {
      return refuse(400, std::string("more than one ") + name + " header");
    }
    // These are ASCII by their grammar. A byte past it would reach the answer's JSON (which
    // quotes Host, Origin and the version) as invalid UTF-8.
    const std::string value = request.get_header_value(name);
    if (std::any_of(value.begin(), value.end(), [](unsigned char c) { return c >= 0x80; })) {
      return refuse(400, std::string("header ") + name + " holds a byte that is not ASCII");
    }
  }
  // From the header table itself: get_header_value() goes through a C string and would stop
  // at a NUL, showing "localhost" for "localhost\0.evil.example".
  for (const auto& [name, value] : request.headers) {
    const bool control = std::any_of(value.begin(), value.end(), [](unsigned char c) {
      return (c < 0x20 && c != '\t') || c == 0x7f;
    });
    if (control) return refuse(400, "header " + name + " holds a control character");
  }
  // A body is framed one of two ways. Any other transfer coding (`identity`, `gzip`) or none
  // at all on a method that carries a body would have the body read until the client closes.
  if (request.has_header("Transfer-Encoding")) {
    const std::string coding = request.get_header_value("Transfer-Encoding");
    if (request.headers.count("Transfer-Encoding") > 1 || asciiLower(coding) != "chunked") {
      return refuse(400, "Transfer-Encoding '" + coding.substr(0, 40) +
                             "' is not supported: send the body with Content-Length, or chunked");
    }
  }
  if (!request.has_header("Content-Length")) {
    const bool carries_body =
        request.method == "POST" || request.method == "PUT" || request.method == "PATCH";
    if (carries_body && !request.has_header("Transfer-Encoding")) {
      return refuse(411,
                    "a " + request.method + " needs Content-Length or Transfer-Encoding: chunked");
    }
    return std::nullopt;
  }
  if (request.has_header("Transfer-Encoding")) {
    return refuse(400, "both Content-Length and Transfer-Encoding: the body's end is ambiguous");
  }
  const std::string length = request.get_header_value("Content-Length");
  const bool decimal = !length.empty() && length.size() <= 19 &&
                       std::all_of(length.begin(), length.end(),
                                   [](unsigned char c) { return c >= '0' && c <= '9'; });
  if (!decimal) {
    return refuse(
        400, "Content-Length '" + length.substr(0, 40) + "' is not a non-negative decimal number");
  }
  if (std::stoull(length) > options_.max_request_bytes) {
    return refuse(413, "request body of " + length + " bytes is larger than the limit of " +
                           std::to_string(options_.max_request_bytes) + " bytes");
  }
  return std::nullopt;
}

// A web page that reaches the server through a name it controls (DNS rebinding) sends that name
// as Host, and its own address as Origin. An Origin is the server's own (http://, an accepted
// host, the port it listens on) or one configured: a page served from another port of the same
// host is another site, which must not post review decisions or drive /mcp.
std::optional<GuardAnswer> HttpRequestGuard::hostAndOrigin(const httplib::Request& request) const {
  const std::string host = asciiLower(hostWithoutPort(request.get_header_value("Host")));
  if (std::find(allowed_hosts_.begin(), allowed_hosts_.end(), host) == allowed_hosts_.end()) {
    return rpcRefusal(403, "Host '" + host + "' is not allowed");
  }
  if (!request.has_header("Origin")) return std::nullopt;
  const std::string origin = asciiLower(request.get_header_value("Origin"));
  const bool listed = std::find(options_.allowed_origins.begin(), options_.allowed_origins.end(),
                                origin) != options_.allowed_origins.end();
  if (!listed && !ownOrigin(origin)) {
    return rpcRefusal(403, "Origin '" + origin + "' is not allowed");
  }
  return std::nullopt;
}

// "http://localhost:8765" when the server listens on 8765: plain HTTP (TLS ends in a proxy,
// whose origin is configured), an accepted host, and the port, written or HTTP's default 80.
bool HttpRequestGuard::ownOrigin(const std::string& origin) const {
  const std::string scheme = "http://";
  if (origin.rfind(scheme, 0) != 0 || port_ <= 0) return false;
  const std::string authority = origin.substr(scheme.size());
  const std::string origin_host = hostWithoutPort(authority);
  if (std::find(allowed_hosts_.begin(), allowed_hosts_.end(), origin_host) ==
      allowed_hosts_.end()) {
    return false;
  }
  const std::string port = authority.substr(origin_host.size());
  if (port.empty()) return port_ == 80;
  return port == ":" + std::to_string(port_);
}

// The page's own checks after Host and Origin: a form POST must say where it comes from (a
// browser always sends Origin on one; other pages' forms are refused by the Origin check),
// and with a token the request carries it: as a bearer, in the page's cookie, or once as
// ?token= on a GET, answered with the cookie and a redirect that drops it from the URL.
std::optional<GuardAnswer> HttpRequestGuard::reviewPage(const httplib::Request& request) const {
  if (request.method == "POST" && !request.has_header("Origin")) {
    return pageRefusal(403, "a form post must carry Origin");
  }
  if (!options_.bearer_token) return std::nullopt;
  const std::string& token = *options_.bearer_token;
  if (sameSecret(request.get_header_value("Authorization"), "Bearer " + token) ||
      sameSecret(cookieValue(request, kPageCookie), token)) {
    return std::nullopt;
  }
  if (request.method == "GET" && request.has_param("token") &&
      sameSecret(request.get_param_value("token"), token)) {
    GuardAnswer answer;
    answer.form = GuardAnswer::Form::kRedirect;
    answer.status = 303;
    answer.location = request.path;
    answer.headers.emplace("Set-Cookie", std::string(kPageCookie) + "=" + token +
                                             "; Path=/review; HttpOnly; SameSite=Strict");
    return answer;
  }
  GuardAnswer refused =
      pageRefusal(401, "open the address `stickler review serve` printed: it carries the token");
  refused.headers.emplace("WWW-Authenticate", "Bearer");
  return refused;
}

std::optional<GuardAnswer> HttpRequestGuard::protocolVersion(const httplib::Request& request) {
  if (!request.has_header(kVersionHeader)) return std::nullopt;  // 2025-03-26 clients omit it
  const std::string version = request.get_header_value(kVersionHeader);
  const auto& supported = McpServer::supportedProtocolVersions();
  if (std::find(supported.begin(), supported.end(), version) != supported.end()) {
    return std::nullopt;
  }
  return rpcRefusal(400, "unsupported MCP-Protocol-Version '" + version + "'");
}

}  // namespace stickler
