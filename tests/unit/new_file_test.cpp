// New files written whole under the first free name, through an unnamed file and through a
// named temporary: nothing replaced, nothing left behind, every writer keeps its own file.
#include "simulator/support/new_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "simulator/support/errors.h"
#include "simulator/support/text_files.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

using Writer = std::string (*)(const std::string&, const std::string&, const NameForAttempt&, int);

class NewFileTest : public ::testing::TestWithParam<Writer> {
 protected:
  NewFileTest()
      : directory_(::testing::TempDir() + "new-file-" + std::to_string(::getpid()) + "-" +
                   std::to_string(counter_++)) {
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  ~NewFileTest() override { fs::remove_all(directory_); }

  std::string write(const std::string& text, int attempts = 10) {
    return GetParam()(
        directory_, text,
        [](int attempt) {
          return attempt == 1 ? std::string("report.json")
                              : "report-" + std::to_string(attempt) + ".json";
        },
        attempts);
  }

  std::set<std::string> namesInDirectory() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(directory_)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

  static inline int counter_ = 0;
  std::string directory_;
};

TEST_P(NewFileTest, TakesTheFirstFreeNameAndReplacesNothing) {
  EXPECT_EQ(write("first"), "report.json");
  EXPECT_EQ(write("second"), "report-2.json");
  EXPECT_EQ(write(""), "report-3.json");
  EXPECT_EQ(readTextFile(directory_ + "/report.json"), "first");
  EXPECT_EQ(readTextFile(directory_ + "/report-2.json"), "second");
  EXPECT_EQ(*readTextFileIfPresent(directory_ + "/report-3.json"), "");
  // No temporary file left behind: only the three names.
  EXPECT_EQ(namesInDirectory(),
            (std::set<std::string>{"report.json", "report-2.json", "report-3.json"}));
  // Readable as an ordinary file written with the process's umask.
  struct stat info {};
  ASSERT_EQ(::stat((directory_ + "/report.json").c_str(), &info), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(info.st_mode & 0777, 0666 & ~mask);
}

TEST_P(NewFileTest, EveryNameTakenIsAnErrorNamingIt) {
  write("one", 2);
  write("two", 2);
  try {
    write("three", 2);
    FAIL() << "a third file was written with two names to choose from";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("cannot find a free name for " + directory_),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(namesInDirectory(), (std::set<std::string>{"report.json", "report-2.json"}));
  EXPECT_EQ(readTextFile(directory_ + "/report-2.json"), "two");
}

TEST_P(NewFileTest, AMissingDirectoryIsAnErrorNamingIt) {
  const std::string missing = directory_ + "/missing";
  try {
    GetParam()(
        missing, "text", [](int) { return std::string("report.json"); }, 3);
    FAIL() << "wrote into a directory that does not exist";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find(missing + "/report.json"), std::string::npos)
        << error.what();
  }
}

// Threads of one server write under the same names at once: each keeps its own file, whole.
TEST_P(NewFileTest, ThreadsWritingTheSameNameEachKeepTheirOwn) {
  constexpr int kThreads = 6;
  constexpr int kEach = 20;
  std::vector<std::thread> threads;
  std::vector<std::vector<std::string>> names(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        names[t].push_back(write(std::string(1000 + t * kEach + i, 'a' + t), kThreads * kEach));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<std::string> all;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEach; ++i) {
      all.insert(names[t][i]);
      EXPECT_EQ(readTextFile(directory_ + "/" + names[t][i]),
                std::string(1000 + t * kEach + i, 'a' + t));
    }
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(namesInDirectory(), all);
}

INSTANTIATE_TEST_SUITE_P(Writers, NewFileTest,
                         ::testing::Values(&writeNewFile, &writeNewFileThroughTemporary),
                         [](const ::testing::TestParamInfo<Writer>& info) {
                           return info.param == &writeNewFile ? "Unnamed" : "NamedTemporary";
                         });

}  // namespace
}  // namespace stickler
