// The model card's `decode` section (docs/model-card.md "Decoding"): which methods of the
// archive prefill a static KV cache and decode one token, and the roles of their inputs and
// outputs. Checked when the card is read, so that a decode run never meets a half interface.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "simulator/graph/model_card.h"

namespace stickler {

// Throws a UserError naming `origin` and what is wrong.
DecodeSpec parseDecodeSpec(const nlohmann::json& doc, const std::string& origin);
nlohmann::json decodeSpecToJson(const DecodeSpec& spec);

// The prefill or the step (kForward has no DecodeGraph: the card itself describes it).
const DecodeGraph& decodeGraphOf(const DecodeSpec& spec, ModelGraph graph);
// "forward", "prefill", "decode_step".
std::string modelGraphName(ModelGraph graph);

}  // namespace stickler
