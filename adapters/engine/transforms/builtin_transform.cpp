#include "adapters/engine/transforms/builtin_transform.h"

#include "simulator/support/errors.h"

namespace stickler {

const std::vector<BuiltinTransform>& builtinTransforms() {
  static const std::vector<BuiltinTransform> transforms = {
      {"pad_to_sticks",
       "Pads the output dimension of the linear layers in the matching modules, playing the "
       "given role, to whole sticks (and to a stick count whose per-core slice fits the span), "
       "with zero rows, and slices the result back to its size: the padded outputs are never "
       "seen. Roles are found by what the outputs become, whatever the layers are called: "
       "logits (what the model returns, through views, slices, casts and tuples: lm_head, "
       "embed_out, a head tied to the embedding), router (what top-k chooses from, through a "
       "softmax or casts), any.",
       {{"module", "string", "*", "module paths to pad (fnmatch pattern, e.g. lm_head or *.gate)"},
        {"role", "string", "any",
         "what the outputs must become: logits, router or any; alternatives joined by | "
         "(logits|router)"},
        {"dim", "string", "out", "the weight dimension to pad: out (the only one so far)"}},
       &padToSticks},
      {"pad_attention_heads",
       "Zero-pads the heads of the attention in the matching modules to head_dim (0: the "
       "smallest that fits). Attention is found by what it computes, whatever its modules are "
       "called: a softmax over the product of queries and keys that weighs values; the query, "
       "key and value projections (or one fused projection) are what feeds them, the output "
       "projection what reads the merged heads, and 1-D frequencies reaching the queries through "
       "cos or sin are RoPE. With RoPE (heads whose halves do not fill whole sticks, which RoPE "
       "as a matmul needs) query and key heads get zeros after each half and the frequencies "
       "zero entries; without it each head gets zeros at its end until the heads fill whole "
       "sticks and the view merging the heads is widened. Value heads get zeros at their end, "
       "the output projection zero columns, a fused projection's split follows and a scale read "
       "from the heads' size keeps the real head size: scores and outputs are the same sums. "
       "Attention whose heads already fit is left as it is (not applicable).",
       {{"module", "string", "*",
         "attention module paths (fnmatch, e.g. *.self_attn): the innermost module holding the "
         "attention's projections"},
        {"head_dim", "integer", 0, "the padded head size; 0 picks the smallest that fits"}},
       &padAttentionHeads},
      {"pad_hidden_size",
       "Pads the hidden size to whole sticks with zeros in every weight dimension of that size "
       "(so pad attention heads first when heads x head_dim equals it); RMSNorm's mean over the "
       "hidden size becomes a sum divided by the original size, and hidden-state outputs are "
       "sliced back; layer_norm over the hidden size is decomposed with its mean and variance "
       "taken over the original positions only, so the padding stays zero.",
       {{"size", "integer", 0,
         "the hidden size; 0 reads it from the token embedding, or else the first layer_norm"}},
       &padHiddenSize},
      {"pad_intermediate_size",
       "Pads the intermediate size of the MLPs in the matching modules to whole sticks. An MLP "
       "is found by what it computes, whatever its layers are called: a linear layer whose "
       "input comes, through elementwise operators only (the activation, a gate's product), "
       "from linear layers whose outputs go nowhere else. Those get zero rows, the last one zero "
       "columns: whatever the activation makes of a padded zero is multiplied by zero, so every "
       "output is the same sum. Gated (SwiGLU) and ungated MLPs alike.",
       {{"module", "string", "*", "module paths of the MLP's linear layers (fnmatch)"},
        {"size", "integer", 0,
         "the padded intermediate size; 0 picks the next whole number of sticks"}},
       &padIntermediateSize},
      {"precompute_tables",
       "Computes, once on the host, the outputs of the matching modules that depend only on "
       "weights and the inputs' shapes (RoPE's cos and sin tables) and puts them in the graph "
       "as constants, so their operators leave the device graph. The adapted model is then "
       "specialized to the example inputs' shapes, as the device's compiled graphs are.",
       {{"module", "string", nullptr, "module paths (fnmatch, e.g. *.rotary_emb)"}},
       &precomputeTables},
      {"run_on_host",
       "Places the matching modules on the host: they run on the CPU, in fp32, in every device "
       "run, and their inputs and outputs cross between host and device. The stopgap for a "
       "module built of operators the device stack cannot lower; the graph is unchanged.",
       {{"module", "string", nullptr, "module paths to keep on the host (fnmatch, e.g. *.mamba)"}},
       &runOnHost},
      {"build_masks_on_host",
       "Places on the host what the model computes from its mask inputs alone (the attention "
       "mask made into an additive bias, a causal mask combined with it): it runs on the CPU in "
       "fp32 and only the finished mask crosses to the device. The graph is unchanged.",
       {{"input", "string", "*mask*", "the model inputs the masks are built from (fnmatch)"}},
       &buildMasksOnHost},
      {"decompose_op",
       "Replaces every node of one operator in the matching modules with the simpler operators "
       "it is made of: aten::layer_norm (means, rsqrt and products over the last dimension), "
       "aten::gelu (erf or tanh form), aten::silu (x * sigmoid(x)). For an operator the profile "
       "cannot lower or whose fused kernel misbehaves; the sums are reordered, so state max_ulps.",
       {{"op", "string", nullptr, "the operator, e.g. aten::layer_norm"},
        {"module", "string", "*", "module paths whose nodes are decomposed (fnmatch)"}},
       &decomposeOp},
      {"restickify",
       "Copies into row-major order (aten::contiguous) each operand of a pointwise operator "
       "that is sticked on another dimension than its partner: a value permuted to channels-last "
       "and added back to a channels-first residual (ConvNeXt), a permuted position bias added "
       "to the scores (T5). Operators whose operands agree, or where one is broadcast along the "
       "other's stick dimension, are left as they are. The copy computes nothing: the same "
       "values in another memory order.",
       {{"module", "string", "*", "module paths of the operators to look at (fnmatch)"}},
       &restickify},
  };
  return transforms;
}

namespace {

bool hasType(const nlohmann::json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "boolean") return value.is_boolean();
  return false;
}

std::string namesOf(const std::vector<BuiltinTransform>& transforms) {
  std::string names;
  for (const auto& transform : transforms) names += (names.empty() ? "" : ", ") + transform.name;
  return names;
}

}  // namespace

