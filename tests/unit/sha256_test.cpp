#include "simulator/support/sha256.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "simulator/support/errors.h"
#include "tests/unit/scoped_cache_dir.h"

namespace stickler {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256Bytes(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Bytes("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, FileMatchesBytesAcrossBufferBoundaries) {
  std::string content(200000, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 31 + 7);
  const std::string path = ::testing::TempDir() + "/sha256_test.bin";
  std::ofstream(path, std::ios::binary) << content;
  EXPECT_EQ(sha256File(path), sha256Bytes(content));
  std::remove(path.c_str());
}

TEST(Sha256, MissingFileIsAUserError) {
  EXPECT_THROW(sha256File("/nonexistent/stickler/file.pt"), UserError);
  EXPECT_THROW(sha256FileRemembered("/nonexistent/stickler/file.pt"), UserError);
}

// Unique to this process: the README's test command runs some tests twice at once.
std::string tempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-" + name;
}

size_t filesIn(const std::filesystem::path& directory) {
  std::error_code error;
  size_t count = 0;
  for (auto it = std::filesystem::directory_iterator(directory, error);
       !error && it != std::filesystem::directory_iterator(); ++it) {
    ++count;
  }
  return count;
}

// Sets a file's modification time to an hour ago: written long before it is hashed.
void settle(const std::string& path) {
  struct timespec times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

// A large archive's hash is remembered across processes, and never once its bytes change,
// even when its modification time is set back to what it was.
TEST(Sha256, ALargeFilesHashIsRememberedUntilItChanges) {
  const testing::ScopedCacheDir scoped(tempPath("sha256-cache"));
  const std::string& cache = scoped.dir();
  const std::string path = tempPath("large.bin");
  {
    std::ofstream out(path, std::ios::binary);
    out << "first";
  }
  std::filesystem::resize_file(path, std::uintmax_t{64} << 20);  // sparse: zeros after "first"
  settle(path);
  const std::string first = sha256File(path);
  EXPECT_EQ(sha256FileRemembered(path), first);
  EXPECT_EQ(filesIn(cache + "/sha256"), 1u);
  EXPECT_EQ(sha256FileRemembered(path), first);
  EXPECT_EQ(filesIn(cache + "/sha256"), 1u);

  {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out << "other";
  }
  settle(path);
  const std::string second = sha256File(path);
  ASSERT_NE(second, first);
  EXPECT_EQ(sha256FileRemembered(path), second);
  EXPECT_EQ(filesIn(cache + "/sha256"), 2u);

  // Written just now: hashed, not remembered (a write in the same clock tick would keep the
  // same times).
  {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out << "third";
  }
  EXPECT_EQ(sha256FileRemembered(path), sha256File(path));
  EXPECT_EQ(filesIn(cache + "/sha256"), 2u);

  // A small file is hashed each time.
  const std::string small = tempPath("small.bin");
  std::ofstream(small, std::ios::binary) << "small";
  settle(small);
  EXPECT_EQ(sha256FileRemembered(small), sha256Bytes("small"));
  EXPECT_EQ(filesIn(cache + "/sha256"), 2u);
  std::remove(path.c_str());
  std::remove(small.c_str());
}

// A file its writer hashed as it wrote it (an adapted archive adapt saved) is not read again:
// what the writer remembered is what later readers get, written just now or not, until the
// file changes.
TEST(Sha256, AHashItsWriterRememberedIsNotReadAgain) {
  const testing::ScopedCacheDir scoped(tempPath("sha256-written-cache"));
  const std::string& cache = scoped.dir();
  const std::string path = tempPath("written.bin");
  std::ofstream(path, std::ios::binary) << "written";
  std::filesystem::resize_file(path, std::uintmax_t{64} << 20);
  // A digest no read of the file would give: seen only if the file is not read.
  const std::string told = sha256Bytes("what the writer said");
  rememberWrittenSha256(path, told);
  EXPECT_EQ(filesIn(cache + "/sha256"), 1u);
  EXPECT_EQ(sha256FileRemembered(path), told);

  // Past the kernel's clock tick, so that the change moves the file's times.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out << "changed";
  }
  EXPECT_EQ(sha256FileRemembered(path), sha256File(path));

  rememberWrittenSha256(path, "not a digest");  // ignored
  const std::string small = tempPath("written-small.bin");
  std::ofstream(small, std::ios::binary) << "small";
  rememberWrittenSha256(small, told);  // small files are hashed each time
  EXPECT_EQ(sha256FileRemembered(small), sha256Bytes("small"));
  EXPECT_EQ(filesIn(cache + "/sha256"), 1u);
  std::remove(path.c_str());
  std::remove(small.c_str());
}

}  // namespace
}  // namespace stickler
