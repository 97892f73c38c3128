#include "simulator/graph/node_info.h"

#include "simulator/graph/module_inliner.h"

namespace stickler {
namespace {

std::optional<SourceLine> lineOf(const torch::jit::SourceRange& range) {
  auto position = range.file_line_col();
  if (!position) return std::nullopt;
  return SourceLine{std::get<0>(*position), static_cast<int64_t>(std::get<1>(*position))};
}

}  // namespace

NodeOrigin originOf(const torch::jit::Node& node, const ModuleTable& modules) {
  NodeOrigin origin;
  origin.module_path = modulePathOf(node);
  origin.module_class = modules.classOf(origin.module_path);
  const auto& range = node.sourceRange();
  origin.code = lineOf(range);
  if (auto generated = range.findSourceRangeThatGenerated()) origin.python = lineOf(*generated);
  return origin;
}

std::string describeNode(const torch::jit::Node& node, const ModuleTable& modules) {
  const NodeOrigin origin = originOf(node, modules);
  std::string text =
      std::string(node.kind().toQualString()) + " in " + displayPath(origin.module_path);
  if (!origin.module_class.empty()) text += " (" + origin.module_class + ")";
  const auto& where = origin.python ? origin.python : origin.code;
  if (where) text += " at " + where->file + ":" + std::to_string(where->line);
  return text;
}

}  // namespace stickler
