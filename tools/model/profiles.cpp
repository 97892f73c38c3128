// list_profiles: the device profiles a check or a run can name.
#include <cstdio>

#include "simulator/device/device_profile.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;

json profileToJson(const DeviceProfile& profile) {
  int64_t unsupported = 0, fallback = 0;
  for (const auto& [op, entry] : profile.operators) {
    unsupported += entry.support == OpSupport::kUnsupported;
    fallback += entry.support == OpSupport::kCpuFallback;
  }
  return {{"name", profile.name},
          {"description", profile.description},
          {"number_format", formatName(profile.format)},
          {"fusion", profile.fusion == FusionPolicy::kNone ? "none" : "pointwise"},
          {"unsupported_operators", unsupported},
          {"cpu_fallback_operators", fallback},
          {"lineage", profile.lineage},
          {"content_sha256", profile.content_sha256},
          {"fault_rules", profile.faults.size()}};
}

json run(const json& input, OperationContext& context) {
  json profiles = json::array();
  for (const auto& name : listProfiles()) {
    json entry = profileToJson(loadProfile(name));
    entry["resource"] = "stickler://profiles/" + name;
    profiles.push_back(std::move(entry));
  }
  // Profiles given by path (a lab build of the stack, a test profile), after the shipped ones.
  for (const std::string& given : optionalStrings(input, "paths")) {
    const std::string path = context.resolvePath(given);
    json entry = profileToJson(loadProfile(path));
    entry["path"] = path;
    profiles.push_back(std::move(entry));
  }
  return {{"schema", "stickler.profiles"}, {"version", 1}, {"profiles", profiles}};
}

std::string renderText(const json& output) {
  std::string out;
  for (const auto& profile : output.at("profiles")) {
    char line[160];
    std::snprintf(
        line, sizeof line,
        "%-20s %-5s fusion %-9s %2lld unsupported, %2lld CPU fallbacks, %zu fault rules\n",
        profile["name"].get<std::string>().c_str(),
        profile["number_format"].get<std::string>().c_str(),
        profile["fusion"].get<std::string>().c_str(),
        static_cast<long long>(profile["unsupported_operators"].get<int64_t>()),
        static_cast<long long>(profile["cpu_fallback_operators"].get<int64_t>()),
        profile["fault_rules"].get<size_t>());
    out += line;
    out += "  " + profile["description"].get<std::string>() + "\n";
    if (profile.contains("path")) out += "  from " + profile["path"].get<std::string>() + "\n";
  }
  return out;
}

}  // namespace

Operation makeListProfilesOperation() {
  Operation op;
  op.name = "list_profiles";
  op.title = "List device profiles";
  op.description =
      "List the shipped Spyre device profiles (snapshots of the device stack) that check_support "
      "and run_model can target: number format, fusion, how many operators are unsupported or "
      "fall back to the CPU, how many fault rules each carries (not where they strike: the "
      "device does not tell its bugs), its lineage and content hash. Read "
      "stickler://profiles/<name> for the profile. Profile files given in paths (a lab build "
      "of the stack, a test profile) are listed after them, with their path.";
  op.input_schema = json::parse(R"({
    "type": "object",
    "properties": {
      "paths": {
        "type": "array",
        "items": {"type": "string"},
        "maxItems": 64,
        "description": "Profile files to describe as well, by path (inside the workspace over MCP)."
      }
    },
    "additionalProperties": false
  })");
  op.output_schema = json::parse(R"({
    "type": "object",
    "properties": {
      "schema": {"const": "stickler.profiles"},
      "version": {"type": "integer"},
      "profiles": {"type": "array"}
    },
    "required": ["schema", "version", "profiles"]
  })");
  op.annotations = {.read_only = true, .destructive = false, .idempotent = true};
  op.cli = {.command = "profiles", .renamed = {{"paths", "path"}}};
  op.run = run;
  op.render_text = renderText;
  return op;
}

}  // namespace stickler
