#include "simulator/graph/model_card.h"

#include <array>
#include <charconv>
#include <cmath>
#include <sstream>
#include <utility>

#include "simulator/graph/decode_card.h"
#include "simulator/support/errors.h"
#include "simulator/support/untrusted_json.h"

namespace stickler {
namespace {

using nlohmann::json;

struct DTypeName {
  DType dtype;
  const char* name;
};
// The first kCanonicalDTypes entries are the canonical names; the rest are accepted aliases.
constexpr size_t kCanonicalDTypes = 9;
constexpr std::array<DTypeName, 17> kDTypeNames{{
    {DType::kFloat32, "float32"},
    {DType::kFloat16, "float16"},
    {DType::kBFloat16, "bfloat16"},
    {DType::kFloat64, "float64"},
    {DType::kInt64, "int64"},
    {DType::kInt32, "int32"},
    {DType::kInt8, "int8"},
    {DType::kUInt8, "uint8"},
    {DType::kBool, "bool"},
    {DType::kFloat32, "float"},
    {DType::kFloat32, "fp32"},
    {DType::kFloat16, "half"},
    {DType::kFloat16, "fp16"},
    {DType::kBFloat16, "bf16"},
    {DType::kFloat64, "double"},
    {DType::kInt64, "long"},
    {DType::kInt32, "int"},
}};

std::string acceptedDTypes() {
  std::string list;
  for (size_t i = 0; i < kCanonicalDTypes; ++i)
    list += (i ? ", " : "") + std::string(kDTypeNames[i].name);
  return list;
}

[[noreturn]] void fail(const std::string& origin, const std::string& message) {
  throw UserError(origin + ": " + message);
}

int64_t parseInt(const std::string& text, const std::string& what) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw UserError("'" + text + "' is not an integer " + what);
  }
  return value;
}

double parseDouble(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw UserError("'" + text + "' is not a number " + what);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

InputKind kindFromName(const std::string& name, const std::string& origin) {
  static const std::pair<const char*, InputKind> kKinds[] = {
      {"auto", InputKind::kAuto},          {"token_ids", InputKind::kTokenIds},
      {"mask", InputKind::kMask},          {"positions", InputKind::kPositions},
      {"integer", InputKind::kInteger},    {"float", InputKind::kFloat},
      {"captured", InputKind::kCaptured},  {"cache_position", InputKind::kCachePosition},
      {"past_keys", InputKind::kPastKeys}, {"past_values", InputKind::kPastValues},
  };
  for (const auto& [text, kind] : kKinds) {
    if (name == text) return kind;
  }
  fail(origin, "unknown input kind '" + name +
                   "' (expected auto, token_ids, mask, positions, integer, float, captured, "
                   "cache_position, past_keys or past_values)");
}

OutputKind outputKindFromName(const std::string& name, const std::string& origin) {
  if (name == "logits") return OutputKind::kLogits;
  if (name == "hidden_states") return OutputKind::kHiddenStates;
  if (name == "embeddings") return OutputKind::kEmbeddings;
  if (name == "other") return OutputKind::kOther;
  if (name == "past_keys") return OutputKind::kPastKeys;
  if (name == "past_values") return OutputKind::kPastValues;
  if (name == "activation") return OutputKind::kActivation;
  fail(origin, "unknown output kind '" + name +
                   "' (expected logits, hidden_states, embeddings, other, past_keys, past_values "
                   "or activation)");
}

void validateInput(const InputSpec& input, const std::string& where) {
  int64_t elements = 1;
  for (int64_t dim : input.shape) {
    if (dim < 0)
      throw UserError(where + ": negative dimension in shape " + shapeString(input.shape));
    // Checked at every step, so that [100000, 100000, 100000] cannot overflow past the limit.
    if (dim != 0 && elements > kMaxInputElements / dim) elements = kMaxInputElements + 1;
    if (elements <= kMaxInputElements) elements *= dim;
  }
  if (elements > kMaxInputElements) {
    throw UserError(where + ": shape " + shapeString(input.shape) + " holds more than " +
                    std::to_string(kMaxInputElements) +
                    " elements, the most an example input may hold (docs/model-card.md)");
  }
  const uint64_t bytes = static_cast<uint64_t>(elements) * dtypeBytes(input.dtype);
  if (bytes > kMaxInputBytes) {
    throw UserError(where + ": shape " + shapeString(input.shape) + " of " +
                    dtypeName(input.dtype) + " takes " + std::to_string(bytes) +
                    " bytes, more than the " + std::to_string(kMaxInputBytes) +
                    " an example input may take (docs/model-card.md)");
  }
  if (input.kind == InputKind::kTokenIds) {
    if (!isIntegral(input.dtype)) {
      throw UserError(where + ": token ids need an integer dtype, not " + dtypeName(input.dtype));
    }
    if (!input.vocab_size || *input.vocab_size <= 0) {
      throw UserError(where + ": token ids need a positive vocab_size");
    }
  }
  if ((input.kind == InputKind::kInteger || input.kind == InputKind::kFloat) &&
      !(input.low < input.high)) {
    throw UserError(where + ": empty range [" + std::to_string(input.low) + ", " +
                    std::to_string(input.high) + ")");
  }
}

}  // namespace

