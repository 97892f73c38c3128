#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

// JSON-RPC 2.0 error codes (and MCP's use of them).
namespace rpc_error {
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kResourceNotFound = -32002;  // MCP: resources/read of an unknown URI
}  // namespace rpc_error

// One incoming JSON-RPC message, sorted by what it is.
struct RpcMessage {
  enum class Kind { kRequest, kNotification, kResponse, kInvalid };
  Kind kind = Kind::kInvalid;
  nlohmann::json id;  // requests and responses
  std::string method;
  nlohmann::json params = nlohmann::json::object();
  nlohmann::json result;  // responses
  nlohmann::json error;   // error responses
  std::string problem;    // kInvalid: why
};

RpcMessage classifyMessage(const nlohmann::json& message);

nlohmann::json rpcResult(const nlohmann::json& id, nlohmann::json result);
nlohmann::json rpcError(const nlohmann::json& id, int code, const std::string& message,
                        const nlohmann::json& data = nullptr);
nlohmann::json rpcNotification(const std::string& method, nlohmann::json params);
nlohmann::json rpcRequest(const nlohmann::json& id, const std::string& method,
                          nlohmann::json params);

// An error to answer with: thrown by method handlers, turned into a JSON-RPC error response.
class RpcFailure : public std::runtime_error {
 public:
  RpcFailure(int code, const std::string& message) : std::runtime_error(message), code(code) {}
  int code;
};

}  // namespace stickler
