// Whether an HTTP request may be served, decided from its headers before any handler (or the
// body) is read: its framing (what it says about itself is said once, without control
// characters, with a body length that cannot be read two ways), then for /mcp and the review
// page the Host and Origin (DNS rebinding) and the token (docs/security.md, docs/mcp.md
// "Deploying over HTTP"). The guard only decides, so that each rule can be tested on a request
// built in memory; writeGuardAnswer() makes the decision the response.
#pragma once

#include <httplib.h>

#include <optional>
#include <string>
#include <vector>

#include "server/transport/http_transport.h"

namespace stickler {

inline constexpr const char* kSessionHeader = "Mcp-Session-Id";
inline constexpr const char* kVersionHeader = "MCP-Protocol-Version";

// The guard's answer in place of the handler's: a refusal, or for the review page's one-time
// ?token=, the cookie and a redirect that drops the token from the address.
struct GuardAnswer {
  enum class Form {
    kRpcError,  // for /mcp: a JSON-RPC error (-32600) saying `message`
    kPage,      // for the review page, which a browser shows: a short HTML page saying `message`
    kRedirect,  // to `location`, with `status`
  };
  int status = 0;
  Form form = Form::kRpcError;
  std::string message;
  std::string location;
  httplib::Headers headers;  // WWW-Authenticate, Set-Cookie
  // The body is left unread, so nothing after it on the connection can be told from it.
  bool close_connection = false;
};

// Writes `answer` as the response, having the connection closed after it when it says so. The
// body is made here, after that: a message quoting a header that is not UTF-8 makes the JSON
// throw (cpp-httplib answers 500), and the connection must still close.
void writeGuardAnswer(const GuardAnswer& answer, httplib::Response& response);

class HttpRequestGuard {
 public:
  explicit HttpRequestGuard(const HttpOptions& options);

  // The port the server listens on, once bound (options.port may be 0): the server's own
  // origin is http://, an accepted host and this port.
  void listeningOn(int port) { port_ = port; }

  // Before routing, for every request: its framing; for /mcp and the review page also Host,
  // Origin and the token. Nothing when the request goes on to its handler (or to a 404).
  std::optional<GuardAnswer> beforeRouting(const httplib::Request& request) const;

  // MCP-Protocol-Version, when sent, must be one the server speaks. Asked by the /mcp handlers,
  // not before routing: a POST's body is parsed and classified first (a malformed one is a parse
  // error whatever the header says), and a DELETE is not asked.
  static std::optional<GuardAnswer> protocolVersion(const httplib::Request& request);

 private:
  std::optional<GuardAnswer> framing(const httplib::Request& request) const;
  std::optional<GuardAnswer> hostAndOrigin(const httplib::Request& request) const;
  bool ownOrigin(const std::string& origin) const;
  std::optional<GuardAnswer> reviewPage(const httplib::Request& request) const;

  HttpOptions options_;
  int port_ = 0;
  std::vector<std::string> allowed_hosts_;  // lower case, without a port
};

}  // namespace stickler