InputSpec parseCardInput(const json& entry, const std::string& where) {
  if (!entry.is_object()) throw UserError(where + ": must be an object");
  InputSpec input;
  if (!entry.contains("name") || !entry["name"].is_string() ||
      entry["name"].get<std::string>().empty()) {
    throw UserError(where + ": needs a non-empty string \"name\"");
  }
  input.name = entry["name"];
  const std::string at = where + " (" + input.name + ")";
  if (!entry.contains("shape") || !entry["shape"].is_array()) {
    throw UserError(at + ": needs \"shape\", an array of integers");
  }
  for (const auto& dim : entry["shape"]) {
    if (!dim.is_number_integer()) throw UserError(at + ": shape entries must be integers");
    input.shape.push_back(dim.get<int64_t>());
  }
  const std::string dtype = entry.value("dtype", "float32");
  auto parsed = dtypeFromName(dtype);
  if (!parsed) {
    throw UserError(at + ": unknown dtype '" + dtype + "' (expected one of " + acceptedDTypes() +
                    ")");
  }
  input.dtype = *parsed;
  input.kind = kindFromName(entry.value("kind", "auto"), at);
  if (entry.contains("vocab_size")) {
    if (!entry["vocab_size"].is_number_integer()) {
      throw UserError(at + ": vocab_size must be an integer");
    }
    input.vocab_size = entry["vocab_size"].get<int64_t>();
  }
  if (entry.contains("range")) {
    const auto& range = entry["range"];
    if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number()) {
      throw UserError(at + ": range must be [low, high]");
    }
    input.low = range[0];
    input.high = range[1];
  } else if (input.kind == InputKind::kFloat || input.kind == InputKind::kPastKeys ||
             input.kind == InputKind::kPastValues) {
    input.low = -1.0;
  }
  if (entry.contains("left_padding")) {
    if (input.kind != InputKind::kMask || !entry["left_padding"].is_number_integer() ||
        entry["left_padding"].get<int64_t>() < 0 || input.shape.empty() ||
        entry["left_padding"].get<int64_t>() >= input.shape.back()) {
      throw UserError(at + ": left_padding is for a mask: a count below its last dimension");
    }
    input.left_padding = entry["left_padding"];
  }
  if (input.kind == InputKind::kCachePosition) {
    if (!isIntegral(input.dtype) || input.shape.empty()) {
      throw UserError(at + ": a cache_position is an integer tensor of at least one dimension");
    }
    if (entry.contains("start")) {
      if (!entry["start"].is_number_integer() || entry["start"].get<int64_t>() < 0) {
        throw UserError(at + ": start must be a non-negative integer");
      }
      input.low = static_cast<double>(entry["start"].get<int64_t>());
    }
  }
  validateInput(input, at);
  return input;
}

uint64_t dtypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool:
      return 1;
  }
  return 8;
}

uint64_t checkInputBytes(const std::vector<InputSpec>& inputs, const std::string& origin) {
  uint64_t total = 0;
  for (const InputSpec& input : inputs) {
    uint64_t elements = 1;
    for (int64_t dim : input.shape) elements *= static_cast<uint64_t>(dim);
    total += elements * dtypeBytes(input.dtype);  // each within kMaxInputBytes: no overflow
  }
  if (total > kMaxTotalInputBytes) {
    throw UserError(origin + ": the example inputs take " + std::to_string(total) +
                    " bytes together, more than the " + std::to_string(kMaxTotalInputBytes) +
                    " all of a model's inputs may take (docs/model-card.md)");
  }
  return total;
}

