// Attention found by what it computes (adapters/engine/transforms/attention_structure.h): the
// same finder names the projections of every zoo family, whatever the family calls them.
#include "adapters/engine/transforms/attention_structure.h"

#include <gtest/gtest.h>

#include <tuple>
#include <utility>

#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/interleaved_rotary.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/graph/module_inliner.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

// One found attention, as module paths: "module | q k v -> o | heads x head_dim | rope".
std::string described(const FoundAttention& attention) {
  const auto path = [](const torch::jit::Node* node) {
    return node == nullptr ? std::string("none") : modulePathOf(*node);
  };
  return attention.module + " | " + path(attention.q) + " " + path(attention.k) + " " +
         path(attention.v) + " -> " + path(attention.o) + " | " + std::to_string(attention.heads) +
         " x " + std::to_string(attention.head_dim) + (attention.rotary.empty() ? "" : " | rope");
}

std::vector<std::string> foundIn(const std::string& model_name,
                                 std::vector<std::string>* left_out = nullptr) {
  const auto model = loadModel(testing::zooPath(model_name + ".pt"));
  GraphEdit edit(*model);
  std::vector<std::string> found;
  for (const FoundAttention& attention : findAttention(edit, left_out)) {
    found.push_back(described(attention));
  }
  return found;
}

// The zoo model `name` after the shipped pad-attention-heads on spyre-2026; null (and the test
// failing) when the adapter is refused.
std::shared_ptr<const LoadedModel> paddedByTheShippedAdapter(const std::string& name) {
  const std::shared_ptr<const LoadedModel> model = loadModel(testing::zooPath(name + ".pt"));
  const auto application =
      applyAdapter(readAdapterFile(shippedCatalogDir() + "/pad-attention-heads.py"), model,
                   loadProfile("spyre-2026"));
  EXPECT_TRUE(application.accepted()) << name << ": " << application.equivalence.problem();
  return application.accepted() ? application.after : nullptr;
}

// Separate projections without RoPE, under four naming schemes: BERT's self.query ...
// output.dense (the output projection in a sibling module), ViT's attention.query, MPNet's q ... o
// inside one module, OPT's q_proj ... out_proj (its queries scaled before they are split).
TEST(AttentionStructure, FindsEncoderAttentionWhateverItsProjectionsAreCalled) {
  EXPECT_EQ(foundIn("bert-h96"),
            std::vector<std::string>{
                "encoder.layer.0.attention | encoder.layer.0.attention.self.query "
                "encoder.layer.0.attention.self.key encoder.layer.0.attention.self.value -> "
                "encoder.layer.0.attention.output.dense | 3 x 32"});
  EXPECT_EQ(foundIn("vit-h96"),
            std::vector<std::string>{
                "encoder.layer.0.attention | encoder.layer.0.attention.attention.query "
                "encoder.layer.0.attention.attention.key encoder.layer.0.attention.attention.value "
                "-> encoder.layer.0.attention.output.dense | 3 x 32"});
  EXPECT_EQ(foundIn("mpnet-h96"),
            std::vector<std::string>{
                "encoder.layer.0.attention.attn | encoder.layer.0.attention.attn.q "
                "encoder.layer.0.attention.attn.k encoder.layer.0.attention.attn.v -> "
                "encoder.layer.0.attention.attn.o | 3 x 32"});
  const std::string opt = "model.decoder.layers.0.self_attn";
  EXPECT_EQ(foundIn("opt-h96"),
            std::vector<std::string>{opt + " | " + opt + ".q_proj " + opt + ".k_proj " + opt +
                                     ".v_proj -> " + opt + ".out_proj | 3 x 32"});
}

