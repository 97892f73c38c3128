// The MCP protocol in process: lifecycle, tools, resources, prompts, completion, logging,
// progress, cancellation, requests to the client, and the tool schemas' snapshot.
#include "server/mcp/mcp_server.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "simulator/device/device_profile.h"
#include "tests/build_paths.h"
#include "tests/unit/synthetic_models.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using nlohmann::json;

class RecordingChannel : public ClientChannel {
 public:
  void send(const json& message) override {
    std::lock_guard<std::mutex> lock(mutex);
    sent.push_back(message);
  }
  std::vector<json> notifications(const std::string& method) {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<json> found;
    for (const auto& message : sent) {
      if (message.value("method", "") == method) found.push_back(message);
    }
    return found;
  }
  std::mutex mutex;
  std::vector<json> sent;
};

std::string zooRoot() {
  return testing::zooPath("");
}

class McpServerTest : public ::testing::Test {
 protected:
  McpServerTest() : server_(options()) { session_ = server_.createSession(); }

  static ServerOptions options() {
    ServerOptions options;
    options.roots = {zooRoot(), testing::kTestProfiles};
    options.conformance_fixtures = true;
    return options;
  }

  json request(const std::string& method, json params = json::object(), int id = 1) {
    auto response = server_.handle(
        *session_, {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}},
        channel_);
    return response ? *response : json();
  }
  json initialize(const std::string& version = "2025-11-25", json capabilities = json::object()) {
    return request("initialize", {{"protocolVersion", version},
                                  {"capabilities", capabilities},
                                  {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
  }
  json call(const std::string& tool, json arguments, const json& meta = nullptr) {
    json params{{"name", tool}, {"arguments", arguments}};
    if (!meta.is_null()) params["_meta"] = meta;
    return request("tools/call", params).at("result");
  }

  McpServer server_;
  std::shared_ptr<McpSession> session_;
  RecordingChannel channel_;
};

TEST_F(McpServerTest, InitializeNegotiatesTheProtocol) {
  const json result = initialize().at("result");
  EXPECT_EQ(result.at("protocolVersion"), "2025-11-25");
  EXPECT_EQ(result.at("serverInfo").at("name"), "stickler");
  EXPECT_TRUE(result.at("capabilities").contains("tools"));
  EXPECT_TRUE(result.at("capabilities").at("resources").at("subscribe"));
  EXPECT_NE(result.at("instructions").get<std::string>().find("check_support"), std::string::npos);
  for (const std::string version : {"2025-06-18", "2025-03-26"}) {
    auto session = server_.createSession();
    auto answer = server_.handle(*session,
                                 {{"jsonrpc", "2.0"},
                                  {"id", 1},
                                  {"method", "initialize"},
                                  {"params", {{"protocolVersion", version}}}},
                                 channel_);
    EXPECT_EQ(answer->at("result").at("protocolVersion"), version);
  }
  auto future = server_.createSession();
  auto answer = server_.handle(*future,
                               {{"jsonrpc", "2.0"},
                                {"id", 1},
                                {"method", "initialize"},
                                {"params", {{"protocolVersion", "2099-01-01"}}}},
                               channel_);
  EXPECT_EQ(answer->at("result").at("protocolVersion"), "2025-11-25");  // ours, the client decides
  EXPECT_EQ(initialize().at("error").at("code"), -32600);               // only once per session
}

TEST_F(McpServerTest, ErrorsHaveTheRightCodes) {
  EXPECT_EQ(request("tools/list").at("error").at("code"), -32600);  // before initialize
  EXPECT_EQ(request("ping").at("result"), json::object());          // ping is always fine
  initialize();
  EXPECT_EQ(request("no/such/method").at("error").at("code"), -32601);
  EXPECT_EQ(request("tools/call", {{"name", "no_such_tool"}}).at("error").at("code"), -32602);
  EXPECT_EQ(request("tools/call", {{"name", 5}}).at("error").at("code"), -32602);
  EXPECT_EQ(request("tools/list", {{"cursor", "garbage"}}).at("error").at("code"), -32602);
  EXPECT_EQ(request("resources/read", {{"uri", "stickler://nothing"}}).at("error").at("code"),
            -32002);
  EXPECT_EQ(request("logging/setLevel", {{"level", "loud"}}).at("error").at("code"), -32602);
  auto invalid =
      server_.handle(*session_, {{"jsonrpc", "1.0"}, {"id", 9}, {"method", "ping"}}, channel_);
  EXPECT_EQ(invalid->at("error").at("code"), -32600);
  EXPECT_EQ(invalid->at("id"), 9);
}

TEST_F(McpServerTest, ToolsComeFromTheOperationTableWithHonestAnnotations) {
  initialize();
  const json tools = request("tools/list").at("result").at("tools");
  std::set<std::string> names;
  for (const auto& tool : tools) names.insert(tool.at("name"));
  const std::set<std::string> stickler_tools = {"inspect_model", "check_support", "run_model",
                                                "list_profiles"};
  for (const auto& name : stickler_tools) ASSERT_TRUE(names.count(name)) << name;
  for (const auto& tool : tools) {
    const std::string name = tool.at("name");
    if (!stickler_tools.count(name)) continue;
    EXPECT_FALSE(tool.at("annotations").at("openWorldHint")) << name;
    EXPECT_TRUE(tool.at("annotations").at("readOnlyHint")) << name;
    EXPECT_FALSE(tool.at("annotations").at("destructiveHint")) << name;
    EXPECT_TRUE(tool.contains("outputSchema")) << name;
    EXPECT_FALSE(tool.at("description").get<std::string>().empty()) << name;
  }
}

TEST_F(McpServerTest, ToolCallsReturnStructuredContentOrActionableErrors) {
  initialize();
  const json result = call("check_support", {{"model", "gpt2-tiny.pt"}, {"profile", "spyre-2025"}});
  EXPECT_FALSE(result.at("isError"));
  EXPECT_EQ(result.at("structuredContent").at("schema"), "stickler.check");
  EXPECT_EQ(json::parse(result.at("content").at(0).at("text").get<std::string>()),
            result.at("structuredContent"));

  const json bad_field = call("check_support", {{"model", "gpt2-tiny.pt"}, {"profile", 2025}});
  EXPECT_TRUE(bad_field.at("isError"));
  EXPECT_EQ(bad_field.at("content").at(0).at("text"),
            "field 'profile' must be a string, not an integer");

  const json outside = call("inspect_model", {{"model", "/etc/passwd"}});
  EXPECT_TRUE(outside.at("isError"));
  EXPECT_NE(outside.at("content").at(0).at("text").get<std::string>().find("outside the workspace"),
            std::string::npos);

  const json broken = call("inspect_model", {{"model", "broken/truncated.pt"}});
  EXPECT_TRUE(broken.at("isError"));
  EXPECT_NE(broken.at("content").at(0).at("text").get<std::string>().find("truncated or corrupt"),
            std::string::npos);
}

TEST_F(McpServerTest, ListProfilesNamesEveryShippedProfileAndItsResource) {
  initialize();
  const json result = call("list_profiles", json::object());
  ASSERT_FALSE(result.at("isError")) << result.dump();
  std::vector<std::string> names;
  for (const auto& profile : result.at("structuredContent").at("profiles")) {
    names.push_back(profile.at("name"));
    const json read = request("resources/read", {{"uri", profile.at("resource")}});
    EXPECT_TRUE(read.contains("result")) << read.dump();
    if (profile.at("name") == "spyre-2025") {
      EXPECT_EQ(profile.at("unsupported_operators"), 9);
      EXPECT_GT(profile.at("fault_rules").get<int>(), 0);
    }
    if (profile.at("name") == "spyre-2026-clean") {
      EXPECT_EQ(profile.at("fault_rules"), 0);
    }
    // The device does not tell its bugs: the resource has the stack's facts, its lineage and
    // content hash, and not one of its fault rules.
    const std::string text = read.at("result").at("contents").at(0).at("text");
    const json document = json::parse(text);
    EXPECT_FALSE(document.contains("faults")) << profile.at("name");
    EXPECT_EQ(document.at("fault_rules"), profile.at("fault_rules"));
    EXPECT_EQ(document.at("content_sha256").get<std::string>().size(), 64u);
    EXPECT_EQ(document.at("lineage").at(0), profile.at("name"));
    for (const FaultRule& fault : loadProfile(profile.at("name")).faults) {
      EXPECT_EQ(text.find(fault.id), std::string::npos) << fault.id;
      EXPECT_EQ(result.dump().find(fault.id), std::string::npos) << fault.id;
    }
  }
  EXPECT_EQ(names, listProfiles());
  EXPECT_TRUE(call("list_profiles", {{"unexpected", 1}}).at("isError"));

  // A profile given by path (a lab build, a test profile) is listed after them, with its path;
  // one outside the workspace is refused.
  const json given = call("list_profiles", {{"paths", {"layernorm-after-add.json"}}});
  ASSERT_FALSE(given.at("isError")) << given.dump();
  const json& listed = given.at("structuredContent").at("profiles");
  ASSERT_EQ(listed.size(), listProfiles().size() + 1);
  EXPECT_EQ(listed.back().at("name"), "test-layernorm-after-add");
  EXPECT_EQ(listed.back().at("fusion"), "pointwise");
  EXPECT_NE(listed.back().at("path").get<std::string>().find("layernorm-after-add.json"),
            std::string::npos);
  EXPECT_FALSE(listed.back().contains("resource"));
  const json outside = call("list_profiles", {{"paths", {"/etc/passwd"}}});
  EXPECT_TRUE(outside.at("isError"));
  EXPECT_NE(outside.at("content").at(0).at("text").get<std::string>().find("outside the workspace"),
            std::string::npos);
}

TEST_F(McpServerTest, CheckSupportGivesTheStacksFactsAndHashNotItsFaultRules) {
  initialize();
  const json result = call("check_support", {{"model", "gpt2-tiny.pt"}, {"profile", "spyre-2026"}});
  ASSERT_FALSE(result.at("isError")) << result.dump();
  const json& profile = result.at("structuredContent").at("profile");
  EXPECT_FALSE(profile.contains("faults")) << profile.dump();
  EXPECT_EQ(profile.at("content_sha256"), loadProfile("spyre-2026").content_sha256);
  EXPECT_NE(profile.at("content_sha256"), loadProfile("spyre-2026-clean").content_sha256);
  EXPECT_EQ(profile.at("fault_rules"), loadProfile("spyre-2026").faults.size());
  const std::string text = result.dump();
  for (const FaultRule& fault : loadProfile("spyre-2026").faults) {
    EXPECT_EQ(text.find(fault.id), std::string::npos) << fault.id;
  }
  // Nor does any page the server serves name a shipped fault rule.
  const json listed = request("resources/list", json::object());
  size_t pages = 0;
  for (const auto& resource : listed.at("result").at("resources")) {
    const std::string uri = resource.at("uri");
    if (uri.rfind("stickler://docs/", 0) != 0) continue;
    ++pages;
    const std::string page =
        request("resources/read", {{"uri", uri}}).at("result").at("contents").at(0).at("text");
    for (const auto& name : listProfiles()) {
      for (const FaultRule& fault : loadProfile(name).faults) {
        EXPECT_EQ(page.find(fault.id), std::string::npos) << uri << " names " << fault.id;
      }
    }
  }
  EXPECT_GT(pages, 10u);
  EXPECT_TRUE(
      request("resources/read", {{"uri", "stickler://docs/simulated-faults"}}).contains("error"));
}

TEST_F(McpServerTest, ThePatternReferenceIsServedAndAnyOperatorCanBeAsked) {
  initialize();
  const json page = request("resources/read", {{"uri", "stickler://pattern-reference"}});
  const std::string text = page.at("result").at("contents").at(0).at("text");
  EXPECT_NE(text.find("## aten::topk\n"), std::string::npos);
  EXPECT_NE(text.find("values, indices = torch.topk(self, k, dim, largest, sorted)"),
            std::string::npos);
  // Operators no profile names, through the template.
  const json nonzero =
      request("resources/read", {{"uri", "stickler://pattern-reference/aten::nonzero"}});
  EXPECT_NE(nonzero.at("result")
                .at("contents")
                .at(0)
                .at("text")
                .get<std::string>()
                .find("torch.nonzero(self)"),
            std::string::npos)
      << nonzero.dump();
  const json unknown =
      request("resources/read", {{"uri", "stickler://pattern-reference/aten::no_such_op"}});
  EXPECT_EQ(unknown.at("error").at("code"), -32002);
  EXPECT_NE(unknown.at("error").at("message").get<std::string>().find(
                "there is no operator aten::no_such_op"),
            std::string::npos);
  const json templates = request("resources/templates/list").at("result").at("resourceTemplates");
  bool listed = false;
  for (const auto& entry : templates) {
    listed = listed || entry.at("uriTemplate") == "stickler://pattern-reference/{op}";
  }
  EXPECT_TRUE(listed) << templates.dump();
}

TEST_F(McpServerTest, LongListsArePaged) {
  initialize();
  const json first = call("inspect_model", {{"model", "llama-tiny.pt"}}).at("structuredContent");
  EXPECT_EQ(first.at("nodes").size(), 100u);  // the MCP default page
  EXPECT_GT(first.at("nodes_total").get<size_t>(), 100u);
  const size_t next = first.at("next_nodes_offset");
  const json second = call("inspect_model", {{"model", "llama-tiny.pt"}, {"node_offset", next}})
                          .at("structuredContent");
  EXPECT_EQ(second.at("nodes").at(0).at("index"), next);
  EXPECT_LT(first.dump().size(), 100000u);  // well under 25,000 tokens
  EXPECT_EQ(session_->models.loads(), 1u);  // the session kept the model
}

TEST_F(McpServerTest, ADeviceAbortIsAResultAndTheServerGoesOn) {
  initialize();
  const json result = call(
      "run_model", {{"model", "qwen2-hd128.pt"},
                    {"backend", "spyre-sim:" + testing::testProfile("abort-in-attention.json")}});
  EXPECT_FALSE(result.at("isError"));
  EXPECT_EQ(result.at("structuredContent").at("verdict"), "aborted");
  EXPECT_EQ(result.at("structuredContent").at("run").at("module"), "model.layers.0.self_attn");
  EXPECT_EQ(request("ping").at("result"), json::object());
}

TEST_F(McpServerTest, ProgressAndLogsReachTheClient) {
  initialize();
  call("run_model", {{"model", "vit-tiny.pt"}, {"backend", "cpu"}}, {{"progressToken", "tok"}});
  const auto progress = channel_.notifications("notifications/progress");
  ASSERT_GE(progress.size(), 3u);
  double last = -1;
  for (const auto& note : progress) {
    EXPECT_EQ(note.at("params").at("progressToken"), "tok");
    EXPECT_GT(note.at("params").at("progress").get<double>(), last);
    last = note.at("params").at("progress");
  }
  call("test_tool_with_logging", json::object());
  EXPECT_EQ(channel_.notifications("notifications/message").size(), 3u);
  request("logging/setLevel", {{"level", "error"}});
  call("test_tool_with_logging", json::object());
  EXPECT_EQ(channel_.notifications("notifications/message").size(), 3u);  // info is below error now
}

TEST_F(McpServerTest, ACancelledCallGetsNoResponse) {
  initialize();
  std::optional<json> response = json();
  std::thread caller([&] {
    response = server_.handle(*session_,
                              {{"jsonrpc", "2.0"},
                               {"id", 77},
                               {"method", "tools/call"},
                               {"params", {{"name", "test_tool_with_progress"}}}},
                              channel_);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  server_.handle(*session_,
                 {{"jsonrpc", "2.0"},
                  {"method", "notifications/cancelled"},
                  {"params", {{"requestId", 77}, {"reason", "test"}}}},
                 channel_);
  caller.join();
  EXPECT_FALSE(response.has_value());
}

TEST_F(McpServerTest, RequestsToTheClientAreMatchedWithTheirResponses) {
  initialize("2025-11-25", {{"sampling", json::object()}});
  std::optional<json> response;
  std::thread caller([&] {
    response =
        server_.handle(*session_,
                       {{"jsonrpc", "2.0"},
                        {"id", 5},
                        {"method", "tools/call"},
                        {"params", {{"name", "test_sampling"}, {"arguments", {{"prompt", "hi"}}}}}},
                       channel_);
  });
  json sent;
  for (int i = 0; i < 200 && sent.is_null(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto requests = channel_.notifications("sampling/createMessage");
    if (!requests.empty()) sent = requests[0];
  }
  ASSERT_FALSE(sent.is_null());
  EXPECT_EQ(sent.at("params").at("messages").at(0).at("content").at("text"), "hi");
  server_.handle(
      *session_,
      {{"jsonrpc", "2.0"},
       {"id", sent.at("id")},
       {"result", {{"role", "assistant"}, {"content", {{"type", "text"}, {"text", "hello"}}}}}},
      channel_);
  caller.join();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->at("result").at("content").at(0).at("text"), "LLM response: hello");
}

TEST_F(McpServerTest, ResourcesPromptsAndCompletion) {
  initialize();
  const json resources = request("resources/list").at("result").at("resources");
  bool has_profile = false, has_doc = false;
  for (const auto& resource : resources) {
    has_profile = has_profile || resource.at("uri") == "stickler://profiles/spyre-2026";
    has_doc = has_doc || resource.at("uri") == "stickler://docs/device-profiles";
    EXPECT_TRUE(resource.contains("name"));
    EXPECT_TRUE(resource.contains("description"));
  }
  EXPECT_TRUE(has_profile);
  EXPECT_TRUE(has_doc);
  const json profile =
      request("resources/read", {{"uri", "stickler://profiles/spyre-2025"}}).at("result");
  EXPECT_EQ(json::parse(profile.at("contents").at(0).at("text").get<std::string>()).at("name"),
            "spyre-2025");
  EXPECT_EQ(request("resources/read", {{"uri", "stickler://profiles/../../etc/passwd"}})
                .at("error")
                .at("code"),
            -32002);
  EXPECT_EQ(request("resources/templates/list").at("result").at("resourceTemplates").size(),
            10u);  // 2 + pattern reference + reports + repros + reviews + knowledge, skills,
                   // gotchas + fixture
  EXPECT_NE(request("resources/read", {{"uri", "test://template/42/data"}}).dump().find("42"),
            std::string::npos);

  const json prompt = request(
      "prompts/get", {{"name", "bring_up_model"}, {"arguments", {{"model", "gpt2-tiny.pt"}}}});
  EXPECT_NE(prompt.at("result")
                .at("messages")
                .at(0)
                .at("content")
                .at("text")
                .get<std::string>()
                .find("check_support"),
            std::string::npos);
  EXPECT_EQ(request("prompts/get", {{"name", "bring_up_model"}}).at("error").at("code"), -32602);

  const json profiles = request("completion/complete",
                                {{"ref", {{"type", "ref/prompt"}, {"name", "bring_up_model"}}},
                                 {"argument", {{"name", "profile"}, {"value", "spyre-2025"}}}});
  EXPECT_EQ(profiles.at("result").at("completion").at("values"),
            json({"spyre-2025", "spyre-2025-clean"}));
  const json models =
      request("completion/complete", {{"ref", {{"type", "ref/prompt"}, {"name", "bring_up_model"}}},
                                      {"argument", {{"name", "model"}, {"value", "gpt2"}}}});
  EXPECT_GE(models.at("result").at("completion").at("values").size(), 3u);
  EXPECT_EQ(request("resources/subscribe", {{"uri", "test://watched-resource"}}).at("result"),
            json::object());
  EXPECT_TRUE(session_->subscribed("test://watched-resource"));
}

// An attacker subscribed one session to 3,000 URIs of 100 KB, none of them a resource, and
// the server grew by 290 MB (issue 34 item 2).
TEST_F(McpServerTest, SubscriptionsAreToResourcesThatExistAndAreBoundedInSizeAndNumber) {
  initialize();
  const json missing = request("resources/subscribe", {{"uri", "test://no-such-resource"}});
  EXPECT_EQ(missing.at("error").at("code"), -32002) << missing.dump();
  EXPECT_FALSE(session_->subscribed("test://no-such-resource"));

  const std::string long_uri = "test://template/" + std::string(4096, 'a') + "/data";
  ASSERT_TRUE(request("resources/read", {{"uri", long_uri}}).contains("result"));
  const json too_long = request("resources/subscribe", {{"uri", long_uri}});
  EXPECT_EQ(too_long.at("error").at("code"), -32602) << too_long.dump();
  EXPECT_NE(too_long.at("error").at("message").get<std::string>().find("2048 bytes"),
            std::string::npos);

  const auto uri = [](size_t i) { return "test://template/" + std::to_string(i) + "/data"; };
  for (size_t i = 0; i < McpSession::kMaxSubscriptions; ++i) {
    ASSERT_TRUE(request("resources/subscribe", {{"uri", uri(i)}}).contains("result")) << i;
  }
  const json one_more =
      request("resources/subscribe", {{"uri", uri(McpSession::kMaxSubscriptions)}});
  EXPECT_EQ(one_more.at("error").at("code"), -32602) << one_more.dump();
  EXPECT_NE(one_more.at("error").at("message").get<std::string>().find("unsubscribe"),
            std::string::npos);
  EXPECT_EQ(session_->subscriptions().size(), McpSession::kMaxSubscriptions);
  // Subscribing again to a held URI is not a new one, and unsubscribing makes room.
  EXPECT_TRUE(request("resources/subscribe", {{"uri", uri(0)}}).contains("result"));
  request("resources/unsubscribe", {{"uri", uri(0)}});
  EXPECT_TRUE(request("resources/subscribe", {{"uri", uri(McpSession::kMaxSubscriptions)}})
                  .contains("result"));
}

ServerOptions zooOnly() {
  ServerOptions options;
  options.roots = {zooRoot()};
  return options;
}

TEST(McpSessions, IdleSessionsEndAndBusyOnesStay) {
  ServerOptions options = zooOnly();
  options.session_idle_seconds = 0.2;
  McpServer server(options);
  auto idle = server.createSession();
  auto busy = server.createSession();
  busy->beginRequest(7);  // a long tool call
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server.findSession(idle->id()), nullptr);
  EXPECT_NE(server.findSession(busy->id()), nullptr);
  busy->endRequest(7);
  EXPECT_NE(server.findSession(busy->id()), nullptr);  // its call just ended: recently active
  EXPECT_EQ(server.sessionCount(), 1u);
}

TEST(McpSessions, AtTheCapTheLeastRecentlyActiveIdleSessionEnds) {
  ServerOptions options = zooOnly();
  options.max_sessions = 2;
  McpServer server(options);
  auto first = server.createSession();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto second = server.createSession();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  server.findSession(first->id());  // first is now the more recent
  auto third = server.createSession();
  ASSERT_NE(third, nullptr);
  EXPECT_NE(server.findSession(first->id()), nullptr);
  EXPECT_EQ(server.findSession(second->id()), nullptr);

  first->beginRequest(1);
  third->beginRequest(2);
  EXPECT_EQ(server.createSession(), nullptr);  // every session is busy: refuse, end nothing
  EXPECT_EQ(server.sessionCount(), 2u);
}

// The tool schemas are a contract with agents: a change to them must be deliberate.
TEST_F(McpServerTest, ToolSchemasMatchTheirSnapshot) {
  McpServer server(zooOnly());
  auto session = server.createSession();
  RecordingChannel channel;
  server.handle(
      *session,
      {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", json::object()}},
      channel);
  const json tools =
      server.handle(*session, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}}, channel)
          ->at("result")
          .at("tools");
  const std::string path =
      std::string(testing::kSourceDir) + "/tests/server/tool_schemas.snapshot.json";
  if (std::getenv("STICKLER_UPDATE_SNAPSHOTS")) std::ofstream(path) << tools.dump(2) << "\n";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no snapshot at " << path
                  << ": run with STICKLER_UPDATE_SNAPSHOTS=1 to write it";
  EXPECT_EQ(tools, json::parse(in)) << "tools/list changed; if that is intended, rerun with "
                                       "STICKLER_UPDATE_SNAPSHOTS=1 and review the diff";
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// A decode reads the archive's own prefill and step graphs: once the session adapted the model,
// run_model and localize_divergence with decode say to go through adapt_model, whose decode
// applies the session's adapters to those graphs too.
TEST_F(McpServerTest, ADecodeOfASessionAdaptedModelGoesThroughAdaptModel) {
  initialize();
  const json applied = call(
      "apply_adapter",
      {{"model", "llama-hd64.pt"}, {"adapter", "pad-attention-heads"}, {"profile", "spyre-2026"}});
  ASSERT_FALSE(applied.at("isError")) << applied.dump();
  for (const auto& [tool, arguments] : std::vector<std::pair<std::string, json>>{
           {"run_model", {{"model", "llama-hd64.pt"}, {"decode", 2}}},
           {"localize_divergence",
            {{"model", "llama-hd64.pt"}, {"profile", "spyre-2026"}, {"decode", 2}}}}) {
    const json refused = call(tool, arguments);
    EXPECT_TRUE(refused.at("isError")) << tool;
    const std::string text = refused.at("content").at(0).at("text");
    EXPECT_NE(text.find("this session applied adapters to the model (pad-attention-heads)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("decode it with adapt_model and decode"), std::string::npos) << text;
  }
  const json adapted =
      call("adapt_model", {{"model", "llama-hd64.pt"}, {"profile", "spyre-2026"}, {"decode", 2}});
  ASSERT_FALSE(adapted.at("isError")) << adapted.dump();
  const json& report = adapted.at("structuredContent");
  EXPECT_EQ(report.at("verdict"), "pass") << report.dump(1);
  const json& step_took = report.at("decode").at("adapters").at("decode_step");
  EXPECT_NE(std::find(step_took.begin(), step_took.end(), "pad-attention-heads"), step_took.end())
      << step_took.dump();
}

// all_causes and max_runs over MCP: the fused add + layer_norm fault fails vit-tiny in five
// pairs of modules; 20 runs name the first pair, confirmed, and stop before the second is.
TEST_F(McpServerTest, LocalizeNamesCausesWithinItsRunBudget) {
  initialize();
  const json result = call("localize_divergence", {{"model", "vit-tiny.pt"},
                                                   {"profile", "layernorm-after-add.json"},
                                                   {"all_causes", true},
                                                   {"max_runs", 20}});
  ASSERT_FALSE(result.at("isError")) << result.dump();
  const json& report = result.at("structuredContent");
  ASSERT_EQ(report.at("status"), "budget_exhausted") << report.dump(1);
  EXPECT_TRUE(report.at("all_causes"));
  EXPECT_EQ(report.at("budget").at("max_runs"), 20);
  EXPECT_LE(report.at("device_runs").get<int64_t>(), 20);
  ASSERT_GE(report.at("causes").size(), 1u);
  const json& first = report.at("causes").at(0);
  EXPECT_EQ(first.at("modules").at(0).at("module"), "embeddings");
  EXPECT_EQ(first.at("modules").at(1).at("module"), "encoder.layer.0.layernorm_before");
  EXPECT_TRUE(first.at("confirmation").at("confirmed"));
  EXPECT_FALSE(report.at("budget").at("undecided").at("modules").empty());
}

}  // namespace
}  // namespace stickler
