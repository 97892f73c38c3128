// Recorded gotchas: stored, written as a page committed to git, searchable at once, and merged
// when the same lesson is recorded again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "knowledge/gotcha_store.h"
#include "knowledge/kb_index.h"
#include "simulator/support/errors.h"
#include "simulator/support/sqlite_db.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

// What a shell command printed.
std::string output(const std::string& command) {
  std::string text;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return text;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) text += buffer;
  ::pclose(pipe);
  return text;
}

class GotchaStoreTest : public ::testing::Test {
 protected:
  GotchaStoreTest()
      : root_(::testing::TempDir() + "gotchas-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()),
        store_(root_) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~GotchaStoreTest() override { fs::remove_all(root_); }

  static Gotcha topk() {
    Gotcha gotcha;
    gotcha.title = "topk aborts on a partial stick of router logits";
    gotcha.body =
        "On spyre-2026, aten::topk over fewer than 64 router logits aborts the device: pad the "
        "router gate to a whole stick before topk.";
    gotcha.tags = {"aten::topk", "moe"};
    gotcha.model = "mixtral-tiny";
    gotcha.evidence = {"stickler run mixtral-tiny.pt: aborted in aten::topk"};
    return gotcha;
  }

  std::string commits() const {
    return output("git -C '" + store_.pagesDirectory() + "' log --format=%s 2>&1");
  }

  std::string root_;
  GotchaStore store_;
};

TEST_F(GotchaStoreTest, ARecordIsStoredWrittenCommittedAndSearchableAtOnce) {
  const GotchaRecorded recorded = store_.record(topk());
  EXPECT_FALSE(recorded.merged);
  EXPECT_EQ(recorded.gotcha.id, "topk-aborts-on-a-partial-stick-of-router-logits");
  EXPECT_EQ(store_.get(recorded.gotcha.id).model, "mixtral-tiny");
  ASSERT_TRUE(fs::exists(recorded.page));
  EXPECT_EQ(commits(), "Gotcha: topk aborts on a partial stick of router logits\n");
  EXPECT_EQ(output("git -C '" + store_.pagesDirectory() + "' rev-parse HEAD"),
            recorded.commit + "\n");
  const auto hits = knowledgeIndexFor(store_.pagesDirectory()).search("router topk abort", 3);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0].id, recorded.gotcha.id);
  EXPECT_EQ(hits[0].kind, "gotcha");
}

TEST_F(GotchaStoreTest, TheSameLessonRecordedTwiceIsMergedNotPiledUp) {
  const GotchaRecorded first = store_.record(topk());
  Gotcha again = topk();
  again.title = "topk aborts on partial stick of router logits (qwen2-moe)";
  again.body =
      "aten::topk over fewer than 64 router logits aborts the device on spyre-2026; pad the "
      "router gate to a whole stick.";
  again.model = "qwen2-moe";
  again.tags = {"router"};
  again.evidence = {"report qwen2-moe-diagnose-run-20261130"};
  const GotchaRecorded second = store_.record(again);
  EXPECT_TRUE(second.merged);
  EXPECT_GE(second.similarity, 0.5);
  EXPECT_EQ(second.gotcha.id, first.gotcha.id);
  EXPECT_EQ(second.gotcha.occurrences, 2);
  EXPECT_EQ(second.gotcha.model, "mixtral-tiny; qwen2-moe");
  EXPECT_EQ(second.gotcha.evidence.size(), 2u);
  EXPECT_EQ(second.gotcha.tags, (std::vector<std::string>{"aten::topk", "moe", "router"}));
  EXPECT_EQ(store_.list().size(), 1u);
  size_t pages = 0;
  for (const auto& entry : fs::directory_iterator(store_.pagesDirectory())) {
    pages += entry.path().extension() == ".md";
  }
  EXPECT_EQ(pages, 1u);
  EXPECT_NE(commits().find("Merge a gotcha recorded again"), std::string::npos);

  // A different lesson is a gotcha of its own.
  Gotcha other;
  other.title = "DL16 has no subnormals";
  other.body = "Values below the smallest normal flush to zero on the device.";
  const GotchaRecorded third = store_.record(other);
  EXPECT_FALSE(third.merged);
  EXPECT_LT(third.similarity, 0.5);
  EXPECT_EQ(store_.list().size(), 2u);
}