// RoPE found from the frequencies reaching the queries through cos and sin, in a traced Llama
// and a scripted Mixtral whose softmax is a scripted function with a branch per dtype; the
// router's softmax (over a linear layer's logits) is not attention.
TEST(AttentionStructure, FindsRotaryAttentionAndNotARouter) {
  for (const char* name : {"llama-tiny", "mixtral-tiny"}) {
    std::vector<std::string> expected;
    for (const char* layer : {"0", "1"}) {
      const std::string module = std::string("model.layers.") + layer + ".self_attn";
      expected.push_back(module + " | " + module + ".q_proj " + module + ".k_proj " + module +
                         ".v_proj -> " + module + ".o_proj | 4 x 32 | rope");
    }
    EXPECT_EQ(foundIn(name), expected) << name;
  }
  // Heads of 80 under RoPE (Granite), 2 heads of 128 (Qwen2).
  EXPECT_EQ(foundIn("granite-hd80").at(0),
            "model.layers.0.self_attn | model.layers.0.self_attn.q_proj "
            "model.layers.0.self_attn.k_proj model.layers.0.self_attn.v_proj -> "
            "model.layers.0.self_attn.o_proj | 2 x 80 | rope");
  // Partial rotary in Phi (only the first 32 values of each head turn; the output projection is
  // called dense, and an MLP runs beside the attention on the same input).
  EXPECT_EQ(foundIn("phi-tiny").at(1),
            "model.layers.1.self_attn | model.layers.1.self_attn.q_proj "
            "model.layers.1.self_attn.k_proj model.layers.1.self_attn.v_proj -> "
            "model.layers.1.self_attn.dense | 2 x 64 | rope");
  // A hybrid model: attention in one layer, a Mamba mixer (no softmax) in the other.
  ASSERT_EQ(foundIn("bamba-tiny").size(), 1u);
  EXPECT_EQ(foundIn("bamba-tiny")[0].substr(0, 25), "model.layers.1.self_attn ");
}

// One fused projection under two schemes (GPT-2's Conv1D c_attn, an addmm split three ways;
// GPT-NeoX's query_key_value viewed per head and chunked, under partial rotary) and T5's q ... o,
// whose scores add a position bias computed under a branch of the scripted forward.
TEST(AttentionStructure, FindsFusedAndBiasedAttention) {
  const auto gpt2 = foundIn("gpt2-h80");
  ASSERT_EQ(gpt2.size(), 3u);
  EXPECT_EQ(gpt2[1],
            "transformer.h.1.attn | transformer.h.1.attn.c_attn transformer.h.1.attn.c_attn "
            "transformer.h.1.attn.c_attn -> transformer.h.1.attn.c_proj | 1 x 80");
  const std::string neox = "gpt_neox.layers.1.attention";
  EXPECT_EQ(foundIn("pythia-tiny").at(1), neox + " | " + neox + ".query_key_value " + neox +
                                              ".query_key_value " + neox + ".query_key_value -> " +
                                              neox + ".dense | 2 x 64 | rope");
  const auto t5 = foundIn("t5-encoder-tiny");
  ASSERT_EQ(t5.size(), 2u);
  const std::string module = "encoder.block.1.layer.0.SelfAttention";
  EXPECT_EQ(t5[1], module + " | " + module + ".q " + module + ".k " + module + ".v -> " + module +
                       ".o | 2 x 32");
}

