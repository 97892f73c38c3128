// The sweeps' history: every finished sweep, its document and each model's entry, in SQLite at
// <workspace>/stickler-sweeps/history.sqlite. The coverage chart, the diff against the previous
// sweep and --incremental's reuse all read it (docs/sweeps.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stickler {

namespace sqlite {
class Database;
}

// One line of the coverage chart.
struct SweepPoint {
  std::string id;
  std::string finished;
  std::string profile;
  int64_t models = 0;
  int64_t covered = 0;  // compile with the adapters they have
  int64_t passing = 0;  // pass end to end
};

class SweepHistory {
 public:
  explicit SweepHistory(const std::string& path);
  ~SweepHistory();
  SweepHistory(SweepHistory&&) noexcept;

  // The history of the workspace at `root`.
  static std::string pathFor(const std::string& root);

  // Records a finished sweep (schema stickler.sweep), replacing one of the same id.
  void record(const nlohmann::json& sweep);
  // Sweeps on `profile` (all when empty), oldest first.
  std::vector<SweepPoint> points(const std::string& profile = "") const;
  std::optional<nlohmann::json> load(const std::string& id) const;
  // The sweep on the same profile finished before `id`, if any.
  std::optional<nlohmann::json> previous(const std::string& id) const;
  // The newest sweep, on `profile` when given.
  std::optional<nlohmann::json> latest(const std::string& profile = "") const;
  // The newest entry of a model with this archive hash probed under `key` (the profile, the
  // catalog and the probe's options, hashed), for --incremental.
  std::optional<nlohmann::json> reusable(const std::string& sha256, const std::string& key) const;
  // Deletes all but the newest `keep` sweeps; returns the ids deleted.
  std::vector<std::string> prune(size_t keep);

 private:
  std::unique_ptr<sqlite::Database> db_;
};

}  // namespace stickler
