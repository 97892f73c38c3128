#include "simulator/inspect/module_tree.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>

namespace stickler {
namespace {

bool isIndex(const std::string& name) {
  return !name.empty() && name.size() < 18 && std::all_of(name.begin(), name.end(), ::isdigit);
}

std::string lastComponent(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// Two instances collapse when their classes, parameter counts and children all agree.
std::string signature(const ModuleTreeNode& node) {
  std::string text = node.class_name + "#" + std::to_string(node.parameters) + "(";
  for (const auto& child : node.children) {
    text += child.name + ":" + std::to_string(child.count) + "*" + signature(child) + ",";
  }
  return text + ")";
}

// A child before collapsing: `prefix` is "h." for the entries of a folded ModuleList `h`.
struct Item {
  ModuleTreeNode node;
  std::string prefix;
  std::optional<int64_t> index;
};

// Collapses runs of consecutively numbered items with the same prefix and equal signatures.
std::vector<ModuleTreeNode> collapse(std::vector<Item> items) {
  std::vector<ModuleTreeNode> collapsed;
  for (size_t i = 0; i < items.size();) {
    size_t j = i + 1;
    if (items[i].index) {
      const std::string first = signature(items[i].node);
      while (j < items.size() && items[j].index && items[j].prefix == items[i].prefix &&
             *items[j].index == *items[j - 1].index + 1 && signature(items[j].node) == first) {
        ++j;
      }
    }
    ModuleTreeNode group = std::move(items[i].node);
    group.name = items[i].prefix + group.name;
    if (j - i > 1) {
      group.count = static_cast<int64_t>(j - i);
      group.name += "-" + std::to_string(*items[j - 1].index);
    }
    collapsed.push_back(std::move(group));
    i = j;
  }
  return collapsed;
}

class TreeBuilder {
 public:
  explicit TreeBuilder(const ModuleTable& modules) {
    for (const auto& entry : modules.entries()) {
      if (entry.path.empty()) continue;
      const auto dot = entry.path.rfind('.');
      children_[dot == std::string::npos ? "" : entry.path.substr(0, dot)].push_back(&entry);
    }
  }

  ModuleTreeNode build(const ModuleEntry& entry) {
    ModuleTreeNode node;
    node.name = lastComponent(entry.path);
    node.path = entry.path;
    node.class_name = entry.class_name;
    node.parameters = entry.own_parameters;
    std::vector<Item> items;
    for (const ModuleEntry* child : children_[entry.path]) {
      if (isIndexedContainer(*child)) {
        // `h` holding 0..11 is shown as `h.0-11`, not as a ModuleList line of its own.
        for (const ModuleEntry* member : children_[child->path]) {
          const std::string name = lastComponent(member->path);
          items.push_back({build(*member), lastComponent(child->path) + ".", std::stoll(name)});
        }
      } else {
        const std::string name = lastComponent(child->path);
        items.push_back({build(*child), "",
                         isIndex(name) ? std::optional<int64_t>(std::stoll(name)) : std::nullopt});
      }
    }
    for (const auto& item : items) node.parameters += item.node.parameters;
    node.children = collapse(std::move(items));
    return node;
  }

 private:
  // ModuleList and Sequential: no parameters of their own, only numbered children.
  bool isIndexedContainer(const ModuleEntry& entry) {
    const auto& members = children_[entry.path];
    return entry.own_parameters == 0 && !members.empty() &&
           std::all_of(members.begin(), members.end(),
                       [](const ModuleEntry* m) { return isIndex(lastComponent(m->path)); });
  }

  std::map<std::string, std::vector<const ModuleEntry*>> children_;
};

}  // namespace

ModuleTreeNode buildModuleTree(const ModuleTable& modules) {
  const ModuleEntry* root = modules.find("");
  if (root == nullptr) return ModuleTreeNode{};
  return TreeBuilder(modules).build(*root);
}

nlohmann::json moduleTreeToJson(const ModuleTreeNode& node) {
  nlohmann::json children = nlohmann::json::array();
  for (const auto& child : node.children) children.push_back(moduleTreeToJson(child));
  return {{"name", node.name.empty() ? displayPath(node.path) : node.name},
          {"path", displayPath(node.path)},
          {"class", node.class_name},
          {"count", node.count},
          {"parameters", node.parameters},
          {"children", children}};
}

std::string humanCount(int64_t count) {
  char text[32];
  if (count >= 1'000'000'000) {
    std::snprintf(text, sizeof text, "%.2fB", count / 1e9);
  } else if (count >= 1'000'000) {
    std::snprintf(text, sizeof text, "%.2fM", count / 1e6);
  } else if (count >= 10'000) {
    std::snprintf(text, sizeof text, "%.1fK", count / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%lld", static_cast<long long>(count));
  }
  return text;
}

std::string renderModuleTree(const ModuleTreeNode& root) {
  std::string out;
  std::function<void(const ModuleTreeNode&, const std::string&, bool, bool)> draw =
      [&](const ModuleTreeNode& node, const std::string& indent, bool last, bool is_root) {
        std::string line = is_root ? "" : indent + (last ? "└─ " : "├─ ");
        line += is_root ? node.class_name : node.name + ": " + node.class_name;
        if (node.count > 1) line += " x" + std::to_string(node.count);
        if (node.parameters > 0) {
          line += "  (" + humanCount(node.parameters) + " params" +
                  (node.count > 1 ? " each" : "") + ")";
        }
        out += line + "\n";
        const std::string inner = is_root ? "" : indent + (last ? "   " : "│  ");
        for (size_t i = 0; i < node.children.size(); ++i) {
          draw(node.children[i], inner, i + 1 == node.children.size(), false);
        }
      };
  draw(root, "", true, true);
  return out;
}

}  // namespace stickler