TEST_F(GotchaStoreTest, BadRecordsAreRefusedAndLeaveNothingBehind) {
  Gotcha empty = topk();
  empty.title = "  \n ";
  EXPECT_THROW(store_.record(empty), UserError);
  Gotcha no_body = topk();
  no_body.body = "";
  EXPECT_THROW(store_.record(no_body), UserError);
  EXPECT_TRUE(store_.list().empty());
  EXPECT_FALSE(fs::exists(store_.pagesDirectory()));
  EXPECT_THROW(store_.get("nothing"), UserError);
}

TEST_F(GotchaStoreTest, AFailedCommitLeavesNeitherARowNorAPage) {
  // stickler-gotchas/.git is a file pointing nowhere: no repository can be opened or made.
  fs::create_directories(store_.pagesDirectory());
  std::ofstream(store_.pagesDirectory() + "/.git") << "gitdir: /nonexistent/stickler\n";
  EXPECT_THROW(store_.record(topk()), UserError);
  EXPECT_TRUE(store_.list().empty());
  EXPECT_FALSE(
      fs::exists(store_.pagesDirectory() + "/topk-aborts-on-a-partial-stick-of-router-logits.md"));
}

TEST_F(GotchaStoreTest, CommitsAreSignedAsGitAuthorSays) {
  ::setenv("GIT_AUTHOR_NAME", "Ada Reviewer", 1);
  ::setenv("GIT_AUTHOR_EMAIL", "ada@example.org", 1);
  const GotchaRecorded recorded = store_.record(topk());
  ::unsetenv("GIT_AUTHOR_NAME");
  ::unsetenv("GIT_AUTHOR_EMAIL");
  // As git does, the committer defaults to the author.
  EXPECT_EQ(output("git -C '" + store_.pagesDirectory() + "' log -1 --format='%an <%ae>|%cn' " +
                   recorded.commit),
            "Ada Reviewer <ada@example.org>|Ada Reviewer\n");
  // The next commit goes on the same branch, after the first.
  Gotcha other;
  other.title = "DL16 has no subnormals";
  other.body = "Values below the smallest normal flush to zero on the device.";
  store_.record(other);
  EXPECT_EQ(output("git -C '" + store_.pagesDirectory() + "' rev-list --count HEAD"), "2\n");
  EXPECT_EQ(output("git -C '" + store_.pagesDirectory() + "' status --porcelain"), "");
}

TEST_F(GotchaStoreTest, ADamagedRowIsNamedAndTheStoreStaysUsable) {
  store_.record(topk());
  const std::string id = "topk-aborts-on-a-partial-stick-of-router-logits";
  sqlite::Database(store_.databasePath(), "test")
      .exec("UPDATE gotchas SET tags = '{not json' WHERE id = '" + id + "'");
  try {
    store_.list();
    FAIL() << "a damaged row was read";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("gotcha '" + id + "' has a damaged list"),
              std::string::npos)
        << error.what();
  }
  // Recording reads every row first: it fails the same way and leaves no transaction open, so
  // the row can be repaired by hand and the store used again.
  EXPECT_THROW(store_.record(topk()), UserError);
  sqlite::Database(store_.databasePath(), "test")
      .exec("UPDATE gotchas SET tags = '[]' WHERE id = '" + id + "'");
  EXPECT_EQ(store_.record(topk()).gotcha.occurrences, 2);
}

TEST(GotchaSimilarity, SameWordsAreOneLessonOthersAreNot) {
  Gotcha a;
  a.title = "softmax mask leak";
  a.body = "masked positions get 2e-5 instead of zero";
  Gotcha b = a;
  EXPECT_DOUBLE_EQ(gotchaSimilarity(a, b), 1.0);
  b.title = "int64 narrowed";
  b.body = "indices become int32";
  EXPECT_DOUBLE_EQ(gotchaSimilarity(a, b), 0.0);
}

}  // namespace
}  // namespace stickler
