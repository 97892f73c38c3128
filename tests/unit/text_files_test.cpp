// Whole files as text: a missing file is told from an empty one, and a write is all or nothing.
#include "simulator/support/text_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace stickler
