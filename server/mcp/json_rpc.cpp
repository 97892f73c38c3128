#include "server/mcp/json_rpc.h"

namespace stickler {

using nlohmann::json;

RpcMessage classifyMessage(const json& message) {
  RpcMessage parsed;
  if (!message.is_object()) {
    parsed.problem = message.is_array() ? "batches are not supported: send one message at a time"
                                        : "a JSON-RPC message must be an object";
    return parsed;
  }
  if (message.value("jsonrpc", json()) != "2.0") {
    parsed.problem = "\"jsonrpc\" must be \"2.0\"";
    if (message.contains("id")) parsed.id = message["id"];
    return parsed;
  }
  const bool has_id = message.contains("id");
  if (has_id) {
    const json& id = message["id"];
    if (!id.is_string() && !id.is_number_integer()) {
      parsed.problem = "\"id\" must be a string or an integer";
      return parsed;
    }
    parsed.id = id;
  }
  if (message.contains("method")) {
    if (!message["method"].is_string()) {
      parsed.problem = "\"method\" must be a string";
      return parsed;
    }
    parsed.method = message["method"];
    if (message.contains("params")) {
      if (!message["params"].is_object()) {
        parsed.problem = "\"params\" must be an object";
        return parsed;
      }
      parsed.params = message["params"];
    }
    parsed.kind = has_id ? RpcMessage::Kind::kRequest : RpcMessage::Kind::kNotification;
    return parsed;
  }
  if (has_id && (message.contains("result") || message.contains("error"))) {
    parsed.kind = RpcMessage::Kind::kResponse;
    parsed.result = message.value("result", json());
    parsed.error = message.value("error", json());
    return parsed;
  }
  parsed.problem = "neither a request (method), nor a response (result or error)";
  return parsed;
}

json rpcResult(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json rpcError(const json& id, int code, const std::string& message, const json& data) {
  json error{{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", error}};
}

json rpcNotification(const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

json rpcRequest(const json& id, const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

}  // namespace stickler
