// Opening a catalog and changing adapters on their draft branches. Every change is computed
// from the branch tip, written to the object database, and only then made visible by moving
// the branch: a failure at any step leaves the catalog as it was.
#include "adapters/catalog_repo/workspace_catalog.h"

#include <algorithm>
#include <cctype>

#include "adapters/catalog_repo/catalog_internal.h"
#include "adapters/catalog_repo/commit_message.h"
#include "adapters/engine/adapter_name.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace fs = std::filesystem;

namespace catalog {

std::optional<std::string> adapterNameOf(const std::string& file_name) {
  const std::string suffix = ".py";
  if (file_name.size() <= suffix.size() ||
      file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  const std::string name = file_name.substr(0, file_name.size() - suffix.size());
  try {
    WorkspaceCatalog::validateName(name);
  } catch (const UserError&) {
    return std::nullopt;
  }
  return name;
}

}  // namespace catalog

namespace {

// Where a name's work happens: its draft branch, or main before the first draft.
struct BranchBase {
  std::optional<git_oid> draft_tip;  // none until the first draft
  git::Commit commit;                // the draft tip, or main's
  git::Tree tree;
};

BranchBase baseFor(git_repository* repo, const std::string& name) {
  BranchBase base;
  base.draft_tip = git::branchTip(repo, WorkspaceCatalog::draftBranch(name));
  const std::optional<git_oid> tip =
      base.draft_tip ? base.draft_tip : git::branchTip(repo, catalog::kMainBranch);
  if (!tip) {
    throw UserError("the adapter catalog has no main branch: it is damaged");
  }
  base.commit = git::lookupCommit(repo, *tip);
  base.tree = git::treeOf(base.commit.get());
  return base;
}

// Commits `tree` on top of `base` and moves the draft branch to it, creating the branch from
// main on the first commit. The branch moves last, and only if nobody moved it meanwhile.
std::string commitOnDraft(git_repository* repo, const std::string& name, const BranchBase& base,
                          const git_oid& tree, const std::string& message,
                          const std::string& subject) {
  const git_oid commit = git::writeCommit(repo, tree, base.commit.get(), message);
  git::moveBranch(repo, WorkspaceCatalog::draftBranch(name), commit, base.draft_tip,
                  "stickler: " + subject);
  return git::toHex(commit);
}

Trailers sticklerTrailers(const std::string& name, const std::string& action,
                          const Trailers& callers) {
  Trailers trailers{{catalog::kAdapterKey, name}, {catalog::kActionKey, action}};
  trailers.insert(trailers.end(), callers.begin(), callers.end());
  return trailers;
}

bool changesFile(git_commit* commit, const std::string& path) {
  const git::Tree tree = git::treeOf(commit);
  const git::Commit parent = git::firstParent(commit);
  const git::Tree parent_tree = parent ? git::treeOf(parent.get()) : nullptr;
  return !git::sameId(git::fileId(tree.get(), path), git::fileId(parent_tree.get(), path));
}

// The draft's own last change to the file: what "undo what I just tried" means.
git::Commit lastDraftChange(git_repository* repo, const std::string& name, const git_oid& tip) {
  const std::string path = catalog::adapterPath(name);
  for (const git_oid& id : git::ancestry(repo, {tip}, git::branchTip(repo, catalog::kMainBranch))) {
    git::Commit commit = git::lookupCommit(repo, id);
    if (changesFile(commit.get(), path)) {
      return commit;
    }
  }
  throw UserError(WorkspaceCatalog::draftBranch(name) + " has no change to " + path +
                  " since it branched from main: nothing to revert");
}

git::Commit findCommitOnBranch(git_repository* repo, const std::string& spec, const git_oid& tip,
                               const std::string& branch) {
  git_object* raw = nullptr;
  if (git_revparse_single(&raw, repo, spec.c_str()) < 0) {
    throw UserError("no commit " + spec + " in the adapter catalog: " + git::lastErrorMessage());
  }
  const git::Object object(raw);
  git_object* peeled = nullptr;
  git::check(git_object_peel(&peeled, object.get(), GIT_OBJECT_COMMIT), spec + " is not a commit");
  git::Commit commit(reinterpret_cast<git_commit*>(peeled));
  const git_oid* id = git_commit_id(commit.get());
  if (!git_oid_equal(id, &tip) && git_graph_descendant_of(repo, &tip, id) != 1) {
    throw UserError("commit " + spec + " is not on branch " + branch);
  }
  return commit;
}

// Commits after `target` on the branch that also changed the file: a revert undoes them too,
// and says so.
std::vector<std::string> laterChanges(git_repository* repo, const git_oid& tip, git_commit* target,
                                      const std::string& path) {
  std::vector<std::string> later;
  for (const git_oid& id : git::ancestry(repo, {tip}, *git_commit_id(target))) {
    git::Commit commit = git::lookupCommit(repo, id);
    if (changesFile(commit.get(), path)) {
      later.push_back(git::shortId(commit.get()));
    }
  }
  return later;
}

std::string revertBody(const catalog::MessageText& reason, const std::vector<std::string>& later,
                       const std::string& path) {
  std::string body = reason.subject + (reason.body.empty() ? "" : "\n\n" + reason.body);
  if (!later.empty()) {
    std::string ids;
    for (const std::string& id : later) {
      ids += (ids.empty() ? "" : ", ") + id;
    }
    body += "\n\nThis also undoes the later changes to " + path + " in " + ids + ".";
  }
  return body;
}

FileChange changeBetween(const std::optional<git_oid>& before,
                         const std::optional<git_oid>& after) {
  if (git::sameId(before, after)) {
    return FileChange::kUnchanged;
  }
  return !before ? FileChange::kCreated : !after ? FileChange::kDeleted : FileChange::kUpdated;
}

std::vector<CatalogAdapter> adaptersInTree(git_tree* tree, const std::string& branch) {
  std::vector<CatalogAdapter> adapters;
  for (const std::string& file : git::topLevelFiles(tree)) {
    if (std::optional<std::string> name = catalog::adapterNameOf(file)) {
      adapters.push_back({*name, branch});
    }
  }
  return adapters;
}

std::vector<CatalogAdapter> adaptersOnBranch(git_repository* repo, const std::string& branch) {
  const std::optional<git_oid> tip = git::branchTip(repo, branch);
  if (!tip) {
    throw UserError("no branch " + branch + " in the adapter catalog");
  }
  const git::Commit commit = git::lookupCommit(repo, *tip);
  const git::Tree tree = git::treeOf(commit.get());
  return adaptersInTree(tree.get(), branch);
}

// Whether draft/<name> exists and its file differs from main's (deleting it is a difference).
bool hasRealDraft(git_repository* repo, const std::string& name) {
  const std::optional<git_oid> draft = git::branchTip(repo, WorkspaceCatalog::draftBranch(name));
  if (!draft) return false;
  const std::optional<git_oid> main = git::branchTip(repo, catalog::kMainBranch);
  if (!main) return true;
  const std::string path = catalog::adapterPath(name);
  const git::Tree draft_tree = git::treeOf(git::lookupCommit(repo, *draft).get());
  const git::Tree main_tree = git::treeOf(git::lookupCommit(repo, *main).get());
  return !git::sameId(git::fileId(draft_tree.get(), path), git::fileId(main_tree.get(), path));
}

}  // namespace

WorkspaceCatalog::WorkspaceCatalog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WorkspaceCatalog::WorkspaceCatalog(WorkspaceCatalog&&) noexcept = default;
WorkspaceCatalog& WorkspaceCatalog::operator=(WorkspaceCatalog&&) noexcept = default;
WorkspaceCatalog::~WorkspaceCatalog() = default;

const fs::path& WorkspaceCatalog::dir() const {
  return impl_->dir;
}

void WorkspaceCatalog::validateName(const std::string& name) {
  if (const auto problem = adapterNameProblem(name)) {
    throw UserError("invalid adapter name \"" + name + "\": " + *problem);
  }
}

WorkspaceCatalog WorkspaceCatalog::open(const fs::path& dir) {
  git::Repository repo = catalog::openRepositoryAt(dir);
  if (!repo) {
    throw UserError("no adapter catalog at " + dir.string() + ": run `stickler init`");
  }
  if (!catalog::isSticklerCatalog(repo.get())) {
    throw UserError(dir.string() +
                    " is a git repository but not a Stickler adapter catalog (main does not start "
                    "with Stickler's seed commit)");
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->repo = std::move(repo);
  return WorkspaceCatalog(std::move(impl));
}

CatalogChange WorkspaceCatalog::draft(const std::string& name, const std::string& source_text,
                                      const std::string& reason, const Trailers& trailers) {
  validateName(name);
  catalog::validateCallerTrailers(trailers);
  const catalog::MessageText text = catalog::splitText(reason, "reason");
  if (source_text.empty()) {
    throw UserError("the source of adapter " + name + " is empty");
  }
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const BranchBase base = baseFor(repo, name);
  const std::string path = catalog::adapterPath(name);
  const std::optional<git_oid> before = git::fileId(base.tree.get(), path);
  const git_oid blob = git::writeBlob(repo, source_text);

  CatalogChange result{false, git::toHex(*git_commit_id(base.commit.get())), draftBranch(name),
                       changeBetween(before, blob)};
  if (result.change == FileChange::kUnchanged) {
    return result;
  }
  const git_oid tree = git::writeTreeWith(repo, base.tree.get(), path, blob);
  const std::string message =
      catalog::composeMessage(text, sticklerTrailers(name, "draft", trailers));
  result.commit_id = commitOnDraft(repo, name, base, tree, message, text.subject);
  result.committed = true;
  return result;
}

CatalogChange WorkspaceCatalog::revert(const std::string& name, const std::string& commit_id,
                                       const std::string& reason, const Trailers& trailers) {
  validateName(name);
  catalog::validateCallerTrailers(trailers);
  const catalog::MessageText reason_text = catalog::splitText(reason, "reason");
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const std::string branch = draftBranch(name);
  const BranchBase base = baseFor(repo, name);
  if (!base.draft_tip) {
    throw UserError("no draft branch " + branch + ": adapter " + name + " has nothing to revert");
  }
  const std::string path = catalog::adapterPath(name);
  const git::Commit target = commit_id.empty()
                                 ? lastDraftChange(repo, name, *base.draft_tip)
                                 : findCommitOnBranch(repo, commit_id, *base.draft_tip, branch);
  if (!changesFile(target.get(), path)) {
    throw UserError("commit " + commit_id + " does not change " + path + ": nothing to revert");
  }
  const git::Commit parent = git::firstParent(target.get());
  const git::Tree parent_tree = parent ? git::treeOf(parent.get()) : nullptr;
  const std::optional<git_oid> restored = git::fileId(parent_tree.get(), path);
  const std::optional<git_oid> current = git::fileId(base.tree.get(), path);

  CatalogChange result{false, git::toHex(*base.draft_tip), branch,
                       changeBetween(current, restored)};
  if (result.change == FileChange::kUnchanged) {
    return result;
  }
  const git_oid tree = git::writeTreeWith(repo, base.tree.get(), path, restored);
  const std::string target_id = git::toHex(*git_commit_id(target.get()));
  const catalog::MessageText text{
      "Revert \"" + catalog::parseMessage(git_commit_message(target.get())).subject + "\"",
      revertBody(reason_text, laterChanges(repo, *base.draft_tip, target.get(), path), path)};
  Trailers all{{catalog::kRevertsKey, target_id},
               {catalog::kActionKey, "revert"},
               {catalog::kAdapterKey, name}};
  all.insert(all.end(), trailers.begin(), trailers.end());
  result.commit_id =
      commitOnDraft(repo, name, base, tree, catalog::composeMessage(text, all), text.subject);
  result.committed = true;
  return result;
}

CatalogChange WorkspaceCatalog::recordEvidence(const std::string& name, const std::string& summary,
                                               const Trailers& trailers) {
  validateName(name);
  catalog::validateCallerTrailers(trailers);
  const catalog::MessageText text = catalog::splitText(summary, "summary");
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const std::string path = catalog::adapterPath(name);
  const std::string message =
      catalog::composeMessage(text, sticklerTrailers(name, "evidence", trailers));
  if (hasRealDraft(repo, name)) {
    const BranchBase base = baseFor(repo, name);
    const std::string id =
        commitOnDraft(repo, name, base, *git_tree_id(base.tree.get()), message, text.subject);
    return {true, id, draftBranch(name), FileChange::kUnchanged};
  }
  const std::optional<git_oid> main = git::branchTip(repo, catalog::kMainBranch);
  if (!main) throw UserError("the adapter catalog has no main branch: it is damaged");
  const git::Tree main_tree = git::treeOf(git::lookupCommit(repo, *main).get());
  if (!git::fileId(main_tree.get(), path)) {
    throw UserError("no adapter named " + name + " on branch " + catalog::kMainBranch +
                    ": draft it before recording evidence about it");
  }
  // An empty commit, as on a draft: the branch starts at main and changes no file.
  const std::string branch = evidenceBranch(name);
  const std::optional<git_oid> tip = git::branchTip(repo, branch);
  const git::Commit parent = git::lookupCommit(repo, tip ? *tip : *main);
  const git::Tree parent_tree = git::treeOf(parent.get());
  const git_oid commit =
      git::writeCommit(repo, *git_tree_id(parent_tree.get()), parent.get(), message);
  git::moveBranch(repo, branch, commit, tip, "stickler: " + text.subject);
  return {true, git::toHex(commit), branch, FileChange::kUnchanged};
}

std::string WorkspaceCatalog::read(const std::string& name, const std::string& branch) const {
  validateName(name);
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  const std::string source = !branch.empty()                              ? branch
                             : git::branchExists(repo, draftBranch(name)) ? draftBranch(name)
                                                                          : catalog::kMainBranch;
  const std::optional<git_oid> tip = git::branchTip(repo, source);
  if (!tip) {
    throw UserError("no branch " + source + " in the adapter catalog at " + impl_->dir.string());
  }
  const git::Commit commit = git::lookupCommit(repo, *tip);
  const git::Tree tree = git::treeOf(commit.get());
  const std::optional<git_oid> blob = git::fileId(tree.get(), catalog::adapterPath(name));
  if (!blob) {
    throw UserError("no adapter named " + name + " on branch " + source);
  }
  return git::blobText(repo, *blob);
}

std::vector<CatalogAdapter> WorkspaceCatalog::list(const std::string& branch) const {
  const std::lock_guard lock(impl_->mutex);
  git_repository* repo = impl_->repo.get();
  if (!branch.empty()) {
    return adaptersOnBranch(repo, branch);
  }
  // A draft branch shadows main for its adapter, as read() does: even when the draft
  // deleted the file, what the user works on is the draft.
  // A draft branch whose file is main's (evidence recorded before there was an evidence branch,
  // or a draft reverted to main) is no draft.
  std::vector<CatalogAdapter> adapters;
  for (const CatalogAdapter& adapter : adaptersOnBranch(repo, catalog::kMainBranch)) {
    if (!hasRealDraft(repo, adapter.name)) {
      adapters.push_back(adapter);
    }
  }
  for (const std::string& draft : git::branchesUnder(repo, "draft/")) {
    const std::string name = draft.substr(std::string("draft/").size());
    if (!hasRealDraft(repo, name)) continue;
    for (const CatalogAdapter& adapter : adaptersOnBranch(repo, draft)) {
      if (adapter.name == name) {
        adapters.push_back(adapter);
      }
    }
  }
  std::sort(adapters.begin(), adapters.end(),
            [](const CatalogAdapter& a, const CatalogAdapter& b) { return a.name < b.name; });
  return adapters;
}

}  // namespace stickler
