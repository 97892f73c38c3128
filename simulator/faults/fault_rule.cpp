#include "simulator/faults/fault_rule.h"

#include <fnmatch.h>

#include "simulator/faults/fault_match.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using nlohmann::json;

struct EffectName {
  FaultEffect::Kind kind;
  const char* name;
};
constexpr EffectName kEffects[] = {
    {FaultEffect::Kind::kCompileError, "compile_error"},
    {FaultEffect::Kind::kRuntimeAbort, "runtime_abort"},
    {FaultEffect::Kind::kAccumulateNarrow, "accumulate_narrow"},
    {FaultEffect::Kind::kDropPartialStickTail, "drop_partial_stick_tail"},
    {FaultEffect::Kind::kWrongScale, "wrong_scale"},
    {FaultEffect::Kind::kNanOnRange, "nan_on_range"},
    {FaultEffect::Kind::kLeak, "leak"},
    {FaultEffect::Kind::kRacyReduction, "racy_reduction"},
};

struct PredicateName {
  ShapePredicate::Kind kind;
  const char* name;
};
constexpr PredicateName kPredicates[] = {
    {ShapePredicate::Kind::kMultipleOf, "multiple_of"},
    {ShapePredicate::Kind::kNotMultipleOf, "not_multiple_of"},
    {ShapePredicate::Kind::kGreaterThan, "greater_than"},
    {ShapePredicate::Kind::kLessThan, "less_than"},
    {ShapePredicate::Kind::kEquals, "equals"},
};

template <typename T>
T require(const json& object, const char* key, const std::string& where) {
  if (!object.contains(key)) throw UserError(where + ": missing \"" + key + "\"");
  try {
    return object.at(key).get<T>();
  } catch (const json::exception&) {
    throw UserError(where + ": \"" + key + "\" has the wrong type");
  }
}

ShapePredicate parsePredicate(const json& entry, const std::string& where) {
  if (!entry.is_object()) throw UserError(where + ": a shape predicate must be an object");
  ShapePredicate predicate;
  const std::string operand = entry.value("operand", "input0");
  const bool is_output = operand.rfind("output", 0) == 0;
  const bool is_input = operand.rfind("input", 0) == 0;
  const std::string number = operand.substr(is_output ? 6 : 5);
  if ((!is_output && !is_input) || number.empty() ||
      number.find_first_not_of("0123456789") != std::string::npos) {
    throw UserError(where + ": operand must be inputN or outputN, not '" + operand + "'");
  }
  predicate.output = is_output;
  predicate.index = std::stoi(number);
  predicate.dim = entry.value("dim", int64_t{-1});
  bool found = false;
  for (const auto& [kind, name] : kPredicates) {
    if (!entry.contains(name)) continue;
    if (found) throw UserError(where + ": one condition per shape predicate");
    predicate.kind = kind;
    predicate.value = require<int64_t>(entry, name, where);
    found = true;
  }
  if (!found) {
    throw UserError(where +
                    ": a shape predicate needs one of multiple_of, not_multiple_of, "
                    "greater_than, less_than, equals");
  }
  if ((predicate.kind == ShapePredicate::Kind::kMultipleOf ||
       predicate.kind == ShapePredicate::Kind::kNotMultipleOf) &&
      predicate.value <= 0) {
    throw UserError(where + ": multiple_of/not_multiple_of need a positive value");
  }
  return predicate;
}

FaultEffect parseEffect(const json& entry, const std::string& where) {
  if (!entry.is_object()) throw UserError(where + ": \"effect\" must be an object");
  FaultEffect effect;
  const std::string kind = require<std::string>(entry, "kind", where);
  bool known = false;
  for (const auto& [value, name] : kEffects) {
    if (kind == name) {
      effect.kind = value;
      known = true;
    }
  }
  if (!known) {
    throw UserError(where + ": unknown effect kind '" + kind +
                    "' (expected compile_error, runtime_abort, accumulate_narrow, "
                    "drop_partial_stick_tail, wrong_scale, nan_on_range or leak)");
  }
  switch (effect.kind) {
    case FaultEffect::Kind::kCompileError:
    case FaultEffect::Kind::kRuntimeAbort:
      effect.message = require<std::string>(entry, "message", where);
      break;
    case FaultEffect::Kind::kAccumulateNarrow: {
      const std::string format = require<std::string>(entry, "format", where);
      auto parsed = formatFromName(format);
      if (!parsed || *parsed == NumberFormat::kFloat32) {
        throw UserError(where + ": accumulate_narrow needs format dl16, fp16 or bf16");
      }
      effect.format = *parsed;
      effect.chunk = entry.value("chunk", int64_t{64});
      if (effect.chunk <= 0) throw UserError(where + ": chunk must be positive");
      break;
    }
    case FaultEffect::Kind::kDropPartialStickTail:
      effect.fill = entry.value("fill", "zero");
      if (effect.fill != "zero" && effect.fill != "garbage") {
        throw UserError(where + ": fill must be zero or garbage");
      }
      break;
    case FaultEffect::Kind::kWrongScale:
      effect.factor = require<double>(entry, "factor", where);
      break;
    case FaultEffect::Kind::kNanOnRange: {
      const auto range = require<std::vector<double>>(entry, "range", where);
      if (range.size() != 2 || !(range[0] <= range[1])) {
        throw UserError(where + ": range must be [low, high] with low <= high");
      }
      effect.low = range[0];
      effect.high = range[1];
      break;
    }
    case FaultEffect::Kind::kLeak:
      effect.value = require<double>(entry, "value", where);
      break;
    case FaultEffect::Kind::kRacyReduction:
      effect.value = entry.value("relative", 1e-3);
      if (!(effect.value > 0) || effect.value > 1) {
        throw UserError(where + ": relative must be in (0, 1]");
      }
      break;
  }
  return effect;
}

