// Patterns written like a model's Python matching what a trace recorded: the traced no-ops
// (full-range slices, a contiguous of a contiguous value, a `to` its own dtype, detach, a view to
// the same shape) looked through on both sides, and slice arguments compared by meaning.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <cmath>

#include "adapters/engine/adapter_application.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/loaded_model.h"
#include "tests/unit/adapter_test_support.h"
#include "tests/unit/synthetic_models.h"

namespace stickler {
namespace {

using testing::countOps;
using testing::rewriteFor;

// What the tracer writes for x[:, :, a:b]: a full-range slice for every `:` before the cut.
const char* kMax = "9223372036854775807";

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

const char* kCard =
    R"({"inputs": [{"name": "x", "shape": [2, 4, 32], "dtype": "float32", "kind": "float"}]})";

std::shared_ptr<const LoadedModel> tracedSpelling(const std::string& name, const std::string& input,
                                                  const char* card = kCard) {
  return loadModel(testing::writeScriptedModel(
      name,
      replaceAll("def forward(self, x):\n"
                 "    y = " +
                     input +
                     "\n"
                     "    z = torch.slice(torch.slice(torch.slice(y, 0, 0, MAX, 1), 1, 0, MAX, 1),"
                     " 2, 0, 16, 1)\n"
                     "    return torch.mul(z, 2.0) + 1.0\n",
                 "MAX", kMax),
      card));
}

// The pattern as the model's Python reads: `x[:, :, :16] * 2.0`.
AdapterFile doubleTheFirstHalf(const std::string& pattern_input) {
  return rewriteFor("double-first-half", "def pattern(x: Tensor):\n    return torch.mul(" +
                                             pattern_input +
                                             "[:, :, :16], 2.0)\n\n\n"
                                             "def replacement(x: Tensor):\n"
                                             "    return torch.add(x[:, :, :16], x[:, :, :16])\n");
}

TEST(TracedPatterns, APatternWrittenAsPythonMatchesThroughTheTracesNoOps) {
  // contiguous of a contiguous value, detach, `to` its own dtype and a view to its own shape,
  // then the full-range slices of x[:, :, :16]: none of them is in the pattern.
  const auto model = tracedSpelling(
      "TracedNoOps", "x.contiguous().detach().to(6).view([2, 4, 32])");  // 6: float32
  const auto application = applyAdapter(doubleTheFirstHalf("x"), model, loadProfile("spyre-2026"));
  ASSERT_TRUE(application.accepted())
      << unchangedReason(application) << application.equivalence.problem();
  EXPECT_EQ(application.change.rewrites, 1);
  EXPECT_EQ(countOps(*application.after, "aten::mul"), 0);
  // What the match took no longer computes anything: the no-ops on its way are gone with it,
  // and the replacement's x[:, :, :16] inserts one slice each, not three.
  for (const char* op : {"aten::contiguous", "aten::detach", "aten::to", "aten::view"}) {
    EXPECT_EQ(countOps(*application.after, op), 0) << op;
  }
  EXPECT_EQ(countOps(*application.after, "aten::slice"), 2);

  // Without the match the model keeps every operator, no-ops included.
  const auto other = applyAdapter(rewriteFor("none", R"(def pattern(x: Tensor):
    return torch.mul(x[:, :, :8], 2.0)


def replacement(x: Tensor):
    return torch.add(x[:, :, :8], x[:, :, :8])
)"),
                                  model, loadProfile("spyre-2026"));
  EXPECT_FALSE(other.changed());
}

TEST(TracedPatterns, AReaderANoOpFeedsOutsideTheMatchKeepsIt) {
  // The detached value is also returned: the match takes the slice and the mul, and the detach
  // stays where the second result reads it.
  const std::shared_ptr<const LoadedModel> model = loadModel(testing::writeScriptedModel(
      "NoOpReadTwice",
      replaceAll("def forward(self, x):\n    y = x.detach()\n"
                 "    z = torch.slice(torch.slice(torch.slice(y, 0, 0, MAX, 1), 1, 0, MAX, 1),"
                 " 2, 0, 16, 1)\n    return torch.mul(z, 2.0), y + 1.0\n",
                 "MAX", kMax),
      kCard));
  const auto application = applyAdapter(doubleTheFirstHalf("x"), model, loadProfile("spyre-2026"));
  ASSERT_TRUE(application.accepted())
      << unchangedReason(application) << application.equivalence.problem();
  EXPECT_EQ(countOps(*application.after, "aten::detach"), 1);
}

TEST(TracedPatterns, APatternsContiguousMatchesARealOneOrAValueThatAlreadyIs) {
  const char* square =
      R"({"inputs": [{"name": "x", "shape": [2, 32, 32], "dtype": "float32", "kind": "float"}]})";
  const AdapterFile adapter = doubleTheFirstHalf("x.contiguous()");
  // The model's value is contiguous: its trace's contiguous is a no-op, or it has none at all.
  for (const std::string input : {"x", "x.contiguous()"}) {
    const auto application = applyAdapter(adapter, tracedSpelling("Contiguous", input, square),
                                          loadProfile("spyre-2026"));
    ASSERT_TRUE(application.accepted())
        << input << ": " << unchangedReason(application) << application.equivalence.problem();
    EXPECT_EQ(application.change.rewrites, 1) << input;
  }
  // A transposed value is not contiguous: the model's contiguous is real, and matched.
  const auto transposed = applyAdapter(
      adapter, tracedSpelling("RealContiguous", "x.transpose(1, 2).contiguous()", square),
      loadProfile("spyre-2026"));
  ASSERT_TRUE(transposed.accepted())
      << unchangedReason(transposed) << transposed.equivalence.problem();
  EXPECT_EQ(transposed.change.rewrites, 1);
  EXPECT_EQ(countOps(*transposed.after, "aten::contiguous"), 0);
  // Without the model's contiguous, the pattern's is not a no-op there: no match.
  const auto missing =
      applyAdapter(adapter, tracedSpelling("NoContiguous", "x.transpose(1, 2)", square),
                   loadProfile("spyre-2026"), /*check_equivalence=*/false);
  EXPECT_FALSE(missing.changed());
}

// The model has neither a `to` nor a `view` there: the pattern's match only where they would
// change nothing.
TEST(TracedPatterns, APatternsToAndViewAreLookedThroughOnlyWhereTheyChangeNothing) {
  const auto model = tracedSpelling("NoToNoView", "x");
  const std::pair<const char*, bool> cases[] = {{"x.to(torch.float32)", true},
                                                {"x.to(torch.float64)", false},
                                                {"x.view([2, 4, 32])", true},
                                                {"x.reshape([2, -1, 32])", true},
                                                {"x.view([4, 2, 32])", false}};
  for (const auto& [input, matches] : cases) {
    const auto application = applyAdapter(doubleTheFirstHalf(input), model,
                                          loadProfile("spyre-2026"), /*check_equivalence=*/matches);
    EXPECT_EQ(application.changed(), matches) << input;
    if (matches) {
      EXPECT_TRUE(application.accepted()) << input << application.equivalence.problem();
    }
  }
}

TEST(TracedPatterns, SliceArgumentsAreComparedByMeaning) {
  // The trace wrote slice(y, 2, 0, 16, 1); TorchScript writes x[..., :16] as slice(x, -1, None,
  // 16, 1). Same dimension, same start: a match.
  const auto model = tracedSpelling("SliceByMeaning", "x");
  const auto ellipsis = applyAdapter(rewriteFor("ellipsis", R"(def pattern(x: Tensor):
    return torch.mul(x[..., :16], 2.0)


def replacement(x: Tensor):
    return torch.add(x[..., :16], x[..., :16])
)"),
                                     model, loadProfile("spyre-2026"));
  ASSERT_TRUE(ellipsis.accepted()) << unchangedReason(ellipsis) << ellipsis.equivalence.problem();
  // Other starts, ends or dimensions are other slices.
  for (const std::string slice : {"x[..., 1:16]", "x[..., :15]", "x[:, :16]"}) {
    const auto other = applyAdapter(
        rewriteFor("other", "def pattern(x: Tensor):\n    return torch.mul(" + slice +
                                ", 2.0)\n\n\ndef replacement(x: Tensor):\n    return torch.add(" +
                                slice + ", " + slice + ")\n"),
        model, loadProfile("spyre-2026"), /*check_equivalence=*/false);
    EXPECT_FALSE(other.changed()) << slice;
  }
}

// GPT-J's attention with an interleaved partial rotary (modeling_gptj.py), written as its trace
// is: the query and key split into a rotary part and a pass-through part, the rotary part
// rotated pairwise (stride-2 slices), the sin/cos table read at position_ids and split in half.
std::string writeInterleavedRotaryModel(const std::string& name, int64_t heads, int64_t head_dim,
                                        int64_t rotary) {
  const int64_t hidden = heads * head_dim;
  const int64_t positions = 16;
  torch::jit::Module module(name);
  for (const char* weight : {"wq0", "wk0", "wq1", "wk1"}) {
    module.register_parameter(weight, torch::randn({hidden, hidden}) / std::sqrt(hidden), false);
  }
  // create_sinusoidal_positions: sin and cos of position x inverse frequency, side by side.
  const auto inverse = 1.0 / torch::pow(10000.0, torch::arange(0, rotary, 2).to(torch::kFloat) /
                                                     static_cast<double>(rotary));
  const auto angles = torch::outer(torch::arange(positions).to(torch::kFloat), inverse);
  module.register_buffer("embed_positions",
                         torch::cat({torch::sin(angles), torch::cos(angles)}, 1));
  const std::string source = R"(
def full3(self, x):
    return torch.slice(torch.slice(torch.slice(x, 0, 0, MAX, 1), 1, 0, MAX, 1), 2, 0, MAX, 1)

def spread(self, table):
    return torch.slice(torch.unsqueeze(torch.slice(torch.slice(table, 0, 0, MAX, 1), 1, 0, MAX, 1), 2), 3, 0, MAX, 1)

def rotate(self, x, sin, cos):
    sin = torch.repeat_interleave(self.spread(sin), 2, 3)
    cos = torch.repeat_interleave(self.spread(cos), 2, 3)
    x1 = torch.slice(self.full3(x), 3, 0, MAX, 2)
    x2 = torch.slice(self.full3(x), 3, 1, MAX, 2)
    rotated = torch.flatten(torch.stack([torch.neg(x2), x1], -1), -2)
    return torch.add(torch.mul(x, cos), torch.mul(rotated, sin))

def layer(self, h, wq, wk, ids):
    q = torch.matmul(h, wq).view([1, 8, HEADS, HEAD_DIM])
    k = torch.matmul(h, wk).view([1, 8, HEADS, HEAD_DIM])
    sincos = torch.split(self.embed_positions[ids], HALF, -1)
    sin = sincos[0]
    cos = sincos[1]
    q = torch.cat([self.rotate(torch.slice(self.full3(q), 3, 0, ROTARY, 1), sin, cos),
                   torch.slice(self.full3(q), 3, ROTARY, MAX, 1)], -1)
    k = torch.cat([self.rotate(torch.slice(self.full3(k), 3, 0, ROTARY, 1), sin, cos),
                   torch.slice(self.full3(k), 3, ROTARY, MAX, 1)], -1)
    return h + torch.add(q, k).reshape([1, 8, HIDDEN])

def forward(self, h, ids):
    return self.layer(self.layer(h, self.wq0, self.wk0, ids), self.wq1, self.wk1, ids)
)";
  std::string code = replaceAll(source, "MAX", kMax);
  code = replaceAll(code, "HEADS", std::to_string(heads));
  code = replaceAll(code, "HEAD_DIM", std::to_string(head_dim));
  code = replaceAll(code, "HALF", std::to_string(rotary / 2));
  code = replaceAll(code, "ROTARY", std::to_string(rotary));
  code = replaceAll(code, "HIDDEN", std::to_string(hidden));
  module.define(code);
  const std::string path = ::testing::TempDir() + "/" + name + ".pt";
  const std::string card = R"({"inputs": [
      {"name": "h", "shape": [1, 8, )" +
                           std::to_string(hidden) +
                           R"(], "dtype": "float32", "kind": "float"},
      {"name": "ids", "shape": [1, 8], "dtype": "int64", "kind": "token_ids", "vocab_size": )" +
                           std::to_string(positions) + "}]}";
  torch::jit::ExtraFilesMap extra{{"stickler/model.json", card}};
  module.save(path, extra);
  return path;
}

// The rotation as the model's Python writes it, and as matrices built from the tensors' own
// sizes: the pairwise rotation a [r, r] matrix, the spreading of each sin/cos value over a pair
// a [r/2, r] one. No size is written in the file, so it fits every geometry of the family.
const char* kInterleavedRotary = R"(def pattern(x: Tensor, sin: Tensor, cos: Tensor):
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
    return (x * cos) + (rotated * sin)


def replacement(x: Tensor, sin: Tensor, cos: Tensor):
    r = x.size(-1)
    j = torch.arange(r).unsqueeze(1)
    k = torch.arange(r).unsqueeze(0)
    odd = torch.remainder(k, 2) == 1
    rotation = ((j == k + 1) & (~odd)).to(x.dtype) * -1.0 + ((j == k - 1) & odd).to(x.dtype)
    pairs = torch.arange(sin.size(-1)).unsqueeze(1)
    spread = ((k == 2 * pairs) | (k == 2 * pairs + 1)).to(x.dtype)
    sin = torch.matmul(sin, spread).unsqueeze(2)
    cos = torch.matmul(cos, spread).unsqueeze(2)
    return x * cos + torch.matmul(x, rotation) * sin
)";

TEST(TracedPatterns, OneInterleavedPartialRotaryAdapterFitsTwoGeometriesAndFoldsInEveryLayer) {
  const AdapterFile adapter = rewriteFor("interleaved-rotary-as-matmul", kInterleavedRotary);
  struct Geometry {
    int64_t heads, head_dim, rotary;
  };
  for (const Geometry geometry : {Geometry{2, 64, 32}, Geometry{1, 256, 64}}) {
    const std::string name =
        "GptjHead" + std::to_string(geometry.head_dim) + "Rotary" + std::to_string(geometry.rotary);
    const std::shared_ptr<const LoadedModel> model = loadModel(
        writeInterleavedRotaryModel(name, geometry.heads, geometry.head_dim, geometry.rotary));
    ASSERT_EQ(countOps(*model, "aten::index"), 2) << name;  // each layer reads its table
    const auto application = applyAdapter(adapter, model, loadProfile("spyre-2026"));
    ASSERT_TRUE(application.accepted())
        << name << ": " << unchangedReason(application) << application.equivalence.problem();
    EXPECT_EQ(application.change.rewrites, 4) << name;  // query and key, in both layers
    EXPECT_TRUE(application.change.fixes_shapes) << name;
    // Every size folded, in the layer after the table lookup as in the first: nothing of the
    // matrices' construction is left to run.
    EXPECT_GT(application.change.folded, 0) << name;
    for (const char* op : {"aten::size", "aten::arange", "aten::remainder", "aten::eq"}) {
      EXPECT_EQ(countOps(*application.after, op), 0) << name << ": " << op;
    }
    EXPECT_EQ(countOps(*application.after, "aten::repeat_interleave"), 0) << name;
    EXPECT_EQ(countOps(*application.after, "aten::stack"), 0) << name;
  }
}

}  // namespace
}  // namespace stickler
