// JSON-RPC parsing, input validation against tool schemas, workspace confinement.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "server/mcp/json_rpc.h"
#include "server/mcp/workspace.h"
#include "simulator/support/errors.h"
#include "tools/framework/input_validation.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

TEST(JsonRpc, ClassifiesMessages) {
  EXPECT_EQ(classifyMessage({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}).kind,
            RpcMessage::Kind::kRequest);
  EXPECT_EQ(classifyMessage({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).kind,
            RpcMessage::Kind::kNotification);
  EXPECT_EQ(classifyMessage({{"jsonrpc", "2.0"}, {"id", "a"}, {"result", json::object()}}).kind,
            RpcMessage::Kind::kResponse);
  const auto invalid = [](const json& message) { return classifyMessage(message).problem; };
  EXPECT_NE(invalid(json::array()).find("batches are not supported"), std::string::npos);
  EXPECT_NE(invalid({{"id", 1}, {"method", "ping"}}).find("\"jsonrpc\" must be \"2.0\""),
            std::string::npos);
  EXPECT_NE(invalid({{"jsonrpc", "2.0"}, {"id", 1.5}, {"method", "ping"}}).find("\"id\""),
            std::string::npos);
  EXPECT_NE(invalid({{"jsonrpc", "2.0"}, {"id", 1}, {"method", 7}}).find("\"method\""),
            std::string::npos);
  EXPECT_NE(invalid({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "x"}, {"params", {1, 2}}})
                .find("\"params\""),
            std::string::npos);
  EXPECT_NE(invalid({{"jsonrpc", "2.0"}, {"id", 1}}).find("neither"), std::string::npos);
}

std::string validationError(const json& schema, const json& value) {
  try {
    validateInput(schema, value);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(valid)";
}

TEST(InputValidation, NamesTheBadField) {
  const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "model": {"type": "string"},
      "inputs": {"type": "array", "items": {"type": "string"}},
      "limit": {"type": "integer", "minimum": 0},
      "mode": {"enum": ["compile", "run"]}
    },
    "required": ["model"],
    "additionalProperties": false
  })");
  EXPECT_EQ(validationError(schema, {{"model", "m.pt"}, {"inputs", {"a"}}, {"limit", 3}}),
            "(valid)");
  EXPECT_EQ(validationError(schema, json::object()), "missing required field 'model'");
  EXPECT_EQ(validationError(schema, {{"model", 3}}),
            "field 'model' must be a string, not an integer");
  EXPECT_EQ(validationError(schema, {{"model", "m"}, {"inputs", {"a", 2}}}),
            "field 'inputs[1]' must be a string, not an integer");
  EXPECT_EQ(validationError(schema, {{"model", "m"}, {"limit", -1}}),
            "field 'limit' must be at least 0");
  EXPECT_EQ(validationError(schema, {{"model", "m"}, {"limit", 1.5}}),
            "field 'limit' must be an integer, not a number");
  EXPECT_EQ(validationError(schema, {{"model", "m"}, {"mode", "fly"}}),
            "field 'mode' must be one of [\"compile\",\"run\"], not \"fly\"");
  EXPECT_EQ(validationError(schema, {{"model", "m"}, {"colour", "red"}}),
            "unknown field 'colour' (expected inputs, limit, mode, model)");
  EXPECT_EQ(validationError(schema, json::array()),
            "the arguments must be an object, not an array");
}

// Both front-ends run operations through runOperation: the input is checked first, and the
// handler sees every property the schema gives a default for.
TEST(RunOperation, ChecksTheInputThenFillsTheSchemasDefaults) {
  Operation operation;
  operation.name = "echo";
  operation.input_schema = json::parse(R"({
    "type": "object",
    "properties": {
      "model": {"type": "string"},
      "profile": {"type": "string", "default": "spyre-2026"},
      "timeout_seconds": {"type": "number", "default": 300},
      "mode": {"enum": ["compile", "run"]}
    },
    "required": ["model"],
    "additionalProperties": false
  })");
  int runs = 0;
  operation.run = [&runs](const json& input, OperationContext&) {
    ++runs;
    return input;
  };
  OperationContext context;
  const json given = runOperation(operation, {{"model", "m.pt"}, {"profile", "p"}}, context);
  EXPECT_EQ(given, json({{"model", "m.pt"}, {"profile", "p"}, {"timeout_seconds", 300}}));
  EXPECT_THROW(runOperation(operation, {{"model", "m.pt"}, {"mode", "fly"}}, context), UserError);
  EXPECT_THROW(runOperation(operation, json::object(), context), UserError);
  EXPECT_EQ(runs, 1);  // bad input never reaches the handler
}

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::path(::testing::TempDir()) / ("workspace-" + std::to_string(::getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_ / "root" / "models");
    fs::create_directories(base_ / "outside");
    std::ofstream(base_ / "root" / "models" / "m.pt") << "x";
    std::ofstream(base_ / "outside" / "secret.pt") << "x";
    fs::create_symlink(base_ / "outside", base_ / "root" / "escape");
    fs::create_symlink(base_ / "outside" / "secret.pt", base_ / "root" / "models" / "link.pt");
  }
  void TearDown() override { fs::remove_all(base_); }
  // The UserError `call` throws, or "(allowed)".
  static std::string refusal(const std::function<void()>& call) {
    try {
      call();
    } catch (const UserError& e) {
      return e.what();
    }
    return "(allowed)";
  }
  fs::path base_;
};

