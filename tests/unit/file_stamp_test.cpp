#include "simulator/support/file_stamp.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>

namespace stickler {
namespace {

// Unique to this process: the README's test command runs some tests twice at once.
std::string tempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-stamp-" + name;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

void setModifiedSecondsAgo(const std::string& path, time_t seconds) {
  struct timespec times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(FileStamp, OnlyARegularFileHasOne) {
  EXPECT_FALSE(stampOf("/nonexistent/stickler/file"));
  EXPECT_FALSE(stampOf(::testing::TempDir()));
  const std::string path = tempPath("regular");
  write(path, "abc");
  const auto stamp = stampOf(path);
  ASSERT_TRUE(stamp);
  EXPECT_EQ(stamp->size, 3);
  std::filesystem::remove(path);
}

// Equal stamps mean the same file as it was, whenever each was taken; any edit, a replacement
// by rename, or a modification time set back to what it was makes them differ.
TEST(FileStamp, AnEditOrAReplacementChangesIt) {
  const std::string path = tempPath("edited");
  write(path, "first");
  setModifiedSecondsAgo(path, 3600);
  const auto first = stampOf(path);
  ASSERT_TRUE(first);
  const auto again = stampOf(path);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *first);

  write(path, "other");  // same size
  EXPECT_NE(*stampOf(path), *first);
  setModifiedSecondsAgo(path, 3600);
  // The same modification time and size, but the change time moved: still not the same file.
  const auto set_back = stampOf(path);
  EXPECT_EQ(set_back->modified_ns, first->modified_ns);
  EXPECT_NE(*set_back, *first);

  const std::string replacement = tempPath("replacement");
  write(replacement, "other");
  std::filesystem::rename(replacement, path);
  EXPECT_NE(*stampOf(path), *set_back);
  EXPECT_NE(stampOf(path)->text(), set_back->text());
  std::filesystem::remove(path);
}

// What is made of a file is kept only when it was written seconds before it was stamped: a
// write within the same clock tick could leave the same stamp.
TEST(FileStamp, AFileWrittenJustNowIsNotSettled) {
  const std::string path = tempPath("settled");
  write(path, "text");
  ASSERT_TRUE(stampOf(path));
  EXPECT_FALSE(settled(*stampOf(path)));
  setModifiedSecondsAgo(path, 10);
  ASSERT_TRUE(stampOf(path));
  EXPECT_TRUE(settled(*stampOf(path)));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace stickler
