// What a sweep runs over: the model list (archive paths and globs, or a zoo manifest) and the
// slice of it one shard takes (docs/sweeps.md).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace stickler {

// Shard `index` of `count` (0 <= index < count); `source` says where it came from: "flag",
// "slurm", "kubernetes", or "" for the whole list.
struct Shard {
  size_t index = 0;
  size_t count = 1;
  std::string source;
  bool whole() const { return count == 1; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "K/N" as `--shard` takes it; throws UserError naming the problem.
Shard parseShard(const std::string& text);

// The shard a scheduler gave this process, read from `environment` (getenv in production):
// a Slurm array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT) or a
// Kubernetes Indexed Job (JOB_COMPLETION_INDEX with STICKLER_SHARD_COUNT, since Kubernetes does
// not tell a pod the completions count). The whole list when neither is set.
Shard shardFromEnvironment(const std::function<const char*(const char*)>& environment);

// The archives a list names, sorted and without repeats. `list` is a zoo manifest (a JSON
// index whose "models" entries have a "file"), or a text file of archive paths and globs, one
// per line, '#' starting a comment; relative entries are read from the list's directory.
// `resolve` confines each path (the MCP workspace roots). Throws UserError for a list that
// cannot be read or a glob that matches nothing. A named archive that does not exist stays in
// the list: the sweep reports it as a bad archive.
std::vector<std::string> readModelList(
    const std::string& list, const std::function<std::string(const std::string&)>& resolve);

// The models of `models` (sorted) that `shard` takes: every count-th one from its index, so
// that shards are about equal whatever order families have in the list.
std::vector<std::string> shardModels(const std::vector<std::string>& models, const Shard& shard);

}  // namespace stickler
