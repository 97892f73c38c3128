#include "adapters/engine/operator_policy.h"

#include <algorithm>
#include <map>
#include <set>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "adapters/engine/adapter_file.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;

// Operators whose effect reaches past the values they return and that their schemas do not
// mark: files, the process's global state, other threads and processes, the server's output.
const std::map<std::string, std::string>& refusedByName() {
  static const std::map<std::string, std::string> kRefused = {
      {"aten::from_file", "it maps a file into a tensor"},
      {"aten::save", "it writes a file"},
      {"aten::set_", "it makes a tensor alias another storage"},
      {"aten::set_data", "it makes a tensor alias another storage"},
      {"aten::manual_seed", "it changes the process's random state"},
      {"aten::set_grad_enabled", "it changes the process's autograd state"},
      {"aten::_cufft_set_plan_cache_max_size", "it changes the process's global state"},
      {"aten::record_stream", "it reaches device streams"},
      {"aten::pin_memory", "it reaches device memory"},
      {"aten::_pin_memory", "it reaches device memory"},
      {"aten::wait", "it waits on another thread's work"},
      {"prim::fork", "it starts work on another thread"},
      {"prim::awaitable", "it starts work on another thread"},
      {"prim::awaitable_wait", "it waits on another thread's work"},
      {"prim::rpc_async", "it calls another process"},
      {"prim::rpc_sync", "it calls another process"},
      {"prim::rpc_remote", "it calls another process"},
      {"prim::Print", "it writes to the server's output, which may be the MCP channel"},
      {"prim::PythonOp", "it calls Python"},
      {"prim::IgnoredPythonOp", "it calls Python"},
      {"prim::TimePoint", "its result depends on the clock"},
      {"prim::AddStatValue", "it changes the process's global state"},
      {"prim::SetAttr", "it changes a module's state"},
      {"prim::Enter", "it enters a context manager"},
      {"prim::Exit", "it leaves a context manager"},
  };
  return kRefused;
}

bool holdsTensors(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::TensorType) return true;
  if (auto optional = type->cast<c10::OptionalType>())
    return holdsTensors(optional->getElementType());
  if (auto list = type->cast<c10::ListType>()) return holdsTensors(list->getElementType());
  return false;
}

// The argument a schema says the operator writes, when it holds tensors: in-place and out=
// variants. Writing a list the code built itself (`append`) changes nothing of the model's.
std::optional<std::string> writtenTensorArgument(const c10::FunctionSchema& schema) {
  for (const auto& argument : schema.arguments()) {
    if (argument.alias_info() != nullptr && argument.alias_info()->isWrite() &&
        holdsTensors(argument.type())) {
      return argument.name();
    }
  }
  return std::nullopt;
}

// Whether any overload takes a random generator: such operators draw from the process's random
// state, so what they compute differs from run to run and the state moves for everyone else.
bool drawsRandomNumbers(c10::Symbol kind) {
  for (const auto& op : torch::jit::getAllOperatorsFor(kind)) {
    for (const auto& argument : op->schema().arguments()) {
      const c10::TypePtr& type = argument.type();
      auto optional = type->cast<c10::OptionalType>();
      const c10::TypePtr& inner = optional ? optional->getElementType() : type;
      if (inner->kind() == c10::TypeKind::GeneratorType) return true;
    }
  }
  return false;
}

std::string positionOf(const Node& node, const std::string& path) {
  const auto& range = node.sourceRange();
  if (!range.source()) return path;
  const auto& source = *range.source();
  const size_t line = source.lineno_for_offset(range.start());
  const size_t column = range.start() - source.offset_for_line(line);
  return path + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
}

// "<where>: aten::save is not allowed in adapter code: it writes a file (...)".
UserError refusal(const std::string& where, const std::string& what) {
  return UserError(where + ": " + what +
                   " (adapters may only compute on tensors; docs/security.md)");
}
std::string notAllowed(const std::string& operator_name, const std::string& reason) {
  return operator_name + " is not allowed in adapter code: " + reason;
}
std::string writesInPlace(const std::string& argument) {
  return "it writes its argument `" + argument +
         "` in place (a replacement computes new values; use the out-of-place operator)";
}

void checkBlock(const torch::jit::Block& block, AdapterCodeRole role, const std::string& path) {
  for (const Node* node : block.nodes()) {
    if (auto reason = operatorRefusal(*node, role)) {
      throw refusal(positionOf(*node, path), notAllowed(node->kind().toQualString(), *reason));
    }
    for (const torch::jit::Block* inner : node->blocks()) checkBlock(*inner, role, path);
  }
}

// Python names whose operator is named otherwise (torch.jit.fork is prim::fork by its own name).
const std::map<std::string, std::string>& operatorsCalledOtherwise() {
  static const std::map<std::string, std::string> kOtherwise = {
      {"print", "prim::Print"},
      {"_awaitable", "prim::awaitable"},
      {"_awaitable_wait", "prim::awaitable_wait"},
      {"_fork", "prim::fork"},
  };
  return kOtherwise;
}