std::string dtypeName(DType dtype) {
  for (const auto& entry : kDTypeNames) {
    if (entry.dtype == dtype) return entry.name;
  }
  return "unknown";
}

std::optional<DType> dtypeFromName(const std::string& name) {
  for (const auto& entry : kDTypeNames) {
    if (name == entry.name) return entry.dtype;
  }
  return std::nullopt;
}

bool isIntegral(DType dtype) {
  return dtype == DType::kInt64 || dtype == DType::kInt32 || dtype == DType::kInt8 ||
         dtype == DType::kUInt8 || dtype == DType::kBool;
}

std::string inputKindName(InputKind kind) {
  switch (kind) {
    case InputKind::kAuto:
      return "auto";
    case InputKind::kTokenIds:
      return "token_ids";
    case InputKind::kMask:
      return "mask";
    case InputKind::kPositions:
      return "positions";
    case InputKind::kInteger:
      return "integer";
    case InputKind::kFloat:
      return "float";
    case InputKind::kCaptured:
      return "captured";
    case InputKind::kCachePosition:
      return "cache_position";
    case InputKind::kPastKeys:
      return "past_keys";
    case InputKind::kPastValues:
      return "past_values";
  }
  return "auto";
}

std::string outputKindName(OutputKind kind) {
  switch (kind) {
    case OutputKind::kLogits:
      return "logits";
    case OutputKind::kHiddenStates:
      return "hidden_states";
    case OutputKind::kEmbeddings:
      return "embeddings";
    case OutputKind::kOther:
      return "other";
    case OutputKind::kPastKeys:
      return "past_keys";
    case OutputKind::kPastValues:
      return "past_values";
    case OutputKind::kActivation:
      return "activation";
  }
  return "other";
}

std::string shapeString(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

ModelCard parseModelCard(const std::string& json_text, const std::string& origin) {
  json doc;
  try {
    doc = parseUntrustedJson(json_text);
  } catch (const JsonInputError& e) {
    fail(origin, std::string("model card is not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) fail(origin, "model card must be a JSON object");
  const int version = doc.value("version", 1);
  if (version > ModelCard::kVersion) {
    fail(origin, "model card version " + std::to_string(version) +
                     " is newer than this Stickler understands (" +
                     std::to_string(ModelCard::kVersion) + ")");
  }
  ModelCard card;
  card.from_archive = true;
  try {
    card.name = doc.value("name", "");
    card.family = doc.value("family", "");
    card.description = doc.value("description", "");
  } catch (const json::type_error&) {
    fail(origin, "name, family and description must be strings");
  }
  if (!doc.contains("inputs") || !doc["inputs"].is_array() || doc["inputs"].empty()) {
    fail(origin, "model card needs a non-empty \"inputs\" array");
  }
  for (size_t i = 0; i < doc["inputs"].size(); ++i) {
    card.inputs.push_back(
        parseCardInput(doc["inputs"][i], origin + ": inputs[" + std::to_string(i) + "]"));
  }
  checkInputBytes(card.inputs, origin);
  if (doc.contains("outputs")) card.outputs = parseCardOutputs(doc["outputs"], origin);
  if (doc.contains("config")) card.config = doc["config"];
  if (doc.contains("fixed_shapes")) {
    if (!doc["fixed_shapes"].is_boolean()) fail(origin, "\"fixed_shapes\" must be true or false");
    card.fixed_shapes = doc["fixed_shapes"];
  }
  if (doc.contains("decode")) card.decode = parseDecodeSpec(doc["decode"], origin + ": decode");
  return card;
}

std::vector<OutputSpec> parseCardOutputs(const json& entries, const std::string& origin) {
  if (!entries.is_array()) fail(origin, "\"outputs\" must be an array");
  std::vector<OutputSpec> outputs;
  for (const auto& entry : entries) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
      fail(origin, "each output needs a string \"name\"");
    }
    OutputSpec output{entry["name"], outputKindFromName(entry.value("kind", "other"), origin)};
    const std::string where = origin + ": output '" + output.name + "'";
    if (output.kind == OutputKind::kActivation) {
      const auto tolerance = entry.find("relative_l2_tolerance");
      if (tolerance == entry.end() || !tolerance->is_number() || !(tolerance->get<double>() > 0) ||
          !std::isfinite(tolerance->get<double>())) {
        fail(where, "an output of kind activation needs a positive \"relative_l2_tolerance\"");
      }
      output.relative_l2_tolerance = tolerance->get<double>();
    } else if (entry.contains("relative_l2_tolerance")) {
      fail(where, "\"relative_l2_tolerance\" belongs to outputs of kind activation");
    }
    outputs.push_back(std::move(output));
  }
  return outputs;
}

json cardInputToJson(const InputSpec& input) {
  json entry{{"name", input.name},
             {"shape", input.shape},
             {"dtype", dtypeName(input.dtype)},
             {"kind", inputKindName(input.kind)}};
  if (input.vocab_size) entry["vocab_size"] = *input.vocab_size;
  if (input.kind == InputKind::kInteger || input.kind == InputKind::kFloat ||
      input.kind == InputKind::kPastKeys || input.kind == InputKind::kPastValues) {
    entry["range"] = {input.low, input.high};
  }
  if (input.kind == InputKind::kCachePosition) entry["start"] = static_cast<int64_t>(input.low);
  if (input.left_padding > 0) entry["left_padding"] = input.left_padding;
  return entry;
}

json cardOutputsToJson(const std::vector<OutputSpec>& outputs) {
  json entries = json::array();
  for (const auto& output : outputs) {
    json entry = {{"name", output.name}, {"kind", outputKindName(output.kind)}};
    if (output.kind == OutputKind::kActivation) {
      entry["relative_l2_tolerance"] = output.relative_l2_tolerance;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::optional<size_t> inputOfKind(const std::vector<InputSpec>& specs, InputKind kind) {
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].kind == kind) return i;
  }
  return std::nullopt;
}

std::optional<size_t> outputOfKind(const std::vector<OutputSpec>& specs, OutputKind kind) {
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].kind == kind) return i;
  }
  return std::nullopt;
}

