#include "adapters/engine/adapter_matching.h"

#include <map>
#include <tuple>

#include "adapters/engine/adapter_application.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/lowering/lowering.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using Key = std::tuple<std::string, std::string, std::string>;

std::map<Key, int> byKey(const std::vector<BlockerCount>& counts) {
  std::map<Key, int> map;
  for (const auto& count : counts) map[{count.rule, count.op, count.module}] += count.count;
  return map;
}

// Counts in `a` beyond those in `b`.
std::vector<BlockerCount> excess(const std::vector<BlockerCount>& a,
                                 const std::vector<BlockerCount>& b) {
  const auto other = byKey(b);
  std::vector<BlockerCount> result;
  for (const auto& [key, count] : byKey(a)) {
    auto found = other.find(key);
    const int left = count - (found == other.end() ? 0 : found->second);
    if (left > 0) result.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), left});
  }
  return result;
}

std::string summary(const std::vector<BlockerCount>& counts) {
  std::map<std::string, int> by_rule;
  for (const auto& count : counts) by_rule[count.rule + " " + count.op] += count.count;
  std::string text;
  for (const auto& [what, count] : by_rule) {
    text += (text.empty() ? "" : ", ") + what + " x" + std::to_string(count);
  }
  return text;
}

}  // namespace

std::vector<BlockerCount> countBlockers(const LoadedModel& model, const DeviceProfile& profile) {
  const Placement placement = makePlacement(model.modules, {}, model.path, model.host_modules);
  const LoweringResult lowering = lower(model, profile, placement);
  std::map<Key, int> counts;
  for (const Blocker& blocker : lowering.blockers) {
    const std::string op = blocker.node ? blocker.node->kind().toQualString() : "";
    const std::string module = blocker.node ? modulePathOf(*blocker.node) : "";
    ++counts[{blocker.rule, op, module}];
  }
  std::vector<BlockerCount> result;
  for (const auto& [key, count] : counts) {
    result.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), count});
  }
  return result;
}

std::vector<AdapterMatch> matchAdapters(const std::vector<CatalogEntry>& catalog,
                                        std::shared_ptr<const LoadedModel> model,
                                        const DeviceProfile& profile) {
  const auto before = countBlockers(*model, profile);
  std::vector<AdapterMatch> matches;
  for (const CatalogEntry& entry : catalog) {
    AdapterMatch match;
    match.name = entry.name;
    match.origin = entry.origin;
    if (!entry.file) {
      match.reason = "does not parse: " + entry.error;
      matches.push_back(match);
      continue;
    }
    const AdapterMetadata& metadata = entry.file->metadata;
    match.for_model = adapterTargetsModel(metadata, model->card.family, model->card.name);
    match.for_profile = adapterTargetsProfile(metadata, profile.lineage);
    AdapterApplication application;
    try {
      application = applyAdapter(*entry.file, model, profile, /*check_equivalence=*/false);
    } catch (const UserError& e) {
      match.reason = e.what();
      matches.push_back(match);
      continue;
    }
    match.applies = application.changed();
    match.rewrites = application.change.rewrites;
    if (!match.applies) {
      match.reason = unchangedReason(application);
      matches.push_back(match);
      continue;
    }
    const auto after = countBlockers(*application.after, profile);
    match.clears = excess(before, after);
    match.introduces = excess(after, before);
    if (!match.clears.empty()) {
      match.reason = "clears " + summary(match.clears);
    } else {
      match.reason = "changes " + std::to_string(match.rewrites) +
                     " place(s) but clears no compile blocker on " + profile.name +
                     (match.for_profile ? " (its gap is numerical or at run time)" : "");
    }
    if (!match.introduces.empty()) match.reason += "; introduces " + summary(match.introduces);
    matches.push_back(match);
  }
  return matches;
}

}  // namespace stickler
