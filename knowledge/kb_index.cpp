#include "knowledge/kb_index.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "simulator/support/errors.h"
#include "simulator/support/resource_dirs.h"
#include "simulator/support/text_files.h"
#include "simulator/support/text_format.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

// Words that say nothing about the device: dropped from queries so that BM25 ranks on the rest.
const std::set<std::string>& stopWords() {
  static const std::set<std::string> words = {
      "a",    "an",   "the", "and", "or",  "of",   "to",   "in",    "on",    "for",  "with",
      "is",   "are",  "be",  "it",  "its", "this", "that", "why",   "what",  "how",  "when",
      "does", "do",   "did", "can", "i",   "my",   "we",   "our",   "you",   "your", "at",
      "by",   "from", "as",  "if",  "not", "too",  "so",   "which", "there", "about"};
  return words;
}

// The query's words, each quoted for FTS5 (so no word is read as an operator), joined by OR.
std::string matchExpression(const std::string& query) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    std::string lower;
    for (char c : word) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!lower.empty() && !stopWords().count(lower) &&
        std::find(words.begin(), words.end(), lower) == words.end()) {
      words.push_back(lower);
    }
    word.clear();
  };
  for (char c : query) {
    if (std::isalnum(static_cast<unsigned char>(c)) || (static_cast<unsigned char>(c) & 0x80)) {
      word += c;
    } else {
      flush();
    }
  }
  flush();
  std::string expression;
  for (const auto& term : words)
    expression += (expression.empty() ? "" : " OR ") + ("\"" + term + "\"");
  return expression;
}

// Name, size and time of every file a source holds: changes when any page does.
void addSignature(std::ostringstream& out, const std::string& directory, bool skills) {
  std::error_code ec;
  std::vector<std::string> lines;
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    fs::path file = entry.path();
    if (skills) file /= "SKILL.md";
    if (!fs::is_regular_file(file, ec)) continue;
    const auto time = fs::last_write_time(file, ec).time_since_epoch().count();
    lines.push_back(file.string() + " " + std::to_string(fs::file_size(file, ec)) + " " +
                    std::to_string(time));
  }
  std::sort(lines.begin(), lines.end());
  for (const auto& line : lines) out << line << "\n";
}

// Plain words for tags (pages/aliases.json: {"aliases": {"cumsum": ["cumulative sum", ...]}}),
// so that a question in words finds the page tagged with the operator's name. A file that cannot
// be read adds its problem and no aliases.
std::map<std::string, std::string> readAliases(const std::string& pages_dir,
                                               std::vector<std::string>& problems) {
  std::map<std::string, std::string> words;
  const fs::path path = fs::path(pages_dir) / "aliases.json";
  std::error_code ec;
  if (pages_dir.empty() || !fs::is_regular_file(path, ec)) return words;
  try {
    const auto document = nlohmann::json::parse(readTextFile(path.string()));
    for (const auto& [tag, aliases] : document.at("aliases").items()) {
      for (const auto& alias : aliases) words[tag] += alias.get<std::string>() + " ";
    }
  } catch (const std::exception& e) {
    problems.push_back(path.string() + ": " + firstLine(e.what()));
    words.clear();
  }
  return words;
}

}  // namespace

KnowledgeIndex::KnowledgeIndex(KbSources sources) : sources_(std::move(sources)) {}

KnowledgeIndex::~KnowledgeIndex() = default;

std::string KnowledgeIndex::signature() const {
  std::ostringstream out;
  addSignature(out, sources_.pages, false);
  addSignature(out, sources_.skills, true);
  if (!sources_.gotchas.empty()) addSignature(out, sources_.gotchas, false);
  return out.str();
}

void KnowledgeIndex::refreshLocked() {
  // Pages change by hand rarely: the sources are looked at again at most once a second, and at
  // once after invalidate() (a gotcha recorded in this process).
  const auto now = std::chrono::steady_clock::now();
  if (db_ && now - checked_ < std::chrono::seconds(1)) return;
  checked_ = now;
  std::string current = signature();
  if (db_ && current == signature_) return;
  std::vector<KbPage> pages;
  std::vector<std::string> problems;
  const std::pair<std::string, std::string> sources[] = {
      {sources_.pages, "page"}, {sources_.skills, "skill"}, {sources_.gotchas, "gotcha"}};
  for (const auto& [directory, kind] : sources) {
    if (directory.empty()) continue;
    for (KbPage& page : loadKbPages(directory, kind, problems)) pages.push_back(std::move(page));
  }
  std::sort(pages.begin(), pages.end(), [](const KbPage& a, const KbPage& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.id < b.id;
  });
  const std::map<std::string, std::string> aliases = readAliases(sources_.pages, problems);

  sqlite::Database db(":memory:", "the knowledge index");
  db.exec(
      "CREATE VIRTUAL TABLE sections USING fts5(page UNINDEXED, kind UNINDEXED, title, heading, "
      "tags, body, tokenize = 'porter unicode61');");
  sqlite::Transaction transaction(db);
  {
    sqlite::Statement insert(db,
                             "INSERT INTO sections(page, kind, title, heading, tags, body) "
                             "VALUES (?, ?, ?, ?, ?, ?)");
    for (const KbPage& page : pages) {
      std::string tags;
      for (const auto& tag : page.tags) {
        tags += tag + " ";
        auto alias = aliases.find(tag);
        if (alias != aliases.end()) tags += alias->second;
      }
      for (const KbSection& section : page.sections) {
        insert.bind(1, page.id).bind(2, page.kind);
        insert.bind(3, page.title + (page.description.empty() ? "" : " " + page.description));
        insert.bind(4, section.heading).bind(5, tags).bind(6, section.text);
        insert.step();
        insert.reset();
      }
    }
  }
  transaction.commit();
  db_ = std::move(db);
  signature_ = std::move(current);
  pages_ = std::move(pages);
  problems_ = std::move(problems);
}

