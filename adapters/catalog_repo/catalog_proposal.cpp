// A proposal's branch: the drafts an agent submits for review, merged onto main where a
// reviewer (and the gate) can see exactly what approval would make of the catalog.
#include "adapters/catalog_repo/catalog_internal.h"
#include "adapters/catalog_repo/commit_message.h"
#include "simulator/support/errors.h"

namespace stickler {

WorkspaceCatalog::ProposalCommit WorkspaceCatalog::propose(const std::string& id,
                                                           const std::vector<std::string>& names,
                                                           const std::string& rationale) {
  if (names.empty()) throw UserError("a proposal needs at least one adapter");
  const catalog::MessageText text = catalog::splitText(rationale, "rationale");
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const std::string branch = "proposals/" + id;
  // The review queue hands out an id only to a proposal it has not recorded: a branch of that
  // name is what a submission that died before recording it left, and is replaced.
  const std::optional<git_oid> orphan = git::branchTip(repo, branch);
  const git_oid main_tip = *git::branchTip(repo, catalog::kMainBranch);
  const git::Commit main = git::lookupCommit(repo, main_tip);
  git::Tree tree = git::treeOf(main.get());
  std::vector<git::Commit> drafts;
  ProposalCommit result;
  result.main = git::toHex(main_tip);
  Trailers trailers = {{catalog::kActionKey, "propose"}, {"Proposal", id}};
  for (const std::string& name : names) {
    validateName(name);
    const std::optional<git_oid> tip = git::branchTip(repo, draftBranch(name));
    if (!tip) {
      throw UserError("adapter " + name + " has no draft (" + draftBranch(name) +
                      "): draft it before proposing it");
    }
    drafts.push_back(git::lookupCommit(repo, *tip));
    const git::Tree draft_tree = git::treeOf(drafts.back().get());
    const std::string path = catalog::adapterPath(name);
    const std::optional<git_oid> proposed = git::fileId(draft_tree.get(), path);
    if (git::sameId(proposed, git::fileId(tree.get(), path))) {
      throw UserError("draft " + draftBranch(name) + " changes nothing of " + path +
                      " against main: there is nothing to propose");
    }
    const git_oid next = git::writeTreeWith(repo, tree.get(), path, proposed);
    git_tree* raw = nullptr;
    git::check(git_tree_lookup(&raw, repo, &next), "cannot read the proposal's tree");
    tree = git::Tree(raw);
    result.draft_tips.emplace_back(name, git::toHex(*tip));
    trailers.emplace_back("Adapter", name);
  }
  std::vector<git_commit*> parents = {main.get()};
  for (const git::Commit& draft : drafts) parents.push_back(draft.get());
  const git_oid commit = git::writeCommit(repo, *git_tree_id(tree.get()), parents,
                                          catalog::composeMessage(text, trailers));
  git::moveBranch(repo, branch, commit, orphan, "stickler: proposal " + id);
  result.commit = git::toHex(commit);
  return result;
}

}  // namespace stickler
