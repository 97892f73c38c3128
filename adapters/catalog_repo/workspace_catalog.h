// A workspace's adapter catalog: a git repository that Stickler writes with libgit2, so that
// every change to an adapter is a commit carrying its reason and evidence, and a person can
// audit it with plain git. See docs/adapter-catalog.md.
//
// The branches are the truth: `main` holds the accepted catalog (seeded from the shipped one),
// `draft/<name>` holds the work in progress on one adapter. The working tree mirrors `main`
// only so that people can read the files.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace stickler {

// Git trailers in the order they appear in the message: git keeps the order, and several
// trailers may share a key (two `Evidence:` lines are two pieces of evidence).
using Trailers = std::vector<std::pair<std::string, std::string>>;

struct CatalogInitResult {
  // True when the directory already held a Stickler catalog: a second `stickler init` must be
  // harmless, so nothing was written.
  bool already_existed = false;
  std::string main_commit;  // main's tip, so the caller can report what the user has
  std::size_t adapters_on_main = 0;
};

// What a change to an adapter's file did. kUnchanged exists because a draft of the same text
// is a normal outcome of an agent's retry, not an error: no commit is made for it.
enum class FileChange { kCreated, kUpdated, kDeleted, kUnchanged };

struct CatalogChange {
  bool committed = false;
  std::string commit_id;  // the new commit; the branch tip when nothing was committed
  std::string branch;     // draft/<name>
  FileChange change = FileChange::kUnchanged;
};

// An adapter as the catalog resolves it: the draft shadows main, so callers see the version
// being worked on, and know where it came from.
struct CatalogAdapter {
  std::string name;
  std::string branch;  // "main" or "draft/<name>"
};

struct CatalogCommit {
  std::string id;
  std::string short_id;
  std::string branch;  // main when main reaches the commit, else the draft branch that does
  std::string subject;
  std::string body;    // the message between the subject and the trailers
  std::string author;  // "Name <email>"
  std::string time;    // author time, ISO-8601 UTC ("2025-06-01T12:00:00Z")
  Trailers trailers;
  std::vector<std::string> files_changed;  // against the first parent, sorted
};

class WorkspaceCatalog {
 public:
  // Creates the repository at `dir` with one commit on main seeding every `*.py` of
  // `shipped_catalog_dir` (which may be missing or empty: a workspace can start from nothing).
  // Throws UserError when `dir` is non-empty and not a Stickler catalog, because seeding it
  // would mix our history into someone else's files; or when a shipped file's name is not a
  // valid adapter name, because that adapter could never be addressed.
  static CatalogInitResult init(const std::filesystem::path& dir,
                                const std::filesystem::path& shipped_catalog_dir);

  // Throws UserError "no adapter catalog at DIR: run `stickler init`" when there is none, so a
  // user learns the fix rather than a libgit2 code.
  static WorkspaceCatalog open(const std::filesystem::path& dir);

  WorkspaceCatalog(WorkspaceCatalog&&) noexcept;
  WorkspaceCatalog& operator=(WorkspaceCatalog&&) noexcept;
  ~WorkspaceCatalog();

  const std::filesystem::path& dir() const;

  // Commits `<name>.py` = `source_text` on draft/<name>, branching from main on the first
  // draft. `reason` becomes the subject (its further lines the body); `trailers` (Evidence,
  // Model, Profile, ...) follow `Adapter` and `Stickler-Action: draft`, which Stickler writes
  // itself and refuses from callers so that history stays machine-readable.
  CatalogChange draft(const std::string& name, const std::string& source_text,
                      const std::string& reason, const Trailers& trailers = {});

  // Restores `<name>.py` on draft/<name> to its content before `commit_id` (deleting it when
  // that commit created it). An empty `commit_id` means the draft's own last change to the file:
  // the usual "undo what I just tried". Reverting an older commit also undoes the later
  // changes to the file; the message names them so the history does not hide it.
  CatalogChange revert(const std::string& name, const std::string& commit_id,
                       const std::string& reason, const Trailers& trailers = {});

