// Creating a workspace catalog from the shipped one, recognizing an existing one, and keeping
// its work dir in step with main.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "adapters/catalog_repo/catalog_internal.h"
#include "adapters/catalog_repo/commit_message.h"
#include "simulator/support/errors.h"
#include "simulator/support/text_files.h"

namespace stickler {
namespace fs = std::filesystem;

namespace {

const char* const kReadme = R"(# Stickler adapter catalog

Stickler writes this repository (with libgit2) so that its history shows which adaptations
worked and why. Read it with plain git; change it through Stickler.

## Branches

- `main`: the accepted catalog, seeded from the adapters Stickler ships. The files in this
  directory mirror `main` and are rewritten when it moves: edits here are not kept.
- `draft/<name>`: work in progress on the adapter `<name>.py`, branched from `main`.

## Trailers

Every commit ends with `Key: value` lines that tools can read:

- `Stickler-Action`: `seed`, `draft`, `revert` or `evidence`
- `Adapter`: the adapter the commit is about
- `Reverts`: the commit a revert undoes
- whatever the caller recorded: `Evidence`, `Model`, `Profile`, ...

    git log --all --format='%h %d %s%n%(trailers)'
    git show draft/<name>:<name>.py
)";

struct ShippedAdapter {
  std::string name;
  std::string text;
};

std::string readWholeFile(const fs::path& path) {
  std::optional<std::string> text = readTextFileIfPresent(path.string());
  if (!text) throw UserError("cannot read shipped adapter " + path.string());
  return std::move(*text);
}

std::string validShippedName(const fs::path& path) {
  std::string name = path.stem().string();
  try {
    WorkspaceCatalog::validateName(name);
  } catch (const UserError& e) {
    throw UserError("shipped adapter " + path.string() + ": " + e.what());
  }
  return name;
}

// Everything is read before the repository exists, so a bad shipped file leaves no trace.
std::vector<ShippedAdapter> readShippedCatalog(const fs::path& dir) {
  std::error_code error;
  if (!fs::exists(dir, error)) {
    return {};  // a Stickler without shipped adapters still gets a usable catalog
  }
  if (!fs::is_directory(dir, error)) {
    throw UserError("shipped adapter catalog " + dir.string() + " is not a directory");
  }
  std::vector<ShippedAdapter> adapters;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".py") {
      adapters.push_back({validShippedName(entry.path()), readWholeFile(entry.path())});
    }
  }
  std::sort(adapters.begin(), adapters.end(),
            [](const ShippedAdapter& a, const ShippedAdapter& b) { return a.name < b.name; });
  return adapters;
}

std::string seedSubject(size_t count) {
  return "Seed the catalog with " + std::to_string(count) + " shipped adapter" +
         (count == 1 ? "" : "s");
}

git_oid writeSeedTree(git_repository* repo, const std::vector<ShippedAdapter>& adapters) {
  git_oid tree = git::writeTreeWith(repo, nullptr, "README.md", git::writeBlob(repo, kReadme));
  for (const ShippedAdapter& adapter : adapters) {
    git_tree* raw = nullptr;
    git::check(git_tree_lookup(&raw, repo, &tree), "cannot read the seed tree");
    git::Tree base(raw);
    tree = git::writeTreeWith(repo, base.get(), catalog::adapterPath(adapter.name),
                              git::writeBlob(repo, adapter.text));
  }
  return tree;
}

git::Repository createRepository(const fs::path& dir) {
  git_repository_init_options options;
  git::check(git_repository_init_options_init(&options, GIT_REPOSITORY_INIT_OPTIONS_VERSION),
             "cannot set up libgit2");
  options.flags = GIT_REPOSITORY_INIT_MKPATH | GIT_REPOSITORY_INIT_NO_REINIT;
  options.initial_head = catalog::kMainBranch;
  git_repository* raw = nullptr;
  git::check(git_repository_init_ext(&raw, dir.c_str(), &options),
             "cannot create the adapter catalog at " + dir.string());
  return git::Repository(raw);
}

// The repository with its seed commit on main; the work dir is not written yet.
git::Repository seedRepository(const fs::path& dir, const std::vector<ShippedAdapter>& adapters) {
  git::Repository repo = createRepository(dir);
  const git_oid tree = writeSeedTree(repo.get(), adapters);
  const std::string message =
      catalog::composeMessage({seedSubject(adapters.size()), ""}, {{catalog::kActionKey, "seed"}});
  const git_oid commit = git::writeCommit(repo.get(), tree, nullptr, message);
  git::moveBranch(repo.get(), catalog::kMainBranch, commit, std::nullopt, "stickler init: seed");
  return repo;
}

// A sibling of `dir` to build the catalog in, unique to this process and call.
fs::path stagingDirFor(const fs::path& dir) {
  static std::atomic<unsigned> counter{0};
  fs::path staging = dir;
  staging.replace_filename("." + dir.filename().string() + ".creating-" +
                           std::to_string(::getpid()) + "-" + std::to_string(counter++));
  return staging;
}

// An exclusive flock on the directory that will hold the catalog, held while it is created.
// flock excludes other open descriptions, so other threads of this process wait as other
// processes do; the kernel releases it when a holder dies; and no lock file is left behind.
class InitLock {
 public:
  explicit InitLock(const fs::path& dir) {
    const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
    std::error_code ignored;
    fs::create_directories(parent, ignored);
    fd_ = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) {
      throw UserError("cannot create the adapter catalog at " + dir.string() + ": cannot open " +
                      parent.string() + ": " + std::strerror(errno));
    }
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~InitLock() { ::close(fd_); }  // closing releases the lock
  InitLock(const InitLock&) = delete;
  InitLock& operator=(const InitLock&) = delete;

