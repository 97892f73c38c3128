#include "simulator/device/device_profile.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "simulator/support/errors.h"
#include "simulator/support/file_stamp.h"
#include "simulator/support/resource_dirs.h"
#include "simulator/support/sha256.h"
#include "simulator/support/text_files.h"
#include "simulator/support/untrusted_json.h"

namespace stickler {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kProfileVersion = 1;
constexpr int kMaxExtendsDepth = 8;

const std::set<std::string> kLayoutConstraints = {"stick_aligned_offsets", "not_on_stick_dim",
                                                  "unit_step_only", "materializing_consumer"};

OpSupport supportFromName(const std::string& name, const std::string& where) {
  if (name == "native") return OpSupport::kNative;
  if (name == "decomposed") return OpSupport::kDecomposed;
  if (name == "cpu-fallback") return OpSupport::kCpuFallback;
  if (name == "unsupported") return OpSupport::kUnsupported;
  throw UserError(where + ": unknown support '" + name +
                  "' (expected native, decomposed, cpu-fallback or unsupported)");
}

OpEntry parseOpEntry(const json& entry, const std::string& where) {
  OpEntry op;
  if (entry.is_string()) {
    op.support = supportFromName(entry, where);
    return op;
  }
  if (!entry.is_object() || !entry.contains("support") || !entry["support"].is_string()) {
    throw UserError(where + ": an operator is \"native\" (etc.) or {\"support\": ..., ...}");
  }
  op.support = supportFromName(entry["support"], where);
  op.note = entry.value("note", "");
  for (const auto& constraint : entry.value("layout", json::array())) {
    if (!constraint.is_string() || !kLayoutConstraints.count(constraint.get<std::string>())) {
      throw UserError(where + ": unknown layout constraint " + constraint.dump() +
                      " (expected stick_aligned_offsets, not_on_stick_dim, unit_step_only or "
                      "materializing_consumer)");
    }
    op.layout.insert(constraint.get<std::string>());
  }
  return op;
}

// A profile file as read: its stamp, taken before its bytes were, and the bytes parsed.
struct ProfileFile {
  std::string path;
  std::optional<FileStamp> stamp;
  std::string text;
};

ProfileFile readProfileFile(const std::string& path) {
  ProfileFile file{path, stampOf(path), {}};
  std::optional<std::string> text = readTextFileIfPresent(path);
  if (!text) throw UserError(path + ": no such profile file");
  file.text = std::move(*text);
  return file;
}

json parseProfileText(const ProfileFile& file) {
  try {
    return parseUntrustedJson(file.text);
  } catch (const JsonInputError& e) {
    throw UserError(file.path + ": not valid JSON: " + e.what());
  }
}

std::string resolvePath(const std::string& name_or_path) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  if (is_path) return name_or_path;
  std::string path = profileDirectory() + "/" + name_or_path + ".json";
  if (!fs::exists(path)) {
    std::string known;
    for (const auto& name : listProfiles()) known += (known.empty() ? "" : ", ") + name;
    throw UserError("no device profile named '" + name_or_path + "' (shipped: " + known + ")");
  }
  return path;
}

// Merges `child` over `parent`: objects merge key by key (operators entry by entry), anything
// else (including the faults list) is replaced.
json mergeOver(const json& parent, const json& child) {
  json merged = parent;
  for (const auto& [key, value] : child.items()) {
    if (value.is_object() && merged.contains(key) && merged[key].is_object() && key != "effect") {
      merged[key] = mergeOver(merged[key], value);
    } else {
      merged[key] = value;
    }
  }
  return merged;
}

// `files_read`, when given, collects every parent file the chain reads, as it was read.
// `ancestors` collects the names of the profiles the chain extends, nearest first.
json resolveExtends(const json& document, const std::string& origin, int depth,
                    std::vector<ProfileFile>* files_read, std::vector<std::string>* ancestors) {
  if (!document.is_object()) throw UserError(origin + ": a profile must be a JSON object");
  if (!document.contains("extends")) return document;
  if (depth >= kMaxExtendsDepth) throw UserError(origin + ": \"extends\" chain too long");
  const std::string parent_name = document.value("extends", "");
  const std::string parent_path = resolvePath(parent_name);
  ProfileFile parent_file = readProfileFile(parent_path);
  const json parent_document = parseProfileText(parent_file);
  if (files_read) files_read->push_back(std::move(parent_file));
  if (parent_document.is_object() && parent_document.contains("name") &&
      parent_document["name"].is_string()) {
    ancestors->push_back(parent_document["name"]);
  } else {
    ancestors->push_back(fs::path(parent_path).stem().string());
  }
  json parent = resolveExtends(parent_document, parent_path, depth + 1, files_read, ancestors);
  json child = document;
  child.erase("extends");
  parent.erase("name");
  parent.erase("description");
  return mergeOver(parent, child);
}

