#include "adapters/engine/pattern_reference.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "adapters/engine/adapter_resolver.h"
#include "simulator/device/device_profile.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

// How a parameter of that type is annotated in TorchScript; nullopt for types a pattern cannot
// take as a parameter (generators, streams, storages).
std::optional<std::string> annotationOf(const c10::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::TensorType:
      return "Tensor";
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      return "int";
    case c10::TypeKind::FloatType:
      return "float";
    case c10::TypeKind::NumberType:  // a Scalar: a float is one
      return "float";
    case c10::TypeKind::BoolType:
      return "bool";
    case c10::TypeKind::StringType:
      return "str";
    case c10::TypeKind::DeviceObjType:
      return "Device";
    case c10::TypeKind::OptionalType: {
      auto inner = annotationOf(type->castRaw<c10::OptionalType>()->getElementType());
      if (!inner) return std::nullopt;
      return "Optional[" + *inner + "]";
    }
    case c10::TypeKind::ListType: {
      auto inner = annotationOf(type->castRaw<c10::ListType>()->getElementType());
      if (!inner) return std::nullopt;
      return "List[" + *inner + "]";
    }
    default:
      return std::nullopt;
  }
}

bool isPythonKeyword(const std::string& name) {
  static const std::set<std::string> kKeywords = {
      "from", "in", "is",   "lambda", "def",   "class", "return", "global", "import", "and", "or",
      "not",  "if", "else", "for",    "while", "with",  "as",     "pass",   "yield",  "del", "try"};
  return kKeywords.count(name) > 0;
}

bool appearsInModels(const c10::FunctionSchema& schema) {
  for (const auto& argument : schema.arguments()) {
    // out= variants (`out`, or named as topk.values names `values` and `indices`).
    if (argument.kwarg_only() && argument.alias_info() != nullptr &&
        argument.alias_info()->isWrite()) {
      return false;
    }
    if (argument.type()->str().find("Dimname") != std::string::npos) return false;
  }
  return true;
}

// The operator node a compiled pattern produced (through a multi-result tuple).
const torch::jit::Node* producedOperator(const torch::jit::Graph& graph, c10::Symbol op) {
  for (const torch::jit::Node* node : graph.nodes()) {
    if (node->kind() == op) return node;
  }
  return nullptr;
}

std::string overloadOf(const c10::FunctionSchema& schema) {
  return schema.overload_name().empty() ? "default" : schema.overload_name();
}

PatternSpelling spell(c10::Symbol op, const c10::FunctionSchema& schema) {
  PatternSpelling spelling;
  spelling.op = op.toQualString();
  spelling.overload = overloadOf(schema);
  std::ostringstream schema_text;
  schema_text << schema;
  spelling.schema = schema_text.str();
  spelling.results = static_cast<int>(schema.returns().size());

  std::vector<std::string> parameters;
  std::vector<std::string> positional;  // the call's arguments after the first
  std::vector<std::string> keywords;
  std::string first;
  for (const auto& argument : schema.arguments()) {
    auto annotation = annotationOf(argument.type());
    if (!annotation) {
      if (argument.kwarg_only() && argument.default_value()) continue;  // left at its default
      spelling.note = "its argument `" + argument.name() + "` (" + argument.type()->str() +
                      ") cannot be a pattern's parameter";
      return spelling;
    }
    const std::string name =
        isPythonKeyword(argument.name()) ? argument.name() + "_" : argument.name();
    parameters.push_back(name + ": " + *annotation);
    if (argument.kwarg_only()) {
      keywords.push_back(argument.name() + "=" + name);
    } else if (first.empty() && positional.empty() && parameters.size() == 1) {
      first = name;
    } else {
      positional.push_back(name);
    }
  }
  const auto join = [](const std::vector<std::string>& parts) {
    std::string text;
    for (const auto& part : parts) text += (text.empty() ? "" : ", ") + part;
    return text;
  };
  std::vector<std::string> all_arguments;
  if (!first.empty()) all_arguments.push_back(first);
  all_arguments.insert(all_arguments.end(), positional.begin(), positional.end());
  all_arguments.insert(all_arguments.end(), keywords.begin(), keywords.end());
  std::vector<std::string> method_arguments = positional;
  method_arguments.insert(method_arguments.end(), keywords.begin(), keywords.end());

  const std::string name = op.toUnqualString();
  std::vector<std::string> calls = {"torch." + name + "(" + join(all_arguments) + ")"};
  const bool self_is_tensor = !schema.arguments().empty() &&
                              schema.arguments()[0].name() == "self" &&
                              schema.arguments()[0].type()->kind() == c10::TypeKind::TensorType;
  if (self_is_tensor) calls.push_back(first + "." + name + "(" + join(method_arguments) + ")");
  calls.push_back("torch.ops.aten." + name + "." + spelling.overload + "(" + join(all_arguments) +
                  ")");

  std::vector<std::string> results;
  for (size_t i = 0; i < schema.returns().size(); ++i) {
    const std::string& returned = schema.returns()[i].name();
    results.push_back(returned.empty() || isPythonKeyword(returned) ? "result" + std::to_string(i)
                                                                    : returned);
  }
  for (const std::string& call : calls) {
    std::string body;
    if (results.size() > 1) {
      body = "    " + join(results) + " = " + call + "\n    return " + join(results) + "\n";
    } else {
      body = "    return " + call + "\n";
    }
    const std::string source = "def pattern(" + join(parameters) + "):\n" + body;
    try {
      auto unit = compileAdapterSource(source);
      const auto& graph = *torch::jit::toGraphFunction(unit->get_function("pattern")).graph();
      const torch::jit::Node* node = producedOperator(graph, op);
      if (node == nullptr || node->maybeSchema() == nullptr ||
          overloadOf(*node->maybeSchema()) != spelling.overload) {
        continue;
      }
      spelling.pattern = source;
      return spelling;
    } catch (const std::exception&) {
      continue;
    }
  }
  const bool reads_tensors = std::any_of(
      schema.arguments().begin(), schema.arguments().end(), [](const c10::Argument& argument) {
        return argument.type()->str().find("Tensor") != std::string::npos;
      });
  spelling.note = reads_tensors
                      ? "no spelling compiles to this overload (its arguments' types select "
                        "another; a constant of the right type may)"
                      : "arithmetic on Python numbers: write it as Python does (`n // 2`, "
                        "`a + b`), which selects the overload by its operands' types";
  return spelling;
}

