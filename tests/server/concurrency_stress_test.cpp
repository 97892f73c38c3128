// Many tool calls at once on one server: device runs (model hosts), CPU runs on the server's own
// threads, adapters whose conditions run in sandbox workers, and localizations whose device runs
// abort their hosts. Workers come from the fork server (a copy taken before any thread) or by
// exec, never forked from the busy server, so none can inherit a lock another thread held: no
// call may hang or run out of time.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/build_paths.h"
#include "tests/server/served_process.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using nlohmann::json;
using testing::ServedProcess;

constexpr int kCalls = 300;
constexpr int kInFlight = 40;

// The i-th call of the mix, and what its result must say.
struct Call {
  std::string tool;
  json arguments;
  std::string expect_field;  // in structuredContent
  std::string expect_value;
};

Call callNumber(int i) {
  const std::string abort_profile =
      std::string(testing::kTestProfiles) + "/abort-in-attention.json";
  switch (i % 10) {
    case 0:
    case 1:
    case 2:
    case 3:
      return {
          "run_model",
          {{"model", testing::zooPath("vit-tiny.pt")}, {"backend", "spyre-sim:spyre-2026-clean"}},
          "verdict",
          "pass"};
    case 4:
      return {"run_model",
              {{"model", testing::zooPath("qwen2-hd128.pt")},
               {"backend", "spyre-sim:spyre-2026-clean"}},
              "verdict",
              "pass"};
    case 5:
    case 6:
      return {"run_model",
              {{"model", testing::zooPath(i % 2 ? "gpt2-tiny.pt" : "llama-tiny.pt")},
               {"backend", "cpu"}},
              "verdict",
              "pass"};
    case 7:
      // The catalog's mask fill has a condition: it runs in a sandbox worker each time (a
      // localization adapts on a stack of its own).
      return {
          "localize_divergence",
          {{"model", testing::zooPath("bert-tiny.pt")}, {"profile", "spyre-2026"}, {"adapt", true}},
          "status",
          "passes"};
    case 8:
      return {"adapt_model",
              {{"model", testing::zooPath(i % 3 == 0 ? "bert-tiny.pt" : "xlm-roberta-tiny.pt")},
               {"profile", "spyre-2026"}},
              "verdict",
              "pass"};
    default:
      // Its attention aborts the device: each aborted run ends a model host. The module is
      // what this load needs; the search within it would add as many aborts again.
      return {"localize_divergence",
              {{"model", testing::zooPath("qwen2-hd128.pt")},
               {"profile", abort_profile},
               {"operators", false},
               {"repro", false}},
              "status",
              "localized"};
  }
}

TEST(ConcurrencyStress, ThreeHundredMixedCallsFortyAtATimeAllFinish) {
  ServedProcess served(ServedProcess::Transport::kStdio);
  served.writeLine(testing::initializeRequest().dump());
  ASSERT_TRUE(served.readLine().has_value());
  served.writeLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");

  auto send = [&](int i) {
    const Call call = callNumber(i);
    json arguments = call.arguments;
    arguments["timeout_seconds"] = 120;
    served.writeLine(json{{"jsonrpc", "2.0"},
                          {"id", i},
                          {"method", "tools/call"},
                          {"params", {{"name", call.tool}, {"arguments", arguments}}}}
                         .dump());
  };
  const auto start = std::chrono::steady_clock::now();
  int sent = 0;
  for (; sent < kInFlight; ++sent) send(sent);
  std::map<std::string, int> done_by_tool;
  int answered = 0;
  while (answered < kCalls) {
    const auto line = served.readLine(300000);
    ASSERT_TRUE(line.has_value()) << "no answer after " << answered << " of " << kCalls;
    const json message = json::parse(*line);
    if (!message.contains("id")) continue;  // a notification (progress, a log line)
    const int id = message["id"].get<int>();
    const Call call = callNumber(id);
    ASSERT_TRUE(message.contains("result")) << message.dump();
    const json& result = message["result"];
    ASSERT_FALSE(result.value("isError", false))
        << call.tool << " #" << id << ": " << result.dump();
    const json& content = result.at("structuredContent");
    EXPECT_EQ(content.value(call.expect_field, ""), call.expect_value)
        << call.tool << " #" << id << ": " << content.dump().substr(0, 2000);
    ++done_by_tool[call.tool];
    ++answered;
    if (sent < kCalls) send(sent++);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d calls in %.1f s:", kCalls, seconds);
  for (const auto& [tool, count] : done_by_tool) std::printf(" %s %d", tool.c_str(), count);
  std::printf("\n");
  EXPECT_TRUE(served.alive());
}

}  // namespace
}  // namespace stickler
