// What the parts of WorkspaceCatalog share: its state and the rules of the repository's
// layout. Private to adapters/catalog_repo/.
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "adapters/catalog_repo/workspace_catalog.h"
#include "simulator/support/git_support.h"

namespace stickler {

struct WorkspaceCatalog::Impl {
  std::filesystem::path dir;
  git::Repository repo;
  // libgit2 objects are not safe to share between threads; the MCP server runs tool calls
  // concurrently, so every operation holds this.
  std::mutex mutex;
};

namespace catalog {

inline constexpr const char* kMainBranch = "main";

// The catalog is flat: one `<name>.py` per adapter at the top of the tree.
inline std::string adapterPath(const std::string& name) {
  return name + ".py";
}

// The adapter name of a top-level file, or none for README.md, helpers and badly named files.
std::optional<std::string> adapterNameOf(const std::string& file_name);

// The repository whose work dir is `dir`, or null when there is none. Never searches parent
// directories: a workspace inside someone's project must not be mistaken for their repository.
git::Repository openRepositoryAt(const std::filesystem::path& dir);

// A repository is a Stickler catalog when main's root commit is Stickler's seed commit.
bool isSticklerCatalog(git_repository* repo);

// Makes the work dir and index show main's tree (previously `previous_main_tree`), so a person
// can read the files and `git status` is clean. Skipped when HEAD is not main: a person who
// checked out another branch is using the work dir.
void syncWorkdirWithMain(git_repository* repo, const git_oid& previous_main_tree);

}  // namespace catalog
}  // namespace stickler
