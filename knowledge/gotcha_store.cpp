#include "knowledge/gotcha_store.h"
#include "simulator/support/text_format.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "knowledge/kb_index.h"
#include "simulator/support/errors.h"
#include "simulator/support/git_support.h"
#include "simulator/support/sqlite_db.h"
#include "simulator/support/text_files.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Gotchas this similar (by gotchaSimilarity) are one lesson recorded twice.
constexpr double kMergeThreshold = 0.5;

std::mutex& recordMutex() {
  static std::mutex mutex;  // one recording at a time in this process
  return mutex;
}

// One line, without the characters the front matter's lists and maps use.
std::string oneLine(const std::string& text, bool for_list) {
  std::string line;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (for_list && (c == ',' || c == '[' || c == ']')) c = ' ';
    line += c;
  }
  const size_t start = line.find_first_not_of(' ');
  const size_t end = line.find_last_not_of(' ');
  return start == std::string::npos ? "" : line.substr(start, end - start + 1);
}

std::string slugOf(const std::string& title) {
  std::string slug;
  for (char c : title) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
    if (slug.size() >= 60) break;
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "gotcha" : slug;
}

std::set<std::string> wordsOf(const Gotcha& gotcha) {
  static const std::set<std::string> ignored = {
      "the",  "and",  "for", "with", "that",  "this",   "are",   "was",  "were", "from", "when",
      "then", "than", "but", "not",  "its",   "has",    "have",  "had",  "into", "onto", "via",
      "can",  "does", "did", "will", "would", "should", "which", "what", "why",  "how",  "also"};
  std::set<std::string> words;
  std::string word;
  const std::string text = gotcha.title + " " + gotcha.body;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ' ';
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      continue;
    }
    if (word.size() >= 3 && !ignored.count(word)) words.insert(word);
    word.clear();
  }
  return words;
}

// --- the SQLite store ---------------------------------------------------------------------

class Database {
 public:
  explicit Database(const std::string& path) : db_(openStore(path)) {
    db_.exec("PRAGMA journal_mode=WAL;");
    db_.exec(
        "CREATE TABLE IF NOT EXISTS gotchas(id TEXT PRIMARY KEY, title TEXT NOT NULL, "
        "body TEXT NOT NULL, tags TEXT NOT NULL, model TEXT NOT NULL, adapter TEXT NOT NULL, "
        "profile TEXT NOT NULL, evidence TEXT NOT NULL, occurrences INTEGER NOT NULL, "
        "created TEXT NOT NULL, updated TEXT NOT NULL);");
  }

  sqlite::Database& handle() { return db_; }

  std::vector<Gotcha> all() {
    sqlite::Statement select(
        db_,
        "SELECT id, title, body, tags, model, adapter, profile, evidence, "
        "occurrences, created, updated FROM gotchas ORDER BY updated DESC, id");
    std::vector<Gotcha> list;
    while (select.step()) {
      Gotcha gotcha;
      gotcha.id = select.text(0);
      gotcha.title = select.text(1);
      gotcha.body = select.text(2);
      gotcha.tags = stringList(select.text(3), gotcha.id);
      gotcha.model = select.text(4);
      gotcha.adapter = select.text(5);
      gotcha.profile = select.text(6);
      gotcha.evidence = stringList(select.text(7), gotcha.id);
      gotcha.occurrences = static_cast<int>(select.integer(8));
      gotcha.created = select.text(9);
      gotcha.updated = select.text(10);
      list.push_back(std::move(gotcha));
    }
    return list;
  }

  void put(const Gotcha& gotcha) {
    sqlite::Statement insert(
        db_,
        "INSERT OR REPLACE INTO gotchas(id, title, body, tags, model, adapter, profile, "
        "evidence, occurrences, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, gotcha.id).bind(2, gotcha.title).bind(3, gotcha.body);
    insert.bind(4, json(gotcha.tags).dump()).bind(5, gotcha.model).bind(6, gotcha.adapter);
    insert.bind(7, gotcha.profile).bind(8, json(gotcha.evidence).dump());
    insert.bind(9, int64_t{gotcha.occurrences}).bind(10, gotcha.created).bind(11, gotcha.updated);
    insert.step();
  }

 private:
  static sqlite::Database openStore(const std::string& path) {
    fs::create_directories(fs::path(path).parent_path());
    return sqlite::Database(path, "the gotcha store " + path);
  }

  // A JSON list of strings as the store writes it; anything else is a damaged row, named.
  std::vector<std::string> stringList(const std::string& text, const std::string& id) const {
    const json list = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!list.is_array() ||
        !std::all_of(list.begin(), list.end(), [](const json& item) { return item.is_string(); })) {
      throw UserError(db_.store() + ": gotcha '" + id +
                      "' has a damaged list: " + text.substr(0, 80));
    }
    return list.get<std::vector<std::string>>();
  }

