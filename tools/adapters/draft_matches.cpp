#include "tools/adapters/draft_matches.h"

#include <algorithm>
#include <filesystem>

#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_matching.h"
#include "simulator/graph/model_archive.h"
#include "simulator/graph/model_card.h"
#include "simulator/support/errors.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/operation.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The model archives under `root` whose card the draft's `models` names, in path order.
std::vector<fs::path> archivesNamed(const AdapterFile& file, const fs::path& root) {
  std::vector<fs::path> named;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  size_t visited = 0;
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++visited > kDraftSearchEntries) break;
    const fs::path& path = it->path();
    const std::string name = path.filename().string();
    if (it->is_directory(ec)) {
      if (name.rfind('.', 0) == 0 || name.rfind("stickler-", 0) == 0 ||
          it.depth() + 1 >= kDraftSearchDepth) {
        it.disable_recursion_pending();
      }
      continue;
    }
    if (path.extension() != ".pt" || !it->is_regular_file(ec)) continue;
    const auto card_text = readModelCardText(path.string());
    if (!card_text) continue;
    try {
      const ModelCard card = parseModelCard(*card_text, path.string());
      if (adapterTargetsModel(file.metadata, card.family, card.name)) named.push_back(path);
    } catch (const UserError&) {
      continue;  // a card that does not parse: `inspect` says why; not a model to try here
    }
  }
  std::sort(named.begin(), named.end());
  return named;
}

}  // namespace

json draftMatches(const AdapterFile& file, const DeviceProfile& profile, const std::string& skip,
                  OperationContext& context) {
  const fs::path root = fs::absolute(context.workspaceRoot());
  json tried = json::array();
  json too_large = json::array();
  size_t not_tried = 0;
  std::error_code ec;
  for (const fs::path& archive : archivesNamed(file, root)) {
    if (!skip.empty() && fs::equivalent(archive, skip, ec)) continue;
    const std::string shown = archive.lexically_relative(root).string();
    if (fs::file_size(archive, ec) > kDraftTryBytes) {
      too_large.push_back(shown);
      continue;
    }
    if (tried.size() >= kDraftModelsTried) {
      ++not_tried;
      continue;
    }
    json entry = {{"model", shown}};
    try {
      ModelAdapters adapters(context, archive.string(), {});
      const AdapterApplication application =
          applyAdapter(file, adapters.stack().current(), profile, /*check_equivalence=*/false);
      if (application.changed()) {
        entry = matchedEntry(shown, application);
      } else {
        entry["matched"] = false;
        entry["why"] = unchangedReason(application);
      }
    } catch (const UserError& e) {
      entry["matched"] = false;
      entry["why"] = e.what();
    }
    tried.push_back(std::move(entry));
  }
  return {{"tried", tried}, {"not_tried", not_tried}, {"too_large", too_large}};
}

json matchedEntry(const std::string& model, const AdapterApplication& application) {
  json entry = {{"model", model}, {"matched", true}, {"rewrites", application.change.rewrites}};
  if (!application.change.not_folded.empty()) entry["not_folded"] = application.change.not_folded;
  return entry;
}

json draftWarnings(const json& tried) {
  json warnings = json::array();
  size_t matched = 0;
  for (const json& entry : tried) {
    if (entry.value("matched", false)) {
      ++matched;
      for (const json& reason : entry.value("not_folded", json::array())) {
        warnings.push_back("in " + entry.value("model", "") +
                           ", a size was not folded: " + reason.get<std::string>());
      }
    } else {
      warnings.push_back("matches nothing in " + entry.value("model", "") + ": " +
                         entry.value("why", ""));
    }
  }
  if (!tried.empty() && matched == 0) {
    warnings.push_back("matches none of the " + std::to_string(tried.size()) +
                       " model(s) it was tried on: as written, its pattern or condition cannot "
                       "match them (docs/adapter-format.md)");
  }
  return warnings;
}

}  // namespace stickler
