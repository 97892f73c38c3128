// The report store: every report kept under its own id, newest first, and ids that could leave
// the directory refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/support/errors.h"
#include "tools/reports/report_store.h"

namespace stickler {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class ReportStoreTest : public ::testing::Test {
 protected:
  ReportStoreTest()
      : root_(::testing::TempDir() + "report-store-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()),
        store_(root_) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~ReportStoreTest() override { fs::remove_all(root_); }

  static json report(const std::string& model, const std::string& status) {
    return {{"schema", "stickler.localize"}, {"model", {{"name", model}}}, {"status", status}};
  }

  std::string root_;
  ReportStore store_;
};

TEST_F(ReportStoreTest, ReportsMadeInTheSameSecondKeepTheirOwnIds) {
  const std::string first = store_.save(report("llama-tiny", "localized"));
  const std::string second = store_.save(report("llama-tiny", "passes"));
  EXPECT_NE(first, second);
  EXPECT_EQ(first.rfind("llama-tiny-localize-", 0), 0u) << first;
  EXPECT_EQ(store_.load(first)["status"], "localized");
  EXPECT_EQ(store_.load(second)["status"], "passes");
  const auto ids = store_.ids();
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids.front(), second);  // newest first
  // No temporary file is left behind.
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(store_.directory())) files += entry.exists();
  EXPECT_EQ(files, 2u);
}

// Threads of one server save the same model's report in the same millisecond (a busy MCP
// server): each keeps its own report, none fails on another's temporary file.
TEST_F(ReportStoreTest, ThreadsSavingTheSameModelAtOnceEachKeepTheirReport) {
  constexpr int kThreads = 8;
  constexpr int kEach = 25;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < kEach; ++i) store_.save(report("bert-tiny", std::to_string(t)));
      } catch (const std::exception& error) {
        failures[t] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) EXPECT_EQ(failure, "");
  EXPECT_EQ(store_.ids().size(), static_cast<size_t>(kThreads * kEach));
}

TEST_F(ReportStoreTest, KindsAndNamesComeFromTheDocument) {
  const std::string id = store_.save({{"schema", "stickler.diagnose"},
                                      {"mode", "numerics"},
                                      {"model", {{"name", "odd name/../x"}}}});
  EXPECT_EQ(id.rfind("odd_name____x-diagnose-numerics-", 0), 0u) << id;
  EXPECT_EQ(reportKind({{"schema", "stickler.blocker_ranking"}}), "blocker_ranking");
}

TEST_F(ReportStoreTest, UnknownAndMalformedIdsAreRefusedWithTheRecentOnesNamed) {
  const std::string id = store_.save(report("gpt2-tiny", "passes"));
  try {
    store_.load("gpt2-tiny-nothing");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("the most recent: " + id), std::string::npos) << e.what();
  }
  EXPECT_FALSE(store_.pathOf("../../etc/passwd"));
  EXPECT_FALSE(store_.pathOf(".hidden"));
  EXPECT_FALSE(store_.pathOf(""));
  EXPECT_THROW(store_.load("../" + id), UserError);
}

TEST_F(ReportStoreTest, ACorruptReportIsAClearErrorNotACrash) {
  fs::create_directories(store_.directory());
  std::ofstream(store_.directory() + "/broken.json") << "{\"schema\": ";
  try {
    store_.load("broken");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is not valid JSON"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stickler