 private:
  int fd_ = -1;
};

size_t adaptersOnMain(git_commit* main) {
  const git::Tree tree = git::treeOf(main);
  const std::vector<std::string> files = git::topLevelFiles(tree.get());
  return std::count_if(files.begin(), files.end(), [](const std::string& file) {
    return catalog::adapterNameOf(file).has_value();
  });
}

CatalogInitResult describeExisting(git_repository* repo) {
  const git_oid tip = *git::branchTip(repo, catalog::kMainBranch);
  const git::Commit main = git::lookupCommit(repo, tip);
  return {true, git::toHex(tip), adaptersOnMain(main.get())};
}

bool isEmptyDirectory(const fs::path& dir) {
  try {
    return fs::is_empty(dir);
  } catch (const fs::filesystem_error& e) {
    throw UserError("cannot read " + dir.string() + ": " + e.code().message());
  }
}

}  // namespace

namespace catalog {

git::Repository openRepositoryAt(const fs::path& dir) {
  git::ensureInitialized();
  git_repository* raw = nullptr;
  const int rc = git_repository_open_ext(&raw, dir.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr);
  if (rc == GIT_ENOTFOUND) {
    return nullptr;
  }
  git::check(rc, "cannot open the adapter catalog at " + dir.string());
  return git::Repository(raw);
}

bool isSticklerCatalog(git_repository* repo) {
  if (git_repository_is_bare(repo)) {
    return false;  // the catalog promises files a person can read
  }
  const std::optional<git_oid> tip = git::branchTip(repo, kMainBranch);
  if (!tip) {
    return false;
  }
  git::Commit commit = git::lookupCommit(repo, *tip);
  while (git::Commit parent = git::firstParent(commit.get())) {
    commit = std::move(parent);
  }
  const ParsedMessage root = parseMessage(git_commit_message(commit.get()));
  return trailerValue(root.trailers, kActionKey) == "seed";
}

void syncWorkdirWithMain(git_repository* repo, const git_oid& previous_main_tree) {
  git_reference* raw_head = nullptr;
  git::check(git_reference_lookup(&raw_head, repo, "HEAD"), "cannot read HEAD");
  const git::Reference head(raw_head);
  const char* head_target = git_reference_symbolic_target(head.get());
  if (head_target == nullptr || std::string(head_target) != "refs/heads/main") {
    return;
  }
  const git::Commit main = git::lookupCommit(repo, *git::branchTip(repo, kMainBranch));
  const git::Tree tree = git::treeOf(main.get());
  git_tree* raw_previous = nullptr;
  git::check(git_tree_lookup(&raw_previous, repo, &previous_main_tree), "cannot read main's tree");
  const git::Tree previous(raw_previous);

  git_checkout_options options;
  git::check(git_checkout_options_init(&options, GIT_CHECKOUT_OPTIONS_VERSION),
             "cannot set up libgit2");
  // The branch is the truth: overwrite what a person changed; the baseline tells checkout
  // which files main used to have, so that the ones it dropped are deleted.
  options.checkout_strategy = GIT_CHECKOUT_FORCE;
  options.baseline = previous.get();
  git::check(git_checkout_tree(repo, reinterpret_cast<git_object*>(tree.get()), &options),
             "cannot write main's files into " + std::string(git_repository_workdir(repo)));
}

}  // namespace catalog

CatalogInitResult WorkspaceCatalog::init(const fs::path& requested,
                                         const fs::path& shipped_catalog_dir) {
  git::ensureInitialized();
  fs::path dir = requested.lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "ws/stickler-adapters/"
  // Concurrent first users (four agents drafting at once in a fresh workspace, a CLI beside a
  // server) take turns; the others find the catalog the first one made.
  const InitLock lock(dir);
  std::error_code error;
  const bool dir_exists = fs::exists(dir, error);
  if (dir_exists && !fs::is_directory(dir, error)) {
    throw UserError("cannot create an adapter catalog at " + dir.string() +
                    ": it exists and is not a directory");
  }
  if (dir_exists && !isEmptyDirectory(dir)) {
    if (git::Repository repo = catalog::openRepositoryAt(dir);
        repo && catalog::isSticklerCatalog(repo.get())) {
      return describeExisting(repo.get());
    }
    throw UserError("cannot create an adapter catalog at " + dir.string() +
                    ": the directory is not empty and is not a Stickler adapter catalog; "
                    "choose a new or empty directory");
  }

  const std::vector<ShippedAdapter> adapters = readShippedCatalog(shipped_catalog_dir);
  // Made whole beside its place and renamed into it: whoever looks (a process that does not
  // take the lock) sees no catalog or all of it, and a crash leaves only a stray sibling.
  const fs::path staging = stagingDirFor(dir);
  std::string main_tip;
  try {
    git::Repository repo = seedRepository(staging, adapters);
    catalog::syncWorkdirWithMain(repo.get(), git::writeEmptyTree(repo.get()));
    main_tip = git::toHex(*git::branchTip(repo.get(), catalog::kMainBranch));
  } catch (...) {
    fs::remove_all(staging, error);
    throw;
  }
  fs::rename(staging, dir, error);  // over an empty directory too
  if (error) {
    fs::remove_all(staging, error);
    throw UserError("cannot create the adapter catalog at " + dir.string() + ": " +
                    error.message());
  }
  return {false, main_tip, adapters.size()};
}

}  // namespace stickler