template <typename T>
T numberField(const json& object, const char* key, T fallback, const std::string& where) {
  if (!object.contains(key)) return fallback;
  if (!object[key].is_number()) throw UserError(where + ": \"" + key + "\" must be a number");
  const T value = object[key].get<T>();
  if (!(value > 0)) throw UserError(where + ": \"" + key + "\" must be positive");
  return value;
}

}  // namespace

std::string opSupportName(OpSupport support) {
  switch (support) {
    case OpSupport::kNative:
      return "native";
    case OpSupport::kDecomposed:
      return "decomposed";
    case OpSupport::kCpuFallback:
      return "cpu-fallback";
    case OpSupport::kUnsupported:
      return "unsupported";
  }
  return "unsupported";
}

const OpEntry& DeviceProfile::entryFor(const std::string& op) const {
  static OpEntry fallbacks[4] = {{OpSupport::kNative},
                                 {OpSupport::kDecomposed},
                                 {OpSupport::kCpuFallback},
                                 {OpSupport::kUnsupported}};
  auto it = operators.find(op);
  if (it != operators.end()) return it->second;
  return fallbacks[static_cast<int>(default_support)];
}

std::string profileDirectory() {
  return resourceDir("STICKLER_PROFILE_DIR", "profiles", STICKLER_PROFILE_DIR);
}

