// Recorded gotchas: lessons learned while bringing models up, kept so the next model is cheaper.
// Each is a row of the workspace's SQLite store (.stickler/state.db, WAL) and a Markdown page in
// stickler-gotchas/, a git repository of its own where every change is a commit (libgit2). A
// lesson recorded again (a near-duplicate by its words) is merged into the one already there.
#pragma once

#include <string>
#include <vector>

namespace stickler {

struct Gotcha {
  std::string id;
  std::string title;
  std::string body;
  std::vector<std::string> tags;
  std::string model, adapter, profile;  // what it concerns (any may be empty)
  std::vector<std::string> evidence;    // what showed it, one entry per recording
  int occurrences = 1;
  std::string created, updated;  // ISO-8601 UTC
};

struct GotchaRecorded {
  Gotcha gotcha;
  bool merged = false;    // into an existing gotcha, a near-duplicate
  double similarity = 0;  // to the closest existing gotcha (0 when none)
  std::string commit;     // the commit that recorded it
  std::string page;       // the Markdown page's path
};

class GotchaStore {
 public:
  // The store of the workspace at `root` (created on first use).
  explicit GotchaStore(std::string root);

  // Records (or merges) `gotcha`; its id, counts and times are assigned here. Throws UserError
  // for an empty title or body.
  GotchaRecorded record(const Gotcha& gotcha);

  std::vector<Gotcha> list() const;
  // Throws UserError for an unknown id.
  Gotcha get(const std::string& id) const;

  std::string pagesDirectory() const;  // <root>/stickler-gotchas
  std::string databasePath() const;    // <root>/.stickler/state.db

 private:
  std::string root_;
};

// Word-set similarity (Jaccard over the distinctive words of title and body): 1 for the same
// lesson in the same words, 0 for nothing in common.
double gotchaSimilarity(const Gotcha& a, const Gotcha& b);

}  // namespace stickler
