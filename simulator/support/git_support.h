// libgit2, the way Stickler's repositories (the adapter catalog, the gotcha pages) use it:
// owning handles, errors as UserError, commits signed as GIT_AUTHOR_*/GIT_COMMITTER_* say, and
// the few object-database operations a commit needs.
#pragma once

#include <git2.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stickler::git {

// libgit2 must be initialized once per process before any call; safe from any thread.
void ensureInitialized();

// Throws UserError "context: libgit2's message" when `rc` is an error code.
void check(int rc, const std::string& context);
std::string lastErrorMessage();

template <auto Free>
struct FreeWith {
  template <typename T>
  void operator()(T* handle) const {
    Free(handle);
  }
};

using Repository = std::unique_ptr<git_repository, FreeWith<git_repository_free>>;
using Commit = std::unique_ptr<git_commit, FreeWith<git_commit_free>>;
using Tree = std::unique_ptr<git_tree, FreeWith<git_tree_free>>;
using Blob = std::unique_ptr<git_blob, FreeWith<git_blob_free>>;
using Reference = std::unique_ptr<git_reference, FreeWith<git_reference_free>>;
using Signature = std::unique_ptr<git_signature, FreeWith<git_signature_free>>;
using Revwalk = std::unique_ptr<git_revwalk, FreeWith<git_revwalk_free>>;
using Object = std::unique_ptr<git_object, FreeWith<git_object_free>>;
using Index = std::unique_ptr<git_index, FreeWith<git_index_free>>;

std::string toHex(const git_oid& id);
// Equal ids, or both absent (a file missing on both sides did not change).
bool sameId(const std::optional<git_oid>& a, const std::optional<git_oid>& b);
std::string shortId(git_commit* commit);

std::optional<git_oid> branchTip(git_repository* repo, const std::string& branch);
bool branchExists(git_repository* repo, const std::string& branch);
// The short names of the branches under `prefix` ("draft/"), sorted.
std::vector<std::string> branchesUnder(git_repository* repo, const std::string& prefix);

Commit lookupCommit(git_repository* repo, const git_oid& id);
Tree treeOf(git_commit* commit);
// The first parent, or none for a root commit.
Commit firstParent(git_commit* commit);
// The blob id of a file at the top of `tree`, or none when absent (a null tree is empty).
std::optional<git_oid> fileId(git_tree* tree, const std::string& path);
std::string blobText(git_repository* repo, const git_oid& blob_id);
// The names of the regular files at the top of `tree`.
std::vector<std::string> topLevelFiles(git_tree* tree);

git_oid writeBlob(git_repository* repo, const std::string& content);
// `base` with `path` set to `blob` (removed when none); a null base is the empty tree.
git_oid writeTreeWith(git_repository* repo, git_tree* base, const std::string& path,
                      const std::optional<git_oid>& blob);
git_oid writeEmptyTree(git_repository* repo);

// "Name <email>" of whoever commits now: GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL, as git reads
// them, else Stickler's own identity.
std::string authorIdentity();

// A commit object, not yet on any branch: the caller moves the branch last.
git_oid writeCommit(git_repository* repo, const git_oid& tree_id, git_commit* parent,
                    const std::string& message);
// The same with any number of parents (a merge: the first is the branch it continues).
git_oid writeCommit(git_repository* repo, const git_oid& tree_id,
                    const std::vector<git_commit*>& parents, const std::string& message);

// Moves `branch` to `id` only if it still points at `expected` (or, with none, does not exist
// yet), so that a commit from another process is never silently dropped.
void moveBranch(git_repository* repo, const std::string& branch, const git_oid& id,
                const std::optional<git_oid>& expected, const std::string& log_message);

// Deletes `branch` only if it still points at `expected`.
void deleteBranch(git_repository* repo, const std::string& branch, const git_oid& expected);

// Commits reachable from any of `tips`, once each, children before parents and otherwise
// newest first, leaving out those reachable from `hidden` (when given).
std::vector<git_oid> ancestry(git_repository* repo, const std::vector<git_oid>& tips,
                              const std::optional<git_oid>& hidden = std::nullopt);

}  // namespace stickler::git
