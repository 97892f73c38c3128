// Whole files as text: a missing file is told from an empty one, and a write is all or nothing.
#include "simulator/support/text_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <unistd.h>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

class TextFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("text-files-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TextFilesTest, AMissingFileIsToldFromAnEmptyOne) {
  const std::string empty = (dir_ / "empty.txt").string();
  std::ofstream(empty).close();
  EXPECT_EQ(readTextFileIfPresent(empty), std::optional<std::string>(""));
  EXPECT_EQ(readTextFileIfPresent((dir_ / "missing.txt").string()), std::nullopt);
  EXPECT_EQ(readTextFile((dir_ / "missing.txt").string()), "");
}

TEST_F(TextFilesTest, WrittenFilesReadBackWhole) {
  const std::string path = (dir_ / "page.md").string();
  writeFileAtomically(path, "first\nsecond\n");
  EXPECT_EQ(readTextFileIfPresent(path), std::optional<std::string>("first\nsecond\n"));
  EXPECT_THROW(writeFileAtomically((dir_ / "no-such-dir" / "x").string(), "x"), UserError);
}

// Threads of one process writing the same file at once: each write lands whole, none fails on
// another's temporary, and what is left is one of the texts written, not a mix.
TEST_F(TextFilesTest, ThreadsWritingOneFileAtOnceEachLandWhole) {
  const std::string path = (dir_ / "report.html").string();
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < 50; ++i) writeFileAtomically(path, std::string(4096, 'a' + t));
      } catch (const std::exception& error) {
        failures[t] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) EXPECT_EQ(failure, "");
  const std::string text = readTextFile(path);
  ASSERT_EQ(text.size(), 4096u);
  EXPECT_EQ(text, std::string(4096, text.front()));
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) files += entry.exists();
  EXPECT_EQ(files, 1u);  // no temporary left behind
}

}  // namespace
}  // namespace stickler
