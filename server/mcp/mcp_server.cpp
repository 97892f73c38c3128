#include "server/mcp/mcp_server.h"

#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "server/mcp/mcp_review_resources.h"
#include "server/mcp/tool_call_context.h"
#include "simulator/support/errors.h"

namespace stickler {

using nlohmann::json;

namespace {

constexpr size_t kPageSize = 50;
constexpr size_t kMaxCompletions = 100;
constexpr size_t kMaxSubscriptionUriBytes = 2048;

const char* kInstructions =
    "Stickler brings neural-network models (TorchScript archives) onto the IBM Spyre "
    "accelerator, simulated from public facts. Start with inspect_model on a model (set "
    "include_nodes false for a summary), then check_support for a device profile (spyre-2026 is "
    "today's stack, spyre-2025 the older one; the -clean variants have no faults) to list every "
    "compile blocker with its module path, source line and rule. When it compiles, run_model "
    "with backend spyre-sim:<profile> compares the device with the CPU reference end to end and "
    "gives a verdict; backend cpu-emulated:dl16 shows what the number format alone does, and the "
    "modules argument runs only some modules on the device, to find the one that breaks it. "
    "Paths are relative to the workspace root. Documentation and device profiles are resources "
    "(stickler://docs/..., stickler://profiles/...); the prompt bring_up_model walks through it.";

std::string randomSessionId() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1)
    throw std::runtime_error("no random bytes for a session id");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char byte : bytes) {
    id.push_back(kHex[byte >> 4]);
    id.push_back(kHex[byte & 0xf]);
  }
  return id;
}

// One page of `items` from the opaque cursor a previous page gave.
json page(const json& items, const json& params, const char* key) {
  size_t offset = 0;
  if (params.contains("cursor")) {
    const json& cursor = params["cursor"];
    if (!cursor.is_string() || cursor.get<std::string>().rfind("offset:", 0) != 0) {
      throw RpcFailure(rpc_error::kInvalidParams, "invalid cursor");
    }
    try {
      offset = std::stoul(cursor.get<std::string>().substr(7));
    } catch (const std::exception&) {
      throw RpcFailure(rpc_error::kInvalidParams, "invalid cursor");
    }
    if (offset > items.size()) throw RpcFailure(rpc_error::kInvalidParams, "invalid cursor");
  }
  json result{{key, json::array()}};
  for (size_t i = offset; i < items.size() && i < offset + kPageSize; ++i)
    result[key].push_back(items[i]);
  if (offset + kPageSize < items.size())
    result["nextCursor"] = "offset:" + std::to_string(offset + kPageSize);
  return result;
}

std::string requireParam(const json& params, const char* name) {
  if (!params.contains(name) || !params[name].is_string()) {
    throw RpcFailure(rpc_error::kInvalidParams,
                     std::string("params.") + name + " must be a string");
  }
  return params[name];
}

}  // namespace

McpServer::McpServer(const ServerOptions& options)
    : options_(options), workspace_(options.roots), catalog_(sticklerCatalog(workspace_)) {
  if (options.conformance_fixtures) addConformanceFixtures(catalog_);
  watch_ = std::make_unique<ResourceWatch>(
      [this] { return liveSessions(); }, isReviewResource,
      [this](const std::string& uri) { return reviewResourceTag(workspace_, uri); },
      options.watch_seconds);
}

std::vector<std::shared_ptr<McpSession>> McpServer::liveSessions() const {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  std::vector<std::shared_ptr<McpSession>> sessions;
  for (const auto& [id, session] : sessions_) sessions.push_back(session);
  return sessions;
}

const std::vector<std::string>& McpServer::supportedProtocolVersions() {
  static const std::vector<std::string> versions = {"2025-11-25", "2025-06-18", "2025-03-26"};
  return versions;
}

void McpServer::endExpiredSessions() {
  const auto cutoff = std::chrono::steady_clock::now() -
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(options_.session_idle_seconds));
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->second->lastActive() < cutoff && !it->second->busy()) {
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

std::shared_ptr<McpSession> McpServer::createSession() {
  auto session = std::make_shared<McpSession>(randomSessionId());
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  endExpiredSessions();
  if (sessions_.size() >= options_.max_sessions) {
    auto oldest = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second->busy()) continue;
      if (oldest == sessions_.end() || it->second->lastActive() < oldest->second->lastActive())
        oldest = it;
    }
    if (oldest == sessions_.end()) return nullptr;
    sessions_.erase(oldest);
  }
  sessions_[session->id()] = session;
  return session;
}

std::shared_ptr<McpSession> McpServer::findSession(const std::string& id) {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  endExpiredSessions();
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  it->second->touch();
  return it->second;
}

bool McpServer::closeSession(const std::string& id) {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  return sessions_.erase(id) != 0;
}

