#include "simulator/faults/fault_rule.h"

#include <gtest/gtest.h>

#include "simulator/backends/backend_spec.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using nlohmann::json;

TEST(FaultRules, ParseEveryEffect) {
  const json rule = json::parse(R"({
    "id": "ln", "description": "d",
    "match": {"op": "aten::layer_norm", "module": "*.ln_2",
              "shape": [{"operand": "input0", "dim": -1, "not_multiple_of": 64},
                        {"operand": "output0", "dim": 0, "greater_than": 1}],
              "fused_with": ["aten::add"]},
    "effect": {"kind": "accumulate_narrow", "format": "fp16", "chunk": 32}})");
  const FaultRule parsed = parseFaultRule(rule, "p.json: faults[0]");
  EXPECT_EQ(parsed.op, "aten::layer_norm");
  EXPECT_EQ(parsed.module, "*.ln_2");
  ASSERT_EQ(parsed.shapes.size(), 2u);
  EXPECT_FALSE(parsed.shapes[0].output);
  EXPECT_TRUE(parsed.shapes[1].output);
  EXPECT_EQ(parsed.shapes[1].kind, ShapePredicate::Kind::kGreaterThan);
  EXPECT_EQ(parsed.fused_with, std::vector<std::string>{"aten::add"});
  EXPECT_EQ(parsed.effect.kind, FaultEffect::Kind::kAccumulateNarrow);
  EXPECT_EQ(parsed.effect.format, NumberFormat::kFloat16);
  EXPECT_EQ(parsed.effect.chunk, 32);

  const std::pair<const char*, FaultEffect::Kind> effects[] = {
      {R"({"kind": "compile_error", "message": "m"})", FaultEffect::Kind::kCompileError},
      {R"({"kind": "runtime_abort", "message": "m"})", FaultEffect::Kind::kRuntimeAbort},
      {R"({"kind": "drop_partial_stick_tail", "fill": "garbage"})",
       FaultEffect::Kind::kDropPartialStickTail},
      {R"({"kind": "wrong_scale", "factor": 0.5})", FaultEffect::Kind::kWrongScale},
      {R"({"kind": "nan_on_range", "range": [1, 2]})", FaultEffect::Kind::kNanOnRange},
      {R"({"kind": "leak", "value": 2e-5})", FaultEffect::Kind::kLeak},
      {R"({"kind": "racy_reduction", "relative": 0.01})", FaultEffect::Kind::kRacyReduction}};
  for (const auto& [effect, kind] : effects) {
    const json entry{{"id", "x"}, {"effect", json::parse(effect)}};
    EXPECT_EQ(parseFaultRule(entry, "w").effect.kind, kind) << effect;
  }
}

TEST(FaultRules, RefuseMalformedRules) {
  auto errorOf = [](const char* text) -> std::string {
    try {
      parseFaultRule(json::parse(text), "p.json: faults[1]");
    } catch (const UserError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(errorOf(R"({"effect": {"kind": "leak", "value": 1}})").find("missing \"id\""),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"id": "a"})").find("p.json: faults[1] (a): missing \"effect\""),
            std::string::npos);
  EXPECT_NE(
      errorOf(R"({"id": "a", "effect": {"kind": "runtime_abort"}})").find("missing \"message\""),
      std::string::npos);
  EXPECT_NE(errorOf(R"({"id": "a", "effect": {"kind": "nan_on_range", "range": [2, 1]}})")
                .find("low <= high"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"id": "a", "match": {"shape": [{"operand": "weights", "equals": 1}]},
                       "effect": {"kind": "leak", "value": 1}})")
                .find("operand must be inputN or outputN"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"id": "a", "effect": {"kind": "racy_reduction", "relative": 2}})")
                .find("relative must be in (0, 1]"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"id": "a", "effect": {"kind": "accumulate_narrow", "format": "fp32"}})")
                .find("needs format dl16, fp16 or bf16"),
            std::string::npos);
}

TEST(FaultRules, GlobsAndShapes) {
  EXPECT_TRUE(globMatch("*.ln_2", "transformer.h.0.ln_2"));
  EXPECT_TRUE(globMatch("model.layers.*.self_attn", "model.layers.11.self_attn"));
  EXPECT_FALSE(globMatch("model.layers.1.*", "model.layers.10"));
  EXPECT_TRUE(globMatch("*norm*", "model.layers.0.input_layernorm"));
  ShapePredicate predicate;
  predicate.dim = -1;
  predicate.kind = ShapePredicate::Kind::kNotMultipleOf;
  predicate.value = 64;
  EXPECT_TRUE(shapeSatisfies({1, 16, 1000}, predicate));
  EXPECT_FALSE(shapeSatisfies({1, 16, 1024}, predicate));
  predicate.dim = 5;
  EXPECT_FALSE(shapeSatisfies({1, 16}, predicate));
}

TEST(BackendSpecs, ParseAndRefuse) {
  EXPECT_EQ(parseBackendSpec("cpu").kind, BackendSpec::Kind::kCpu);
  EXPECT_EQ(parseBackendSpec("cpu64").kind, BackendSpec::Kind::kCpu64);
  const BackendSpec emulated = parseBackendSpec("cpu-emulated:bf16");
  EXPECT_EQ(emulated.kind, BackendSpec::Kind::kCpuEmulated);
  EXPECT_EQ(emulated.format, NumberFormat::kBFloat16);
  EXPECT_EQ(parseBackendSpec("spyre-sim").profile, "spyre-2026");
  EXPECT_EQ(parseBackendSpec("spyre-sim:spyre-2025").profile, "spyre-2025");
  EXPECT_EQ(parseBackendSpec("spyre-sim:/tmp/p.json").profile, "/tmp/p.json");
  EXPECT_THROW(parseBackendSpec("gpu"), UserError);
  EXPECT_THROW(parseBackendSpec("cpu-emulated"), UserError);
  EXPECT_THROW(parseBackendSpec("cpu-emulated:fp8"), UserError);
  EXPECT_THROW(parseBackendSpec("cpu:x"), UserError);
}

}  // namespace
}  // namespace stickler
