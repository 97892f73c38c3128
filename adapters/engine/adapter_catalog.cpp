#include "adapters/engine/adapter_catalog.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <unordered_map>

#include "simulator/faults/fault_rule.h"
#include "simulator/support/errors.h"
#include "simulator/support/file_stamp.h"
#include "simulator/support/resource_dirs.h"
#include "simulator/support/sha256.h"
#include "simulator/support/text_files.h"

namespace stickler {

std::string shippedCatalogDir() {
  return requireResourceDir("STICKLER_CATALOG_DIR", "catalog", STICKLER_CATALOG_DIR,
                            "shipped adapter catalog");
}

namespace {

struct ParsedText {
  std::shared_ptr<const AdapterFile> file;
  std::string error;
};

// Parsing a file (tree-sitter, then its checks) costs far more than reading it, and every tool
// call that stacks adapters reads the whole catalog: a text's parse is kept while the process
// lives, keyed by path, text and whether people reviewed it, so an edited file is parsed again.
// Entries share the parse: a catalog is read on every such call, and copying each file's parse
// cost more than reading the directory.
ParsedText parsedOnce(const std::string& text, const std::string& path, bool reviewed) {
  constexpr size_t kParsesKept = 512;
  static std::mutex mutex;
  static std::unordered_map<std::string, ParsedText> parsed;
  std::string key = path;
  key += '\0';
  key += reviewed ? "reviewed" : "unreviewed";
  key += '\0';
  key += text;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto found = parsed.find(key);
    if (found != parsed.end()) return found->second;
  }
  ParsedText result;
  try {
    auto file = std::make_shared<AdapterFile>(parseAdapterFile(text, path));
    file->reviewed = reviewed;
    file->source_sha256 = sha256Bytes(text);
    result.file = std::move(file);
  } catch (const UserError& e) {
    result.error = e.what();
  }
  const std::lock_guard<std::mutex> lock(mutex);
  if (parsed.size() >= kParsesKept) parsed.clear();
  parsed.emplace(std::move(key), result);
  return result;
}

}  // namespace

CatalogEntry catalogEntryFromText(const std::string& name, const std::string& text,
                                  const std::string& path, const std::string& origin) {
  CatalogEntry entry{name, origin, path, text, nullptr, ""};
  ParsedText parsed = parsedOnce(text, path, origin == "shipped" || origin == "workspace");
  entry.file = std::move(parsed.file);
  entry.error = std::move(parsed.error);
  return entry;
}

nlohmann::json catalogToJson(const std::vector<CatalogEntry>& catalog) {
  nlohmann::json entries = nlohmann::json::array();
  for (const CatalogEntry& entry : catalog) {
    entries.push_back({{"name", entry.name},
                       {"origin", entry.origin},
                       {"path", entry.path},
                       {"text", entry.text},
                       {"error", entry.error},
                       {"status", entry.status},
                       {"branch", entry.branch}});
  }
  return entries;
}

std::vector<CatalogEntry> catalogFromJson(const nlohmann::json& json) {
  std::vector<CatalogEntry> catalog;
  for (const nlohmann::json& item : json) {
    CatalogEntry entry;
    if (item.at("error").get<std::string>().empty()) {
      entry = catalogEntryFromText(item.at("name"), item.at("text"), item.at("path"),
                                   item.at("origin"));
    } else {
      entry = {item.at("name"), item.at("origin"), item.at("path"),
               item.at("text"), nullptr,           item.at("error")};
    }
    entry.status = item.at("status").get<std::string>();
    entry.branch = item.at("branch").get<std::string>();
    catalog.push_back(std::move(entry));
  }
  return catalog;
}

namespace {

// A catalog file as last read: every tool call that stacks adapters reads the whole catalog,
// and a file whose stamp is unchanged is not read again.
CatalogEntry readCatalogFile(const std::string& name, const std::string& path,
                             const std::string& origin) {
  constexpr size_t kFilesKept = 1024;
  static std::mutex mutex;
  static std::unordered_map<std::string, std::pair<FileStamp, CatalogEntry>> kept;
  const std::string key = origin + '\0' + path;
  const std::optional<FileStamp> stamp = stampOf(path);
  if (stamp) {
    const std::lock_guard<std::mutex> lock(mutex);
    auto found = kept.find(key);
    if (found != kept.end() && found->second.first == *stamp && found->second.second.name == name) {
      return found->second.second;
    }
  }
  const auto text = readTextFileIfPresent(path);
  if (!text) return {name, origin, path, "", nullptr, path + ": cannot read it"};
  CatalogEntry entry = catalogEntryFromText(name, *text, path, origin);
  // Kept only when the file did not change while it was read: its stamp before and after agree.
  if (stamp && settled(*stamp) && stampOf(path) == stamp) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (kept.size() >= kFilesKept) kept.clear();
    kept.insert_or_assign(key, std::make_pair(*stamp, entry));
  }
  return entry;
}

}  // namespace

std::vector<CatalogEntry> readCatalogDir(const std::string& dir, const std::string& origin) {
  namespace fs = std::filesystem;
  std::vector<CatalogEntry> entries;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return entries;
  for (const auto& item : fs::directory_iterator(dir, error)) {
    if (!item.is_regular_file() || item.path().extension() != ".py") continue;
    entries.push_back(readCatalogFile(item.path().stem().string(), item.path().string(), origin));
  }
  std::sort(entries.begin(), entries.end(),
            [](const CatalogEntry& a, const CatalogEntry& b) { return a.name < b.name; });
  return entries;
}

std::vector<CatalogEntry> mergeCatalogs(std::vector<CatalogEntry> base,
                                        std::vector<CatalogEntry> overrides) {
  std::map<std::string, CatalogEntry> merged;
  for (auto& entry : base) merged[entry.name] = std::move(entry);
  for (auto& entry : overrides) merged[entry.name] = std::move(entry);
  std::vector<CatalogEntry> result;
  result.reserve(merged.size());
  for (auto& [name, entry] : merged) result.push_back(std::move(entry));
  return result;
}

const CatalogEntry& findCatalogEntry(const std::vector<CatalogEntry>& catalog,
                                     const std::string& name) {
  for (const auto& entry : catalog) {
    if (entry.name == name) return entry;
  }
  std::string names;
  for (const auto& entry : catalog) names += (names.empty() ? "" : ", ") + entry.name;
  throw UserError("no adapter named '" + name + "' in the catalog (there are: " +
                  (names.empty() ? std::string("none") : names) + ")");
}

bool adapterTargetsModel(const AdapterMetadata& metadata, const std::string& family,
                         const std::string& model_name) {
  for (const auto& pattern : metadata.models) {
    if (globMatch(pattern, family) || globMatch(pattern, model_name)) return true;
  }
  return false;
}

bool adapterTargetsProfile(const AdapterMetadata& metadata,
                           const std::vector<std::string>& profile_lineage) {
  for (const auto& profile : metadata.profiles) {
    if (std::find(profile_lineage.begin(), profile_lineage.end(), profile) !=
        profile_lineage.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace stickler
