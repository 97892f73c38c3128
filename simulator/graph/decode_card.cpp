#include "simulator/graph/decode_card.h"

#include "simulator/support/errors.h"

namespace stickler {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& origin, const std::string& message) {
  throw UserError(origin + ": " + message);
}

DecodeGraph parseGraph(const json& doc, const std::string& origin) {
  if (!doc.is_object()) fail(origin, "must be an object with method, inputs and outputs");
  DecodeGraph graph;
  if (!doc.contains("method") || !doc["method"].is_string() ||
      doc["method"].get<std::string>().empty()) {
    fail(origin, "needs \"method\", the name of the archive's method");
  }
  graph.method = doc["method"];
  if (!doc.contains("inputs") || !doc["inputs"].is_array() || doc["inputs"].empty()) {
    fail(origin, "needs a non-empty \"inputs\" array");
  }
  for (size_t i = 0; i < doc["inputs"].size(); ++i) {
    graph.inputs.push_back(
        parseCardInput(doc["inputs"][i], origin + ": inputs[" + std::to_string(i) + "]"));
  }
  checkInputBytes(graph.inputs, origin);
  if (!doc.contains("outputs")) fail(origin, "needs \"outputs\" (logits, past_keys, past_values)");
  graph.outputs = parseCardOutputs(doc["outputs"], origin);
  for (OutputKind kind : {OutputKind::kLogits, OutputKind::kPastKeys, OutputKind::kPastValues}) {
    if (!outputOfKind(graph.outputs, kind)) {
      fail(origin, "its outputs need one of kind " + outputKindName(kind));
    }
  }
  return graph;
}

const InputSpec& required(const DecodeGraph& graph, InputKind kind, const std::string& origin) {
  const auto index = inputOfKind(graph.inputs, kind);
  if (!index) fail(origin, "its inputs need one of kind " + inputKindName(kind));
  return graph.inputs[*index];
}

// The cache: [layers, batch, kv_heads, max_length, head_dim].
void checkCache(const InputSpec& cache, int64_t max_length, const std::string& origin) {
  if (cache.shape.size() != 5 || cache.shape[3] != max_length) {
    fail(origin, cache.name + " has shape " + shapeString(cache.shape) +
                     "; a static cache is [layers, batch, kv_heads, max_length, head_dim] with "
                     "max_length " +
                     std::to_string(max_length));
  }
  if (isIntegral(cache.dtype)) fail(origin, cache.name + " must be floating-point");
}

}  // namespace

DecodeSpec parseDecodeSpec(const json& doc, const std::string& origin) {
  if (!doc.is_object()) fail(origin, "must be an object with max_length, prefill and step");
  DecodeSpec spec;
  if (!doc.contains("max_length") || !doc["max_length"].is_number_integer() ||
      doc["max_length"].get<int64_t>() <= 0) {
    fail(origin, "needs \"max_length\", the static cache's slots (a positive integer)");
  }
  spec.max_length = doc["max_length"];
  if (!doc.contains("prefill")) fail(origin, "needs \"prefill\"");
  if (!doc.contains("step")) fail(origin, "needs \"step\"");
  spec.prefill = parseGraph(doc["prefill"], origin + ": prefill");
  spec.step = parseGraph(doc["step"], origin + ": step");

  const std::string prefill_at = origin + ": prefill";
  const InputSpec& prompt = required(spec.prefill, InputKind::kTokenIds, prefill_at);
  required(spec.prefill, InputKind::kMask, prefill_at);
  const int64_t length = prompt.shape.empty() ? 0 : prompt.shape.back();
  if (length <= 0 || length % DecodeSpec::kPromptMultiple != 0) {
    fail(prefill_at, "the prompt " + prompt.name + " has " + std::to_string(length) +
                         " positions; Spyre's stack left-pads prompts to a multiple of " +
                         std::to_string(DecodeSpec::kPromptMultiple) +
                         " (pad it and give its mask a left_padding)");
  }
  if (length >= spec.max_length) {
    fail(prefill_at, "the prompt's " + std::to_string(length) +
                         " positions leave no slot of the cache's " +
                         std::to_string(spec.max_length) + " to decode into");
  }

  const std::string step_at = origin + ": step";
  const InputSpec& token = required(spec.step, InputKind::kTokenIds, step_at);
  if (token.shape.empty() || token.shape.back() != 1) {
    fail(step_at, token.name + " has shape " + shapeString(token.shape) +
                      "; a step takes one token (last dimension 1)");
  }
  const InputSpec& mask = required(spec.step, InputKind::kMask, step_at);
  if (mask.shape.empty() || mask.shape.back() != spec.max_length) {
    fail(step_at, mask.name + " has shape " + shapeString(mask.shape) +
                      "; a step's mask covers the cache's " + std::to_string(spec.max_length) +
                      " slots");
  }
  required(spec.step, InputKind::kCachePosition, step_at);
  checkCache(required(spec.step, InputKind::kPastKeys, step_at), spec.max_length, step_at);
  checkCache(required(spec.step, InputKind::kPastValues, step_at), spec.max_length, step_at);
  return spec;
}

json decodeSpecToJson(const DecodeSpec& spec) {
  auto graph = [](const DecodeGraph& graph) {
    json inputs = json::array();
    for (const InputSpec& input : graph.inputs) inputs.push_back(cardInputToJson(input));
    return json{{"method", graph.method},
                {"inputs", inputs},
                {"outputs", cardOutputsToJson(graph.outputs)}};
  };
  return {{"max_length", spec.max_length},
          {"prefill", graph(spec.prefill)},
          {"step", graph(spec.step)}};
}

const DecodeGraph& decodeGraphOf(const DecodeSpec& spec, ModelGraph graph) {
  return graph == ModelGraph::kPrefill ? spec.prefill : spec.step;
}

std::string modelGraphName(ModelGraph graph) {
  switch (graph) {
    case ModelGraph::kForward:
      return "forward";
    case ModelGraph::kPrefill:
      return "prefill";
    case ModelGraph::kDecodeStep:
      return "decode_step";
  }
  return "forward";
}

}  // namespace stickler
