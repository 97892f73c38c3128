#include "simulator/graph/model_card.h"

#include <gtest/gtest.h>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

std::string errorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ModelCard, ParsesInputsOutputsAndConfig) {
  const ModelCard card = parseModelCard(R"({
    "name": "gpt2-tiny", "family": "gpt2",
    "inputs": [
      {"name": "input_ids", "shape": [1, 16], "dtype": "int64", "kind": "token_ids", "vocab_size": 1000},
      {"name": "attention_mask", "shape": [1, 16], "dtype": "int64", "kind": "mask"},
      {"name": "pixels", "shape": [1, 3, 8, 8], "dtype": "float32", "kind": "float", "range": [0, 2]}
    ],
    "outputs": [{"name": "logits", "kind": "logits"}],
    "config": {"n_embd": 64}
  })",
                                        "card.json");
  EXPECT_EQ(card.name, "gpt2-tiny");
  EXPECT_EQ(card.family, "gpt2");
  ASSERT_EQ(card.inputs.size(), 3u);
  EXPECT_EQ(card.inputs[0].kind, InputKind::kTokenIds);
  EXPECT_EQ(card.inputs[0].vocab_size, 1000);
  EXPECT_EQ(card.inputs[0].shape, (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(card.inputs[1].kind, InputKind::kMask);
  EXPECT_EQ(card.inputs[2].dtype, DType::kFloat32);
  EXPECT_DOUBLE_EQ(card.inputs[2].low, 0.0);
  EXPECT_DOUBLE_EQ(card.inputs[2].high, 2.0);
  ASSERT_EQ(card.outputs.size(), 1u);
  EXPECT_EQ(card.outputs[0].kind, OutputKind::kLogits);
  EXPECT_EQ(card.config["n_embd"], 64);
}

TEST(ModelCard, RoundTripsThroughJson) {
  const ModelCard card = parseModelCard(
      R"({"name": "m", "inputs": [{"name": "x", "shape": [2, 3], "dtype": "bf16", "kind": "float"}]})",
      "card.json");
  const ModelCard again = parseModelCard(modelCardToJson(card).dump(), "again.json");
  EXPECT_EQ(again.inputs[0].dtype, DType::kBFloat16);
  EXPECT_EQ(again.inputs[0].shape, card.inputs[0].shape);
  EXPECT_DOUBLE_EQ(again.inputs[0].low, -1.0);  // floats default to [-1, 1)
}

// A repro bundle's region outputs an activation, judged by its own relative L2 tolerance: the
// card keeps it through a round trip, and refuses one without a usable tolerance.
TEST(ModelCard, AnActivationOutputCarriesItsTolerance) {
  const std::string inputs = R"("inputs": [{"name": "x", "shape": [2], "kind": "float"}])";
  const ModelCard card = parseModelCard(
      "{" + inputs +
          R"(, "outputs": [{"name": "out", "kind": "activation", "relative_l2_tolerance": 0.004}]})",
      "card.json");
  ASSERT_EQ(card.outputs.size(), 1u);
  EXPECT_EQ(card.outputs[0].kind, OutputKind::kActivation);
  EXPECT_DOUBLE_EQ(card.outputs[0].relative_l2_tolerance, 0.004);
  const ModelCard again = parseModelCard(modelCardToJson(card).dump(), "again.json");
  EXPECT_EQ(again.outputs[0].kind, OutputKind::kActivation);
  EXPECT_DOUBLE_EQ(again.outputs[0].relative_l2_tolerance, 0.004);

  for (const std::string& output :
       {std::string(R"({"name": "out", "kind": "activation"})"),
        std::string(R"({"name": "out", "kind": "activation", "relative_l2_tolerance": 0})"),
        std::string(R"({"name": "out", "kind": "activation", "relative_l2_tolerance": "1"})")}) {
    EXPECT_NE(errorOf([&] {
                parseModelCard("{" + inputs + R"(, "outputs": [)" + output + "]}", "m.pt");
              }).find("m.pt: output 'out': an output of kind activation needs a positive"),
              std::string::npos)
        << output;
  }
  EXPECT_NE(errorOf([&] {
              parseModelCard("{" + inputs +
                                 R"(, "outputs": [{"name": "l", "kind": "logits",
                                     "relative_l2_tolerance": 0.1}]})",
                             "m.pt");
            }).find("belongs to outputs of kind activation"),
            std::string::npos);
}