std::vector<KbHit> KnowledgeIndex::search(const std::string& query, size_t limit,
                                          const std::string& kind) {
  const std::lock_guard<std::mutex> lock(mutex_);
  refreshLocked();
  const std::string expression = matchExpression(query);
  if (expression.empty()) throw UserError("the query has no words to search for");
  // Title and tags say what a page is about; headings what a section is; then the text. The
  // best section of each page first, ranked alone; snippets (the costly part) only for those.
  sqlite::Statement select(*db_,
                           "SELECT rowid, page, kind, heading, "
                           "bm25(sections, 0, 0, 6.0, 4.0, 5.0, 1.0) AS score "
                           "FROM sections WHERE sections MATCH ? ORDER BY score LIMIT 500");
  select.bind(1, expression);
  std::vector<std::pair<int64_t, KbHit>> best;
  std::set<std::string> seen;
  while (best.size() < limit && select.step()) {
    KbHit hit;
    hit.id = select.text(1);
    hit.kind = select.text(2);
    hit.heading = select.text(3);
    hit.score = select.real(4);
    if (!kind.empty() && hit.kind != kind) continue;
    if (!seen.insert(hit.kind + "/" + hit.id).second) continue;
    best.emplace_back(select.integer(0), std::move(hit));
  }
  sqlite::Statement snippet(*db_,
                            "SELECT snippet(sections, 5, '[', ']', ' ... ', 16) FROM sections "
                            "WHERE sections MATCH ? AND rowid = ?");
  std::vector<KbHit> hits;
  for (auto& [row, hit] : best) {
    snippet.reset();
    snippet.bind(1, expression).bind(2, row);
    if (snippet.step()) {
      // One line: runs of whitespace (line breaks in the Markdown) as one space.
      for (char c : snippet.text(0)) {
        const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
        if (!space) {
          hit.snippet += c;
        } else if (!hit.snippet.empty() && hit.snippet.back() != ' ') {
          hit.snippet += ' ';
        }
      }
    }
    for (const KbPage& page : pages_) {
      if (page.id == hit.id && page.kind == hit.kind) hit.title = page.title;
    }
    hits.push_back(std::move(hit));
  }
  return hits;
}

std::optional<KbPage> KnowledgeIndex::page(const std::string& id) {
  const std::lock_guard<std::mutex> lock(mutex_);
  refreshLocked();
  for (const KbPage& page : pages_) {
    if (page.id == id) return page;
  }
  return std::nullopt;
}

std::vector<KbPage> KnowledgeIndex::pages(const std::string& kind) {
  const std::lock_guard<std::mutex> lock(mutex_);
  refreshLocked();
  std::vector<KbPage> matching;
  for (const KbPage& page : pages_) {
    if (kind.empty() || page.kind == kind) matching.push_back(page);
  }
  return matching;
}

std::vector<std::string> KnowledgeIndex::problems() {
  const std::lock_guard<std::mutex> lock(mutex_);
  refreshLocked();
  return problems_;
}

void KnowledgeIndex::invalidate() {
  const std::lock_guard<std::mutex> lock(mutex_);
  checked_ = {};
}

std::string shippedKnowledgeDir() {
  return requireResourceDir("STICKLER_KNOWLEDGE_DIR", "knowledge", STICKLER_KNOWLEDGE_DIR,
                            "knowledge page");
}

std::string shippedSkillsDir() {
  return requireResourceDir("STICKLER_SKILLS_DIR", "skills", STICKLER_SKILLS_DIR, "skills");
}

KnowledgeIndex& knowledgeIndexFor(const std::string& gotchas_dir) {
  static std::mutex creating;
  static std::map<std::string, std::unique_ptr<KnowledgeIndex>> indexes;  // live until exit
  const std::lock_guard<std::mutex> lock(creating);
  auto& slot = indexes[gotchas_dir];
  if (!slot) {
    slot = std::make_unique<KnowledgeIndex>(
        KbSources{shippedKnowledgeDir(), shippedSkillsDir(), gotchas_dir});
  }
  return *slot;
}

}  // namespace stickler
