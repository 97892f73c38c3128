#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace stickler {

// One module of a model's hierarchy, as named by its attribute path.
struct ModuleEntry {
  std::string path;             // "" for the root, else e.g. "model.layers.0.self_attn"
  std::string class_name;       // e.g. "LlamaAttention"
  std::string qualified_class;  // e.g. "__torch__.transformers.models.llama.LlamaAttention"
  int64_t own_parameters = 0;   // elements of parameters held directly by this module
  int64_t own_buffers = 0;      // elements of buffers held directly by this module
};

// The module hierarchy in pre-order (parents before children), with lookup by path.
class ModuleTable {
 public:
  void add(ModuleEntry entry);
  const std::vector<ModuleEntry>& entries() const { return entries_; }
  const ModuleEntry* find(const std::string& path) const;
  // The class of the module at `path`, or "" when there is no such module.
  const std::string& classOf(const std::string& path) const;
  // Parameters held by the module at `path` and all modules below it.
  int64_t totalParameters(const std::string& path) const;

 private:
  std::vector<ModuleEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

// How a module path is shown to people and in JSON: the root module is "<root>".
std::string displayPath(const std::string& path);
// Whether `path` is `ancestor` or lies below it ("" is the ancestor of everything).
bool isWithin(const std::string& path, const std::string& ancestor);

}  // namespace stickler