  // Takes draft/<name> away, with `reason` as an empty commit on it first; the branch is kept as
  // deleted/<name>/<n> (the first free n), so the work stays auditable. The adapter is then main's
  // again, or gone when main has none. UserError when there is no draft branch.
  CatalogChange deleteDraft(const std::string& name, const std::string& reason);
  // Drafts the text of draft/<from> as <to> (its `name = "<from>"` line rewritten), with
  // `reason` and a `Renamed-From: <from>` trailer, then deletes draft/<from>. UserError when
  // <from> has no draft that changes it, or <to> exists on main or as a draft.
  CatalogChange renameDraft(const std::string& from, const std::string& to,
                            const std::string& reason);
  // An empty commit, so that what was learned about an adapter lives in its history next to the
  // version it judges: on draft/<name> when there is a draft (its file differs from main's),
  // else on evidence/<name> (branched from main): evidence about main's version, a shipped
  // adapter's included, never makes a draft of it.
  CatalogChange recordEvidence(const std::string& name, const std::string& summary,
                               const Trailers& trailers);

  // The adapter's source. An empty `branch` reads where work happens: draft/<name> when that
  // branch exists, else main.
  std::string read(const std::string& name, const std::string& branch = "") const;

  // With an empty `branch`, every adapter once: on its draft branch when the draft changes its
  // file against main (or main has none), else on main; otherwise the adapters on that branch.
  // Sorted by name.
  std::vector<CatalogAdapter> list(const std::string& branch = "") const;

  // Writes branch `proposals/<id>` for a review: main's tree with each named adapter's file as
  // on its draft branch, committed with main and the drafts' tips as parents (so the branch
  // holds the adapters' commits), the rationale as the message. UserError when an adapter has
  // no draft or its draft changes nothing against main. A branch of that name is replaced: the
  // review queue gives out an id only once it is unused (a crashed submission's orphan).
  // Returns the commit and, per adapter, the draft tip proposed.
  struct ProposalCommit {
    std::string commit;
    std::string main;
    std::vector<std::pair<std::string, std::string>> draft_tips;  // name, tip
  };
  ProposalCommit propose(const std::string& id, const std::vector<std::string>& names,
                         const std::string& rationale);

  // Approval (the review queue, tools/review/review_approve.cpp) in steps, so that the queue can
  // journal the new commit before main moves.
  struct ApprovalPlan {
    std::string main;  // main's tip the plan is made on
    std::string tree;  // what main's tree becomes: main's with the proposal's adapter files
    std::vector<std::string> adapters;  // those the proposal changes (against its first parent)
    // Of those, the ones main changed since the proposal was made (another approval): approving
    // puts the proposal's version in their place.
    std::vector<std::string> changed_on_main;
  };
  // UserError when `proposal_commit` is not a proposal's commit in this repository.
  ApprovalPlan planApproval(const std::string& proposal_commit) const;
  // The adapters (name, source) of a commit's or a tree's top level, sorted by name.
  std::vector<std::pair<std::string, std::string>> adaptersAt(const std::string& object) const;
  // The approval's commit object: the plan's tree, parents main and the proposal, `text` as
  // subject and body, then `Stickler-Action: approve`, `trailers` and an `Adapter` trailer per
  // adapter. Not on any branch: advanceMain puts it there.
  std::string writeApproval(const ApprovalPlan& plan, const std::string& proposal_commit,
                            const std::string& text, const Trailers& trailers);
  // Moves main from `expected` to `commit` (UserError when main is no longer at `expected`) and
  // makes the work dir show it.
  void advanceMain(const std::string& commit, const std::string& expected);
  std::string mainCommit() const;
  // The proposal's change as a unified diff against the main it was made on (its first parent).
  std::string proposalDiff(const std::string& proposal_commit) const;

  // Newest first. For a name: the commits that changed its file or carry its `Adapter` trailer
  // (evidence changes no file). For an empty name: every commit on main, the drafts and the
  // evidence branches, once.
  // `limit` 0 means no limit.
  std::vector<CatalogCommit> history(const std::string& name = "", std::size_t limit = 0) const;

  // Throws UserError unless `name` is kebab-case (a lower-case letter, then lower-case letters,
  // digits and single hyphens, at most 64 characters): names become branch names and paths.
  static void validateName(const std::string& name);
  static std::string draftBranch(const std::string& name) { return "draft/" + name; }
  static std::string evidenceBranch(const std::string& name) { return "evidence/" + name; }

 private:
  struct Impl;
  explicit WorkspaceCatalog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stickler
