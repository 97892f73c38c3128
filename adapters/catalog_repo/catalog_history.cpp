// Reading the catalog's history back: what was tried on each adapter, why, and with what
// evidence, as structured records rather than `git log` text.
#include <algorithm>
#include <ctime>
#include <map>

#include "adapters/catalog_repo/catalog_internal.h"
#include "adapters/catalog_repo/commit_message.h"
#include "simulator/support/text_format.h"

namespace stickler {
namespace {

using BranchOfCommit = std::map<std::string, std::string>;  // commit id -> branch

std::vector<std::string> filesChanged(git_repository* repo, git_commit* commit) {
  const git::Tree tree = git::treeOf(commit);
  const git::Commit parent = git::firstParent(commit);
  const git::Tree parent_tree = parent ? git::treeOf(parent.get()) : nullptr;
  git_diff* raw = nullptr;
  git::check(git_diff_tree_to_tree(&raw, repo, parent_tree.get(), tree.get(), nullptr),
             "cannot diff commit " + git::toHex(*git_commit_id(commit)));
  const std::unique_ptr<git_diff, git::FreeWith<git_diff_free>> diff(raw);
  std::vector<std::string> files;
  for (size_t i = 0; i < git_diff_num_deltas(diff.get()); ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    files.emplace_back(delta->new_file.path != nullptr ? delta->new_file.path
                                                       : delta->old_file.path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

CatalogCommit describeCommit(git_repository* repo, git_commit* commit, const std::string& branch) {
  const catalog::ParsedMessage message = catalog::parseMessage(git_commit_message(commit));
  const git_signature* author = git_commit_author(commit);
  return {git::toHex(*git_commit_id(commit)),
          git::shortId(commit),
          branch,
          message.subject,
          message.body,
          std::string(author->name) + " <" + author->email + ">",
          isoTimeUtc(static_cast<std::time_t>(author->when.time)),
          message.trailers,
          filesChanged(repo, commit)};
}

// A commit is on main when main reaches it; otherwise on the draft that does. Drafts are
// visited in name order so that the answer does not depend on the walk.
BranchOfCommit draftCommits(git_repository* repo, const std::vector<std::string>& drafts,
                            const git_oid& main) {
  BranchOfCommit branches;
  for (const std::string& draft : drafts) {
    for (const git_oid& id : git::ancestry(repo, {*git::branchTip(repo, draft)}, main)) {
      branches.emplace(git::toHex(id), draft);
    }
  }
  return branches;
}

bool concerns(const CatalogCommit& commit, const std::string& name) {
  if (name.empty()) {
    return true;
  }
  const std::string path = catalog::adapterPath(name);
  if (std::find(commit.files_changed.begin(), commit.files_changed.end(), path) !=
      commit.files_changed.end()) {
    return true;
  }
  return std::any_of(commit.trailers.begin(), commit.trailers.end(), [&](const auto& trailer) {
    return trailer.first == catalog::kAdapterKey && trailer.second == name;
  });
}

}  // namespace

std::vector<CatalogCommit> WorkspaceCatalog::history(const std::string& name,
                                                     std::size_t limit) const {
  if (!name.empty()) {
    validateName(name);
  }
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const git_oid main = *git::branchTip(repo, catalog::kMainBranch);
  std::vector<std::string> drafts;
  if (name.empty()) {
    drafts = git::branchesUnder(repo, "draft/");
    for (const std::string& evidence : git::branchesUnder(repo, "evidence/")) {
      drafts.push_back(evidence);
    }
  } else {
    for (const std::string& branch : {draftBranch(name), evidenceBranch(name)}) {
      if (git::branchExists(repo, branch)) drafts.push_back(branch);
    }
  }
  std::vector<git_oid> tips{main};
  for (const std::string& draft : drafts) {
    tips.push_back(*git::branchTip(repo, draft));
  }
  const BranchOfCommit on_drafts = draftCommits(repo, drafts, main);

  std::vector<CatalogCommit> commits;
  for (const git_oid& id : git::ancestry(repo, tips)) {
    const auto draft = on_drafts.find(git::toHex(id));
    const std::string branch = draft != on_drafts.end() ? draft->second : catalog::kMainBranch;
    const git::Commit commit = git::lookupCommit(repo, id);
    CatalogCommit described = describeCommit(repo, commit.get(), branch);
    if (concerns(described, name)) {
      commits.push_back(std::move(described));
      if (limit != 0 && commits.size() == limit) {
        break;
      }
    }
  }
  return commits;
}

}  // namespace stickler