// Multi-query attention written as Falcon writes it: every projection a matmul with the
// transposed weight (FalconLinear's `x @ W.T`, its bias added after it when the config has one),
// and one fused query_key_value whose heads + 2 parts are taken apart by slicing and indexing.
TEST(AttentionStructure, FindsMultiQueryAttentionWrittenAsMatmuls) {
  const std::string falcon = "transformer.h.0.self_attention";
  const std::string fused = falcon + ".query_key_value";
  EXPECT_EQ(foundIn("falcon-tiny").at(0), falcon + " | " + fused + " " + fused + " " + fused +
                                              " -> " + falcon + ".dense | 2 x 64 | rope");
  for (const char* name : {"falcon-tiny", "falcon-h192"}) {
    SCOPED_TRACE(name);
    const auto model = loadModel(testing::zooPath(std::string(name) + ".pt"));
    GraphEdit edit(*model);
    const auto found = findAttention(edit, nullptr);
    ASSERT_EQ(found.size(), model->card.config.at("num_hidden_layers").get<size_t>());
    const FoundAttention& first = found.front();
    EXPECT_TRUE(first.fused());
    EXPECT_EQ(first.q->kind(), torch::jit::aten::matmul);
    // The weight is read through its transpose, [queries + key + value, hidden].
    const auto weight = edit.constantOrWeight(projectionWeight(*first.q));
    ASSERT_TRUE(weight && weight->isTensor());
    const int64_t head_dim = first.head_dim;
    EXPECT_EQ(weight->toTensor().size(0), (first.heads + 2) * head_dim);
    const bool biased = std::string(name) == "falcon-h192";
    EXPECT_EQ(projectionBias(*first.q) != nullptr, biased);
    EXPECT_EQ(projectionResult(*first.q) != first.q->output(), biased);
  }
}

// RoPE in an encoder, its rotate_half written with `chunk` instead of slices (ESM-2): found from
// its frequencies as Llama's is, and padded by the shipped adapter (heads of 64: halves of 32,
// each then in a stick of its own).
TEST(AttentionStructure, FindsRotaryAttentionWhoseHalvesAreChunks) {
  const std::string module = "encoder.layer.1.attention";
  EXPECT_EQ(foundIn("esm2-tiny").at(1), module + " | " + module + ".self.query " + module +
                                            ".self.key " + module + ".self.value -> " + module +
                                            ".output.dense | 2 x 64 | rope");
  const auto padded_model = paddedByTheShippedAdapter("esm2-tiny");
  ASSERT_NE(padded_model, nullptr);
  GraphEdit edit(*padded_model);
  for (const FoundAttention& attention : findAttention(edit, nullptr)) {
    EXPECT_EQ(attention.head_dim, 128);
  }
}

// Interleaved rotary (pairs of values turning together) under two spellings: GPT-J's q_proj ...
// out_proj whose sines and cosines are one precomputed table gathered at the positions, split in
// two and each half repeat_interleave'd, and Cohere's q_proj ... o_proj whose 1-D frequencies are
// repeat_interleave'd before cos and sin. Both rotate_every_two's are found, and no strided slice
// is left unrecognised.
TEST(AttentionStructure, FindsInterleavedRotaryUnderTwoSpellings) {
  const std::string gptj = "transformer.h.1.attn";
  EXPECT_EQ(foundIn("gptj-tiny").at(1), gptj + " | " + gptj + ".q_proj " + gptj + ".k_proj " +
                                            gptj + ".v_proj -> " + gptj +
                                            ".out_proj | 1 x 80 | rope");
  const std::string cohere = "model.layers.1.self_attn";
  EXPECT_EQ(foundIn("cohere-tiny").at(1), cohere + " | " + cohere + ".q_proj " + cohere +
                                              ".k_proj " + cohere + ".v_proj -> " + cohere +
                                              ".o_proj | 2 x 64 | rope");
  // GPT-J: a [positions, 20] table; sin and cos each repeated, for the queries and the keys.
  // Cohere: inv_freq (16 frequencies for heads of 64), its angles repeated once.
  for (const auto& [name, table_dim, repeats] :
       {std::tuple{"gptj-tiny", 2, 4}, std::tuple{"cohere-tiny", 1, 1}}) {
    SCOPED_TRACE(name);
    const auto model = loadModel(testing::zooPath(std::string(name) + ".pt"));
    GraphEdit edit(*model);
    const auto activations = computedFromProjections(edit.graph());
    for (const FoundAttention& attention : findAttention(edit, nullptr)) {
      ASSERT_EQ(attention.rotary.size(), 1u);
      const auto table = edit.constantOrWeight(attention.rotary[0]);
      ASSERT_TRUE(table && table->isTensor());
      EXPECT_EQ(table->toTensor().dim(), table_dim);
      const InterleavedRotations found =
          findInterleavedRotations(edit, attention.module, attention.rotary, activations);
      EXPECT_EQ(found.rotations.size(), 2u);  // the queries' and the keys'
      EXPECT_TRUE(found.unrecognised.empty());
      EXPECT_EQ(found.repeats.size(), static_cast<size_t>(repeats));
    }
  }
  // Rotate_half's halves are not pairs (Llama).
  const auto llama = loadModel(testing::zooPath("llama-tiny.pt"));
  GraphEdit edit(*llama);
  const FoundAttention attention = findAttention(edit, nullptr).at(0);
  EXPECT_TRUE(findInterleavedRotations(edit, attention.module, attention.rotary,
                                       computedFromProjections(edit.graph()))
                  .rotations.empty());
}