  sqlite::Database db_;
};

// --- the Markdown page and its commit ----------------------------------------------------

std::string pageText(const Gotcha& gotcha) {
  std::string tags;
  for (const auto& tag : gotcha.tags) tags += (tags.empty() ? "" : ", ") + oneLine(tag, true);
  std::string page = "---\nid: " + gotcha.id + "\ntitle: " + oneLine(gotcha.title, false) +
                     "\ntags: [" + tags + "]\n";
  if (!gotcha.model.empty()) page += "model: " + oneLine(gotcha.model, false) + "\n";
  if (!gotcha.adapter.empty()) page += "adapter: " + oneLine(gotcha.adapter, false) + "\n";
  if (!gotcha.profile.empty()) page += "profile: " + oneLine(gotcha.profile, false) + "\n";
  page += "occurrences: " + std::to_string(gotcha.occurrences) + "\nupdated: " + gotcha.updated +
          "\n---\n\n# " + oneLine(gotcha.title, false) + "\n\n" + gotcha.body + "\n";
  if (!gotcha.evidence.empty()) {
    page += "\n## Evidence\n\n";
    for (const auto& entry : gotcha.evidence) page += "- " + oneLine(entry, false) + "\n";
  }
  return page;
}

// Commits `file` (relative to `directory`, a repository created when missing) on HEAD's
// branch with `message`, signed as GIT_AUTHOR_* say; returns the commit id.
std::string commitFile(const std::string& directory, const std::string& file,
                       const std::string& message) {
  git::ensureInitialized();
  const std::string context = "the gotchas' git repository " + directory;
  git_repository* opened = nullptr;
  if (git_repository_open(&opened, directory.c_str()) < 0) {
    git::check(git_repository_init(&opened, directory.c_str(), 0), context + ": init");
  }
  const git::Repository repo(opened);
  git_index* index_handle = nullptr;
  git::check(git_repository_index(&index_handle, repo.get()), context + ": open the index");
  const git::Index index(index_handle);
  git::check(git_index_add_bypath(index.get(), file.c_str()), context + ": add " + file);
  git::check(git_index_write(index.get()), context + ": write the index");
  git_oid tree_id;
  git::check(git_index_write_tree(&tree_id, index.get()), context + ": write the tree");
  // HEAD names the branch (unborn in a new repository): its tip is the parent, and the branch
  // moves only if no other process committed meanwhile.
  git_reference* head = nullptr;
  git::check(git_reference_lookup(&head, repo.get(), "HEAD"), context + ": read HEAD");
  const git::Reference head_ref(head);
  const char* target = git_reference_symbolic_target(head_ref.get());
  const std::string prefix = "refs/heads/";
  if (target == nullptr || std::string(target).rfind(prefix, 0) != 0) {
    throw UserError(context + ": HEAD is not on a branch; check out one to record gotchas");
  }
  const std::string branch = std::string(target).substr(prefix.size());
  const std::optional<git_oid> parent_id = git::branchTip(repo.get(), branch);
  const git::Commit parent = parent_id ? git::lookupCommit(repo.get(), *parent_id) : nullptr;
  const git_oid commit_id = git::writeCommit(repo.get(), tree_id, parent.get(), message);
  git::moveBranch(repo.get(), branch, commit_id, parent_id, "stickler: record a gotcha");
  return git::toHex(commit_id);
}

}  // namespace

double gotchaSimilarity(const Gotcha& a, const Gotcha& b) {
  const std::set<std::string> x = wordsOf(a), y = wordsOf(b);
  if (x.empty() || y.empty()) return 0;
  size_t shared = 0;
  for (const auto& word : x) shared += y.count(word);
  return static_cast<double>(shared) / static_cast<double>(x.size() + y.size() - shared);
}

GotchaStore::GotchaStore(std::string root) : root_(std::move(root)) {}

