// The workspace adapter catalog: a git repository written with libgit2, checked here with the
// git command-line tool, as a person auditing the catalog would.
#include "adapters/catalog_repo/workspace_catalog.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

const char* const kPowCube = "name = \"pow-cube\"\n";
const char* const kPadHeads = "name = \"pad-heads\"\n";

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void writeFile(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Runs `git -C dir <args>` (args are shell words) and returns its output without the final
// newline; fails the test when git does.
std::string git(const fs::path& dir, const std::string& args) {
  const std::string command = "git -C '" + dir.string() + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) {
    output.append(buffer.data(), n);
  }
  EXPECT_EQ(pclose(pipe), 0) << command << "\n" << output;
  while (!output.empty() && output.back() == '\n') {
    output.pop_back();
  }
  return output;
}

int commitCount(const fs::path& dir, const std::string& range) {
  return std::stoi(git(dir, "rev-list --count " + range));
}

std::string errorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

// Each test gets fresh directories and a known commit identity, whatever the caller's
// environment says.
class WorkspaceCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stickler-catalog-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    shipped_ = root_ / "shipped";
    catalog_ = root_ / "workspace" / "stickler-adapters";
    fs::create_directories(shipped_);
    writeFile(shipped_ / "pow-cube.py", kPowCube);
    writeFile(shipped_ / "pad-heads.py", kPadHeads);
    writeFile(shipped_ / "notes.txt", "not an adapter");
    for (const char* variable :
         {"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"}) {
      if (const char* value = getenv(variable)) {
        saved_environment_.emplace_back(variable, value);
      }
      unsetenv(variable);
    }
  }

  void TearDown() override {
    fs::remove_all(root_);
    for (const auto& [variable, value] : saved_environment_) {
      setenv(variable.c_str(), value.c_str(), 1);
    }
  }

  WorkspaceCatalog seeded() {
    WorkspaceCatalog::init(catalog_, shipped_);
    return WorkspaceCatalog::open(catalog_);
  }

  fs::path root_;
  fs::path shipped_;
  fs::path catalog_;
  std::vector<std::pair<std::string, std::string>> saved_environment_;
};

TEST_F(WorkspaceCatalogTest, InitSeedsMainWithOneCommitOfTheShippedAdapters) {
  const CatalogInitResult result = WorkspaceCatalog::init(catalog_, shipped_);
  EXPECT_FALSE(result.already_existed);
  EXPECT_EQ(result.adapters_on_main, 2u);
  EXPECT_EQ(result.main_commit, git(catalog_, "rev-parse main"));
  EXPECT_EQ(commitCount(catalog_, "main"), 1);
  EXPECT_EQ(git(catalog_, "log -1 --format=%s main"), "Seed the catalog with 2 shipped adapters");
  EXPECT_EQ(git(catalog_, "log -1 --format='%(trailers:key=Stickler-Action,valueonly)' main"),
            "seed");
  EXPECT_EQ(git(catalog_, "ls-tree --name-only main"), "README.md\npad-heads.py\npow-cube.py");
  EXPECT_EQ(git(catalog_, "symbolic-ref HEAD"), "refs/heads/main");
  // The work dir mirrors main and git agrees it is clean.
  EXPECT_EQ(readFile(catalog_ / "pow-cube.py"), kPowCube);
  EXPECT_NE(readFile(catalog_ / "README.md").find("draft/<name>"), std::string::npos);
  EXPECT_EQ(git(catalog_, "status --porcelain"), "");
}

TEST_F(WorkspaceCatalogTest, InitWithoutAShippedCatalogStartsEmpty) {
  const CatalogInitResult result = WorkspaceCatalog::init(catalog_, root_ / "missing");
  EXPECT_EQ(result.adapters_on_main, 0u);
  EXPECT_EQ(git(catalog_, "log -1 --format=%s main"), "Seed the catalog with 0 shipped adapters");
  EXPECT_EQ(git(catalog_, "ls-tree --name-only main"), "README.md");
  EXPECT_TRUE(WorkspaceCatalog::open(catalog_).list().empty());
}

