#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/numerics/number_format.h"

namespace stickler {

// A condition on one dimension of one operand of the matched node (docs/device-profiles.md).
struct ShapePredicate {
  enum class Kind { kMultipleOf, kNotMultipleOf, kGreaterThan, kLessThan, kEquals };
  bool output = false;  // an output ("output0") rather than an input ("input0")
  int index = 0;        // which input or output
  int64_t dim = -1;     // negative counts from the end
  Kind kind = Kind::kNotMultipleOf;
  int64_t value = 64;
};

// What a fault does when it matches.
struct FaultEffect {
  enum class Kind {
    kCompileError,          // the backend's compiler fails, with `message`
    kRuntimeAbort,          // the device process aborts (SIGABRT) after printing `message`
    kAccumulateNarrow,      // reductions accumulate in `format`, `chunk` elements at a time
    kDropPartialStickTail,  // elements in a partial last stick become `fill` (zero|garbage)
    kWrongScale,            // outputs multiplied by `factor`
    kNanOnRange,            // outputs in [low, high] become NaN
    kLeak,                  // outputs that are exactly zero become `value` (a mask leak)
    kRacyReduction,         // outputs differ run to run by up to `value` relative (atomics)
  };
  Kind kind = Kind::kCompileError;
  std::string message;
  NumberFormat format = NumberFormat::kFloat16;
  int64_t chunk = 64;
  std::string fill = "zero";
  double factor = 1.0;
  double low = 0.0;
  double high = 0.0;
  double value = 0.0;
};

// A realistic backend bug: which nodes it hits and what it does to them.
struct FaultRule {
  std::string id;
  std::string description;
  std::string op;      // e.g. "aten::layer_norm"; "" matches any operator
  std::string module;  // a glob over the module path, e.g. "*.ln_2"; "" matches any module
  std::vector<ShapePredicate> shapes;
  std::vector<std::string> fused_with;  // operators that must share the node's kernel
  FaultEffect effect;
};

FaultRule parseFaultRule(const nlohmann::json& entry, const std::string& where);
nlohmann::json faultRuleToJson(const FaultRule& rule);
std::string effectKindName(FaultEffect::Kind kind);

// Shell-style glob: `*` matches any run of characters (dots included), `?` one character.
bool globMatch(const std::string& pattern, const std::string& text);

// Whether a shape satisfies a predicate (dims out of range never do).
bool shapeSatisfies(const std::vector<int64_t>& shape, const ShapePredicate& predicate);

}  // namespace stickler
