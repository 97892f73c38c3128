#include "simulator/support/git_support.h"

#include <algorithm>
#include <cstdlib>

#include "simulator/support/errors.h"

namespace stickler::git {
namespace {

const char* const kDefaultName = "Stickler";
const char* const kDefaultEmail = "stickler@localhost";

std::string environmentOr(const char* variable, const std::string& fallback) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? value : fallback;
}

Signature signatureNow(const std::string& name, const std::string& email) {
  git_signature* signature = nullptr;
  check(git_signature_now(&signature, name.c_str(), email.c_str()),
        "invalid commit identity \"" + name + " <" + email + ">\"");
  return Signature(signature);
}

// As git does: the committer defaults to the author, so setting only GIT_AUTHOR_* is enough.
std::pair<Signature, Signature> authorAndCommitter() {
  const std::string author_name = environmentOr("GIT_AUTHOR_NAME", kDefaultName);
  const std::string author_email = environmentOr("GIT_AUTHOR_EMAIL", kDefaultEmail);
  Signature author = signatureNow(author_name, author_email);
  Signature committer = signatureNow(environmentOr("GIT_COMMITTER_NAME", author_name),
                                     environmentOr("GIT_COMMITTER_EMAIL", author_email));
  return {std::move(author), std::move(committer)};
}

}  // namespace

std::string authorIdentity() {
  return environmentOr("GIT_AUTHOR_NAME", kDefaultName) + " <" +
         environmentOr("GIT_AUTHOR_EMAIL", kDefaultEmail) + ">";
}

void ensureInitialized() {
  // A function-local static is initialized exactly once even when threads race here. libgit2
  // is never shut down: repositories may outlive any static we could hang the shutdown on.
  static const int initialized = git_libgit2_init();
  (void)initialized;
}

std::string lastErrorMessage() {
  const git_error* error = git_error_last();
  return error != nullptr && error->message != nullptr ? error->message : "unknown libgit2 error";
}

void check(int rc, const std::string& context) {
  if (rc < 0) {
    throw UserError(context + ": " + lastErrorMessage());
  }
}

std::string toHex(const git_oid& id) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &id);
  return hex;
}

bool sameId(const std::optional<git_oid>& a, const std::optional<git_oid>& b) {
  if (!a || !b) {
    return a.has_value() == b.has_value();
  }
  return git_oid_equal(&*a, &*b) != 0;
}

std::string shortId(git_commit* commit) {
  git_buf buffer = GIT_BUF_INIT;
  check(git_object_short_id(&buffer, reinterpret_cast<git_object*>(commit)),
        "cannot abbreviate commit " + toHex(*git_commit_id(commit)));
  std::string abbreviated(buffer.ptr, buffer.size);
  git_buf_dispose(&buffer);
  return abbreviated;
}

std::optional<git_oid> branchTip(git_repository* repo, const std::string& branch) {
  git_oid id;
  const int rc = git_reference_name_to_id(&id, repo, ("refs/heads/" + branch).c_str());
  if (rc == GIT_ENOTFOUND) {
    return std::nullopt;
  }
  check(rc, "cannot read branch " + branch);
  return id;
}

bool branchExists(git_repository* repo, const std::string& branch) {
  return branchTip(repo, branch).has_value();
}

std::vector<std::string> branchesUnder(git_repository* repo, const std::string& prefix) {
  git_strarray names{};
  check(git_reference_list(&names, repo), "cannot list the branches");
  std::vector<std::string> branches;
  const std::string heads = "refs/heads/" + prefix;
  for (size_t i = 0; i < names.count; ++i) {
    const std::string name = names.strings[i];
    if (name.compare(0, heads.size(), heads) == 0) {
      branches.push_back(name.substr(std::string("refs/heads/").size()));
    }
  }
  git_strarray_dispose(&names);
  std::sort(branches.begin(), branches.end());
  return branches;
}

Commit lookupCommit(git_repository* repo, const git_oid& id) {
  git_commit* commit = nullptr;
  check(git_commit_lookup(&commit, repo, &id), "cannot read commit " + toHex(id));
  return Commit(commit);
}

Tree treeOf(git_commit* commit) {
  git_tree* tree = nullptr;
  check(git_commit_tree(&tree, commit), "cannot read the tree of " + toHex(*git_commit_id(commit)));
  return Tree(tree);
}

Commit firstParent(git_commit* commit) {
  if (git_commit_parentcount(commit) == 0) {
    return nullptr;
  }
  git_commit* parent = nullptr;
  check(git_commit_parent(&parent, commit, 0),
        "cannot read the parent of " + toHex(*git_commit_id(commit)));
  return Commit(parent);
}

std::optional<git_oid> fileId(git_tree* tree, const std::string& path) {
  if (tree == nullptr) {
    return std::nullopt;
  }
  const git_tree_entry* entry = git_tree_entry_byname(tree, path.c_str());
  if (entry == nullptr || git_tree_entry_type(entry) != GIT_OBJECT_BLOB) {
    return std::nullopt;
  }
  return *git_tree_entry_id(entry);
}

std::string blobText(git_repository* repo, const git_oid& blob_id) {
  git_blob* raw = nullptr;
  check(git_blob_lookup(&raw, repo, &blob_id), "cannot read blob " + toHex(blob_id));
  Blob blob(raw);
  const auto* bytes = static_cast<const char*>(git_blob_rawcontent(blob.get()));
  return std::string(bytes, static_cast<size_t>(git_blob_rawsize(blob.get())));
}

