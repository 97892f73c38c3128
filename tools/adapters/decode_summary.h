// A decode after adapting, as the review gate's and a sweep's entries for a model say it: the
// verdict over the steps, each step in a line of figures, the first step that fails and why,
// and what the decode graphs took of the forward's adapters (docs/run-json.md "Decoding" has
// the full per-step document; these are its headline figures).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "adapters/engine/decode_adaptation.h"
#include "simulator/run/run_model.h"

namespace stickler {

// {"prefill": [...], "decode_step": [...], "refused": [{graph, adapter, reason}]}.
nlohmann::json decodeAdaptationToJson(const DecodeAdaptation& adaptation);

// {"steps", "verdict", "first_failing_step", "min_kv_cosine", "per_step": [{"step",
// "token_agrees", "verdict", "min_kv_cosine", "top5_relative_error", "seconds"}], "adapters"}
// with "blocked_graph" and "reason" when they apply. `decode` is a run with RunResult::decode.
nlohmann::json decodeSummaryToJson(const RunResult& decode, const DecodeAdaptation& adaptation);

// Why a decode's verdict is not a pass, in a line ("" when it passes).
std::string decodeFailureReason(const RunResult& decode);

}  // namespace stickler
