#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace stickler {

struct ServeOptions {
  std::optional<std::string> http;  // [ADDR:]PORT; stdio when absent
  std::vector<std::string> roots;   // the workspace (default: the current directory)
  std::optional<std::string> token_file;
  bool conformance_fixtures = false;
  size_t max_request_bytes = 16 * 1024 * 1024;
  int http_threads = 32;            // HTTP workers: concurrent requests
  int header_timeout_seconds = 10;  // an HTTP request's headers must arrive within this
  int body_timeout_seconds = 60;    // and its body within this after them
  int resume_grace_seconds = 30;    // a call whose SSE stream dropped waits this long for a resume
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> allowed_origins;
  double session_idle_minutes = 60;
  size_t max_sessions = 64;
  bool review_only = false;  // `stickler review serve`: the review page alone, no /mcp
};

// `stickler serve`: the MCP server over stdio, or over HTTP with --http (with the review page at
// /review); `stickler review serve` (review_only): the review page alone. Returns the exit
// status; bad options throw UserError.
int runServe(const ServeOptions& options);

}  // namespace stickler