TEST_F(WorkspaceTest, PathsInsideResolve) {
  Workspace workspace({(base_ / "root").string()});
  const std::string root = fs::canonical(base_ / "root").string();
  EXPECT_EQ(workspace.resolve("models/m.pt"), root + "/models/m.pt");
  EXPECT_EQ(workspace.resolve((base_ / "root" / "models" / "m.pt").string()),
            root + "/models/m.pt");
  EXPECT_EQ(workspace.resolve("models/new.pt"), root + "/models/new.pt");  // not there yet
  EXPECT_EQ(workspace.resolve("models/../models/m.pt"), root + "/models/m.pt");
}

TEST_F(WorkspaceTest, EscapesAreRefused) {
  Workspace workspace({(base_ / "root").string()});
  auto errorOf = [&](const std::string& path) { return refusal([&] { workspace.resolve(path); }); };
  EXPECT_NE(errorOf("../outside/secret.pt").find("outside the workspace"), std::string::npos);
  EXPECT_NE(errorOf("/etc/passwd").find("outside the workspace"), std::string::npos);
  EXPECT_NE(errorOf("escape/secret.pt").find("resolves to"),
            std::string::npos);  // a symlinked directory
  EXPECT_NE(errorOf("models/link.pt").find("outside the workspace"),
            std::string::npos);  // a symlinked file
  EXPECT_NE(errorOf("escape/new.pt").find("outside the workspace"),
            std::string::npos);  // a new file behind one
  EXPECT_NE(errorOf("nowhere/x.pt").find("no such file"), std::string::npos);
  EXPECT_THROW(Workspace({(base_ / "missing").string()}), UserError);
}

TEST_F(WorkspaceTest, ADanglingLinkIsResolvedWhereAWriteWouldLand) {
  // adapt_model's save through a dangling link inside the root wrote the archive outside.
  Workspace workspace({(base_ / "root").string()});
  const std::string root = fs::canonical(base_ / "root").string();
  fs::create_symlink(base_ / "outside" / "planted.pt", base_ / "root" / "models" / "out.pt");
  fs::create_symlink("chained.pt", base_ / "root" / "models" / "hop.pt");
  fs::create_symlink(base_ / "outside" / "deeper.pt", base_ / "root" / "models" / "chained.pt");
  fs::create_symlink("new-inside.pt", base_ / "root" / "models" / "inside-link.pt");
  fs::create_symlink("loop-b.pt", base_ / "root" / "models" / "loop-a.pt");
  fs::create_symlink("loop-a.pt", base_ / "root" / "models" / "loop-b.pt");
  for (const char* path : {"models/out.pt", "models/hop.pt"}) {
    try {
      workspace.resolve(path);
      ADD_FAILURE() << path << " was allowed";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("outside the workspace"), std::string::npos) << e.what();
    }
  }
  // A dangling link to a new file inside the root resolves to that file.
  EXPECT_EQ(workspace.resolve("models/inside-link.pt"), root + "/models/new-inside.pt");
  try {
    workspace.resolve("models/loop-a.pt");
    ADD_FAILURE() << "a link loop was allowed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("too many levels of symbolic links"), std::string::npos);
  }
}

TEST_F(WorkspaceTest, AFileAboutToBeWrittenGetsItsMissingFoldersInsideOnly) {
  // adapt_model's save into stickler-repros/ failed when the folder was not there yet.
  Workspace workspace({(base_ / "root").string()});
  const std::string root = fs::canonical(base_ / "root").string();
  EXPECT_EQ(workspace.resolveCreating("stickler-repros/deeper/a.pt"),
            root + "/stickler-repros/deeper/a.pt");
  EXPECT_TRUE(fs::is_directory(base_ / "root" / "stickler-repros" / "deeper"));
  EXPECT_EQ(workspace.resolveCreating("models/b.pt"), root + "/models/b.pt");  // as resolve
  auto errorOf = [&](const std::string& path) {
    return refusal([&] { workspace.resolveCreating(path); });
  };
  // Nothing is created outside: not behind a symlinked folder, not at an absolute path.
  EXPECT_NE(errorOf("escape/made/x.pt").find("outside the workspace"), std::string::npos);
  EXPECT_FALSE(fs::exists(base_ / "outside" / "made"));
  const fs::path elsewhere = base_ / "outside" / "made-too" / "x.pt";
  EXPECT_NE(errorOf(elsewhere.string()).find("outside the workspace"), std::string::npos);
  EXPECT_FALSE(fs::exists(base_ / "outside" / "made-too"));
  EXPECT_NE(errorOf("missing/../../outside/x.pt").find("cannot be reached through '..'"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(base_ / "root" / "missing"));
}

TEST_F(WorkspaceTest, SeveralRoots) {
  Workspace workspace({(base_ / "root").string(), (base_ / "outside").string()});
  EXPECT_EQ(workspace.resolve((base_ / "outside" / "secret.pt").string()),
            fs::canonical(base_ / "outside" / "secret.pt").string());
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

TEST(WorkspaceRoots, RelativePathsAreFoundUnderAnyRoot) {
  namespace fs = std::filesystem;
  const fs::path base = fs::path(::testing::TempDir()) / ("roots-" + std::to_string(::getpid()));
  fs::create_directories(base / "a");
  fs::create_directories(base / "b");
  std::ofstream(base / "b" / "only-in-b.json") << "{}";
  Workspace workspace({(base / "a").string(), (base / "b").string()});
  EXPECT_EQ(workspace.resolve("only-in-b.json"),
            fs::canonical(base / "b" / "only-in-b.json").string());
  EXPECT_EQ(workspace.resolve("new.json"), fs::canonical(base / "a").string() + "/new.json");
  fs::remove_all(base);
}

}  // namespace
}  // namespace stickler