TEST(ModelCard, RejectsBadCardsWithTheFieldNamed) {
  EXPECT_NE(errorOf([] { parseModelCard("{", "m.pt"); }).find("m.pt: model card is not valid JSON"),
            std::string::npos);
  EXPECT_NE(
      errorOf([] { parseModelCard(R"({"inputs": []})", "m.pt"); }).find("non-empty \"inputs\""),
      std::string::npos);
  EXPECT_NE(errorOf([] {
              parseModelCard(R"({"inputs": [{"name": "x", "shape": [1], "dtype": "complex32"}]})",
                             "m.pt");
            }).find("unknown dtype 'complex32'"),
            std::string::npos);
  EXPECT_NE(
      errorOf([] {
        parseModelCard(
            R"({"inputs": [{"name": "ids", "shape": [1], "dtype": "int64", "kind": "token_ids"}]})",
            "m.pt");
      }).find("inputs[0] (ids): token ids need a positive vocab_size"),
      std::string::npos);
  EXPECT_NE(errorOf([] {
              parseModelCard(R"({"version": 7, "inputs": [{"name": "x", "shape": [1]}]})", "m.pt");
            }).find("version 7 is newer"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseModelCard(R"({"inputs": [{"name": "x", "shape": [-1]}]})", "m.pt");
            }).find("negative dimension"),
            std::string::npos);
}

TEST(InputFlag, ParsesShapesDtypesAndKinds) {
  InputSpec ids = parseInputFlag("input_ids:1x16:int64:tokens=50257");
  EXPECT_EQ(ids.name, "input_ids");
  EXPECT_EQ(ids.shape, (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(ids.dtype, DType::kInt64);
  EXPECT_EQ(ids.kind, InputKind::kTokenIds);
  EXPECT_EQ(ids.vocab_size, 50257);

  InputSpec pixels = parseInputFlag("pixel_values:1,3,32,32:fp16:range=-2..2");
  EXPECT_EQ(pixels.shape, (std::vector<int64_t>{1, 3, 32, 32}));
  EXPECT_EQ(pixels.dtype, DType::kFloat16);
  EXPECT_EQ(pixels.kind, InputKind::kFloat);
  EXPECT_DOUBLE_EQ(pixels.low, -2.0);

  EXPECT_EQ(parseInputFlag("x:4:float32").kind, InputKind::kAuto);
  EXPECT_EQ(parseInputFlag("mask:1x4:int64:mask").kind, InputKind::kMask);
  EXPECT_EQ(parseInputFlag("scalar::float32").shape.size(), 0u);
}

TEST(InputFlag, RejectsMalformedFlags) {
  EXPECT_NE(errorOf([] { parseInputFlag("x:1x2:float8"); }).find("unknown dtype 'float8'"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseInputFlag("x:1x2"); }).find("expected name:shape:dtype"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseInputFlag("x:1xq:int64"); }).find("'q' is not an integer"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseInputFlag(":1:int64"); }).find("input name is empty"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseInputFlag("x:1:int64:tokens=0"); }).find("positive vocab_size"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseInputFlag("x:1:float32:range=2..1"); }).find("empty range"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseInputFlag("x:1:float32:banana"); }).find("unknown input kind"),
            std::string::npos);
}

TEST(InputFlag, HugeShapesAreRefusedBeforeAnythingIsAllocated) {
  // [1000000000] float32 grew inspect to 24 GB; [100000, 100000, 100000] overflowed into an
  // internal error.
  for (const char* flag : {"x:1000000000:float32", "x:100000x100000x100000:float32",
                           "x:4611686018427387904x4:int64", "x:268435457:int8"}) {
    EXPECT_NE(errorOf([&] { parseInputFlag(flag); }).find("holds more than 268435456 elements"),
              std::string::npos)
        << flag;
  }
  EXPECT_EQ(parseInputFlag("x:16384x16384:int8").shape, (std::vector<int64_t>{16384, 16384}));
  EXPECT_EQ(parseInputFlag("x:0x1000000000000:float32").shape.size(), 2u);  // empty is small
  const std::string card =
      R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1000000000]}]})";
  EXPECT_NE(errorOf([&] { parseModelCard(card, "card.json"); }).find("holds more than"),
            std::string::npos);
}