std::vector<std::string> topLevelFiles(git_tree* tree) {
  std::vector<std::string> files;
  for (size_t i = 0; i < git_tree_entrycount(tree); ++i) {
    const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
    if (git_tree_entry_type(entry) == GIT_OBJECT_BLOB) {
      files.emplace_back(git_tree_entry_name(entry));
    }
  }
  return files;
}

git_oid writeBlob(git_repository* repo, const std::string& content) {
  git_oid id;
  check(git_blob_create_from_buffer(&id, repo, content.data(), content.size()),
        "cannot write a blob");
  return id;
}

git_oid writeTreeWith(git_repository* repo, git_tree* base, const std::string& path,
                      const std::optional<git_oid>& blob) {
  git_treebuilder* raw = nullptr;
  check(git_treebuilder_new(&raw, repo, base), "cannot start a tree");
  std::unique_ptr<git_treebuilder, FreeWith<git_treebuilder_free>> builder(raw);
  if (blob) {
    check(git_treebuilder_insert(nullptr, builder.get(), path.c_str(), &*blob, GIT_FILEMODE_BLOB),
          "cannot add " + path + " to a tree");
  } else if (git_treebuilder_get(builder.get(), path.c_str()) != nullptr) {
    check(git_treebuilder_remove(builder.get(), path.c_str()),
          "cannot remove " + path + " from a tree");
  }
  git_oid id;
  check(git_treebuilder_write(&id, builder.get()), "cannot write a tree");
  return id;
}

git_oid writeEmptyTree(git_repository* repo) {
  git_treebuilder* raw = nullptr;
  check(git_treebuilder_new(&raw, repo, nullptr), "cannot start a tree");
  std::unique_ptr<git_treebuilder, FreeWith<git_treebuilder_free>> builder(raw);
  git_oid id;
  check(git_treebuilder_write(&id, builder.get()), "cannot write the empty tree");
  return id;
}

git_oid writeCommit(git_repository* repo, const git_oid& tree_id, git_commit* parent,
                    const std::string& message) {
  std::vector<git_commit*> parents;
  if (parent != nullptr) parents.push_back(parent);
  return writeCommit(repo, tree_id, parents, message);
}

git_oid writeCommit(git_repository* repo, const git_oid& tree_id,
                    const std::vector<git_commit*>& parents, const std::string& message) {
  git_tree* raw_tree = nullptr;
  check(git_tree_lookup(&raw_tree, repo, &tree_id), "cannot read tree " + toHex(tree_id));
  Tree tree(raw_tree);
  const auto [author, committer] = authorAndCommitter();
  std::vector<const git_commit*> parent_list(parents.begin(), parents.end());
  git_oid id;
  check(git_commit_create(&id, repo, nullptr, author.get(), committer.get(), nullptr,
                          message.c_str(), tree.get(), parent_list.size(), parent_list.data()),
        "cannot write a commit");
  return id;
}

void moveBranch(git_repository* repo, const std::string& branch, const git_oid& id,
                const std::optional<git_oid>& expected, const std::string& log_message) {
  const std::string ref_name = "refs/heads/" + branch;
  git_reference* raw = nullptr;
  const int rc =
      expected ? git_reference_create_matching(&raw, repo, ref_name.c_str(), &id, 1, &*expected,
                                               log_message.c_str())
               : git_reference_create(&raw, repo, ref_name.c_str(), &id, 0, log_message.c_str());
  Reference moved(raw);
  // A held lock file is another writer in the middle of the same move.
  if (rc == GIT_EMODIFIED || rc == GIT_EEXISTS || rc == GIT_ELOCKED) {
    throw UserError("branch " + branch +
                    " moved while Stickler was committing to it (another process writing the "
                    "repository?): try again");
  }
  check(rc, "cannot move branch " + branch);
}

void deleteBranch(git_repository* repo, const std::string& branch, const git_oid& expected) {
  const std::string ref_name = "refs/heads/" + branch;
  git_reference* raw = nullptr;
  check(git_reference_lookup(&raw, repo, ref_name.c_str()), "no branch " + branch);
  Reference reference(raw);
  const git_oid* target = git_reference_target(reference.get());
  if (target == nullptr || git_oid_cmp(target, &expected) != 0) {
    throw UserError("branch " + branch +
                    " moved while Stickler was deleting it (another process writing the "
                    "repository?): try again");
  }
  check(git_reference_delete(reference.get()), "cannot delete branch " + branch);
}

std::vector<git_oid> ancestry(git_repository* repo, const std::vector<git_oid>& tips,
                              const std::optional<git_oid>& hidden) {
  git_revwalk* raw = nullptr;
  check(git_revwalk_new(&raw, repo), "cannot walk the history");
  Revwalk walk(raw);
  check(git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME),
        "cannot sort the history");
  for (const git_oid& tip : tips) {
    check(git_revwalk_push(walk.get(), &tip), "cannot walk from " + toHex(tip));
  }
  if (hidden) {
    check(git_revwalk_hide(walk.get(), &*hidden), "cannot walk the history");
  }
  std::vector<git_oid> commits;
  git_oid id;
  int rc = 0;
  while ((rc = git_revwalk_next(&id, walk.get())) == 0) {
    commits.push_back(id);
  }
  if (rc != GIT_ITEROVER) {
    check(rc, "cannot walk the history");
  }
  return commits;
}

}  // namespace stickler::git