std::string GotchaStore::pagesDirectory() const {
  return (fs::path(root_) / "stickler-gotchas").string();
}

std::string GotchaStore::databasePath() const {
  return (fs::path(root_) / ".stickler" / "state.db").string();
}

GotchaRecorded GotchaStore::record(const Gotcha& input) {
  const std::string title = oneLine(input.title, false);
  if (title.empty()) throw UserError("a gotcha needs a title");
  if (title.size() > 200) throw UserError("a gotcha's title is at most 200 characters");
  if (oneLine(input.body, false).empty()) throw UserError("a gotcha needs a body");
  if (input.body.size() > 20000) throw UserError("a gotcha's body is at most 20000 characters");
  const std::lock_guard<std::mutex> lock(recordMutex());
  Database db(databasePath());
  sqlite::Transaction transaction(db.handle(), sqlite::Transaction::Lock::Immediate);
  const std::vector<Gotcha> existing = db.all();
  GotchaRecorded result;
  const Gotcha* closest = nullptr;
  for (const Gotcha& other : existing) {
    const double similarity = gotchaSimilarity(input, other);
    if (similarity > result.similarity) result.similarity = similarity, closest = &other;
  }
  const std::string now = isoTimeUtcNow();
  Gotcha gotcha;
  if (closest != nullptr && result.similarity >= kMergeThreshold) {
    // The same lesson again: one page that says how often and where it was seen.
    gotcha = *closest;
    result.merged = true;
    ++gotcha.occurrences;
    for (const auto& tag : input.tags) {
      if (std::find(gotcha.tags.begin(), gotcha.tags.end(), tag) == gotcha.tags.end()) {
        gotcha.tags.push_back(tag);
      }
    }
    if (result.similarity < 0.95) {
      gotcha.body += "\n\n## Also recorded " + now.substr(0, 10) + "\n\n" + input.body;
    }
    for (std::string Gotcha::*field : {&Gotcha::model, &Gotcha::adapter, &Gotcha::profile}) {
      if (gotcha.*field == input.*field || (input.*field).empty()) continue;
      gotcha.*field = (gotcha.*field).empty() ? input.*field : gotcha.*field + "; " + input.*field;
    }
  } else {
    gotcha = input;
    gotcha.title = title;
    gotcha.evidence.clear();
    std::string id = slugOf(title);
    for (int n = 2; std::any_of(existing.begin(), existing.end(),
                                [&](const Gotcha& other) { return other.id == id; });
         ++n) {
      id = slugOf(title) + "-" + std::to_string(n);
    }
    gotcha.id = id;
    gotcha.occurrences = 1;
    gotcha.created = now;
  }
  for (const auto& entry : input.evidence) {
    if (!oneLine(entry, false).empty()) gotcha.evidence.push_back(entry);
  }
  gotcha.updated = now;
  db.put(gotcha);
  fs::create_directories(pagesDirectory());
  const std::string file = gotcha.id + ".md";
  const fs::path page = fs::path(pagesDirectory()) / file;
  // What the page said before, to put back if the commit fails (none: a new page).
  std::optional<std::string> before;
  if (fs::exists(page)) before = readTextFile(page.string());
  writeFileAtomically(page.string(), pageText(gotcha));
  try {
    result.commit = commitFile(pagesDirectory(), file,
                               (result.merged ? "Merge a gotcha recorded again: " : "Gotcha: ") +
                                   gotcha.title + "\n\nStickler-Gotcha: " + gotcha.id + "\n");
    transaction.commit();
  } catch (...) {
    std::error_code ec;
    if (before) {
      writeFileAtomically(page.string(), *before);
    } else {
      fs::remove(page, ec);
    }
    throw;
  }
  knowledgeIndexFor(pagesDirectory()).invalidate();  // searchable from the next call on
  result.gotcha = gotcha;
  result.page = (fs::path(pagesDirectory()) / file).string();
  return result;
}

std::vector<Gotcha> GotchaStore::list() const {
  if (!fs::exists(databasePath())) return {};
  Database db(databasePath());
  return db.all();
}

Gotcha GotchaStore::get(const std::string& id) const {
  for (Gotcha& gotcha : list()) {
    if (gotcha.id == id) return gotcha;
  }
  throw UserError("no gotcha '" + id + "' in " + databasePath());
}

}  // namespace stickler