json effectToJson(const FaultEffect& effect) {
  json entry{{"kind", effectKindName(effect.kind)}};
  switch (effect.kind) {
    case FaultEffect::Kind::kCompileError:
    case FaultEffect::Kind::kRuntimeAbort:
      entry["message"] = effect.message;
      break;
    case FaultEffect::Kind::kAccumulateNarrow:
      entry["format"] = formatName(effect.format);
      entry["chunk"] = effect.chunk;
      break;
    case FaultEffect::Kind::kDropPartialStickTail:
      entry["fill"] = effect.fill;
      break;
    case FaultEffect::Kind::kWrongScale:
      entry["factor"] = effect.factor;
      break;
    case FaultEffect::Kind::kNanOnRange:
      entry["range"] = {effect.low, effect.high};
      break;
    case FaultEffect::Kind::kLeak:
      entry["value"] = effect.value;
      break;
    case FaultEffect::Kind::kRacyReduction:
      entry["relative"] = effect.value;
      break;
  }
  return entry;
}

}  // namespace

std::string effectKindName(FaultEffect::Kind kind) {
  for (const auto& [value, name] : kEffects) {
    if (value == kind) return name;
  }
  return "unknown";
}

FaultRule parseFaultRule(const json& entry, const std::string& where) {
  if (!entry.is_object()) throw UserError(where + ": a fault rule must be an object");
  FaultRule rule;
  rule.id = require<std::string>(entry, "id", where);
  const std::string at = where + " (" + rule.id + ")";
  rule.description = entry.value("description", "");
  const json match = entry.value("match", json::object());
  if (!match.is_object()) throw UserError(at + ": \"match\" must be an object");
  rule.op = match.value("op", "");
  rule.module = match.value("module", "");
  for (const auto& shape : match.value("shape", json::array())) {
    rule.shapes.push_back(parsePredicate(shape, at + ": match.shape"));
  }
  for (const auto& op : match.value("fused_with", json::array())) {
    if (!op.is_string()) throw UserError(at + ": fused_with lists operator names");
    rule.fused_with.push_back(op);
  }
  if (!entry.contains("effect")) throw UserError(at + ": missing \"effect\"");
  rule.effect = parseEffect(entry["effect"], at + ": effect");
  return rule;
}

json faultRuleToJson(const FaultRule& rule) {
  json shapes = json::array();
  for (const auto& predicate : rule.shapes) {
    json entry{{"operand", std::string(predicate.output ? "output" : "input") +
                               std::to_string(predicate.index)},
               {"dim", predicate.dim}};
    for (const auto& [kind, name] : kPredicates) {
      if (kind == predicate.kind) entry[name] = predicate.value;
    }
    shapes.push_back(entry);
  }
  return {{"id", rule.id},
          {"description", rule.description},
          {"match",
           {{"op", rule.op},
            {"module", rule.module},
            {"shape", shapes},
            {"fused_with", rule.fused_with}}},
          {"effect", effectToJson(rule.effect)}};
}

bool globMatch(const std::string& pattern, const std::string& text) {
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

bool shapeSatisfies(const std::vector<int64_t>& shape, const ShapePredicate& predicate) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t dim = predicate.dim < 0 ? predicate.dim + rank : predicate.dim;
  if (dim < 0 || dim >= rank) return false;
  const int64_t size = shape[dim];
  switch (predicate.kind) {
    case ShapePredicate::Kind::kMultipleOf:
      return size % predicate.value == 0;
    case ShapePredicate::Kind::kNotMultipleOf:
      return size % predicate.value != 0;
    case ShapePredicate::Kind::kGreaterThan:
      return size > predicate.value;
    case ShapePredicate::Kind::kLessThan:
      return size < predicate.value;
    case ShapePredicate::Kind::kEquals:
      return size == predicate.value;
  }
  return false;
}

bool faultRuleNamesOp(const FaultRule& rule, const std::string& op) {
  return rule.op.empty() || rule.op == op;
}

bool faultRuleNamesPath(const FaultRule& rule, const std::string& module_path) {
  return rule.module.empty() || globMatch(rule.module, module_path);
}

}  // namespace stickler
