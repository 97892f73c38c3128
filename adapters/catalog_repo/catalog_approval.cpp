// Approval's part in the catalog repository: what main becomes when a proposal is approved,
// written as a merge commit of main and the proposal, and main moved onto it with a
// compare-and-swap. The review queue journals the commit between the two steps
// (docs/review.md, "Durability").
#include <algorithm>

#include "adapters/catalog_repo/catalog_internal.h"
#include "adapters/catalog_repo/commit_message.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

git_oid parseId(const std::string& hex, const std::string& what) {
  git_oid id;
  if (hex.size() != GIT_OID_HEXSZ || git_oid_fromstr(&id, hex.c_str()) != 0) {
    throw UserError(what + " '" + hex + "' is not a commit id");
  }
  return id;
}

git::Tree lookupTree(git_repository* repo, const git_oid& id) {
  git_tree* raw = nullptr;
  git::check(git_tree_lookup(&raw, repo, &id), "cannot read tree " + git::toHex(id));
  return git::Tree(raw);
}

// The tree of a commit, or the tree itself.
git::Tree treeNamed(git_repository* repo, const std::string& hex) {
  const git_oid id = parseId(hex, "object");
  git_object* raw = nullptr;
  git::check(git_object_lookup(&raw, repo, &id, GIT_OBJECT_ANY), "no object " + hex);
  const git::Object object(raw);
  if (git_object_type(object.get()) == GIT_OBJECT_TREE) return lookupTree(repo, id);
  if (git_object_type(object.get()) != GIT_OBJECT_COMMIT) {
    throw UserError(hex + " is neither a commit nor a tree");
  }
  return git::treeOf(reinterpret_cast<git_commit*>(object.get()));
}

// The adapters whose file differs between two trees.
std::vector<std::string> adaptersChanged(git_tree* before, git_tree* after) {
  std::vector<std::string> files = git::topLevelFiles(before);
  for (const std::string& file : git::topLevelFiles(after)) files.push_back(file);
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  std::vector<std::string> names;
  for (const std::string& file : files) {
    const auto name = catalog::adapterNameOf(file);
    if (name && !git::sameId(git::fileId(before, file), git::fileId(after, file))) {
      names.push_back(*name);
    }
  }
  return names;
}

}  // namespace

std::string WorkspaceCatalog::mainCommit() const {
  const std::lock_guard lock(impl_->mutex);
  return git::toHex(*git::branchTip(impl_->repo.get(), catalog::kMainBranch));
}

WorkspaceCatalog::ApprovalPlan WorkspaceCatalog::planApproval(
    const std::string& proposal_commit) const {
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const git::Commit proposal = git::lookupCommit(repo, parseId(proposal_commit, "proposal"));
  const git::Commit base = git::firstParent(proposal.get());
  if (!base) throw UserError("commit " + proposal_commit + " is not a proposal (it has no parent)");
  const git::Tree proposed = git::treeOf(proposal.get());
  const git::Tree base_tree = git::treeOf(base.get());
  const git_oid main_tip = *git::branchTip(repo, catalog::kMainBranch);
  const git::Commit main = git::lookupCommit(repo, main_tip);
  git::Tree tree = git::treeOf(main.get());
  ApprovalPlan plan;
  plan.main = git::toHex(main_tip);
  plan.adapters = adaptersChanged(base_tree.get(), proposed.get());
  if (plan.adapters.empty()) {
    throw UserError("proposal commit " + proposal_commit + " changes no adapter");
  }
  for (const std::string& name : plan.adapters) {
    const std::string path = catalog::adapterPath(name);
    if (!git::sameId(git::fileId(base_tree.get(), path), git::fileId(tree.get(), path))) {
      plan.changed_on_main.push_back(name);
    }
    const git_oid next =
        git::writeTreeWith(repo, tree.get(), path, git::fileId(proposed.get(), path));
    tree = lookupTree(repo, next);
  }
  plan.tree = git::toHex(*git_tree_id(tree.get()));
  return plan;
}

std::vector<std::pair<std::string, std::string>> WorkspaceCatalog::adaptersAt(
    const std::string& object) const {
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const git::Tree tree = treeNamed(repo, object);
  std::vector<std::pair<std::string, std::string>> adapters;
  for (const std::string& file : git::topLevelFiles(tree.get())) {
    const auto name = catalog::adapterNameOf(file);
    if (!name) continue;
    adapters.emplace_back(*name, git::blobText(repo, *git::fileId(tree.get(), file)));
  }
  std::sort(adapters.begin(), adapters.end());
  return adapters;
}

std::string WorkspaceCatalog::writeApproval(const ApprovalPlan& plan,
                                            const std::string& proposal_commit,
                                            const std::string& text, const Trailers& trailers) {
  Trailers all = {{catalog::kActionKey, "approve"}};
  all.insert(all.end(), trailers.begin(), trailers.end());
  for (const std::string& name : plan.adapters) all.emplace_back(catalog::kAdapterKey, name);
  const std::string message =
      catalog::composeMessage(catalog::splitText(text, "approval message"), all);
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const git::Commit main = git::lookupCommit(repo, parseId(plan.main, "main"));
  const git::Commit proposal = git::lookupCommit(repo, parseId(proposal_commit, "proposal"));
  return git::toHex(git::writeCommit(repo, parseId(plan.tree, "tree"),
                                     std::vector<git_commit*>{main.get(), proposal.get()},
                                     message));
}

std::string WorkspaceCatalog::proposalDiff(const std::string& proposal_commit) const {
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const git::Commit proposal = git::lookupCommit(repo, parseId(proposal_commit, "proposal"));
  const git::Commit base = git::firstParent(proposal.get());
  const git::Tree before = base ? git::treeOf(base.get()) : git::Tree();
  const git::Tree after = git::treeOf(proposal.get());
  git_diff* raw = nullptr;
  git::check(git_diff_tree_to_tree(&raw, repo, before.get(), after.get(), nullptr),
             "cannot diff proposal " + proposal_commit);
  const std::unique_ptr<git_diff, git::FreeWith<git_diff_free>> diff(raw);
  git_buf text = GIT_BUF_INIT;
  git::check(git_diff_to_buf(&text, diff.get(), GIT_DIFF_FORMAT_PATCH),
             "cannot format the diff of proposal " + proposal_commit);
  std::string patch(text.ptr == nullptr ? "" : text.ptr, text.size);
  git_buf_dispose(&text);
  return patch;
}

void WorkspaceCatalog::advanceMain(const std::string& commit, const std::string& expected) {
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const git_oid old_id = parseId(expected, "main");
  const git::Commit old_main = git::lookupCommit(repo, old_id);
  const git::Tree old_tree = git::treeOf(old_main.get());
  git::moveBranch(repo, catalog::kMainBranch, parseId(commit, "approval"), old_id,
                  "stickler: approval");
  catalog::syncWorkdirWithMain(repo, *git_tree_id(old_tree.get()));
}

}  // namespace stickler
