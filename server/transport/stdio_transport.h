#pragma once

#include <cstddef>
#include <cstdio>

#include "server/mcp/mcp_server.h"

namespace stickler {

// Serves one MCP session over stdio: newline-delimited JSON-RPC messages on `in`, responses
// and notifications on `out`, logs on stderr only. A message longer than `max_message_bytes`
// is refused (and skipped) without being held in memory. Returns when `in` ends, after the
// requests in flight have finished or been cancelled.
int serveStdio(McpServer& server, std::FILE* in, std::FILE* out, size_t max_message_bytes);

}  // namespace stickler
