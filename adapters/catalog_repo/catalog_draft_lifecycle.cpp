// Deleting and renaming drafts: the end of a draft's life, kept auditable in git.
#include <regex>

#include "adapters/catalog_repo/catalog_internal.h"
#include "adapters/catalog_repo/commit_message.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

// The first deleted/<name>/<n> not taken.
std::string archiveBranch(git_repository* repo, const std::string& name) {
  for (int n = 1;; ++n) {
    const std::string branch = "deleted/" + name + "/" + std::to_string(n);
    if (!git::branchExists(repo, branch)) return branch;
  }
}

}  // namespace

CatalogChange WorkspaceCatalog::deleteDraft(const std::string& name, const std::string& reason) {
  validateName(name);
  const catalog::MessageText text = catalog::splitText(reason, "reason");
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const std::string branch = draftBranch(name);
  const std::optional<git_oid> tip = git::branchTip(repo, branch);
  if (!tip) throw UserError("no draft branch " + branch + ": adapter " + name + " has no draft");
  // The reason goes on the branch itself, as an empty commit, before it is put away.
  const git::Commit parent = git::lookupCommit(repo, *tip);
  const git::Tree tree = git::treeOf(parent.get());
  const std::string message = catalog::composeMessage(
      text, {{catalog::kAdapterKey, name}, {catalog::kActionKey, "delete"}});
  const git_oid commit = git::writeCommit(repo, *git_tree_id(tree.get()), parent.get(), message);
  const std::string archive = archiveBranch(repo, name);
  git::moveBranch(repo, archive, commit, std::nullopt, "stickler: " + text.subject);
  git::deleteBranch(repo, branch, *tip);
  return {true, git::toHex(commit), archive, FileChange::kDeleted};
}

CatalogChange WorkspaceCatalog::renameDraft(const std::string& from, const std::string& to,
                                            const std::string& reason) {
  validateName(from);
  validateName(to);
  if (from == to) throw UserError("the new name is the old one: " + to);
  std::string source;
  {
    const std::lock_guard lock(impl_->mutex);
    git_repository* repo = impl_->repo.get();
    if (git::branchExists(repo, draftBranch(to))) {
      throw UserError("adapter " + to + " already has a draft (" + draftBranch(to) + ")");
    }
  }
  for (const CatalogAdapter& adapter : list(catalog::kMainBranch)) {
    if (adapter.name == to) throw UserError("adapter " + to + " already exists on main");
  }
  bool drafted = false;
  for (const CatalogAdapter& adapter : list()) {
    drafted = drafted || (adapter.name == from && adapter.branch == draftBranch(from));
  }
  if (!drafted)
    throw UserError("adapter " + from + " has no draft that changes it: nothing to rename");
  source = read(from, draftBranch(from));
  // The file's name field must be its name: `name = "from"` becomes `name = "to"`.
  const std::regex name_line("(^|\n)(name[ \t]*=[ \t]*)([\"'])" + from + "\\3");
  if (!std::regex_search(source, name_line)) {
    throw UserError("the draft of " + from + " has no line name = \"" + from + "\" to rename");
  }
  source = std::regex_replace(source, name_line, "$1$2$3" + to + "$3",
                              std::regex_constants::format_first_only);
  CatalogChange change = draft(to, source, reason, {{"Renamed-From", from}});
  deleteDraft(from, "Renamed to " + to);
  return change;
}

}  // namespace stickler
