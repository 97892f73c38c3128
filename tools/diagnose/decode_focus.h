// localize and diagnose --mode numerics over a decode (`decode`: steps): the decode is run in
// lockstep first, then one step's graph, fed what the reference fed it, is what they examine.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/diagnose/causal_localization.h"

namespace stickler {

struct LoadedModel;
class OperationContext;

struct DecodeFocus {
  std::shared_ptr<const LoadedModel> model;  // the step's graph on the reference's inputs
  // The decode's document (docs/run-json.md "Decoding") with "verdict", "cache": "reference",
  // "localized_step" (null: every step passed, the prefill is examined) and "graph".
  nlohmann::json decode;
};

// Decodes `model_path` `steps` steps on options.backend and picks the step: `wanted`, else the
// first that does not pass, else the prefill. Refuses a model the session has adapted (`tool`
// names the asking tool): adapters reach the decode graphs through adapt_model's decode.
DecodeFocus focusOnDecodeStep(OperationContext& context, const std::string& model_path,
                              const std::vector<std::string>& input_flags,
                              const LocalizeOptions& options, int64_t steps,
                              std::optional<int64_t> wanted, const std::string& tool);

// A line for the text rendering: what the decode found and which step the report examines
// (`examined`: "localized", "compared").
std::string decodeFocusText(const nlohmann::json& decode, const std::string& examined);

}  // namespace stickler