std::string markdownSection(const std::string& op, const std::vector<PatternSpelling>& spellings) {
  std::string text = "## " + op + "\n\n";
  for (const auto& spelling : spellings) {
    text += "`" + spelling.schema + "`\n\n";
    if (spelling.pattern.empty()) {
      text += "Not written in patterns: " + spelling.note + ".\n\n";
      continue;
    }
    text += "```python\n" + spelling.pattern + "```\n\n";
    if (spelling.results > 1) {
      text += "It has " + std::to_string(spelling.results) +
              " results: return every one the model reads, the first computed last.\n\n";
    }
  }
  return text;
}

}  // namespace

std::vector<PatternSpelling> patternSpellings(const std::string& op) {
  const std::string qualified = op.find("::") == std::string::npos ? "aten::" + op : op;
  if (qualified.rfind("aten::", 0) != 0) {
    throw UserError("patterns match aten operators only, not " + op);
  }
  const c10::Symbol symbol = c10::Symbol::fromQualString(qualified);
  const auto operators = torch::jit::getAllOperatorsFor(symbol);
  if (operators.empty()) throw UserError("there is no operator " + qualified);
  std::vector<PatternSpelling> spellings;
  std::set<std::string> seen;  // an overload registered twice is one
  for (const auto& candidate : operators) {
    const c10::FunctionSchema& schema = candidate->schema();
    if (!appearsInModels(schema) || !seen.insert(overloadOf(schema)).second) continue;
    spellings.push_back(spell(symbol, schema));
  }
  std::sort(
      spellings.begin(), spellings.end(), [](const PatternSpelling& a, const PatternSpelling& b) {
        return (a.overload != "default") < (b.overload != "default") ||
               ((a.overload != "default") == (b.overload != "default") && a.overload < b.overload);
      });
  return spellings;
}

std::vector<std::string> referenceOperators() {
  std::set<std::string> operators;
  for (const auto& name : listProfiles()) {
    for (const auto& [op, entry] : loadProfile(name).operators) {
      if (op.rfind("aten::", 0) == 0) operators.insert(op);
    }
  }
  return {operators.begin(), operators.end()};
}

std::string operatorReferenceMarkdown(const std::string& op) {
  const auto spellings = patternSpellings(op);
  return markdownSection(spellings.empty() ? op : spellings.front().op, spellings);
}

std::string patternReferenceMarkdown() {
  static std::once_flag once;
  static std::string page;
  std::call_once(once, [] {
    page =
        "# Pattern reference: each operator as a pattern writes it\n\n"
        "Generated by the rewrite compiler (adapters/engine/pattern_reference.cpp), never "
        "edited by hand: each pattern below was compiled as an adapter's pattern is and yields "
        "that overload of the operator. The operators are those the shipped device profiles "
        "name; for any other, read `stickler://pattern-reference/{op}` (e.g. "
        "`stickler://pattern-reference/aten::nonzero`). A test regenerates this page and fails "
        "when it differs (`STICKLER_UPDATE_SNAPSHOTS=1` rewrites it).\n\n"
        "Every argument is a parameter here, so the pattern matches whatever the model passes; "
        "write a constant instead to match only that value (a dtype as `torch.float32`, which "
        "is the constant 6 in a graph). `torch.ops.aten.<op>.<overload>` works for every "
        "overload, as exported graphs spell it; the arguments must then call that overload. "
        "See docs/adapter-format.md for matching rules (results, control flow, folding).\n\n";
    for (const auto& op : referenceOperators()) {
      try {
        page += operatorReferenceMarkdown(op);
      } catch (const UserError&) {  // a profile may name operators of later LibTorch releases
        page += "## " + op +
                "\n\nThe LibTorch Stickler runs on has no such operator: no model it loads "
                "contains one.\n\n";
      }
    }
  });
  return page;
}

}  // namespace stickler
