#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "server/mcp/mcp_server.h"

namespace stickler {

struct HttpOptions {
  std::string host = "127.0.0.1";           // bound to loopback unless told otherwise
  int port = 0;                             // 0: any free port (reported through `on_listening`)
  std::optional<std::string> bearer_token;  // required in Authorization when set
  size_t max_request_bytes = 16 * 1024 * 1024;
  // Beyond localhost, 127.0.0.1 and [::1] (and the bound address): Host names and Origins to
  // accept. Everything else is refused (403) against DNS rebinding.
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> allowed_origins;
  int threads = 32;         // concurrent requests (SSE streams hold one while they last)
  int header_seconds = 10;  // a request's headers must arrive whole within this
  int body_seconds = 60;    // and its body within this after them
  // A tool call whose client's connection closed: at once for a JSON response, after this
  // many seconds without a resumed stream for an SSE one (docs/mcp.md).
  int resume_grace_seconds = 30;
  bool mcp_endpoint = true;  // /mcp; `stickler review serve` serves the review page alone
  // The review page (/review) for the workspace at this root; none when empty.
  std::string review_root;
};

// Serves MCP over Streamable HTTP at /mcp until the process ends: POST (JSON, or an SSE
// stream for tool calls, resumable with GET and Last-Event-ID), GET (resumption only: 405
// otherwise), DELETE (ends the session). With review_root, the reviewer's page at /review
// (server/transport/review_page.h), behind the same Host, Origin and token checks
// (server/transport/http_request_guard.h); a browser brings the token once as ?token= and keeps it
// in a SameSite=Strict cookie. `on_listening` gets the port once it listens. Returns non-zero when
// it cannot listen.
int serveHttp(McpServer& server, const HttpOptions& options,
              const std::function<void(int port)>& on_listening = {});

}  // namespace stickler