json modelCardToJson(const ModelCard& card) {
  json inputs = json::array();
  for (const auto& input : card.inputs) inputs.push_back(cardInputToJson(input));
  const json outputs = cardOutputsToJson(card.outputs);
  json doc{{"version", ModelCard::kVersion},
           {"name", card.name},
           {"family", card.family},
           {"description", card.description},
           {"inputs", inputs},
           {"outputs", outputs},
           {"config", card.config},
           {"source", card.from_archive ? "archive" : "flags"}};
  if (card.fixed_shapes) doc["fixed_shapes"] = true;
  if (card.decode) doc["decode"] = decodeSpecToJson(*card.decode);
  return doc;
}

InputSpec parseInputFlag(const std::string& flag) {
  const std::string where = "--input '" + flag + "'";
  const auto parts = split(flag, ':');
  if (parts.size() < 3 || parts.size() > 4) {
    throw UserError(where + ": expected name:shape:dtype[:kind], e.g. input_ids:1x16:int64");
  }
  InputSpec input;
  input.name = parts[0];
  if (input.name.empty()) throw UserError(where + ": the input name is empty");
  for (const auto& dim : split(parts[1], parts[1].find(',') != std::string::npos ? ',' : 'x')) {
    input.shape.push_back(parseInt(dim, "in the shape of " + where));
  }
  auto dtype = dtypeFromName(parts[2]);
  if (!dtype) {
    throw UserError(where + ": unknown dtype '" + parts[2] + "' (expected one of " +
                    acceptedDTypes() + ")");
  }
  input.dtype = *dtype;
  if (parts.size() == 4) {
    const std::string& kind = parts[3];
    const auto eq = kind.find('=');
    const std::string key = kind.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : kind.substr(eq + 1);
    if (key == "tokens") {
      input.kind = InputKind::kTokenIds;
      input.vocab_size = parseInt(value, "(vocabulary size) in " + where);
    } else if (key == "range") {
      const auto dots = value.find("..");
      if (dots == std::string::npos) throw UserError(where + ": range must be LOW..HIGH");
      input.low = parseDouble(value.substr(0, dots), "in " + where);
      input.high = parseDouble(value.substr(dots + 2), "in " + where);
      input.kind = isIntegral(input.dtype) ? InputKind::kInteger : InputKind::kFloat;
    } else if (eq == std::string::npos) {
      input.kind = kindFromName(kind, where);
      if (input.kind == InputKind::kFloat) input.low = -1.0;
      if (input.kind == InputKind::kInteger) input.high = 2.0;
    } else {
      throw UserError(where + ": unknown kind '" + kind +
                      "' (expected tokens=N, range=LOW..HIGH, mask, positions or auto)");
    }
  }
  validateInput(input, where);
  return input;
}

}  // namespace stickler
