#include "adapters/engine/rewrite_compiler.h"

#include <regex>
#include <sstream>
#include <unordered_set>

#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include "adapters/engine/adapter_resolver.h"
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/operator_policy.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

// The file's functions at their own lines, everything else blank: LibTorch's positions are
// then the file's positions.
std::string functionsAtTheirLines(const AdapterFile& file) {
  std::vector<const AdapterFunction*> functions = {&*file.pattern, &*file.replacement};
  if (file.condition) functions.push_back(&*file.condition);
  for (const auto& helper : file.helpers) functions.push_back(&helper);
  std::vector<std::string> lines;
  for (const AdapterFunction* function : functions) {
    const auto body = splitLines(function->source);
    const size_t first = static_cast<size_t>(function->position.line - 1);
    if (lines.size() < first + body.size()) lines.resize(first + body.size());
    for (size_t i = 0; i < body.size(); ++i) lines[first + i] = body[i];
  }
  std::string source;
  for (const auto& line : lines) source += line + "\n";
  return source;
}

// LibTorch reports "message:\n  File "<string>", line N\n<context lines>\n   ~~~ <--- HERE".
std::string locatedMessage(const std::string& path, const std::string& what) {
  std::string message;
  std::istringstream lines(what);
  std::string where = path;
  for (std::string line; std::getline(lines, line);) {
    if (message.empty() && !line.empty()) message = line;
    static const std::regex kLine("line ([0-9]+)");
    std::smatch found;
    if (where == path && std::regex_search(line, found, kLine) &&
        line.find("File \"") != std::string::npos) {
      where += ":" + found[1].str();
    }
    const size_t here = line.find("<--- HERE");
    if (here != std::string::npos) {
      const size_t column = line.find_first_of("~^");
      if (column != std::string::npos && column < here) where += ":" + std::to_string(column + 1);
      break;
    }
  }
  while (!message.empty() && (message.back() == ':' || message.back() == ' ')) message.pop_back();
  return where + ": TorchScript: " + message;
}

std::shared_ptr<torch::jit::Graph> graphOf(torch::jit::CompilationUnit& unit,
                                           const std::string& name) {
  auto graph = torch::jit::toGraphFunction(unit.get_function(name)).graph()->copy();
  // Constants the body left unused would be inserted into the model for nothing.
  torch::jit::EliminateDeadCode(graph);
  return graph;
}

// A function that returns several values returns them as one tuple; the matcher and the
// rewrite want them as the graph's outputs, one per value (`values, indices` of a topk).
void returnTupleElements(torch::jit::Graph& graph) {
  if (graph.outputs().size() != 1) return;
  torch::jit::Node* tuple = graph.outputs()[0]->node();
  if (tuple->kind() != torch::jit::prim::TupleConstruct) return;
  graph.eraseOutput(0);
  for (torch::jit::Value* element : tuple->inputs()) graph.registerOutput(element);
  tuple->destroy();
}

// LibTorch's matcher starts from the first returned value and walks to its inputs: every other
// returned value must be met on that walk (the other results of the same operator, or values
// that operator reads).
void checkReturnsReachable(const torch::jit::Graph& pattern, const AdapterFile& file) {
  std::unordered_set<const torch::jit::Node*> reached;
  std::vector<const torch::jit::Node*> stack = {pattern.outputs()[0]->node()};
  while (!stack.empty()) {
    const torch::jit::Node* node = stack.back();
    stack.pop_back();
    if (!reached.insert(node).second) continue;
    for (const torch::jit::Value* input : node->inputs()) stack.push_back(input->node());
  }
  const std::string where = file.path + ":" + std::to_string(file.pattern->position.line) + ":1: ";
  for (size_t i = 0; i < pattern.outputs().size(); ++i) {
    const torch::jit::Node* producer = pattern.outputs()[i]->node();
    if (producer->kind() == torch::jit::prim::Param) {
      throw UserError(where + "the pattern returns its parameter `" +
                      pattern.outputs()[i]->debugName() +
                      "` unchanged: return only values its operators compute");
    }
    if (i > 0 && !reached.count(producer)) {
      throw UserError(where + "the pattern's value " + std::to_string(i) +
                      " is not computed on the way to its first: the matcher starts from the "
                      "first value returned, so return first the one computed last. Values on "
                      "independent paths (one split used by the query and the key) are not one "
                      "pattern: write it for one of them, with what they share as parameters, "
                      "and it matches each (docs/adapter-format.md, \"One path\")");
    }
  }
}

}  // namespace

CompiledRewrite compileRewrite(const AdapterFile& file) {
  if (!file.pattern || !file.replacement) {
    throw UserError(file.path + ": not a rewrite (it calls a built-in transform)");
  }
  // Before TorchScript sees the code, what it is written to call, dead code included.
  checkWrittenCalls(file);
  CompiledRewrite compiled;
  try {
    compiled.unit = compileAdapterSource(functionsAtTheirLines(file));
  } catch (const std::exception& e) {
    throw UserError(locatedMessage(file.path, e.what()));
  }
  // Before anything runs or is inserted: the operators adapter code may use.
  for (torch::jit::Function* function : compiled.unit->get_functions()) {
    const auto role =
        function->name() == "pattern" ? AdapterCodeRole::kMatched : AdapterCodeRole::kRun;
    checkAdapterOperators(*torch::jit::toGraphFunction(*function).graph(), role, file.path);
  }
  compiled.pattern = graphOf(*compiled.unit, "pattern");
  returnTupleElements(*compiled.pattern);
  removeStaticNoOps(*compiled.pattern);
  giveEachUseItsOwnConstant(*compiled.pattern);
  compiled.replacement = graphOf(*compiled.unit, "replacement");
  returnTupleElements(*compiled.replacement);
  removeStaticNoOps(*compiled.replacement);  // `x[:, :, :16]` inserts one slice, not three
  if (compiled.pattern->nodes().begin() == compiled.pattern->nodes().end()) {
    throw UserError(file.path + ":" + std::to_string(file.pattern->position.line) +
                    ":1: the pattern has no operation to match");
  }
  checkReturnsReachable(*compiled.pattern, file);
  compiled.forms = matchableForms(*compiled.pattern);
  if (compiled.pattern->outputs().size() != compiled.replacement->outputs().size()) {
    throw UserError(
        file.path + ":" + std::to_string(file.replacement->position.line) +
        ":1: the replacement returns " + std::to_string(compiled.replacement->outputs().size()) +
        " value(s) and the pattern " + std::to_string(compiled.pattern->outputs().size()) +
        ": it must return one for each, in the same order");
  }
  if (file.condition) {
    compiled.condition = &compiled.unit->get_function("condition");
    const auto& returns = compiled.condition->getSchema().returns();
    if (returns.size() != 1 || returns[0].type()->kind() != c10::TypeKind::BoolType) {
      throw UserError(file.path + ":" + std::to_string(file.condition->position.line) +
                      ":1: condition must return a bool (annotate it: -> bool)");
    }
  }
  return compiled;
}

}  // namespace stickler
