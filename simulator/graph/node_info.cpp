#include "simulator/graph/node_info.h"

#include "simulator/graph/module_inliner.h"

namespace stickler {
namespace {

std::optional<SourceLine> lineOf(const torch::jit::SourceRange& range) {
  auto position = range.file_line_col();
  if (!position) return std::nullopt;
  return SourceLine{std::get<0>(*position), static_cast<int64_t>(std::get<1>(*position))};
}

// Whether a traced frame is torch's own code (torch.nn.functional, the Module call
// machinery, the tracer) rather than the model's.
bool inTorchPackage(const std::string& file) {
  return file.find("-packages/torch/") != std::string::npos;
}

// A traced node records the Python stack it was made under, innermost frame first, one
// "file(line): function" per line. The innermost is usually torch's (functional.py for
// F.softmax); the line to show is the first frame in the model's own code.
std::optional<SourceLine> modelFrameOf(const torch::jit::SourceRange& range) {
  if (!range.source()) return std::nullopt;
  const std::string stack = range.source()->text_str().str();
  size_t start = 0;
  while (start < stack.size()) {
    size_t end = stack.find('\n', start);
    if (end == std::string::npos) end = stack.size();
    const std::string frame = stack.substr(start, end - start);
    start = end + 1;
    const size_t close = frame.find("): ");
    const size_t open = close == std::string::npos ? close : frame.rfind('(', close);
    if (open == std::string::npos || open == 0) continue;
    const std::string file = frame.substr(0, open);
    const std::string digits = frame.substr(open + 1, close - open - 1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 9) {
      continue;
    }
    if (!inTorchPackage(file)) return SourceLine{file, std::stoll(digits)};
  }
  return std::nullopt;
}

}  // namespace

NodeOrigin originOf(const torch::jit::Node& node, const ModuleTable& modules) {
  NodeOrigin origin;
  origin.module_path = modulePathOf(node);
  origin.module_class = modules.classOf(origin.module_path);
  const auto& range = node.sourceRange();
  origin.code = lineOf(range);
  if (auto generated = range.findSourceRangeThatGenerated()) {
    origin.python = lineOf(*generated);
    if (origin.python && inTorchPackage(origin.python->file)) {
      if (auto model_frame = modelFrameOf(*generated)) origin.python = model_frame;
    }
  }
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