TEST_F(WorkspaceCatalogTest, InitInAnEmptyExistingDirectoryWorks) {
  fs::create_directories(catalog_);
  EXPECT_FALSE(WorkspaceCatalog::init(catalog_, shipped_).already_existed);
  EXPECT_EQ(commitCount(catalog_, "main"), 1);
}

TEST_F(WorkspaceCatalogTest, InitTwiceChangesNothing) {
  const CatalogInitResult first = WorkspaceCatalog::init(catalog_, shipped_);
  WorkspaceCatalog::open(catalog_).draft("new-one", "x = 1\n", "Try something");
  writeFile(shipped_ / "later-addition.py", "name = \"later-addition\"\n");

  const CatalogInitResult second = WorkspaceCatalog::init(catalog_, shipped_);
  EXPECT_TRUE(second.already_existed);
  EXPECT_EQ(second.main_commit, first.main_commit);
  EXPECT_EQ(second.adapters_on_main, 2u);
  EXPECT_EQ(commitCount(catalog_, "main"), 1);
  EXPECT_EQ(commitCount(catalog_, "draft/new-one"), 2);
  EXPECT_FALSE(fs::exists(catalog_ / "later-addition.py"));
}

TEST_F(WorkspaceCatalogTest, ConcurrentFirstUsersAllGetTheOneCatalog) {
  // Four agents drafting at once in a fresh workspace: each opens (creating) the catalog and
  // drafts. Before creation was serialized and atomic, some got "config.lock", "not a Stickler
  // adapter catalog" or template errors.
  for (int round = 0; round < 3; ++round) {
    fs::remove_all(catalog_);
    std::vector<std::string> errors(4);
    std::vector<int> created(4, 0);
    std::vector<std::thread> agents;
    for (int i = 0; i < 4; ++i) {
      agents.emplace_back([&, i] {
        try {
          created[i] = !WorkspaceCatalog::init(catalog_, shipped_).already_existed;
          WorkspaceCatalog catalog = WorkspaceCatalog::open(catalog_);
          catalog.draft("agent-" + std::to_string(i), "name = \"agent\"\n", "reason");
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    }
    for (auto& agent : agents) agent.join();
    for (const std::string& error : errors) EXPECT_EQ(error, "") << "round " << round;
    EXPECT_EQ(created[0] + created[1] + created[2] + created[3], 1) << "round " << round;
    EXPECT_EQ(git(catalog_, "rev-list --count main"), "1");
    EXPECT_EQ(git(catalog_, "branch --list 'draft/*' --format='%(refname:short)'"),
              "draft/agent-0\ndraft/agent-1\ndraft/agent-2\ndraft/agent-3");
  }
  // Nothing of the making is left beside the catalog.
  for (const auto& entry : fs::directory_iterator(catalog_.parent_path())) {
    EXPECT_EQ(entry.path().filename().string().find(".creating-"), std::string::npos)
        << entry.path();
  }
}

TEST_F(WorkspaceCatalogTest, InitRefusesANonEmptyDirectoryThatIsNotACatalog) {
  fs::create_directories(catalog_);
  writeFile(catalog_ / "notes.txt", "mine");
  const std::string error = errorOf([&] { WorkspaceCatalog::init(catalog_, shipped_); });
  EXPECT_NE(error.find("cannot create an adapter catalog at " + catalog_.string()),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("not empty and is not a Stickler adapter catalog"), std::string::npos);
  EXPECT_FALSE(fs::exists(catalog_ / ".git"));
  EXPECT_EQ(readFile(catalog_ / "notes.txt"), "mine");
}

TEST_F(WorkspaceCatalogTest, InitRefusesSomeoneElsesGitRepository) {
  fs::create_directories(catalog_);
  git(catalog_, "init -q");
  writeFile(catalog_ / "a.py", "x = 1\n");
  git(catalog_, "add a.py");
  git(catalog_, "-c user.name=T -c user.email=t@t commit -q -m 'Their work'");
  EXPECT_NE(errorOf([&] {
              WorkspaceCatalog::init(catalog_, shipped_);
            }).find("is not a Stickler adapter catalog"),
            std::string::npos);
  EXPECT_EQ(git(catalog_, "log --format=%s"), "Their work");
  EXPECT_NE(errorOf([&] {
              WorkspaceCatalog::open(catalog_);
            }).find("is a git repository but not a Stickler adapter catalog"),
            std::string::npos);
}

TEST_F(WorkspaceCatalogTest, InitRefusesAShippedFileWhoseNameIsNotAnAdapterName) {
  writeFile(shipped_ / "Bad_Name.py", "x = 1\n");
  const std::string error = errorOf([&] { WorkspaceCatalog::init(catalog_, shipped_); });
  EXPECT_NE(error.find("shipped adapter " + (shipped_ / "Bad_Name.py").string()), std::string::npos)
      << error;
  EXPECT_NE(error.find("invalid adapter name \"Bad_Name\""), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(catalog_));  // nothing half-made to trip the next init
}

TEST_F(WorkspaceCatalogTest, OpenWithoutACatalogSaysToRunInit) {
  EXPECT_EQ(errorOf([&] { WorkspaceCatalog::open(catalog_); }),
            "no adapter catalog at " + catalog_.string() + ": run `stickler init`");
  fs::create_directories(catalog_);
  EXPECT_EQ(errorOf([&] { WorkspaceCatalog::open(catalog_); }),
            "no adapter catalog at " + catalog_.string() + ": run `stickler init`");
}

TEST_F(WorkspaceCatalogTest, OpenDoesNotMistakeAnEnclosingRepositoryForTheCatalog) {
  WorkspaceCatalog::init(catalog_, shipped_);
  fs::create_directories(catalog_ / "inner");
  EXPECT_NE(
      errorOf([&] { WorkspaceCatalog::open(catalog_ / "inner"); }).find("run `stickler init`"),
      std::string::npos);
  EXPECT_EQ(WorkspaceCatalog::open(catalog_).dir(), catalog_);
}

TEST_F(WorkspaceCatalogTest, DraftCommitsOnItsBranchWithReasonAndTrailers) {
  WorkspaceCatalog catalog = seeded();
  const CatalogChange change =
      catalog.draft("mask-on-host", "transform = build_mask()\n",
                    "Build the attention mask on the host\n\nThe device has no aten::tril.",
                    {{"Evidence", "equivalence bitwise on gpt2-tiny"}, {"Model", "gpt2-tiny"}});
  EXPECT_TRUE(change.committed);
  EXPECT_EQ(change.change, FileChange::kCreated);
  EXPECT_EQ(change.branch, "draft/mask-on-host");
  EXPECT_EQ(change.commit_id, git(catalog_, "rev-parse draft/mask-on-host"));
  EXPECT_EQ(git(catalog_, "log -1 --format=%B draft/mask-on-host"),
            "Build the attention mask on the host\n\n"
            "The device has no aten::tril.\n\n"
            "Adapter: mask-on-host\n"
            "Stickler-Action: draft\n"
            "Evidence: equivalence bitwise on gpt2-tiny\n"
            "Model: gpt2-tiny");
  EXPECT_EQ(git(catalog_, "show draft/mask-on-host:mask-on-host.py"), "transform = build_mask()");
  EXPECT_EQ(git(catalog_, "rev-parse draft/mask-on-host~1"), git(catalog_, "rev-parse main"));
  EXPECT_EQ(git(catalog_, "log -1 --format='%an <%ae>' draft/mask-on-host"),
            "Stickler <stickler@localhost>");
  // main and its work dir are untouched.
  EXPECT_EQ(commitCount(catalog_, "main"), 1);
  EXPECT_FALSE(fs::exists(catalog_ / "mask-on-host.py"));
  EXPECT_EQ(git(catalog_, "status --porcelain"), "");
}

TEST_F(WorkspaceCatalogTest, DraftOfAShippedAdapterUpdatesIt) {
  WorkspaceCatalog catalog = seeded();
  const CatalogChange change = catalog.draft("pow-cube", "name = \"pow-cube\"  # v2\n", "Tweak");
  EXPECT_EQ(change.change, FileChange::kUpdated);
  EXPECT_EQ(git(catalog_, "diff --name-only main draft/pow-cube"), "pow-cube.py");
}

TEST_F(WorkspaceCatalogTest, DraftOfUnchangedContentMakesNoCommit) {
  WorkspaceCatalog catalog = seeded();
  const CatalogChange first = catalog.draft("new-one", "x = 1\n", "First");
  const CatalogChange again = catalog.draft("new-one", "x = 1\n", "Same again");
  EXPECT_FALSE(again.committed);
  EXPECT_EQ(again.change, FileChange::kUnchanged);
  EXPECT_EQ(again.commit_id, first.commit_id);
  EXPECT_EQ(commitCount(catalog_, "main..draft/new-one"), 1);

  // The shipped text is no change either, and makes no branch.
  const CatalogChange shipped = catalog.draft("pow-cube", kPowCube, "Same as shipped");
  EXPECT_FALSE(shipped.committed);
  EXPECT_EQ(git(catalog_, "branch --list draft/pow-cube"), "");
}

TEST_F(WorkspaceCatalogTest, RevertRestoresThePreviousContent) {
  WorkspaceCatalog catalog = seeded();
  catalog.draft("new-one", "x = 1\n", "First try");
  const CatalogChange v2 = catalog.draft("new-one", "x = 2\n", "Second try");
  const CatalogChange reverted =
      catalog.revert("new-one", "", "Second try diverged on vit-tiny", {{"Model", "vit-tiny"}});
  EXPECT_TRUE(reverted.committed);
  EXPECT_EQ(reverted.change, FileChange::kUpdated);
  EXPECT_EQ(catalog.read("new-one"), "x = 1\n");
  EXPECT_EQ(git(catalog_, "log -1 --format=%B draft/new-one"),
            "Revert \"Second try\"\n\n"
            "Second try diverged on vit-tiny\n\n"
            "Reverts: " +
                v2.commit_id +
                "\n"
                "Stickler-Action: revert\n"
                "Adapter: new-one\n"
                "Model: vit-tiny");
}

TEST_F(WorkspaceCatalogTest, RevertingTheCommitThatCreatedAFileDeletesIt) {
  WorkspaceCatalog catalog = seeded();
  const CatalogChange v1 = catalog.draft("new-one", "x = 1\n", "First try");
  catalog.draft("new-one", "x = 2\n", "Second try");
  const CatalogChange reverted = catalog.revert("new-one", v1.commit_id.substr(0, 10), "Give up");
  EXPECT_EQ(reverted.change, FileChange::kDeleted);
  EXPECT_EQ(git(catalog_, "ls-tree --name-only draft/new-one"),
            "README.md\npad-heads.py\npow-cube.py");
  EXPECT_EQ(git(catalog_, "log -1 --format='%(trailers:key=Reverts,valueonly)' draft/new-one"),
            v1.commit_id);
  // Reverting an older commit also undid the second try: the body says so.
  EXPECT_NE(git(catalog_, "log -1 --format=%b draft/new-one").find("also undoes the later changes"),
            std::string::npos);
  EXPECT_EQ(errorOf([&] { catalog.read("new-one"); }),
            "no adapter named new-one on branch draft/new-one");
}

TEST_F(WorkspaceCatalogTest, RevertRefusesWhatIsNotTheDraftsToUndo) {
  WorkspaceCatalog catalog = seeded();
  EXPECT_NE(errorOf([&] { catalog.revert("pow-cube", "", "Undo"); }).find("no draft branch"),
            std::string::npos);
  const CatalogChange evidence = catalog.recordEvidence("pow-cube", "Works on gpt2-tiny", {});
  // Evidence makes no draft; a catalog from before evidence branches has it on the draft branch.
  EXPECT_NE(errorOf([&] { catalog.revert("pow-cube", "", "Undo"); }).find("no draft branch"),
            std::string::npos);
  git(catalog_, "branch draft/pow-cube evidence/pow-cube");
  for (const CatalogAdapter& adapter : catalog.list()) EXPECT_EQ(adapter.branch, "main");
  EXPECT_EQ(errorOf([&] { catalog.revert("pow-cube", evidence.commit_id, "Undo"); }),
            "commit " + evidence.commit_id + " does not change pow-cube.py: nothing to revert");
  EXPECT_NE(errorOf([&] {
              catalog.revert("pow-cube", "", "Undo");
            }).find("has no change to pow-cube.py since it branched from main"),
            std::string::npos);
  const CatalogChange other = catalog.draft("other-one", "y = 1\n", "Other");
  EXPECT_EQ(errorOf([&] { catalog.revert("pow-cube", other.commit_id, "Undo"); }),
            "commit " + other.commit_id + " is not on branch draft/pow-cube");
  EXPECT_NE(errorOf([&] {
              catalog.revert("pow-cube", "deadbeef", "Undo");
            }).find("no commit deadbeef in the adapter catalog"),
            std::string::npos);
  EXPECT_EQ(commitCount(catalog_, "main..draft/pow-cube"), 1);
}

TEST_F(WorkspaceCatalogTest, EvidenceIsAnEmptyCommitWithItsTrailers) {
  WorkspaceCatalog catalog = seeded();
  catalog.draft("new-one", "x = 1\n", "First try");
  const CatalogChange evidence = catalog.recordEvidence(
      "new-one", "Equivalent on gpt2-tiny",
      {{"Evidence", "equivalence bitwise on gpt2-tiny"}, {"Profile", "spyre-2025"}});
  EXPECT_TRUE(evidence.committed);
  EXPECT_EQ(evidence.commit_id, git(catalog_, "rev-parse draft/new-one"));
  EXPECT_EQ(git(catalog_, "rev-parse draft/new-one^{tree}"),
            git(catalog_, "rev-parse draft/new-one~1^{tree}"));
  EXPECT_EQ(git(catalog_, "log -1 --format='%(trailers:only,unfold)' draft/new-one"),
            "Adapter: new-one\nStickler-Action: evidence\n"
            "Evidence: equivalence bitwise on gpt2-tiny\nProfile: spyre-2025");
}

TEST_F(WorkspaceCatalogTest, EvidenceAboutAShippedAdapterBranchesFromMain) {
  WorkspaceCatalog catalog = seeded();
  // Evidence about main's version goes on a branch of its own: it makes no draft.
  const CatalogChange evidence = catalog.recordEvidence("pad-heads", "Clears the head-size blocker",
                                                        {{"Model", "llama-tiny"}});
  EXPECT_EQ(evidence.branch, "evidence/pad-heads");
  EXPECT_EQ(git(catalog_, "rev-parse evidence/pad-heads~1"), git(catalog_, "rev-parse main"));
  EXPECT_EQ(git(catalog_, "branch --list draft/pad-heads"), "");
  for (const CatalogAdapter& adapter : catalog.list()) EXPECT_EQ(adapter.branch, "main");
  EXPECT_EQ(errorOf([&] { catalog.recordEvidence("no-such", "Works", {}); }),
            "no adapter named no-such on branch main: draft it before recording evidence about it");
}

TEST_F(WorkspaceCatalogTest, HistoryListsCommitsNewestFirstWithParsedTrailers) {
  WorkspaceCatalog catalog = seeded();
  catalog.draft("new-one", "x = 1\n", "First try", {{"Model", "gpt2-tiny"}});
  catalog.draft("new-one", "x = 2\n", "Second try\n\nWith a body line.");
  catalog.recordEvidence("new-one", "Works", {{"Evidence", "bitwise"}, {"Evidence", "ulps 0"}});
  catalog.draft("other-one", "y = 1\n", "Unrelated");

  const std::vector<CatalogCommit> history = catalog.history("new-one");
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[0].subject, "Works");
  EXPECT_EQ(history[1].subject, "Second try");
  EXPECT_EQ(history[2].subject, "First try");
  EXPECT_EQ(history[1].body, "With a body line.");
  EXPECT_EQ(history[0].body, "");
  EXPECT_EQ(history[0].trailers, (Trailers{{"Adapter", "new-one"},
                                           {"Stickler-Action", "evidence"},
                                           {"Evidence", "bitwise"},
                                           {"Evidence", "ulps 0"}}));
  EXPECT_TRUE(history[0].files_changed.empty());
  EXPECT_EQ(history[2].files_changed, std::vector<std::string>{"new-one.py"});
  EXPECT_EQ(history[2].branch, "draft/new-one");
  EXPECT_EQ(history[2].id, git(catalog_, "rev-parse draft/new-one~2"));
  EXPECT_EQ(history[2].id.substr(0, history[2].short_id.size()), history[2].short_id);
  EXPECT_GE(history[2].short_id.size(), 7u);
  EXPECT_EQ(history[2].author, "Stickler <stickler@localhost>");
  EXPECT_TRUE(std::regex_match(history[2].time, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << history[2].time;

  // Across the catalog: every commit once, the seed on main.
  const std::vector<CatalogCommit> all = catalog.history();
  ASSERT_EQ(all.size(), 5u);
  std::set<std::string> ids;
  for (const CatalogCommit& commit : all) {
    ids.insert(commit.id);
  }
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(all.back().subject, "Seed the catalog with 2 shipped adapters");
  EXPECT_EQ(all.back().branch, "main");
  EXPECT_EQ(all.back().files_changed,
            (std::vector<std::string>{"README.md", "pad-heads.py", "pow-cube.py"}));
  EXPECT_EQ(catalog.history("", 2).size(), 2u);
  // A shipped adapter's history starts at the seed.
  EXPECT_EQ(catalog.history("pow-cube").size(), 1u);
}

TEST_F(WorkspaceCatalogTest, CommitIdentityComesFromTheEnvironmentWhenSet) {
  WorkspaceCatalog catalog = seeded();
  setenv("GIT_AUTHOR_NAME", "Ada Agent", 1);
  setenv("GIT_AUTHOR_EMAIL", "ada@example.com", 1);
  catalog.draft("new-one", "x = 1\n", "First try");
  EXPECT_EQ(git(catalog_, "log -1 --format='%an <%ae>|%cn <%ce>' draft/new-one"),
            "Ada Agent <ada@example.com>|Ada Agent <ada@example.com>");
  EXPECT_EQ(catalog.history("new-one").front().author, "Ada Agent <ada@example.com>");
}

TEST_F(WorkspaceCatalogTest, ReadAndListPreferTheDraftOverMain) {
  WorkspaceCatalog catalog = seeded();
  catalog.draft("pow-cube", "name = \"pow-cube\"  # v2\n", "Tweak");
  catalog.draft("new-one", "x = 1\n", "First try");
  EXPECT_EQ(catalog.read("pow-cube"), "name = \"pow-cube\"  # v2\n");
  EXPECT_EQ(catalog.read("pow-cube", "main"), kPowCube);
  EXPECT_EQ(catalog.read("pad-heads"), kPadHeads);

  std::vector<std::string> listed;
  for (const CatalogAdapter& adapter : catalog.list()) {
    listed.push_back(adapter.name + "@" + adapter.branch);
  }
  EXPECT_EQ(listed, (std::vector<std::string>{"new-one@draft/new-one", "pad-heads@main",
                                              "pow-cube@draft/pow-cube"}));
  EXPECT_EQ(catalog.list("main").size(), 2u);
  EXPECT_EQ(catalog.list("draft/new-one").size(), 3u);

  EXPECT_EQ(errorOf([&] { catalog.read("no-such"); }), "no adapter named no-such on branch main");
  EXPECT_NE(errorOf([&] {
              catalog.read("pow-cube", "draft/no-such");
            }).find("no branch draft/no-such in the adapter catalog"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { catalog.list("nope"); }).find("no branch nope"), std::string::npos);
}

TEST_F(WorkspaceCatalogTest, BadNamesAreRefusedBeforeAnythingIsWritten) {
  WorkspaceCatalog catalog = seeded();
  for (const std::string& name :
       {std::string(""), std::string("Upper"), std::string("1abc"), std::string("a--b"),
        std::string("-a"), std::string("a-"), std::string("a_b"), std::string("a/b"),
        std::string("../x"), std::string("a b"), std::string(65, 'a')}) {
    EXPECT_NE(errorOf([&] {
                catalog.draft(name, "x = 1\n", "Try");
              }).find("invalid adapter name \"" + name + "\""),
              std::string::npos)
        << name;
    EXPECT_NE(errorOf([&] { catalog.read(name); }), "(no error)") << name;
  }
  EXPECT_EQ(git(catalog_, "branch --list 'draft/*'"), "");
  EXPECT_TRUE(catalog.draft(std::string(64, 'a'), "x = 1\n", "Longest name").committed);
  EXPECT_TRUE(catalog.draft("a1-b2-c3", "x = 1\n", "Digits and hyphens").committed);
}

TEST_F(WorkspaceCatalogTest, BadReasonsAndTrailersAreRefused) {
  WorkspaceCatalog catalog = seeded();
  EXPECT_NE(errorOf([&] { catalog.draft("new-one", "x = 1\n", "  \n "); }).find("reason is empty"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              catalog.draft("new-one", "x = 1\n", "Try", {{"Bad Key", "v"}});
            }).find("invalid trailer key \"Bad Key\""),
            std::string::npos);
  EXPECT_EQ(errorOf([&] {
              catalog.draft("new-one", "x = 1\n", "Try", {{"adapter", "x"}});
            }),
            "trailer adapter is written by Stickler itself: leave it out");
  EXPECT_EQ(errorOf([&] {
              catalog.draft("new-one", "x = 1\n", "Try", {{"Model", "a\nb"}});
            }),
            "trailer Model must fit on one line");
  EXPECT_EQ(git(catalog_, "branch --list 'draft/*'"), "");
}

// Runs `work(i)` on `count` threads at once; returns what each thread threw ("" for none), so a
// failure is reported rather than terminating the test binary.
std::vector<std::string> onThreads(int count, const std::function<void(int)>& work) {
  std::vector<std::string> errors(count);
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (int i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      try {
        work(i);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  return errors;
}

TEST_F(WorkspaceCatalogTest, ConcurrentDraftsOnDifferentNamesAllLand) {
  WorkspaceCatalog catalog = seeded();
  const std::vector<std::string> names{"alpha", "beta", "gamma", "delta"};
  constexpr int kVersions = 10;
  const std::vector<std::string> errors = onThreads(4, [&](int writer) {
    for (int version = 1; version <= kVersions; ++version) {
      catalog.draft(names[writer], "version = " + std::to_string(version) + "\n",
                    "Version " + std::to_string(version));
    }
  });
  EXPECT_EQ(errors, std::vector<std::string>(4));
  for (const std::string& name : names) {
    EXPECT_EQ(commitCount(catalog_, "main..draft/" + name), kVersions) << name;
    EXPECT_EQ(catalog.read(name), "version = " + std::to_string(kVersions) + "\n");
  }
  EXPECT_EQ(catalog.history().size(), 1u + names.size() * kVersions);
}

TEST_F(WorkspaceCatalogTest, ConcurrentDraftsOnOneNameAreSerializedNotLost) {
  WorkspaceCatalog catalog = seeded();
  const std::vector<std::string> errors = onThreads(4, [&](int writer) {
    for (int version = 1; version <= 5; ++version) {
      catalog.draft(
          "shared",
          "writer, version = " + std::to_string(writer) + ", " + std::to_string(version) + "\n",
          "Writer " + std::to_string(writer));
    }
  });
  EXPECT_EQ(errors, std::vector<std::string>(4));
  EXPECT_EQ(commitCount(catalog_, "main..draft/shared"), 20);
}

}  // namespace
}  // namespace stickler
