// User code run in this process is bounded in time and cancellable (issue 15, items 4 and 7):
// a forward that never ends is an error after the limit, or stops when the caller cancels.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "simulator/graph/loaded_model.h"
#include "simulator/support/execution_limit.h"
#include "simulator/support/task_control.h"
#include "tests/unit/zoo.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

const std::string& neverEnds() {
  static const std::string path = testing::zooPath("broken/forward-never-ends.pt");
  return path;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(ExecutionLimit, AForwardThatNeverEndsIsStoppedAtTheLimit) {
  const ExecutionLimitScope limit({0.5, nullptr});
  const auto start = std::chrono::steady_clock::now();
  try {
    loadModel(neverEnds());
    FAIL() << "a forward that never ends finished";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(neverEnds() + ": the model does not run on its example inputs: ", 0),
              0u)
        << message;
    EXPECT_NE(message.find("more than 0.5 s"), std::string::npos) << message;
  }
  // Stopped soon after the limit, not at some far later check.
  EXPECT_LT(secondsSince(start), 20.0);
}

TEST(ExecutionLimit, ACancelledRunStops) {
  std::atomic<bool> cancelled{false};
  const ExecutionLimitScope limit({0.0, &cancelled});  // no time limit: only the flag stops it
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancelled = true;
  });
  EXPECT_THROW(loadModel(neverEnds()), Cancelled);
  canceller.join();
}

TEST(ExecutionLimit, TheLimitIsPerThreadAndScoped) {
  EXPECT_EQ(currentExecutionLimit().seconds, 0.0);
  {
    const ExecutionLimitScope outer({7.0, nullptr});
    {
      const ExecutionLimitScope inner({2.0, nullptr});
      EXPECT_EQ(currentExecutionLimit().seconds, 2.0);
      double other_thread = -1;
      std::thread([&] { other_thread = currentExecutionLimit().seconds; }).join();
      EXPECT_EQ(other_thread, 0.0);
    }
    EXPECT_EQ(currentExecutionLimit().seconds, 7.0);
  }
  EXPECT_EQ(currentExecutionLimit().seconds, 0.0);
}

TEST(ExecutionLimit, AnOperationsTimeoutBoundsTheExampleRunAtLoad) {
  // run_model's timeout_seconds bounds the example run too, which happens before any worker.
  OperationContext context;
  const auto start = std::chrono::steady_clock::now();
  try {
    runOperation(operationNamed("run_model"), {{"model", neverEnds()}, {"timeout_seconds", 1}},
                 context);
    FAIL() << "ran";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 1 s and was stopped"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(secondsSince(start), 30.0);
}

TEST(ExecutionLimit, ToolsWithoutATimeoutTakeTheEnvironmentsBudget) {
  // inspect_model has no timeout_seconds: STICKLER_TIMEOUT_SECONDS is its budget (300 s when
  // unset), so that a model whose example run is long can still be inspected.
  ::setenv("STICKLER_TIMEOUT_SECONDS", "0.5", 1);
  EXPECT_EQ(defaultExecutionSeconds(), 0.5);
  OperationContext context;
  try {
    runOperation(operationNamed("inspect_model"), {{"model", neverEnds()}}, context);
    FAIL() << "inspected";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 0.5 s"), std::string::npos) << e.what();
  }
  ::setenv("STICKLER_TIMEOUT_SECONDS", "not a number", 1);
  EXPECT_EQ(defaultExecutionSeconds(), kDefaultExecutionSeconds);
  ::unsetenv("STICKLER_TIMEOUT_SECONDS");
  EXPECT_EQ(defaultExecutionSeconds(), kDefaultExecutionSeconds);
}

}  // namespace
}  // namespace stickler