// Moving the pairs apart is a permutation of each head's rotated values: the pairs' first values,
// then their second ones, the values after the rotated part where they were.
TEST(AttentionStructure, DeinterleavingPermutesTheRotatedRowsOfEachHead) {
  EXPECT_EQ(deinterleavedPositions(8, 6), (std::vector<int64_t>{0, 3, 1, 4, 2, 5, 6, 7}));
  // Two heads of 8 rows, one column: row r holds r.
  const at::Tensor rows = at::arange(16, at::kFloat).reshape({16, 1});
  const at::Tensor moved = deinterleaveHeads(rows, 0, 8, 6).flatten();
  EXPECT_TRUE(at::equal(
      moved, at::tensor({0, 2, 4, 1, 3, 5, 6, 7, 8, 10, 12, 9, 11, 13, 14, 15}, at::kFloat)));
  // Along the columns alike.
  EXPECT_TRUE(at::equal(deinterleaveHeads(rows.t(), 1, 8, 6).flatten(), moved));
}

// The shipped adapter rewrites each spelling into rotate_half's halves: no stack, no
// repeat_interleave and no strided slice is left, and the heads are padded as rotate_half's
// are (GPT-J's 20 rotated values of 80: halves of 10 and the 60 passed through each in a stick;
// Cohere's halves of 32: each in a stick), or not at all (halves of 64 fill one).
TEST(AttentionStructure, TheShippedAdapterRewritesInterleavedRotaryAsHalves) {
  for (const auto& [name, padded] :
       {std::pair{"gptj-tiny", 192}, std::pair{"cohere-tiny", 128}, std::pair{"gptj-rd128", 256}}) {
    SCOPED_TRACE(name);
    const auto padded_model = paddedByTheShippedAdapter(name);
    ASSERT_NE(padded_model, nullptr);
    GraphEdit edit(*padded_model);
    for (const torch::jit::Node* node : allNodes(edit.graph())) {
      EXPECT_NE(node->kind(), torch::jit::aten::stack) << modulePathOf(*node);
      EXPECT_NE(node->kind(), torch::jit::aten::repeat_interleave) << modulePathOf(*node);
      if (node->kind() == torch::jit::aten::slice) {
        EXPECT_EQ(edit.constantOrWeight(node->input(4))->toInt(), 1) << modulePathOf(*node);
      }
    }
    const auto found = findAttention(edit, nullptr);
    ASSERT_EQ(found.size(), 2u);
    for (const FoundAttention& attention : found) EXPECT_EQ(attention.head_dim, padded);
  }
}
// Grouped- and multi-query heads in one fused projection under a second scheme: Phi-3's qkv_proj
// ... o_proj, its queries, keys and values cut apart by slicing the projection's last dimension
// at whole heads (not viewed and indexed, as Falcon's query_key_value is).
TEST(AttentionStructure, FindsFusedMultiQueryAttentionCutBySlices) {
  const std::string phi3 = "model.layers.1.self_attn";
  const std::string fused = phi3 + ".qkv_proj";
  EXPECT_EQ(foundIn("phi3-tiny").at(1), phi3 + " | " + fused + " " + fused + " " + fused + " -> " +
                                            phi3 + ".o_proj | 2 x 96 | rope");
  const std::string phi4 = "model.layers.0.self_attn";
  EXPECT_EQ(foundIn("phi4-mini-tiny").at(0), phi4 + " | " + phi4 + ".qkv_proj " + phi4 +
                                                 ".qkv_proj " + phi4 + ".qkv_proj -> " + phi4 +
                                                 ".o_proj | 2 x 128 | rope");
}