const BuiltinTransform& resolveTransform(const std::string& name, nlohmann::json& arguments,
                                         const std::string& where) {
  const BuiltinTransform* found = nullptr;
  for (const auto& transform : builtinTransforms()) {
    if (transform.name == name) found = &transform;
  }
  if (found == nullptr) {
    throw UserError(where + ": unknown transform '" + name +
                    "' (built-in transforms: " + namesOf(builtinTransforms()) + ")");
  }
  for (const auto& [key, value] : arguments.items()) {
    const TransformParameter* parameter = nullptr;
    for (const auto& candidate : found->parameters) {
      if (candidate.name == key) parameter = &candidate;
    }
    if (parameter == nullptr) {
      std::string expected;
      for (const auto& candidate : found->parameters) {
        expected += (expected.empty() ? "" : ", ") + candidate.name;
      }
      throw UserError(where + ": " + name + " has no argument '" + key + "' (it takes " + expected +
                      ")");
    }
    if (!hasType(value, parameter->type)) {
      throw UserError(where + ": " + name + "'s argument '" + key + "' must be a " +
                      parameter->type);
    }
  }
  for (const auto& parameter : found->parameters) {
    if (arguments.contains(parameter.name)) continue;
    if (parameter.default_value.is_null()) {
      throw UserError(where + ": " + name + " needs the argument '" + parameter.name + "' (" +
                      parameter.description + ")");
    }
    arguments[parameter.name] = parameter.default_value;
  }
  return *found;
}

}  // namespace stickler