// What a name would run as a call, for the checks that need a schema, computed once from the
// registered operators (by string, so that the names a file writes are not interned).
struct WrittenNameFacts {
  std::map<std::string, std::string> writes_first_argument;  // aten name -> argument
  std::set<std::string> draws_random_numbers;                // aten names
};

const WrittenNameFacts& writtenNameFacts() {
  static const WrittenNameFacts kFacts = [] {
    WrittenNameFacts facts;
    for (const auto& op : torch::jit::getAllOperators()) {
      const c10::FunctionSchema& schema = op->schema();
      const c10::Symbol kind = c10::Symbol::fromQualString(schema.name());
      if (!kind.is_aten()) continue;
      const std::string name = kind.toUnqualString();
      const auto& arguments = schema.arguments();
      if (!arguments.empty() && arguments[0].alias_info() != nullptr &&
          arguments[0].alias_info()->isWrite() && holdsTensors(arguments[0].type())) {
        facts.writes_first_argument.emplace(name, arguments[0].name());
      }
      if (drawsRandomNumbers(kind)) facts.draws_random_numbers.insert(name);
    }
    return facts;
  }();
  return kFacts;
}

// Why `call` may not be written in code of that role, or nullopt when it may.
std::optional<std::string> writtenCallRefusal(const WrittenCall& call, AdapterCodeRole role) {
  const std::vector<std::string>& callee = call.callee;
  if (callee.size() >= 3 && callee[0] == "torch" && callee[1] == "ops" && callee[2] != "aten") {
    // As the resolver answers it when the call is compiled.
    return "adapter code may use torch.ops.aten only, not torch.ops." + callee[2];
  }
  const std::string& name = callee.back();
  const auto otherwise = operatorsCalledOtherwise().find(name);
  std::vector<std::string> candidates = {"aten::" + name, "prim::" + name};
  if (otherwise != operatorsCalledOtherwise().end()) candidates = {otherwise->second};
  for (const std::string& candidate : candidates) {
    const auto named = refusedByName().find(candidate);
    if (named != refusedByName().end()) return notAllowed(candidate, named->second);
  }
  if (role == AdapterCodeRole::kMatched) return std::nullopt;
  const std::string aten = "aten::" + name;
  const WrittenNameFacts& facts = writtenNameFacts();
  if (facts.draws_random_numbers.count(name)) return notAllowed(aten, "it draws random numbers");
  const auto written = facts.writes_first_argument.find(name);
  const bool writes_out =
      std::find(call.keywords.begin(), call.keywords.end(), "out") != call.keywords.end();
  if (written != facts.writes_first_argument.end() || writes_out) {
    return notAllowed(
        aten,
        writesInPlace(written != facts.writes_first_argument.end() ? written->second : "out"));
  }
  return std::nullopt;
}

}  // namespace

void checkWrittenCalls(const AdapterFile& file) {
  std::set<std::string> own_names;
  std::vector<const AdapterFunction*> functions;
  for (const auto* function : {&file.pattern, &file.replacement, &file.condition}) {
    if (*function) functions.push_back(&**function);
  }
  for (const AdapterFunction& helper : file.helpers) functions.push_back(&helper);
  for (const AdapterFunction* function : functions) own_names.insert(function->name);
  for (const AdapterFunction* function : functions) {
    const auto role =
        function->name == "pattern" ? AdapterCodeRole::kMatched : AdapterCodeRole::kRun;
    for (const WrittenCall& call : function->calls) {
      if (call.callee.size() == 1 && own_names.count(call.callee[0])) continue;
      if (auto what = writtenCallRefusal(call, role)) {
        throw refusal(file.path + ":" + std::to_string(call.position.line) + ":" +
                          std::to_string(call.position.column),
                      *what);
      }
    }
  }
}

std::optional<std::string> operatorRefusal(const Node& node, AdapterCodeRole role) {
  const c10::Symbol kind = node.kind();
  auto named = refusedByName().find(kind.toQualString());
  if (named != refusedByName().end()) return named->second;
  if (!kind.is_aten() && !kind.is_prim()) {
    return std::string("only aten:: and prim:: operators are allowed, not ") +
           kind.ns().toUnqualString() + "::";
  }
  if (role == AdapterCodeRole::kMatched) return std::nullopt;
  if (drawsRandomNumbers(kind)) return std::string("it draws random numbers");
  if (const c10::FunctionSchema* schema = node.maybeSchema()) {
    if (auto written = writtenTensorArgument(*schema)) {
      return writesInPlace(*written);
    }
  }
  return std::nullopt;
}

void checkAdapterOperators(const torch::jit::Graph& graph, AdapterCodeRole role,
                           const std::string& path) {
  checkBlock(*graph.block(), role, path);
}

std::vector<std::string> operatorsRefusedByName() {
  std::vector<std::string> names;
  for (const auto& [name, reason] : refusedByName()) names.push_back(name);
  return names;
}

}  // namespace stickler
