#include "tools/sweep/sweep_history.h"

#include <filesystem>

#include "simulator/support/sqlite_db.h"

namespace stickler {
namespace {

using nlohmann::json;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS sweeps (
  id TEXT PRIMARY KEY,
  started TEXT NOT NULL,
  finished TEXT NOT NULL,
  profile TEXT NOT NULL,
  models INTEGER NOT NULL,
  covered INTEGER NOT NULL,
  passing INTEGER NOT NULL,
  document TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
  sweep_id TEXT NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  model TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  probe_key TEXT NOT NULL,
  entry TEXT NOT NULL,
  PRIMARY KEY (sweep_id, model)
);
CREATE INDEX IF NOT EXISTS results_by_archive ON results(sha256, probe_key);
)sql";

json parseStored(const std::string& text) {
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

SweepHistory::SweepHistory(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  db_ = std::make_unique<sqlite::Database>(path, "the sweep history");
  db_->exec("PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA busy_timeout=10000;");
  db_->exec(kSchema);
}

SweepHistory::~SweepHistory() = default;
SweepHistory::SweepHistory(SweepHistory&&) noexcept = default;

std::string SweepHistory::pathFor(const std::string& root) {
  return (std::filesystem::path(root) / "stickler-sweeps" / "history.sqlite").string();
}

void SweepHistory::record(const json& sweep) {
  sqlite::Transaction transaction(*db_, sqlite::Transaction::Lock::Immediate);
  const std::string id = sweep.at("id");
  sqlite::Statement(*db_, "DELETE FROM results WHERE sweep_id = ?1").bind(1, id).step();
  sqlite::Statement(*db_, "DELETE FROM sweeps WHERE id = ?1").bind(1, id).step();
  const json& summary = sweep.at("summary");
  sqlite::Statement(*db_,
                    "INSERT INTO sweeps (id, started, finished, profile, models, covered, "
                    "passing, document) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
      .bind(1, id)
      .bind(2, sweep.at("started").get<std::string>())
      .bind(3, sweep.at("finished").get<std::string>())
      .bind(4, sweep.at("profile").get<std::string>())
      .bind(5, summary.at("models").get<int64_t>())
      .bind(6, summary.at("covered").get<int64_t>())
      .bind(7, summary.at("passing").get<int64_t>())
      .bind(8, sweep.dump())
      .step();
  sqlite::Statement insert(*db_,
                           "INSERT OR REPLACE INTO results (sweep_id, model, sha256, probe_key, "
                           "entry) VALUES (?1, ?2, ?3, ?4, ?5)");
  for (const json& entry : sweep.at("models")) {
    insert.bind(1, id)
        .bind(2, entry.at("model").get<std::string>())
        .bind(3, entry.value("sha256", ""))
        .bind(4, sweep.at("key").get<std::string>())
        .bind(5, entry.dump())
        .step();
    insert.reset();
  }
  transaction.commit();
}

std::vector<SweepPoint> SweepHistory::points(const std::string& profile) const {
  sqlite::Statement query(*db_,
                          "SELECT id, finished, profile, models, covered, passing FROM sweeps "
                          "WHERE ?1 = '' OR profile = ?1 ORDER BY finished, id");
  query.bind(1, profile);
  std::vector<SweepPoint> points;
  while (query.step()) {
    points.push_back({query.text(0), query.text(1), query.text(2), query.integer(3),
                      query.integer(4), query.integer(5)});
  }
  return points;
}

std::optional<json> SweepHistory::load(const std::string& id) const {
  sqlite::Statement query(*db_, "SELECT document FROM sweeps WHERE id = ?1");
  query.bind(1, id);
  if (!query.step()) return std::nullopt;
  return parseStored(query.text(0));
}

std::optional<json> SweepHistory::previous(const std::string& id) const {
  sqlite::Statement query(*db_,
                          "SELECT earlier.document FROM sweeps AS earlier, sweeps AS this "
                          "WHERE this.id = ?1 AND earlier.profile = this.profile AND "
                          "(earlier.finished, earlier.id) < (this.finished, this.id) "
                          "ORDER BY earlier.finished DESC, earlier.id DESC LIMIT 1");
  query.bind(1, id);
  if (!query.step()) return std::nullopt;
  return parseStored(query.text(0));
}

std::optional<json> SweepHistory::latest(const std::string& profile) const {
  sqlite::Statement query(*db_,
                          "SELECT document FROM sweeps WHERE ?1 = '' OR profile = ?1 "
                          "ORDER BY finished DESC, id DESC LIMIT 1");
  query.bind(1, profile);
  if (!query.step()) return std::nullopt;
  return parseStored(query.text(0));
}

std::optional<json> SweepHistory::reusable(const std::string& sha256,
                                           const std::string& key) const {
  sqlite::Statement query(*db_,
                          "SELECT results.entry, results.sweep_id FROM results JOIN sweeps ON "
                          "sweeps.id = results.sweep_id WHERE results.sha256 = ?1 AND "
                          "results.probe_key = ?2 ORDER BY sweeps.finished DESC LIMIT 1");
  query.bind(1, sha256).bind(2, key);
  if (!query.step()) return std::nullopt;
  json entry = parseStored(query.text(0));
  if (!entry.is_object()) return std::nullopt;
  entry["reused_from"] = query.text(1);
  return entry;
}

std::vector<std::string> SweepHistory::prune(size_t keep) {
  sqlite::Transaction transaction(*db_, sqlite::Transaction::Lock::Immediate);
  sqlite::Statement query(*db_, "SELECT id FROM sweeps ORDER BY finished DESC, id DESC");
  std::vector<std::string> deleted;
  for (size_t row = 0; query.step(); ++row) {
    if (row >= keep) deleted.push_back(query.text(0));
  }
  for (const std::string& id : deleted) {
    sqlite::Statement(*db_, "DELETE FROM results WHERE sweep_id = ?1").bind(1, id).step();
    sqlite::Statement(*db_, "DELETE FROM sweeps WHERE id = ?1").bind(1, id).step();
  }
  transaction.commit();
  return deleted;
}

}  // namespace stickler
