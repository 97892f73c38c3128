#include "simulator/graph/module_table.h"

namespace stickler {

void ModuleTable::add(ModuleEntry entry) {
  index_[entry.path] = entries_.size();
  entries_.push_back(std::move(entry));
}

const ModuleEntry* ModuleTable::find(const std::string& path) const {
  auto it = index_.find(path);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const std::string& ModuleTable::classOf(const std::string& path) const {
  static const std::string kUnknown;
  const ModuleEntry* entry = find(path);
  return entry ? entry->class_name : kUnknown;
}

int64_t ModuleTable::totalParameters(const std::string& path) const {
  int64_t total = 0;
  for (const auto& entry : entries_) {
    if (isWithin(entry.path, path)) total += entry.own_parameters;
  }
  return total;
}

std::string displayPath(const std::string& path) {
  return path.empty() ? "<root>" : path;
}

bool isWithin(const std::string& path, const std::string& ancestor) {
  if (ancestor.empty() || path == ancestor) return true;
  return path.size() > ancestor.size() && path.compare(0, ancestor.size(), ancestor) == 0 &&
         path[ancestor.size()] == '.';
}

}  // namespace stickler
