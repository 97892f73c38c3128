#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stickler {

// How example values for one model input are generated (docs/model-card.md).
enum class InputKind {
  kAuto,       // decided from the graph: token ids when the input feeds an embedding
  kTokenIds,   // integers in [0, vocab_size)
  kMask,       // all ones (nothing masked)
  kPositions,  // 0, 1, ... along the last dimension
  kInteger,    // integers in [low, high)
  kFloat,      // uniform floats in [low, high)
  kCaptured,   // the values stored in the archive (stickler/inputs.pkl): a repro's real inputs
  // The decode interface's (DecodeSpec) roles:
  kCachePosition,  // the cache slots of the step's tokens: start, start + 1, ... (`low` is start)
  kPastKeys,       // a static cache, [layers, batch, kv_heads, max_length, head_dim]; example
  kPastValues,     // values uniform in [low, high) as for kFloat
};

// The element types Stickler accepts for inputs, by their canonical names.
enum class DType { kFloat32, kFloat16, kBFloat16, kFloat64, kInt64, kInt32, kInt8, kUInt8, kBool };

// The most elements one example input may hold: a card asking for more is an error before
// anything is allocated (a [1000000000] input made inspect grow to 24 GB).
inline constexpr int64_t kMaxInputElements = int64_t{1} << 28;
// And the most bytes, one input and all of them: 2^28 int64 elements passed the element bound
// and cost the server 4.4 GB and 28 s before their allocation failed. Real inputs are token ids
// of a few KB, hidden states or images of tens of MB.
inline constexpr uint64_t kMaxInputBytes = uint64_t{256} << 20;
inline constexpr uint64_t kMaxTotalInputBytes = uint64_t{512} << 20;

struct InputSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  InputKind kind = InputKind::kAuto;
  std::optional<int64_t> vocab_size;  // kTokenIds
  double low = 0.0;                   // kInteger, kFloat, kPast*; the start of kCachePosition
  double high = 1.0;
  int64_t left_padding = 0;  // kMask: the first positions of the last dimension are padding (0)
};

// kActivation: an intermediate value of a model (what a repro bundle's region computes), judged
// by its relative L2 error against the card's own tolerance.
enum class OutputKind {
  kLogits,
  kHiddenStates,
  kEmbeddings,
  kOther,
  kPastKeys,
  kPastValues,
  kActivation
};

struct OutputSpec {
  std::string name;
  OutputKind kind = OutputKind::kOther;
  double relative_l2_tolerance = 0;  // kActivation: the largest relative L2 error that passes
};

// One graph of a decoder's decode interface: the archive's method and its card inputs/outputs.
struct DecodeGraph {
  std::string method;
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
};

// A decoder's decode interface (docs/model-card.md "Decoding"): `prefill` takes a prompt
// left-padded to a multiple of 64 and returns its logits with a static KV cache of max_length
// slots; `step` takes one token, the mask over the slots, the token's slot and the cache, and
// returns its logits and the cache with that slot written.
struct DecodeSpec {
  // Spyre's stack pads prompts to a multiple of this (docs/simulator-assumptions.md).
  static constexpr int64_t kPromptMultiple = 64;
  int64_t max_length = 0;
  DecodeGraph prefill;
  DecodeGraph step;
};

// Which of an archive's graphs a model is: its forward, or a graph of its decode interface.
enum class ModelGraph { kForward, kPrefill, kDecodeStep };

// The model card: the archive's extra file `stickler/model.json`, or one built from --input flags.
struct ModelCard {
  static constexpr int kVersion = 1;
  static constexpr const char* kArchivePath = "stickler/model.json";
  // The most a card may hold: cards are a few hundred bytes; the cap bounds what is read.
  static constexpr uint64_t kMaxBytes = uint64_t{1} << 20;
  static constexpr const char* kCapturedInputsPath = "stickler/inputs.pkl";
  // A numerical repro's reference outputs: a pickled tuple (fp32 outputs, float64 outputs),
  // kept for the engineer who files the bug; `stickler run` computes its own reference.
  static constexpr const char* kReferenceOutputsPath = "stickler/reference_outputs.pkl";
  // An adapted archive's module calls, node by node (adapted_archive.h): TorchScript's format
  // keeps the module tree but not which module call each node of a flat forward came from.
  static constexpr const char* kModulePathsPath = "stickler/module_paths.json";

  std::string name;
  std::string family;
  std::string description;
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;  // names for the flattened outputs, in order; may be shorter
  nlohmann::json config = nlohmann::json::object();  // free-form, e.g. the HF config
  // An adapter (precompute_tables) computed shape-dependent tables for these inputs' shapes:
  // the archive is correct for those shapes only, as a compiled device graph is.
  bool fixed_shapes = false;
  bool from_archive = false;
  std::optional<DecodeSpec> decode;  // decoders exported with a decode interface
};

// The index of the first input (output) of `kind` in `specs`; none when there is none.
std::optional<size_t> inputOfKind(const std::vector<InputSpec>& specs, InputKind kind);
std::optional<size_t> outputOfKind(const std::vector<OutputSpec>& specs, OutputKind kind);

// Parses a model card; `origin` names where the text came from in error messages.
ModelCard parseModelCard(const std::string& json_text, const std::string& origin);
nlohmann::json modelCardToJson(const ModelCard& card);

// One card input from its JSON entry, checked; `where` names it in errors.
InputSpec parseCardInput(const nlohmann::json& entry, const std::string& where);
std::vector<OutputSpec> parseCardOutputs(const nlohmann::json& entries, const std::string& origin);
nlohmann::json cardInputToJson(const InputSpec& input);
nlohmann::json cardOutputsToJson(const std::vector<OutputSpec>& outputs);

// Parses `name:shape:dtype[:kind]`, e.g. `input_ids:1x16:int64:tokens=50257`.
InputSpec parseInputFlag(const std::string& flag);

// The bytes one element of `dtype` takes.
uint64_t dtypeBytes(DType dtype);
// The bytes `inputs` take together; a UserError naming `origin` beyond kMaxTotalInputBytes.
uint64_t checkInputBytes(const std::vector<InputSpec>& inputs, const std::string& origin);

std::string dtypeName(DType dtype);
std::optional<DType> dtypeFromName(const std::string& name);
bool isIntegral(DType dtype);
std::string inputKindName(InputKind kind);
std::string outputKindName(OutputKind kind);
std::string shapeString(const std::vector<int64_t>& shape);  // "[1, 16]"

}  // namespace stickler
