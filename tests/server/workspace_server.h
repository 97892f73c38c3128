// An MCP server in process over a fresh temporary workspace (the first root) and the zoo, with
// an initialized session: for tests of what tools write into a workspace.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "server/mcp/mcp_server.h"
#include "tests/unit/zoo.h"

namespace stickler {

class DiscardingChannel : public ClientChannel {
 public:
  void send(const nlohmann::json&) override {}
};

class WorkspaceServerTest : public ::testing::Test {
 protected:
  WorkspaceServerTest() : workspace_(makeWorkspace()), server_(options(workspace_)) {
    session_ = server_.createSession();
    request("initialize", {{"protocolVersion", "2025-11-25"},
                           {"capabilities", nlohmann::json::object()},
                           {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
  }
  ~WorkspaceServerTest() override { std::filesystem::remove_all(workspace_); }

  static std::string makeWorkspace() {
    const std::string root =
        ::testing::TempDir() + "workspace-server-" +
        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
        std::to_string(::getpid());
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
    return std::filesystem::canonical(root).string();
  }
  static ServerOptions options(const std::string& workspace) {
    ServerOptions options;
    options.roots = {workspace, testing::zooPath("")};
    return options;
  }

  nlohmann::json request(const std::string& method, const nlohmann::json& params) {
    auto response = server_.handle(
        *session_, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}},
        channel_);
    return response ? *response : nlohmann::json();
  }
  nlohmann::json call(const std::string& tool, const nlohmann::json& arguments) {
    return request("tools/call", {{"name", tool}, {"arguments", arguments}}).at("result");
  }
  nlohmann::json read(const std::string& uri) { return request("resources/read", {{"uri", uri}}); }

  std::string workspace_;
  McpServer server_;
  std::shared_ptr<McpSession> session_;
  DiscardingChannel channel_;
};

}  // namespace stickler
