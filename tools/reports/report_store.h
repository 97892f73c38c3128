// Where diagnosis and localization reports are kept: one JSON file per report under the
// workspace's stickler-reports/, named by an id that says what it is and when it was made
// ("llama-tiny-localize-20261130-151204"). HTML and JUnit are renderings of the JSON, made on
// demand, so the JSON is the one record.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stickler {

class ReportStore {
 public:
  // `workspace_root` holds (or will hold) stickler-reports/.
  explicit ReportStore(std::string workspace_root);

  std::string directory() const;

  // Writes `report` under a new id (atomically: a temporary file renamed into place) and
  // returns the id.
  std::string save(const nlohmann::json& report) const;

  // The report saved under `id`; throws UserError for an id that is not a report here (naming
  // the most recent ones).
  nlohmann::json load(const std::string& id) const;

  // Every report id, most recent first. Only regular files count: a symbolic link in the
  // directory is never a report (it may lead out of the workspace).
  std::vector<std::string> ids() const;

  // The path of a report's JSON file; nullopt when `id` is not a well-formed id.
  std::optional<std::string> pathOf(const std::string& id) const;

 private:
  // Throws UserError when stickler-reports/ is, or leads through, a link out of the workspace.
  void checkDirectoryInRoot() const;

  std::string root_;
};

// "diagnose-compile", "diagnose-numerics", "localize": what kind of report a document is.
std::string reportKind(const nlohmann::json& report);

}  // namespace stickler
