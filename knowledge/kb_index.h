// Full-text search over the knowledge base, the skills and the recorded gotchas: an in-memory
// SQLite FTS5 table with one row per section (BM25 ranking, the title, heading and tags
// weighted above the text), built at first use and rebuilt when any source file changes.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "knowledge/kb_page.h"
#include "simulator/support/sqlite_db.h"

namespace stickler {

struct KbSources {
  std::string pages;    // knowledge/pages
  std::string skills;   // skills/
  std::string gotchas;  // the workspace's stickler-gotchas/ ("" for none)
};

struct KbHit {
  std::string id;
  std::string kind;  // page, skill, gotcha
  std::string title;
  std::string heading;  // the section that matched best ("" for the page's opening)
  std::string snippet;  // the matching words in [brackets], with some context
  double score = 0;     // BM25: lower is better
};

class KnowledgeIndex {
 public:
  explicit KnowledgeIndex(KbSources sources);
  ~KnowledgeIndex();
  KnowledgeIndex(const KnowledgeIndex&) = delete;
  KnowledgeIndex& operator=(const KnowledgeIndex&) = delete;

  // The best section of each matching page, best first; `kind` "" for all kinds.
  std::vector<KbHit> search(const std::string& query, size_t limit, const std::string& kind = "");
  // The page with this id (any kind), or nullopt.
  std::optional<KbPage> page(const std::string& id);
  // Every page of `kind` ("" for all), sorted by id.
  std::vector<KbPage> pages(const std::string& kind = "");
  // Files that could not be read as pages: "path: why" (they are left out of the index).
  std::vector<std::string> problems();
  // Look at the sources again on the next call (a page was just written).
  void invalidate();

 private:
  void refreshLocked();
  std::string signature() const;

  KbSources sources_;
  std::mutex mutex_;
  std::optional<sqlite::Database> db_;  // none until the first use
  std::string signature_;
  std::chrono::steady_clock::time_point checked_;  // when the sources were last looked at
  std::vector<KbPage> pages_;
  std::vector<std::string> problems_;
};

// The shipped knowledge pages and skills ($STICKLER_KNOWLEDGE_DIR and $STICKLER_SKILLS_DIR
// override them, as tests and installs need).
std::string shippedKnowledgeDir();
std::string shippedSkillsDir();

// One index per process for the shipped pages and skills plus `gotchas_dir`.
KnowledgeIndex& knowledgeIndexFor(const std::string& gotchas_dir);

}  // namespace stickler
