// libFuzzer target: one MCP message as a transport receives it (a stdio line, an HTTP body).
// Whatever the bytes, the parser answers with a value or a JsonInputError, the classifier with
// a kind, and the error reply it leads to is valid JSON; anything else (a crash, another
// exception, a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/mcp/json_rpc.h"
#include "simulator/support/untrusted_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json message;
  try {
    message = stickler::parseUntrustedJson(text);
  } catch (const stickler::JsonInputError& e) {
    // The transports quote the error back: it must serialize.
    (void)stickler::rpcError(nullptr, stickler::rpc_error::kParseError, e.what()).dump();
    return 0;
  }
  const stickler::RpcMessage parsed = stickler::classifyMessage(message);
  const nlohmann::json reply =
      parsed.kind == stickler::RpcMessage::Kind::kInvalid
          ? stickler::rpcError(parsed.id, stickler::rpc_error::kInvalidRequest, parsed.problem)
          : stickler::rpcResult(parsed.id, parsed.params);
  (void)reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
