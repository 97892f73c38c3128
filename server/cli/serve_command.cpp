#include "server/cli/serve_command.h"

#include <csignal>
#include <cstdio>
#include <filesystem>

#include "server/mcp/mcp_server.h"
#include "server/transport/http_transport.h"
#include "server/transport/stdio_transport.h"
#include "simulator/support/errors.h"
#include "simulator/support/text_files.h"
#include "tools/adapters/adapter_support.h"
#include "tools/review/review_support.h"

namespace stickler {
namespace {

std::string readToken(const std::string& path) {
  const std::optional<std::string> text = readTextFileIfPresent(path);
  if (!text) throw UserError("--token-file " + path + ": cannot read it");
  std::string token = *text;
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.size() < 16)
    throw UserError("--token-file " + path + ": the token must have at least 16 characters");
  return token;
}

void parseAddress(const std::string& text, HttpOptions& http) {
  const auto colon = text.rfind(':');
  const std::string port = colon == std::string::npos ? text : text.substr(colon + 1);
  if (colon != std::string::npos) http.host = text.substr(0, colon);
  if (!http.host.empty() && http.host.front() == '[' && http.host.back() == ']') {
    http.host = http.host.substr(1, http.host.size() - 2);
  }
  try {
    size_t used = 0;
    http.port = std::stoi(port, &used);
    if (used != port.size() || http.port < 0 || http.port > 65535)
      throw std::invalid_argument(port);
  } catch (const std::exception&) {
    throw UserError("--http '" + text + "': expected [ADDR:]PORT, e.g. 8765 or 127.0.0.1:8765");
  }
  if (http.host.empty()) throw UserError("--http '" + text + "': empty address");
}

// An approval a crash interrupted (docs/review.md, "Durability") is finished or rolled back
// before anything is served.
void settleInterruptedApprovals(const std::string& root) {
  RootedContext context(root);
  std::error_code error;
  if (!std::filesystem::exists(workspaceCatalogDir(context) + "/.git/stickler-reviews.sqlite",
                               error)) {
    return;
  }
  try {
    openReviewStore(context);  // settles what it finds
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stickler serve: the review queue: %s\n", e.what());
  }
}

}  // namespace

int runServe(const ServeOptions& options) {
  ServerOptions server_options;
  server_options.roots = options.roots.empty() ? std::vector<std::string>{"."} : options.roots;
  server_options.conformance_fixtures = options.conformance_fixtures;
  if (!(options.session_idle_minutes > 0))
    throw UserError("--session-idle-minutes must be positive");
  if (options.max_sessions < 1) throw UserError("--max-sessions must be at least 1");
  server_options.session_idle_seconds = options.session_idle_minutes * 60;
  server_options.max_sessions = options.max_sessions;
  if (options.max_request_bytes < 1024)
    throw UserError("--max-request-bytes must be at least 1024");
  // A client that goes away mid-answer must cost its connection, not the server: cpp-httplib
  // writes to sockets without MSG_NOSIGNAL, and stdout may be a closed pipe.
  std::signal(SIGPIPE, SIG_IGN);
  McpServer server(server_options);
  settleInterruptedApprovals(server.workspace().roots().at(0));
  std::string roots;
  for (const auto& root : server.workspace().roots()) roots += (roots.empty() ? "" : ", ") + root;
  if (!options.http && !options.review_only) {
    std::fprintf(stderr, "stickler serve: MCP over stdio, workspace %s\n", roots.c_str());
    return serveStdio(server, stdin, stdout, options.max_request_bytes);
  }
  HttpOptions http;
  parseAddress(options.http.value_or("127.0.0.1:0"), http);
  http.review_root = server.workspace().roots().at(0);
  http.mcp_endpoint = !options.review_only;
  if (options.token_file) http.bearer_token = readToken(*options.token_file);
  http.max_request_bytes = options.max_request_bytes;
  if (options.http_threads < 4 || options.http_threads > 1024)
    throw UserError("--http-threads must be between 4 and 1024");
  if (options.header_timeout_seconds < 1) throw UserError("--header-timeout must be at least 1");
  if (options.body_timeout_seconds < 1) throw UserError("--body-timeout must be at least 1");
  if (options.resume_grace_seconds < 0) throw UserError("--resume-grace must not be negative");
  http.resume_grace_seconds = options.resume_grace_seconds;
  http.threads = options.http_threads;
  http.header_seconds = options.header_timeout_seconds;
  http.body_seconds = options.body_timeout_seconds;
  http.allowed_hosts = options.allowed_hosts;
  http.allowed_origins = options.allowed_origins;
  return serveHttp(server, http, [&](int port) {
    const std::string host =
        http.host.find(':') != std::string::npos ? "[" + http.host + "]" : http.host;
    const std::string base = "http://" + host + ":" + std::to_string(port);
    if (!options.review_only) {
      std::fprintf(stderr, "stickler serve: MCP over HTTP at %s/mcp, workspace %s%s\n",
                   base.c_str(), roots.c_str(), http.bearer_token ? ", bearer token required" : "");
    }
    // The page's address carries the token once; the browser keeps it in a cookie.
    std::fprintf(stderr, "stickler %s: the review page at %s/review%s\n",
                 options.review_only ? "review serve" : "serve", base.c_str(),
                 http.bearer_token ? ("?token=" + *http.bearer_token).c_str() : "");
    std::fflush(stderr);
  });
}

}  // namespace stickler