// 2^28 int64 elements passed the element bound; loading cost the server 4.4 GB of memory and
// 28 s before the allocation failed (issue 34 item 5).
TEST(InputFlag, InputsAreBoundedInBytesEachAndAllTogether) {
  const std::string at_element_limit =
      R"({"inputs": [{"name": "x", "dtype": "int64", "shape": [268435456]}]})";
  const std::string refused = errorOf([&] { parseModelCard(at_element_limit, "card.json"); });
  EXPECT_NE(refused.find("card.json: inputs[0] (x): shape [268435456] of int64 takes 2147483648 "
                         "bytes, more than the 268435456 an example input may take"),
            std::string::npos)
      << refused;
  EXPECT_NE(errorOf([] { parseInputFlag("x:8192x8193:float32"); }).find("takes 268468224 bytes"),
            std::string::npos);
  EXPECT_EQ(parseInputFlag("x:8192x8192:float32").shape.size(), 2u);  // 256 MiB, the limit
  EXPECT_EQ(parseInputFlag("x:16384x16384:bool").shape.size(), 2u);   // a byte each

  // Each within the bound, three of them past the bound on all of a model's inputs.
  std::string three = R"({"inputs": [)";
  for (const char* name : {"a", "b", "c"}) {
    three += std::string(name[0] == 'a' ? "" : ", ") + R"({"name": ")" + name +
             R"(", "dtype": "float32", "shape": [8192, 8192]})";
  }
  three += "]}";
  const std::string together = errorOf([&] { parseModelCard(three, "card.json"); });
  EXPECT_NE(together.find("card.json: the example inputs take 805306368 bytes together, more "
                          "than the 536870912 all of a model's inputs may take"),
            std::string::npos)
      << together;
  EXPECT_EQ(checkInputBytes(
                {parseInputFlag("a:8192x8192:float32"), parseInputFlag("b:1x16:int64:tokens=100")},
                "--input"),
            uint64_t{268435456} + 128);
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// A decode section as the zoo writes it (tests/zoo/common.py decode_card), with `prompt`
// positions and a cache of `slots` in the step's cache inputs.
std::string decodeCard(int prompt, int slots) {
  const std::string cache = "[2, 1, 2, " + std::to_string(slots) + ", 32]";
  return R"({"inputs": [{"name": "input_ids", "shape": [1, 16], "dtype": "int64", "kind": "token_ids", "vocab_size": 100}],
    "decode": {"max_length": 128,
      "prefill": {"method": "prefill",
        "inputs": [{"name": "input_ids", "shape": [1, )" +
         std::to_string(prompt) + R"(], "dtype": "int64", "kind": "token_ids", "vocab_size": 100},
                   {"name": "attention_mask", "shape": [1, )" +
         std::to_string(prompt) + R"(], "dtype": "int64", "kind": "mask", "left_padding": 48}],
        "outputs": [{"name": "logits", "kind": "logits"}, {"name": "k", "kind": "past_keys"}, {"name": "v", "kind": "past_values"}]},
      "step": {"method": "decode_step",
        "inputs": [{"name": "input_ids", "shape": [1, 1], "dtype": "int64", "kind": "token_ids", "vocab_size": 100},
                   {"name": "attention_mask", "shape": [1, 128], "dtype": "int64", "kind": "mask"},
                   {"name": "cache_position", "shape": [1], "dtype": "int64", "kind": "cache_position", "start": 64},
                   {"name": "k", "shape": )" +
         cache + R"(, "kind": "past_keys"},
                   {"name": "v", "shape": )" +
         cache + R"(, "kind": "past_values"}],
        "outputs": [{"name": "logits", "kind": "logits"}, {"name": "k", "kind": "past_keys"}, {"name": "v", "kind": "past_values"}]}}})";
}

TEST(ModelCard, ReadsADecodeInterfaceAndWritesItBack) {
  const ModelCard card = parseModelCard(decodeCard(64, 128), "card.json");
  ASSERT_TRUE(card.decode.has_value());
  EXPECT_EQ(card.decode->max_length, 128);
  EXPECT_EQ(card.decode->prefill.method, "prefill");
  EXPECT_EQ(card.decode->prefill.inputs[1].left_padding, 48);
  EXPECT_EQ(card.decode->step.inputs[2].kind, InputKind::kCachePosition);
  EXPECT_DOUBLE_EQ(card.decode->step.inputs[2].low, 64.0);
  EXPECT_EQ(card.decode->step.inputs[3].kind, InputKind::kPastKeys);
  EXPECT_EQ(card.decode->step.outputs[2].kind, OutputKind::kPastValues);
  const ModelCard again = parseModelCard(modelCardToJson(card).dump(), "again.json");
  ASSERT_TRUE(again.decode.has_value());
  EXPECT_EQ(again.decode->prefill.inputs[1].left_padding, 48);
  EXPECT_DOUBLE_EQ(again.decode->step.inputs[2].low, 64.0);
  EXPECT_EQ(again.decode->step.inputs[4].shape, card.decode->step.inputs[4].shape);
}

TEST(ModelCard, RefusesADecodeInterfaceTheDeviceCannotServe) {
  // Spyre's stack pads prompts to a multiple of 64.
  EXPECT_NE(errorOf([] { parseModelCard(decodeCard(50, 128), "m.pt"); })
                .find("m.pt: decode: prefill: the prompt input_ids has 50 positions; Spyre's "
                      "stack left-pads prompts to a multiple of 64"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseModelCard(decodeCard(64, 100), "m.pt");
            }).find("m.pt: decode: step: k has shape [2, 1, 2, 100, 32]; a static cache is"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseModelCard(decodeCard(128, 128), "m.pt");
            }).find("leave no slot of the cache's 128 to decode into"),
            std::string::npos);
}

}  // namespace
}  // namespace stickler