std::vector<std::string> listProfiles() {
  std::vector<std::string> names;
  std::error_code ec;
  const std::string dir = requireResourceDir("STICKLER_PROFILE_DIR", "profiles",
                                             STICKLER_PROFILE_DIR, "device profile");
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// parseProfile, also collecting the parent files an "extends" chain reads.
static DeviceProfile parseTrackingFiles(const json& raw, const std::string& origin,
                                        std::vector<ProfileFile>* files_read) {
  std::vector<std::string> ancestors;
  const json document = resolveExtends(raw, origin, 0, files_read, &ancestors);
  const int version = document.value("version", kProfileVersion);
  if (version > kProfileVersion) {
    throw UserError(origin + ": profile version " + std::to_string(version) +
                    " is newer than this Stickler understands (" + std::to_string(kProfileVersion) +
                    ")");
  }
  DeviceProfile profile;
  profile.path = origin;
  profile.content_sha256 = sha256Bytes(document.dump());
  json rules = document;
  for (const char* field : {"name", "description", "sources", "extends", "faults"}) {
    rules.erase(field);
  }
  profile.rules_sha256 = sha256Bytes(rules.dump());
  try {
    profile.name = document.value("name", fs::path(origin).stem().string());
    profile.description = document.value("description", "");
    profile.sources = document.value("sources", std::vector<std::string>{});
    profile.lineage = {profile.name};
    profile.lineage.insert(profile.lineage.end(), ancestors.begin(), ancestors.end());
  } catch (const json::exception&) {
    throw UserError(origin + ": name, description and sources must be strings");
  }

  const json device = document.value("device", json::object());
  const std::string at = origin + ": device";
  profile.device.cores = numberField(device, "cores", profile.device.cores, at);
  profile.device.corelets_per_core =
      numberField(device, "corelets_per_core", profile.device.corelets_per_core, at);
  profile.device.scratchpad_bytes =
      numberField(device, "scratchpad_bytes", profile.device.scratchpad_bytes, at);
  profile.device.core_span_bytes =
      numberField(device, "core_span_bytes", profile.device.core_span_bytes, at);
  profile.device.stick_bytes = numberField(device, "stick_bytes", profile.device.stick_bytes, at);
  profile.device.card_memory_bytes =
      numberField(device, "card_memory_bytes", profile.device.card_memory_bytes, at);
  profile.device.host_link_bytes_per_second = numberField(
      device, "host_link_bytes_per_second", profile.device.host_link_bytes_per_second, at);
  profile.device.transfer_latency_seconds =
      numberField(device, "transfer_latency_seconds", profile.device.transfer_latency_seconds, at);
  if (profile.device.stick_bytes % 2 != 0) throw UserError(at + ": stick_bytes must be even");

  const std::string format = document.value("number_format", "dl16");
  auto parsed = formatFromName(format);
  if (!parsed || *parsed == NumberFormat::kFloat32) {
    throw UserError(origin + ": number_format must be dl16, fp16 or bf16, not '" + format + "'");
  }
  profile.format = *parsed;
  const std::string integers = document.value("integers", "int32");
  if (integers != "int32" && integers != "int64") {
    throw UserError(origin + ": integers must be int32 or int64");
  }
  profile.narrow_integers = integers == "int32";
  const std::string fusion = document.value("fusion", "none");
  if (fusion == "none") {
    profile.fusion = FusionPolicy::kNone;
  } else if (fusion == "pointwise") {
    profile.fusion = FusionPolicy::kPointwise;
  } else {
    throw UserError(origin + ": fusion must be none or pointwise, not '" + fusion + "'");
  }
  profile.default_support = supportFromName(document.value("default_support", "cpu-fallback"),
                                            origin + ": default_support");

  const json operators = document.value("operators", json::object());
  if (!operators.is_object()) throw UserError(origin + ": \"operators\" must be an object");
  for (const auto& [name, entry] : operators.items()) {
    std::string where = origin;
    where += ": operators.";
    where += name;
    if (name.find("::") == std::string::npos) {
      throw UserError(where + ": an operator needs its namespace (aten::" + name + ")");
    }
    profile.operators[name] = parseOpEntry(entry, where);
  }
  const json faults = document.value("faults", json::array());
  if (!faults.is_array()) throw UserError(origin + ": \"faults\" must be an array");
  for (size_t i = 0; i < faults.size(); ++i) {
    profile.faults.push_back(
        parseFaultRule(faults[i], origin + ": faults[" + std::to_string(i) + "]"));
  }
  return profile;
}

namespace {

// Parsed profiles by path. A server loads the same few profiles on every call; parsing them
// again costs most of a cheap tool call, and copying one more than stamping its files. An entry
// is used only while every file of its "extends" chain is unchanged, so an edited profile is
// read again.
struct CachedProfile {
  std::vector<ProfileFile> files;
  std::shared_ptr<const DeviceProfile> profile;
};

// A file whose stamp is unchanged and settled cannot have changed. One written in the last two
// seconds may have, within its clock tick: its bytes are compared, which costs a read, not a
// parse (a user writes a fault profile and localizes at once, again and again).
bool stillCurrent(const CachedProfile& cached) {
  for (const ProfileFile& file : cached.files) {
    const std::optional<FileStamp> now = stampOf(file.path);
    if (!now || now != file.stamp) return false;
    if (!settled(*file.stamp) && readTextFileIfPresent(file.path) != file.text) return false;
  }
  return true;
}

}  // namespace

DeviceProfile parseProfile(const json& raw, const std::string& origin) {
  return parseTrackingFiles(raw, origin, nullptr);
}

std::shared_ptr<const DeviceProfile> sharedProfile(const std::string& name_or_path) {
  static std::mutex mutex;
  static std::map<std::string, CachedProfile> cache;
  const std::string path = resolvePath(name_or_path);
  {
    std::lock_guard lock(mutex);
    auto it = cache.find(path);
    if (it != cache.end() && stillCurrent(it->second)) return it->second.profile;
  }
  // Each file stamped before it is read, so an edit made while parsing is caught by the next call.
  std::vector<ProfileFile> files = {readProfileFile(path)};
  const json document = parseProfileText(files.front());
  auto profile = std::make_shared<const DeviceProfile>(parseTrackingFiles(document, path, &files));
  for (const ProfileFile& file : files) {
    if (!file.stamp) return profile;  // not a regular file: served, not kept
  }
  CachedProfile entry{std::move(files), profile};
  std::lock_guard lock(mutex);
  cache[path] = std::move(entry);
  return profile;
}

DeviceProfile loadProfile(const std::string& name_or_path) {
  return *sharedProfile(name_or_path);
}

json profileSummary(const DeviceProfile& profile) {
  return {{"name", profile.name},
          {"lineage", profile.lineage},
          {"content_sha256", profile.content_sha256},
          {"path", profile.path},
          {"number_format", formatName(profile.format)},
          {"fusion", profile.fusion == FusionPolicy::kNone ? "none" : "pointwise"},
          {"cores", profile.device.cores},
          {"stick_bytes", profile.device.stick_bytes},
          {"scratchpad_bytes", profile.device.scratchpad_bytes},
          {"core_span_bytes", profile.device.core_span_bytes},
          {"fault_rules", profile.faults.size()}};
}

json profileForAgents(const DeviceProfile& profile, const json& document) {
  json shown = document;
  shown.erase("faults");
  shown["lineage"] = profile.lineage;
  shown["content_sha256"] = profile.content_sha256;
  shown["fault_rules"] = profile.faults.size();
  shown["faults_withheld"] =
      "the device does not tell its bugs: fault rules stay in the profile file; the knowledge "
      "base describes known device bugs in words (docs/device-profiles.md)";
  return shown;
}

}  // namespace stickler
