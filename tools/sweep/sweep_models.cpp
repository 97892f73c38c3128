#include "tools/sweep/sweep_models.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "simulator/support/errors.h"
#include "simulator/support/text_files.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

size_t parseCount(const std::string& text, const std::string& what) {
  size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || text[0] == '-') {
    throw UserError(what + " is not a whole number: '" + text + "'");
  }
  return static_cast<size_t>(value);
}

Shard checkedShard(size_t index, size_t count, std::string source, const std::string& what) {
  if (count == 0) throw UserError(what + ": the shard count must be at least 1");
  if (index >= count) {
    throw UserError(what + ": shard " + std::to_string(index) + " of " + std::to_string(count) +
                    " is out of range (shards count from 0 to " + std::to_string(count - 1) + ")");
  }
  return {index, count, std::move(source)};
}

std::string absoluteFrom(const fs::path& base, const std::string& entry) {
  const fs::path path(entry);
  return (path.is_absolute() ? path : base / path).lexically_normal().string();
}

std::vector<std::string> expandGlob(const std::string& pattern) {
  glob_t matches{};
  const int status = ::glob(pattern.c_str(), 0, nullptr, &matches);
  std::vector<std::string> paths;
  if (status == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) paths.emplace_back(matches.gl_pathv[i]);
  }
  globfree(&matches);
  return paths;
}

// The directories of a glob before its first component with a wildcard: what it can match lies
// under them.
std::string globBase(const std::string& pattern) {
  const size_t wildcard = pattern.find_first_of("*?[");
  const size_t slash = pattern.rfind('/', wildcard);
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : pattern.substr(0, slash);
}

std::vector<std::string> entriesOfManifest(const std::string& list, const std::string& text) {
  const nlohmann::json index = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!index.is_object() || !index.contains("models") || !index["models"].is_array()) {
    throw UserError(list +
                    ": a JSON model list must be a zoo manifest, an object whose \"models\" "
                    "array lists entries with a \"file\"");
  }
  std::vector<std::string> files;
  for (const nlohmann::json& model : index["models"]) {
    if (model.is_string()) {
      files.push_back(model.get<std::string>());
    } else if (model.is_object() && model.contains("file") && model["file"].is_string()) {
      files.push_back(model["file"].get<std::string>());
    } else {
      throw UserError(list + ": entry " + model.dump().substr(0, 80) +
                      " of \"models\" has no \"file\"");
    }
  }
  return files;
}

}  // namespace

Shard parseShard(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) {
    throw UserError("--shard takes K/N (shard K of N, counting from 0), not '" + text + "'");
  }
  return checkedShard(parseCount(text.substr(0, slash), "--shard's K"),
                      parseCount(text.substr(slash + 1), "--shard's N"), "flag", "--shard " + text);
}

Shard shardFromEnvironment(const std::function<const char*(const char*)>& environment) {
  const auto value = [&](const char* name) -> std::string {
    const char* text = environment(name);
    return text == nullptr ? "" : text;
  };
  if (!value("SLURM_ARRAY_TASK_ID").empty()) {
    const std::string count = value("SLURM_ARRAY_TASK_COUNT");
    if (count.empty())
      throw UserError("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not");
    const size_t id = parseCount(value("SLURM_ARRAY_TASK_ID"), "SLURM_ARRAY_TASK_ID");
    const std::string min_text = value("SLURM_ARRAY_TASK_MIN");
    const size_t min = min_text.empty() ? 0 : parseCount(min_text, "SLURM_ARRAY_TASK_MIN");
    if (id < min) throw UserError("SLURM_ARRAY_TASK_ID is below SLURM_ARRAY_TASK_MIN");
    return checkedShard(id - min, parseCount(count, "SLURM_ARRAY_TASK_COUNT"), "slurm",
                        "the Slurm array task");
  }
  if (!value("JOB_COMPLETION_INDEX").empty()) {
    const std::string count = value("STICKLER_SHARD_COUNT");
    if (count.empty()) {
      throw UserError(
          "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but "
          "STICKLER_SHARD_COUNT is not: set it to the Job's completions");
    }
    return checkedShard(parseCount(value("JOB_COMPLETION_INDEX"), "JOB_COMPLETION_INDEX"),
                        parseCount(count, "STICKLER_SHARD_COUNT"), "kubernetes",
                        "the Kubernetes Job index");
  }
  return {};
}

std::vector<std::string> readModelList(
    const std::string& list, const std::function<std::string(const std::string&)>& resolve) {
  const std::optional<std::string> read = readTextFileIfPresent(list);
  if (!read) throw UserError("cannot read the model list " + list);
  const std::string& text = *read;
  const fs::path base = fs::absolute(fs::path(list)).parent_path();
  std::set<std::string> models;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    for (const std::string& file : entriesOfManifest(list, text)) {
      models.insert(resolve(absoluteFrom(base, file)));
    }
    return {models.begin(), models.end()};
  }
  std::istringstream lines(text);
  std::string line;
  size_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos) continue;
    const std::string entry = line.substr(begin, line.find_last_not_of(" \t\r") - begin + 1);
    const std::string path = absoluteFrom(base, entry);
    if (entry.find_first_of("*?[") == std::string::npos) {
      models.insert(resolve(path));
      continue;
    }
    // Confined before it is expanded, and errors name the line, not what it matched: a list's
    // writer must not learn which files exist outside the workspace.
    const std::string where = list + ":" + std::to_string(number) + ": '" + entry + "'";
    try {
      resolve(globBase(path));
    } catch (const UserError& e) {
      throw UserError(where + ": " + e.what());
    }
    // A match that leads outside (through a link; '..' is resolved with the base above) counts
    // as no match: an error of its own would say that the outside path exists.
    size_t inside = 0;
    for (const std::string& match : expandGlob(path)) {
      try {
        models.insert(resolve(match));
        ++inside;
      } catch (const UserError&) {
      }
    }
    if (inside == 0) throw UserError(where + " matches no archive");
  }
  if (models.empty()) throw UserError(list + ": the model list names no archive");
  return {models.begin(), models.end()};
}

std::vector<std::string> shardModels(const std::vector<std::string>& models, const Shard& shard) {
  std::vector<std::string> taken;
  for (size_t i = shard.index; i < models.size(); i += shard.count) taken.push_back(models[i]);
  return taken;
}

}  // namespace stickler
