// `stickler serve` over stdio as a client meets it: one JSON-RPC message per line on stdout,
// logs on stderr, and bad input answered while the server goes on.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <signal.h>

#include <nlohmann/json.hpp>

#include "tests/server/served_process.h"

namespace stickler {
namespace {

using nlohmann::json;
using testing::initializeRequest;
using testing::ServedProcess;

json ping(int id) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", "ping"}};
}

class StdioTest : public ::testing::Test {
 protected:
  // The next line on stdout, which must be one JSON-RPC message.
  json next() {
    const auto line = served_.readLine();
    if (!line) {
      ADD_FAILURE() << "no answer from the server";
      return json();
    }
    return json::parse(*line);
  }
  void initialize() {
    served_.writeLine(initializeRequest().dump());
    EXPECT_EQ(next().at("result").at("protocolVersion"), "2025-11-25");
    served_.writeLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  }
  void expectServing(int id) {
    served_.writeLine(ping(id).dump());
    const json answer = next();
    EXPECT_EQ(answer.at("id"), id);
    EXPECT_EQ(answer.at("result"), json::object());
  }

  ServedProcess served_{ServedProcess::Transport::kStdio};
};

TEST_F(StdioTest, ARequestBeforeInitializeIsRefused) {
  served_.writeLine(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  const json answer = next();
  EXPECT_EQ(answer.at("error").at("code"), -32600);
  EXPECT_NE(answer.at("error").at("message").get<std::string>().find("send initialize"),
            std::string::npos);
  initialize();
  expectServing(2);
}

TEST_F(StdioTest, MalformedMessagesGetJsonRpcErrors) {
  initialize();
  served_.writeLine("{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": ");
  json answer = next();
  EXPECT_EQ(answer.at("error").at("code"), -32700);
  EXPECT_TRUE(answer.at("id").is_null());
  served_.writeLine(R"({"jsonrpc":"2.0","id":4,"method":"tools/destroy"})");
  EXPECT_EQ(next().at("error").at("code"), -32601);
  served_.writeLine(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7}})");
  EXPECT_EQ(next().at("error").at("code"), -32602);
  served_.writeLine(R"({"jsonrpc":"1.0","id":6,"method":"ping"})");
  EXPECT_EQ(next().at("error").at("code"), -32600);
  expectServing(7);
}

TEST_F(StdioTest, DeeplyNestedJsonIsAParseErrorEvenBeforeInitialize) {
  // 100,000 levels overflowed the parser's stack (SIGSEGV) before the depth was bounded.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  served_.writeLine(deep);
  json answer = next();
  EXPECT_EQ(answer.at("error").at("code"), -32700);
  EXPECT_NE(answer.at("error").at("message").get<std::string>().find("nested deeper than 256"),
            std::string::npos)
      << answer.dump();
  std::string objects;
  for (int i = 0; i < 70000; ++i) objects += "{\"a\":";
  served_.writeLine(objects + "1" + std::string(70000, '}'));
  EXPECT_EQ(next().at("error").at("code"), -32700);
  // Invalid UTF-8: the parser quotes the bad bytes; the reply is still valid JSON.
  served_.writeLine("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}");
  EXPECT_EQ(next().at("error").at("code"), -32700);
  // A number beyond a double ended the process (std::terminate) until the fuzz target found it.
  served_.writeLine(R"({"jsonrpc":"2.0","id":1e400,"method":"ping"})");
  EXPECT_EQ(next().at("error").at("code"), -32700);
  initialize();
  expectServing(9);
}

TEST_F(StdioTest, AHundredMegabyteMessageIsRefusedWithoutBeingHeld) {
  initialize();
  const long peak_before = served_.peakMemoryKb();
  const std::string piece(1 << 20, ' ');
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(served_.writeBytes(piece.data(), piece.size()));
  served_.writeLine("");
  const json answer = next();
  EXPECT_EQ(answer.at("error").at("code"), -32600);
  EXPECT_NE(answer.at("error").at("message").get<std::string>().find("message too large"),
            std::string::npos);
  EXPECT_LT(served_.peakMemoryKb() - peak_before, 40 * 1024);
  expectServing(8);
}

TEST_F(StdioTest, ToolResultsAndErrorsComeAsLinesOfJson) {
  initialize();
  served_.writeLine(
      json{{"jsonrpc", "2.0"},
           {"id", 9},
           {"method", "tools/call"},
           {"params", {{"name", "inspect_model"}, {"arguments", {{"model", "/etc/passwd"}}}}}}
          .dump());
  const json outside = next();
  EXPECT_TRUE(outside.at("result").at("isError"));
  served_.writeLine(json{{"jsonrpc", "2.0"},
                         {"id", 10},
                         {"method", "tools/call"},
                         {"params", {{"name", "list_profiles"}, {"arguments", json::object()}}}}
                        .dump());
  const json profiles = next();
  EXPECT_FALSE(profiles.at("result").at("isError"));
  EXPECT_EQ(profiles.at("result").at("structuredContent").at("schema"), "stickler.profiles");
}

// A client that stops reading (a closed stdout) must not kill the server with SIGPIPE: it
// finishes its input and exits normally.
TEST_F(StdioTest, AClosedStdoutIsNotFatal) {
  initialize();
  served_.closeStdout();
  served_.writeLine(ping(11).dump());
  served_.writeLine(ping(12).dump());
  served_.closeStdin();
  EXPECT_EQ(served_.wait(), 0);
}

TEST_F(StdioTest, AModelWhoseForwardNeverEndsIsCancelledAndTheServerGoesOn) {
  // Its example run happens in the server's process when the model is loaded, before any
  // device worker: cancellation and the end of input used to leave a core at 100%.
  initialize();
  served_.writeLine(json{
      {"jsonrpc", "2.0"},
      {"id", 5},
      {"method", "tools/call"},
      {"params",
       {{"name", "inspect_model"}, {"arguments", {{"model", "broken/forward-never-ends.pt"}}}}}}
                        .dump());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  served_.writeLine(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}})");
  expectServing(6);  // the cancelled call sends no answer: the next line is the ping's
  // The loop stopped: the process is idle, not spinning a core.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double before = served_.cpuSeconds();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_LT(served_.cpuSeconds() - before, 0.5);
  // A call left running when the input ends is cancelled too, and the server exits.
  served_.writeLine(json{
      {"jsonrpc", "2.0"},
      {"id", 7},
      {"method", "tools/call"},
      {"params",
       {{"name", "inspect_model"}, {"arguments", {{"model", "broken/forward-never-ends.pt"}}}}}}
                        .dump());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  served_.closeStdin();
  EXPECT_EQ(served_.wait(), 0);
}

TEST_F(StdioTest, TheEndOfInputEndsTheServer) {
  initialize();
  served_.closeStdin();
  EXPECT_EQ(served_.wait(), 0);
}

}  // namespace
}  // namespace stickler