size_t McpServer::sessionCount() const {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  return sessions_.size();
}

bool McpServer::mayStream(const json& message) {
  return message.is_object() && message.value("method", json()) == "tools/call";
}

std::optional<json> McpServer::handle(McpSession& session, const json& message,
                                      ClientChannel& channel) {
  const RpcMessage parsed = classifyMessage(message);
  switch (parsed.kind) {
    case RpcMessage::Kind::kInvalid:
      return rpcError(parsed.id, rpc_error::kInvalidRequest, "invalid request: " + parsed.problem);
    case RpcMessage::Kind::kResponse:
      session.deliverResponse(parsed);
      return std::nullopt;
    case RpcMessage::Kind::kNotification:
      if (parsed.method == "notifications/cancelled" && parsed.params.contains("requestId")) {
        session.cancelRequest(parsed.params["requestId"]);
      }
      return std::nullopt;  // initialized, roots changes, and the rest need no answer
    case RpcMessage::Kind::kRequest:
      break;
  }
  try {
    return rpcResult(parsed.id, dispatch(session, parsed, channel));
  } catch (const RpcFailure& e) {
    return rpcError(parsed.id, e.code, e.what());
  } catch (const Cancelled&) {
    return std::nullopt;  // the client gave up on it: no response
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stickler serve: internal error in %s: %s\n", parsed.method.c_str(),
                 e.what());
    return rpcError(parsed.id, rpc_error::kInternalError,
                    std::string("internal error: ") + e.what());
  }
}

json McpServer::dispatch(McpSession& session, const RpcMessage& request, ClientChannel& channel) {
  const std::string& method = request.method;
  const json& params = request.params;
  if (method == "initialize") return initialize(session, params);
  if (method == "ping") return json::object();
  if (!session.initialize_received) {
    throw RpcFailure(rpc_error::kInvalidRequest,
                     "the session is not initialized: send initialize before " + method);
  }
  if (method == "tools/list") {
    json tools = json::array();
    for (const auto& tool : catalog_.tools) tools.push_back(tool.definition);
    return page(tools, params, "tools");
  }
  if (method == "tools/call") return callTool(session, request, channel);
  if (method == "resources/list") {
    json resources = json::array();
    for (const auto& resource : catalog_.resources) resources.push_back(resource.definition);
    return page(resources, params, "resources");
  }
  if (method == "resources/templates/list") {
    json templates = json::array();
    for (const auto& entry : catalog_.templates) templates.push_back(entry.definition);
    return page(templates, params, "resourceTemplates");
  }
  if (method == "resources/read") return readResource(params);
  if (method == "resources/subscribe" || method == "resources/unsubscribe") {
    const std::string uri = requireParam(params, "uri");
    if (method == "resources/subscribe") {
      subscribe(session, uri);
    } else {
      session.unsubscribe(uri);
    }
    return json::object();
  }
  if (method == "prompts/list") {
    json prompts = json::array();
    for (const auto& prompt : catalog_.prompts) prompts.push_back(prompt.definition);
    return page(prompts, params, "prompts");
  }
  if (method == "prompts/get") return getPrompt(params);
  if (method == "completion/complete") return complete(params);
  if (method == "logging/setLevel") {
    const std::string level = requireParam(params, "level");
    const int rank = logLevelRank(level);
    if (rank < 0) throw RpcFailure(rpc_error::kInvalidParams, "unknown log level '" + level + "'");
    session.log_rank = rank;
    return json::object();
  }
  throw RpcFailure(rpc_error::kMethodNotFound, "method not found: " + method);
}

json McpServer::initialize(McpSession& session, const json& params) {
  if (session.initialize_received.exchange(true)) {
    throw RpcFailure(rpc_error::kInvalidRequest, "the session is already initialized");
  }
  const std::string requested = params.value("protocolVersion", std::string());
  const auto& supported = supportedProtocolVersions();
  session.protocol_version =
      std::find(supported.begin(), supported.end(), requested) != supported.end()
          ? requested
          : supported.front();
  if (params.contains("capabilities") && params["capabilities"].is_object()) {
    session.client_capabilities = params["capabilities"];
  }
  if (params.contains("clientInfo") && params["clientInfo"].is_object()) {
    session.client_info = params["clientInfo"];
  }
  return {
      {"protocolVersion", session.protocol_version},
      {"capabilities",
       {{"tools", {{"listChanged", false}}},
        {"resources", {{"subscribe", true}, {"listChanged", false}}},
        {"prompts", {{"listChanged", false}}},
        {"logging", json::object()},
        {"completions", json::object()}}},
      {"serverInfo", {{"name", "stickler"}, {"title", "Stickler"}, {"version", STICKLER_VERSION}}},
      {"instructions", kInstructions}};
}

