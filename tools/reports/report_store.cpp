#include "tools/reports/report_store.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "simulator/support/errors.h"
#include "simulator/support/new_file.h"
#include "simulator/support/text_files.h"
#include "simulator/support/untrusted_json.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kDirectory = "stickler-reports";

// Letters, digits, '-', '_' and '.', not starting with '.': a file name that stays in the
// directory.
bool wellFormed(const std::string& id) {
  if (id.empty() || id.size() > 200 || id.front() == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

std::string sanitized(const std::string& text) {
  std::string name = text.empty() ? "model" : text;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return name.substr(0, 80);
}

// "20261130-150548-123": UTC, to the millisecond.
std::string utcStamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char text[40];
  const size_t length = std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &parts);
  std::snprintf(text + length, sizeof text - length, "-%03d", static_cast<int>(millis));
  return text;
}

}  // namespace

std::string reportKind(const json& report) {
  const std::string schema = report.value("schema", "");
  std::string kind = schema.rfind("stickler.", 0) == 0 ? schema.substr(9) : "report";
  if (report.contains("mode") && report["mode"].is_string()) {
    kind += "-" + report["mode"].get<std::string>();
  }
  return kind;
}

ReportStore::ReportStore(std::string workspace_root) : root_(std::move(workspace_root)) {}

void ReportStore::checkDirectoryInRoot() const {
  std::error_code ec;
  if (!fs::exists(directory(), ec)) return;
  const fs::path real = fs::canonical(directory(), ec);
  const fs::path root = fs::canonical(root_, ec);
  const auto [end, ignored] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
  if (ec || end != root.end()) {
    throw UserError(directory() + " leads out of the workspace (to " + real.string() +
                    "): reports are read and written only inside it");
  }
}

std::string ReportStore::directory() const {
  return (fs::path(root_) / kDirectory).string();
}

std::string ReportStore::save(const json& report) const {
  checkDirectoryInRoot();
  std::error_code ec;
  fs::create_directories(directory(), ec);
  if (ec) throw UserError("cannot create " + directory() + ": " + ec.message());
  // Named after the model, or (a ranking across models) after the profile.
  std::string name = "model";
  if (report.contains("model") && report["model"].is_object()) {
    name = report["model"].value("name", "model");
  } else if (report.contains("profile") && report["profile"].is_string()) {
    name = report["profile"];
  }
  const std::string base = sanitized(name) + "-" + reportKind(report) + "-" + utcStamp();
  // Under the first free id: reports made in the same millisecond keep theirs.
  const std::string file = writeNewFile(
      directory(), report.dump(1) + "\n",
      [&](int attempt) {
        return (attempt == 1 ? base : base + "-" + std::to_string(attempt)) + ".json";
      },
      999);
  return file.substr(0, file.size() - std::string(".json").size());
}

std::optional<std::string> ReportStore::pathOf(const std::string& id) const {
  if (!wellFormed(id)) return std::nullopt;
  return (fs::path(directory()) / (id + ".json")).string();
}

json ReportStore::load(const std::string& id) const {
  checkDirectoryInRoot();
  const auto path = pathOf(id);
  std::error_code ec;
  // symlink_status: a link is not followed, so a link to a file outside is "no report".
  if (!path || !fs::is_regular_file(fs::symlink_status(*path, ec))) {
    std::string known;
    const auto all = ids();
    for (size_t i = 0; i < all.size() && i < 5; ++i) known += (i ? ", " : "") + all[i];
    throw UserError("no report '" + id + "' in " + directory() +
                    (known.empty() ? " (none saved yet)" : " (the most recent: " + known + ")"));
  }
  try {
    return parseUntrustedJson(readTextFile(*path));
  } catch (const JsonInputError& e) {
    throw UserError("report " + *path + " is not valid JSON: " + e.what());
  }
}

std::vector<std::string> ReportStore::ids() const {
  std::vector<std::pair<fs::file_time_type, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory(), ec)) {
    const fs::path& path = entry.path();
    const std::string id = path.stem().string();
    if (path.extension() != ".json" || !wellFormed(id) || !entry.is_regular_file(ec) ||
        entry.is_symlink(ec)) {
      continue;
    }
    found.emplace_back(entry.last_write_time(ec), id);
  }
  // Newest first; the id (which ends in its time) breaks ties within one clock tick.
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  });
  std::vector<std::string> result;
  result.reserve(found.size());
  for (auto& [time, id] : found) result.push_back(std::move(id));
  return result;
}

}  // namespace stickler
