#include "adapters/engine/adapter_resolver.h"

#include <algorithm>
#include <map>

#include <torch/csrc/jit/frontend/error_report.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/csrc/jit/runtime/operator.h>

namespace stickler {
namespace {

using torch::jit::GraphFunction;
using torch::jit::NamedValue;
using torch::jit::SourceRange;
using torch::jit::SugaredValue;
using torch::jit::SugaredValuePtr;

// The dtypes Python spells as attributes of `torch`; TorchScript passes a dtype as its
// ScalarType number, which is what a model's graph holds too.
const std::map<std::string, c10::ScalarType>& dtypeNames() {
  static const std::map<std::string, c10::ScalarType> kNames = {
      {"float32", c10::kFloat},
      {"float", c10::kFloat},
      {"float64", c10::kDouble},
      {"double", c10::kDouble},
      {"float16", c10::kHalf},
      {"half", c10::kHalf},
      {"bfloat16", c10::kBFloat16},
      {"int64", c10::kLong},
      {"long", c10::kLong},
      {"int32", c10::kInt},
      {"int", c10::kInt},
      {"int16", c10::kShort},
      {"short", c10::kShort},
      {"int8", c10::kChar},
      {"uint8", c10::kByte},
      {"bool", c10::kBool},
      {"complex64", c10::kComplexFloat},
      {"cfloat", c10::kComplexFloat},
      {"complex128", c10::kComplexDouble},
      {"cdouble", c10::kComplexDouble},
  };
  return kNames;
}

// The overload names an operator has ("" is written `default`).
std::vector<std::string> overloadNames(c10::Symbol op) {
  std::vector<std::string> names;
  for (const auto& candidate : torch::jit::getAllOperatorsFor(op)) {
    const std::string& name = candidate->schema().overload_name();
    names.push_back(name.empty() ? "default" : name);
  }
  return names;
}

// `torch.ops.aten.<op>.<overload>`: the operator, and its call must resolve to that overload
// (LibTorch picks an overload by the arguments; a different pick is said, not silently taken).
struct OverloadedOperator : public torch::jit::BuiltinFunction {
  OverloadedOperator(c10::Symbol symbol, std::string overload)
      : BuiltinFunction(symbol, c10::nullopt), overload(std::move(overload)) {}

  std::shared_ptr<SugaredValue> call(const SourceRange& loc, GraphFunction& m,
                                     at::ArrayRef<NamedValue> args, at::ArrayRef<NamedValue> kwargs,
                                     size_t n_binders) override {
    auto result = BuiltinFunction::call(loc, m, args, kwargs, n_binders);
    auto* simple = dynamic_cast<torch::jit::SimpleValue*>(result.get());
    if (simple == nullptr) return result;
    const torch::jit::Node* node = simple->getValue()->node();
    if (node->kind() == torch::jit::prim::TupleConstruct && node->inputs().size() > 0) {
      node = node->input(0)->node();  // a multi-output operator's results, packed
    }
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (schema != nullptr && node->kind() == symbol) {
      const std::string picked =
          schema->overload_name().empty() ? "default" : schema->overload_name();
      if (picked != overload) {
        throw torch::jit::ErrorReport(loc)
            << "these arguments call " << symbol.toQualString() << "." << picked << ", not ."
            << overload << " (write the arguments that overload takes, or leave the overload out)";
      }
    }
    return result;
  }

  std::string overload;
};

// `torch.ops.aten.<op>`: the operator; `.<overload>` names one of its overloads.
struct AtenOperator : public torch::jit::BuiltinFunction {
  explicit AtenOperator(c10::Symbol symbol) : BuiltinFunction(symbol, c10::nullopt) {}

  std::shared_ptr<SugaredValue> attr(const SourceRange& loc, GraphFunction& /*m*/,
                                     const std::string& field) override {
    const auto names = overloadNames(symbol);
    if (std::find(names.begin(), names.end(), field) == names.end()) {
      std::string known;
      for (const auto& name : names) known += (known.empty() ? "" : ", ") + name;
      throw torch::jit::ErrorReport(loc) << symbol.toQualString() << " has no overload '" << field
                                         << "' (it has: " << known << ")";
    }
    return std::make_shared<OverloadedOperator>(symbol, field == "default" ? "default" : field);
  }
};

// `torch.ops.aten`.
struct AtenNamespace : public SugaredValue {
  std::string kind() const override { return "operator namespace"; }
  std::shared_ptr<SugaredValue> attr(const SourceRange& loc, GraphFunction& /*m*/,
                                     const std::string& field) override {
    const auto symbol = c10::Symbol::fromQualString("aten::" + field);
    if (torch::jit::getAllOperatorsFor(symbol).empty()) {
      throw torch::jit::ErrorReport(loc) << "there is no operator aten::" << field;
    }
    return std::make_shared<AtenOperator>(symbol);
  }
};

// `torch.ops`: only the aten namespace is adapter code's (docs/security.md).
struct OpsNamespace : public SugaredValue {
  std::string kind() const override { return "operator namespaces"; }
  std::shared_ptr<SugaredValue> attr(const SourceRange& loc, GraphFunction& /*m*/,
                                     const std::string& field) override {
    if (field != "aten") {
      throw torch::jit::ErrorReport(loc)
          << "adapter code may use torch.ops.aten only, not torch.ops." << field;
    }
    return std::make_shared<AtenNamespace>();
  }
};

// `torch`: dtypes and `ops` besides what LibTorch's builtin module gives (its operators).
struct TorchModule : public torch::jit::BuiltinModule {
  TorchModule() : BuiltinModule("aten") {}
  std::shared_ptr<SugaredValue> attr(const SourceRange& loc, GraphFunction& m,
                                     const std::string& field) override {
    auto dtype = dtypeNames().find(field);
    if (dtype != dtypeNames().end()) {
      return std::make_shared<torch::jit::SimpleValue>(
          m.graph()->insertConstant(c10::IValue(static_cast<int64_t>(dtype->second)), loc));
    }
    if (field == "ops") return std::make_shared<OpsNamespace>();
    if (field == "nn") {
      // torch.nn.functional's functions are Python with conditionals around the operator; a
      // graph holds the operator they call.
      throw torch::jit::ErrorReport(loc)
          << "torch.nn is not available in adapter code: write the aten operator the model's "
             "graph holds (torch.softmax, torch.linear, torch.layer_norm; "
             "stickler://pattern-reference)";
    }
    return BuiltinModule::attr(loc, m, field);
  }
};

struct AdapterResolver : public torch::jit::Resolver {
  std::shared_ptr<SugaredValue> resolveValue(const std::string& name, GraphFunction& /*m*/,
                                             const SourceRange& /*loc*/) override {
    if (name == "torch") return std::make_shared<TorchModule>();
    return nullptr;
  }
  c10::TypePtr resolveType(const std::string& /*name*/, const SourceRange& /*loc*/) override {
    return nullptr;
  }
};

}  // namespace

std::shared_ptr<torch::jit::CompilationUnit> compileAdapterSource(const std::string& source) {
  auto unit = std::make_shared<torch::jit::CompilationUnit>();
  unit->define(c10::nullopt, source, std::make_shared<AdapterResolver>(), nullptr);
  return unit;
}

}  // namespace stickler