json McpServer::callTool(McpSession& session, const RpcMessage& request, ClientChannel& channel) {
  const json& params = request.params;
  const std::string name = requireParam(params, "name");
  const json arguments = params.value("arguments", json::object());
  if (!arguments.is_object())
    throw RpcFailure(rpc_error::kInvalidParams, "params.arguments must be an object");
  auto tool = std::find_if(catalog_.tools.begin(), catalog_.tools.end(),
                           [&](const McpTool& t) { return t.definition["name"] == name; });
  if (tool == catalog_.tools.end())
    throw RpcFailure(rpc_error::kInvalidParams, "unknown tool '" + name + "'");
  json progress_token;
  if (params.contains("_meta") && params["_meta"].is_object()) {
    progress_token = params["_meta"].value("progressToken", json());
  }
  auto cancelled = session.beginRequest(request.id);
  ToolCallContext context(session, channel, workspace_, progress_token, cancelled);
  json result;
  try {
    result = tool->call(arguments, context);
  } catch (const Cancelled&) {
    session.endRequest(request.id);
    throw;
  } catch (const RpcFailure& e) {
    result = toolError(e.what());
  } catch (const std::exception& e) {
    result = toolError(std::string("internal error: ") + e.what());
  }
  session.endRequest(request.id);
  if (cancelled->load()) throw Cancelled();
  return result;
}

void McpServer::subscribe(McpSession& session, const std::string& uri) const {
  // Each subscription is held for the session's life and looked at on every change of the
  // workspace, so its size and number are bounded, and only what exists can be watched.
  if (uri.size() > kMaxSubscriptionUriBytes) {
    throw RpcFailure(rpc_error::kInvalidParams,
                     "a subscribed URI may hold " + std::to_string(kMaxSubscriptionUriBytes) +
                         " bytes; this one holds " + std::to_string(uri.size()));
  }
  readResource({{"uri", uri}});  // kResourceNotFound for what does not exist
  const std::string tag = isReviewResource(uri) ? reviewResourceTag(workspace_, uri) : "";
  if (!session.subscribe(uri, tag)) {
    throw RpcFailure(rpc_error::kInvalidParams,
                     "this session already holds " + std::to_string(McpSession::kMaxSubscriptions) +
                         " subscriptions, the most one may; unsubscribe from one first");
  }
}

json McpServer::readResource(const json& params) const {
  const std::string uri = requireParam(params, "uri");
  for (const auto& resource : catalog_.resources) {
    if (resource.definition["uri"] == uri) return {{"contents", resource.contents()}};
  }
  for (const auto& entry : catalog_.templates) {
    if (auto contents = entry.read(uri)) return {{"contents", *contents}};
  }
  throw RpcFailure(rpc_error::kResourceNotFound, "resource not found: " + uri);
}

json McpServer::getPrompt(const json& params) const {
  const std::string name = requireParam(params, "name");
  const json arguments = params.value("arguments", json::object());
  for (const auto& prompt : catalog_.prompts) {
    if (prompt.definition["name"] == name) {
      return {{"description", prompt.definition.value("description", "")},
              {"messages", prompt.get(arguments)}};
    }
  }
  throw RpcFailure(rpc_error::kInvalidParams, "unknown prompt '" + name + "'");
}

json McpServer::complete(const json& params) const {
  const json ref = params.value("ref", json::object());
  const json argument = params.value("argument", json::object());
  const std::string type = ref.value("type", std::string());
  const std::string name = argument.value("name", std::string());
  const std::string prefix = argument.value("value", std::string());
  std::vector<std::string> values;
  if (type == "ref/prompt") {
    const std::string prompt_name = ref.value("name", std::string());
    auto prompt =
        std::find_if(catalog_.prompts.begin(), catalog_.prompts.end(),
                     [&](const McpPrompt& p) { return p.definition["name"] == prompt_name; });
    if (prompt == catalog_.prompts.end()) {
      throw RpcFailure(rpc_error::kInvalidParams, "unknown prompt '" + prompt_name + "'");
    }
    values = prompt->complete(name, prefix);
  } else if (type == "ref/resource") {
    const std::string uri = ref.value("uri", std::string());
    auto entry = std::find_if(
        catalog_.templates.begin(), catalog_.templates.end(),
        [&](const McpResourceTemplate& t) { return t.definition["uriTemplate"] == uri; });
    if (entry == catalog_.templates.end()) {
      throw RpcFailure(rpc_error::kInvalidParams, "unknown resource template '" + uri + "'");
    }
    values = entry->complete(name, prefix);
  } else {
    throw RpcFailure(rpc_error::kInvalidParams, "ref.type must be ref/prompt or ref/resource");
  }
  const size_t total = values.size();
  if (values.size() > kMaxCompletions) values.resize(kMaxCompletions);
  return {
      {"completion", {{"values", values}, {"total", total}, {"hasMore", total > values.size()}}}};
}

}  // namespace stickler
