// The worker process: what a device run that returns, throws, aborts or hangs looks like.
#include "simulator/backends/worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <unistd.h>

namespace stickler {
namespace {

TEST(Worker, ReturnsWhatTheJobReturns) {
  const auto outcome = runInWorker(
      [](WorkerProgress& progress) {
        progress.node = 7;
        return std::string("bytes\0with a nul", 16);
      },
      30);
  EXPECT_EQ(outcome.status, WorkerOutcome::Status::kCompleted);
  EXPECT_EQ(outcome.payload, std::string("bytes\0with a nul", 16));
  EXPECT_EQ(outcome.node, 7);
}

TEST(Worker, AnAbortIsAResultWithWhereItHappened) {
  const auto outcome = runInWorker(
      [](WorkerProgress& progress) -> std::string {
        progress.node = 42;
        progress.module_call = 3;
        std::fprintf(stderr, "vendor.cpp:12: Assertion `x' failed.\n");
        std::abort();
      },
      30);
  EXPECT_EQ(outcome.status, WorkerOutcome::Status::kAborted);
  EXPECT_EQ(outcome.signal, SIGABRT);
  EXPECT_EQ(outcome.node, 42);
  EXPECT_EQ(outcome.module_call, 3);
  EXPECT_NE(outcome.stderr_text.find("Assertion `x' failed"), std::string::npos);
}

TEST(Worker, AnExceptionIsAFailure) {
  const auto outcome = runInWorker(
      [](WorkerProgress&) -> std::string { throw std::runtime_error("no memory"); }, 30);
  EXPECT_EQ(outcome.status, WorkerOutcome::Status::kFailed);
  EXPECT_EQ(outcome.message, "no memory");
}

TEST(Worker, AHangIsKilledAtTheTimeout) {
  const auto outcome = runInWorker(
      [](WorkerProgress&) -> std::string {
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return "";
      },
      0.5);
  EXPECT_EQ(outcome.status, WorkerOutcome::Status::kTimedOut);
  EXPECT_LT(outcome.seconds, 30.0);
}

TEST(Worker, LargeResultsAndLogsDoNotDeadlock) {
  const auto outcome = runInWorker(
      [](WorkerProgress&) {
        for (int i = 0; i < 20000; ++i) std::fprintf(stderr, "log line %d\n", i);
        return std::string(8 << 20, 'x');
      },
      60);
  EXPECT_EQ(outcome.status, WorkerOutcome::Status::kCompleted);
  EXPECT_EQ(outcome.payload.size(), size_t{8} << 20);
  EXPECT_NE(outcome.stderr_text.find("log line 19999"), std::string::npos);
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

TEST(Worker, ACancelledRunIsKilledAtOnce) {
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancelled = true;
  });
  const auto outcome = runInWorker(
      [](WorkerProgress&) -> std::string {
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return "";
      },
      60, &cancelled);
  canceller.join();
  EXPECT_EQ(outcome.status, WorkerOutcome::Status::kCancelled);
  EXPECT_LT(outcome.seconds, 10.0);
}

}  // namespace
// Device runs go on side by side (localization, a server's concurrent calls). A worker forked
// by one thread must not keep another run's pipe open: that run would then wait for the end of
// its output until this worker exits, and be reported as timed out though it finished at once.
TEST(Worker, ConcurrentRunsFinishWhenTheirOwnWorkerDoes) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> long_runs;
  for (int i = 0; i < 2; ++i) {
    long_runs.emplace_back([&stop] {
      while (!stop) {
        runInWorker(
            [](WorkerProgress&) {
              ::usleep(3'000'000);
              return std::string("slow");
            },
            60, &stop);
      }
    });
  }
  std::atomic<int> timed_out{0};
  std::atomic<int> completed{0};
  std::vector<std::thread> quick_runs;
  for (int i = 0; i < 3; ++i) {
    quick_runs.emplace_back([&] {
      for (int run = 0; run < 15; ++run) {
        // Far longer than a job that returns at once needs, far shorter than the slow jobs.
        const WorkerOutcome outcome =
            runInWorker([](WorkerProgress&) { return std::string("quick"); }, 2.0);
        if (outcome.status == WorkerOutcome::Status::kTimedOut) ++timed_out;
        if (outcome.status == WorkerOutcome::Status::kCompleted && outcome.payload == "quick") {
          ++completed;
        }
      }
    });
  }
  for (auto& thread : quick_runs) thread.join();
  stop = true;
  for (auto& thread : long_runs) thread.join();
  EXPECT_EQ(timed_out.load(), 0);
  EXPECT_EQ(completed.load(), 45);
}

}  // namespace stickler
