#include "tools/sweep/sweep_summary.h"

#include <algorithm>
#include <map>
#include <set>

namespace stickler {
namespace {

using nlohmann::json;

bool passed(const json& entry) {
  return entry.value("verdict", "") == "pass";
}
bool covered(const json& entry) {
  return entry.value("covered", false);
}

std::string category(const json& entry) {
  return entry.value("category", "error");
}

// A model works when it does all it was asked to: pass end to end, or compile when only
// lowered.
bool works(const json& entry) {
  return passed(entry) || (covered(entry) && category(entry) == "lowered only");
}

}  // namespace

const std::vector<std::string>& categoryKinds() {
  static const std::vector<std::string> kinds = {
      "pass",           "lowered only", "no adapter",    "unsupported op", "layout rule",
      "compiler error", "too large",    "runtime abort", "divergence",     "timeout",
      "crash",          "bad archive",  "error"};
  return kinds;
}

std::string categoryKind(const std::string& category) {
  for (const std::string& kind : categoryKinds()) {
    if (category.rfind(kind, 0) == 0) return kind;
  }
  return "error";
}

json summarizeSweep(const json& models) {
  int64_t total = 0;
  int64_t covered_count = 0;
  int64_t passing = 0;
  std::map<std::string, int64_t> by_category;
  json by_family = json::object();
  std::map<std::string, std::vector<std::string>> blocked_by;
  for (const json& entry : models) {
    ++total;
    covered_count += covered(entry) ? 1 : 0;
    passing += passed(entry) ? 1 : 0;
    ++by_category[categoryKind(category(entry))];
    json& family = by_family[entry.value("family", "unknown")];
    if (family.is_null()) family = {{"models", 0}, {"covered", 0}, {"passing", 0}};
    family["models"] = family["models"].get<int64_t>() + 1;
    family["covered"] = family["covered"].get<int64_t>() + (covered(entry) ? 1 : 0);
    family["passing"] = family["passing"].get<int64_t>() + (passed(entry) ? 1 : 0);
    for (const json& blocker : entry.value("blockers", json::array())) {
      blocked_by[blocker.get<std::string>()].push_back(entry.value("name", entry["model"]));
    }
  }
  json blockers = json::array();
  for (const auto& [blocker, names] : blocked_by) {
    json examples(
        std::vector<std::string>(names.begin(), names.begin() + std::min<size_t>(names.size(), 5)));
    blockers.push_back({{"blocker", blocker}, {"models", names.size()}, {"examples", examples}});
  }
  std::stable_sort(blockers.begin(), blockers.end(), [](const json& a, const json& b) {
    return a["models"].get<size_t>() > b["models"].get<size_t>();
  });
  return {{"models", total},        {"covered", covered_count},
          {"passing", passing},     {"by_category", by_category},
          {"by_family", by_family}, {"blockers", blockers}};
}

json diffSweeps(const json& previous, const json& current) {
  std::map<std::string, const json*> before;
  for (const json& entry : previous["models"]) before[entry["model"]] = &entry;
  json diff = {{"previous", previous.value("id", "")},
               {"newly_broken", json::array()},
               {"newly_fixed", json::array()},
               {"changed", json::array()},
               {"added", json::array()},
               {"removed", json::array()}};
  std::set<std::string> seen;
  for (const json& entry : current["models"]) {
    const std::string model = entry["model"];
    seen.insert(model);
    const auto found = before.find(model);
    if (found == before.end()) {
      diff["added"].push_back({{"model", model}, {"after", category(entry)}});
      continue;
    }
    const json& old = *found->second;
    if (category(old) == category(entry) && covered(old) == covered(entry)) continue;
    json change = {{"model", model},
                   {"name", entry.value("name", old.value("name", ""))},
                   {"before", category(old)},
                   {"after", category(entry)},
                   {"why", entry.value("detail", "")}};
    if (entry.value("sha256", "") != old.value("sha256", "")) {
      change["archive_changed"] = true;
    }
    const char* bucket = works(old) && !works(entry)   ? "newly_broken"
                         : !works(old) && works(entry) ? "newly_fixed"
                                                       : "changed";
    diff[bucket].push_back(change);
  }
  for (const auto& [model, entry] : before) {
    if (seen.count(model) == 0)
      diff["removed"].push_back({{"model", model}, {"before", category(*entry)}});
  }
  return diff;
}

json outcomesOf(const json& models) {
  json outcomes = json::array();
  for (const json& entry : models) {
    json applied = entry.contains("adapters") ? entry["adapters"].value("applied", json::array())
                                              : json::array();
    outcomes.push_back(
        {{"model", entry["model"]},
         {"category", category(entry)},
         {"verdict", entry.value("verdict", "")},
         {"covered", covered(entry)},
         {"compiled_without",
          entry.contains("compile_without") ? entry["compile_without"].value("status", "") : ""},
         {"adapters", applied}});
  }
  return outcomes;
}

}  // namespace stickler
