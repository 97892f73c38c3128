#include "knowledge/gotcha_store.h"

#include <git2.h>
#include <sqlite3.h>

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

std::string utcNow() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
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
  explicit Database(const std::string& path) {
    fs::create_directories(fs::path(path).parent_path());
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw UserError("cannot open the store " + path + ": " + why);
    }
    sqlite3_busy_timeout(db_, 5000);
    exec("PRAGMA journal_mode=WAL;");
    exec(
        "CREATE TABLE IF NOT EXISTS gotchas(id TEXT PRIMARY KEY, title TEXT NOT NULL, "
        "body TEXT NOT NULL, tags TEXT NOT NULL, model TEXT NOT NULL, adapter TEXT NOT NULL, "
        "profile TEXT NOT NULL, evidence TEXT NOT NULL, occurrences INTEGER NOT NULL, "
        "created TEXT NOT NULL, updated TEXT NOT NULL);");
  }
  ~Database() { sqlite3_close(db_); }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string why = error ? error : "unknown error";
      sqlite3_free(error);
      throw UserError(std::string("the gotcha store: ") + why);
    }
  }

  std::vector<Gotcha> all() {
    sqlite3_stmt* statement = prepare(
        "SELECT id, title, body, tags, model, adapter, profile, evidence, occurrences, created, "
        "updated FROM gotchas ORDER BY updated DESC, id");
    std::vector<Gotcha> list;
    while (sqlite3_step(statement) == SQLITE_ROW) {
      Gotcha gotcha;
      gotcha.id = text(statement, 0);
      gotcha.title = text(statement, 1);
      gotcha.body = text(statement, 2);
      gotcha.tags = json::parse(text(statement, 3)).get<std::vector<std::string>>();
      gotcha.model = text(statement, 4);
      gotcha.adapter = text(statement, 5);
      gotcha.profile = text(statement, 6);
      gotcha.evidence = json::parse(text(statement, 7)).get<std::vector<std::string>>();
      gotcha.occurrences = sqlite3_column_int(statement, 8);
      gotcha.created = text(statement, 9);
      gotcha.updated = text(statement, 10);
      list.push_back(std::move(gotcha));
    }
    sqlite3_finalize(statement);
    return list;
  }

  void put(const Gotcha& gotcha) {
    sqlite3_stmt* statement = prepare(
        "INSERT OR REPLACE INTO gotchas(id, title, body, tags, model, adapter, profile, "
        "evidence, occurrences, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    const std::string values[] = {
        gotcha.id,    gotcha.title,   gotcha.body,    json(gotcha.tags).dump(),
        gotcha.model, gotcha.adapter, gotcha.profile, json(gotcha.evidence).dump()};
    for (int i = 0; i < 8; ++i) {
      sqlite3_bind_text(statement, i + 1, values[i].c_str(), -1, SQLITE_TRANSIENT);
    }
    sqlite3_bind_int(statement, 9, gotcha.occurrences);
    sqlite3_bind_text(statement, 10, gotcha.created.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(statement, 11, gotcha.updated.c_str(), -1, SQLITE_TRANSIENT);
    const int rc = sqlite3_step(statement);
    sqlite3_finalize(statement);
    if (rc != SQLITE_DONE) throw UserError(std::string("the gotcha store: ") + sqlite3_errmsg(db_));
  }

 private:
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &statement, nullptr) != SQLITE_OK) {
      throw UserError(std::string("the gotcha store: ") + sqlite3_errmsg(db_));
    }
    return statement;
  }
  static std::string text(sqlite3_stmt* statement, int column) {
    const auto* value = sqlite3_column_text(statement, column);
    return value ? reinterpret_cast<const char*>(value) : "";
  }
  sqlite3* db_ = nullptr;
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

void gitCheck(int rc, const std::string& what) {
  if (rc >= 0) return;
  const git_error* error = git_error_last();
  throw UserError("the gotchas' git repository: " + what + ": " +
                  (error && error->message ? error->message : "unknown error"));
}

// Commits `file` (relative to `directory`, a repository created when missing) with `message`;
// returns the commit id.
std::string commitFile(const std::string& directory, const std::string& file,
                       const std::string& message) {
  git_libgit2_init();
  git_repository* repo = nullptr;
  if (git_repository_open(&repo, directory.c_str()) < 0) {
    gitCheck(git_repository_init(&repo, directory.c_str(), 0), "init " + directory);
  }
  git_index* index = nullptr;
  git_tree* tree = nullptr;
  git_signature* signature = nullptr;
  git_commit* parent = nullptr;
  std::string id;
  try {
    gitCheck(git_repository_index(&index, repo), "open the index");
    gitCheck(git_index_add_bypath(index, file.c_str()), "add " + file);
    gitCheck(git_index_write(index), "write the index");
    git_oid tree_id;
    gitCheck(git_index_write_tree(&tree_id, index), "write the tree");
    gitCheck(git_tree_lookup(&tree, repo, &tree_id), "read the tree");
    gitCheck(git_signature_now(&signature, "Stickler", "stickler@localhost"), "sign");
    git_oid parent_id;
    if (git_reference_name_to_id(&parent_id, repo, "HEAD") == 0) {
      gitCheck(git_commit_lookup(&parent, repo, &parent_id), "read HEAD");
    }
    const git_commit* parents[] = {parent};
    git_oid commit_id;
    gitCheck(git_commit_create(&commit_id, repo, "HEAD", signature, signature, nullptr,
                               message.c_str(), tree, parent ? 1 : 0, parents),
             "commit");
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof hex, &commit_id);
    id = hex;
  } catch (...) {
    git_commit_free(parent);
    git_signature_free(signature);
    git_tree_free(tree);
    git_index_free(index);
    git_repository_free(repo);
    throw;
  }
  git_commit_free(parent);
  git_signature_free(signature);
  git_tree_free(tree);
  git_index_free(index);
  git_repository_free(repo);
  return id;
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
  db.exec("BEGIN IMMEDIATE;");
  try {
    const std::vector<Gotcha> existing = db.all();
    GotchaRecorded result;
    const Gotcha* closest = nullptr;
    for (const Gotcha& other : existing) {
      const double similarity = gotchaSimilarity(input, other);
      if (similarity > result.similarity) result.similarity = similarity, closest = &other;
    }
    const std::string now = utcNow();
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
        gotcha.*field =
            (gotcha.*field).empty() ? input.*field : gotcha.*field + "; " + input.*field;
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
      db.exec("COMMIT;");
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
  } catch (...) {
    try {
      db.exec("ROLLBACK;");
    } catch (...) {
    }
    throw;
  }
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