// The shipped adapter pads fused multi-query heads under both schemes: every head of the fused
// projection (every query head, one key head, one value head) gets the same segments, and the
// single key and value head still serves every query head. Falcon's heads of 64 become 128 around
// their RoPE halves, and the views after the split and the merge follow; Phi-3's cuts between
// the parts move to whole padded heads and each part's view takes the padded size: its rotation
// over whole heads of 96 (halves of 48 in sticks: 128), Phi-4-mini's partial rotary (48 + 48 +
// 32 of 128: 64 + 64 + 64). The empty pass-through part a whole-head rotation still cuts off
// (`q[..., rotary_dim:]`) is dropped.
TEST(AttentionStructure, TheShippedAdapterPadsFusedMultiQueryHeads) {
  for (const auto& [name, padded] :
       {std::pair{"falcon-tiny", 128}, std::pair{"falcon-h192", 128}, std::pair{"phi3-tiny", 128},
        std::pair{"phi4-mini-tiny", 192}}) {
    SCOPED_TRACE(name);
    const auto padded_model = paddedByTheShippedAdapter(name);
    ASSERT_NE(padded_model, nullptr);
    GraphEdit edit(*padded_model);
    const auto found = findAttention(edit, nullptr);
    ASSERT_FALSE(found.empty());
    for (const FoundAttention& attention : found) {
      EXPECT_EQ(attention.head_dim, padded);
      const auto weight = edit.constantOrWeight(projectionWeight(*attention.q));
      ASSERT_TRUE(weight && weight->isTensor());
      EXPECT_EQ(weight->toTensor().size(0), (attention.heads + 2) * padded);
    }
    // No zero-length piece (as recorded on the example inputs) is left to be joined back: the
    // device refuses zero-length tensors.
    int described = 0;
    for (const torch::jit::Node* node : allNodes(edit.graph())) {
      if (node->kind() != torch::jit::aten::cat) continue;
      for (const torch::jit::Value* piece : node->input(0)->node()->inputs()) {
        const auto recorded = edit.describe(piece);
        if (!recorded || recorded->shape.empty()) continue;
        ++described;
        EXPECT_NE(recorded->shape.back(), 0) << modulePathOf(*node);
      }
    }
    EXPECT_GT(described, 0);
  }
}

// The shipped adapter pads what the finder finds, under MPNet's names too: with the heads in
// whole sticks, the hidden size can be padded after them and the model passes (AdaptFamily).
TEST(AttentionStructure, TheShippedAdapterPadsMpnetHeads) {
  const std::shared_ptr<const LoadedModel> model = loadModel(testing::zooPath("mpnet-h96.pt"));
  const DeviceProfile profile = loadProfile("spyre-2026");
  const auto application = applyAdapter(
      readAdapterFile(shippedCatalogDir() + "/pad-attention-heads.py"), model, profile);
  ASSERT_TRUE(application.accepted()) << application.equivalence.problem();
  EXPECT_EQ(application.change.rewrites, 1);
  GraphEdit edit(*application.after);
  const auto found = findAttention(edit, nullptr);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].heads, 3);
  EXPECT_EQ(found[0].head_dim, 64);  // 3 x 64 fills three sticks
}

}  // namespace
}  // namespace stickler
