#include "adapters/engine/stacking_record.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "adapters/engine/adapter_stack.h"
#include "adapters/engine/equivalence/equivalence.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/graph_fingerprint.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/model_facts.h"
#include "simulator/support/resource_dirs.h"
#include "simulator/support/sha256.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Raised when what a record means changes.
constexpr int kRecordVersion = 2;

// This executable, as its file stands: a rebuild gives another identity.
std::string executableIdentity() {
  struct stat info {};
  if (::stat("/proc/self/exe", &info) != 0) return "unknown";
  return std::to_string(info.st_ino) + ":" + std::to_string(info.st_size) + ":" +
         std::to_string(info.st_mtim.tv_sec) + "." + std::to_string(info.st_mtim.tv_nsec);
}

fs::path recordPath(const std::string& key) {
  return fs::path(cacheDir("stackings")) / (key + ".json");
}

}  // namespace

std::string stackingKey(const AdapterStack& stack, const std::vector<const CatalogEntry*>& entries,
                        const DeviceProfile& profile) {
  json adapters = json::array();
  for (const CatalogEntry* entry : entries) {
    adapters.push_back({entry->name, entry->origin, sha256Bytes(entry->text)});
  }
  static const std::string executable = executableIdentity();
  const json key = {{"model", recipeKeyOf(*stack.current())},
                    {"profile", profile.rules_sha256},
                    {"adapters", adapters},
                    {"executable", executable},
                    {"blas", blasLibrary()},
                    {"version", kRecordVersion}};
  return sha256Bytes(key.dump());
}

std::optional<RememberedStacking> rememberedStacking(const std::string& key) {
  std::ifstream in(recordPath(key));
  if (!in) return std::nullopt;
  try {
    const json record = json::parse(in);
    return RememberedStacking{record.at("pushed").get<std::vector<std::string>>(),
                              record.at("result").get<std::string>()};
  } catch (const json::exception&) {
    return std::nullopt;  // a damaged record: the stacking is checked again and rewritten
  }
}

void rememberStacking(const std::string& key, const RememberedStacking& stacking) {
  const fs::path file = recordPath(key);
  std::error_code ignored;
  fs::create_directories(file.parent_path(), ignored);
  const fs::path partial = file.string() + ".partial." + std::to_string(::getpid());
  {
    std::ofstream out(partial);
    out << json{{"pushed", stacking.pushed}, {"result", stacking.result}}.dump();
    if (!out) {
      fs::remove(partial, ignored);
      return;  // a cache that cannot be written costs time, nothing else
    }
  }
  fs::rename(partial, file, ignored);  // readers see a whole record or none
}

std::string stackingResult(const LoadedModel& model) {
  return graphFingerprint(*model.graph) + " " + recordsFingerprint(model);
}

}  // namespace stickler
