#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/graph/module_table.h"

namespace stickler {

// The module hierarchy with repeated layers collapsed: consecutive ModuleList/Sequential
// entries of identical structure become one node `layers.0-11: LlamaDecoderLayer x12`.
struct ModuleTreeNode {
  std::string name;  // relative to the parent, e.g. "attn" or "layers.0-11"
  std::string path;  // full path of the first instance ("" for the root)
  std::string class_name;
  int64_t count = 1;                     // instances this node stands for
  int64_t parameters = 0;                // per instance, including everything below it
  std::vector<ModuleTreeNode> children;  // the structure of one instance
};

ModuleTreeNode buildModuleTree(const ModuleTable& modules);

nlohmann::json moduleTreeToJson(const ModuleTreeNode& root);

// An indented drawing of the tree, one module (or group) per line.
std::string renderModuleTree(const ModuleTreeNode& root);

// "1.2M", "64.0K", "512": parameter counts for people.
std::string humanCount(int64_t count);

}  // namespace stickler
