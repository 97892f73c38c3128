#include "simulator/device/device_profile.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "simulator/device/core_span.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using nlohmann::json;

std::string errorOf(const json& document) {
  try {
    parseProfile(document, "test.json");
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Profiles, ShippedProfilesLoad) {
  const auto names = listProfiles();
  for (const char* name : {"spyre-2025", "spyre-2025-clean", "spyre-2026", "spyre-2026-clean"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    const DeviceProfile profile = loadProfile(name);
    EXPECT_EQ(profile.name, name);
  }
}

TEST(Profiles, HardwareFactsMatchFacts) {
  // FACTS.md: 32 cores, 2 corelets, 2 MB scratchpad, 255.996 MiB span, 128-byte sticks, DL16.
  const DeviceProfile profile = loadProfile("spyre-2026");
  EXPECT_EQ(profile.device.cores, 32);
  EXPECT_EQ(profile.device.corelets_per_core, 2);
  EXPECT_EQ(profile.device.scratchpad_bytes, 2 * 1024 * 1024);
  EXPECT_NEAR(profile.device.core_span_bytes / 1048576.0, 255.996, 0.001);
  EXPECT_EQ(profile.device.stick_bytes, 128);
  EXPECT_EQ(profile.stickElements(), 64);
  EXPECT_EQ(profile.format, NumberFormat::kDL16);
  EXPECT_TRUE(profile.narrow_integers);
  EXPECT_EQ(profile.fusion, FusionPolicy::kNone);
}

TEST(Profiles, The2025StackLacksDeepViewsSevenOpsAndPow) {
  const DeviceProfile old_stack = loadProfile("spyre-2025");
  const DeviceProfile new_stack = loadProfile("spyre-2026");
  for (const char* op :
       {"aten::softplus", "aten::constant_pad_nd", "aten::copy_", "aten::exp", "aten::roll",
        "aten::slice_scatter", "aten::select_scatter", "aten::pow"}) {
    EXPECT_EQ(old_stack.entryFor(op).support, OpSupport::kUnsupported) << op;
    EXPECT_NE(new_stack.entryFor(op).support, OpSupport::kUnsupported) << op;
  }
  EXPECT_EQ(new_stack.entryFor("aten::sin").support, OpSupport::kCpuFallback);
  EXPECT_EQ(new_stack.entryFor("aten::some_new_op").support, OpSupport::kCpuFallback);
  EXPECT_TRUE(new_stack.entryFor("aten::flip").layout.count("not_on_stick_dim"));
}

TEST(Profiles, CleanProfilesHaveTheSameTablesAndNoFaults) {
  for (const std::string name : {"spyre-2025", "spyre-2026"}) {
    const DeviceProfile faulty = loadProfile(name);
    const DeviceProfile clean = loadProfile(name + "-clean");
    EXPECT_FALSE(faulty.faults.empty()) << name;
    EXPECT_TRUE(clean.faults.empty()) << name;
    ASSERT_EQ(clean.operators.size(), faulty.operators.size());
    for (const auto& [op, entry] : faulty.operators) {
      EXPECT_EQ(clean.entryFor(op).support, entry.support) << name << " " << op;
    }
  }
}

TEST(Profiles, DefaultFaultsCoverSeveralEffects) {
  std::set<FaultEffect::Kind> kinds;
  for (const std::string name : {"spyre-2025", "spyre-2026"}) {
    for (const auto& fault : loadProfile(name).faults) kinds.insert(fault.effect.kind);
  }
  EXPECT_TRUE(kinds.count(FaultEffect::Kind::kCompileError));
  EXPECT_TRUE(kinds.count(FaultEffect::Kind::kRuntimeAbort));
  EXPECT_TRUE(kinds.count(FaultEffect::Kind::kAccumulateNarrow));
}

TEST(Profiles, BadProfilesAreRefusedWithTheFieldNamed) {
  EXPECT_NE(
      errorOf({{"operators", {{"aten::mm", "sometimes"}}}}).find("unknown support 'sometimes'"),
      std::string::npos);
  EXPECT_NE(errorOf({{"operators", {{"mm", "native"}}}})
                .find("operators.mm: an operator needs its namespace"),
            std::string::npos);
  EXPECT_NE(errorOf({{"number_format", "fp8"}}).find("number_format must be"), std::string::npos);
  EXPECT_NE(errorOf({{"fusion", "everything"}}).find("fusion must be none or pointwise"),
            std::string::npos);
  EXPECT_NE(errorOf({{"version", 9}}).find("newer than this Stickler"), std::string::npos);
  EXPECT_NE(errorOf({{"device", {{"cores", -1}}}}).find("\"cores\" must be positive"),
            std::string::npos);
  EXPECT_NE(errorOf({{"faults", {{{"id", "f"}, {"effect", {{"kind", "explode"}}}}}}})
                .find("unknown effect kind 'explode'"),
            std::string::npos);
  EXPECT_NE(
      errorOf({{"operators", {{"aten::flip", {{"support", "native"}, {"layout", {"sideways"}}}}}}})
          .find("unknown layout constraint"),
      std::string::npos);
  try {
    loadProfile("spyre-1999");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("shipped: spyre-2025"), std::string::npos) << e.what();
  }
  EXPECT_THROW(loadProfile("/nonexistent/profile.json"), UserError);
}

TEST(Profiles, ExtendsMergesOperatorsAndReplacesFaults) {
  const std::string path = ::testing::TempDir() + "/child-profile.json";
  std::ofstream(path) << R"({"extends": "spyre-2026", "name": "child",
      "operators": {"aten::gelu": "unsupported"}, "number_format": "fp16", "faults": []})";
  const DeviceProfile child = loadProfile(path);
  EXPECT_EQ(child.name, "child");
  EXPECT_EQ(child.entryFor("aten::gelu").support, OpSupport::kUnsupported);
  EXPECT_EQ(child.entryFor("aten::silu").support, OpSupport::kNative);  // inherited
  EXPECT_EQ(child.format, NumberFormat::kFloat16);
  EXPECT_TRUE(child.faults.empty());
  std::remove(path.c_str());
}

// Profiles are cached between loads; an edit to any file of the chain must still be seen.
TEST(Profiles, EditsToAProfileOrItsParentAreSeenByTheNextLoad) {
  const std::string parent = ::testing::TempDir() + "/cache-parent.json";
  const std::string child = ::testing::TempDir() + "/cache-child.json";
  std::ofstream(parent) << R"({"number_format": "fp16"})";
  std::ofstream(child) << R"({"extends": ")" + parent + R"(", "name": "first"})";
  EXPECT_EQ(loadProfile(child).format, NumberFormat::kFloat16);
  EXPECT_EQ(loadProfile(child).name, "first");

  std::ofstream(parent) << R"({"number_format": "bf16", "description": "edited"})";
  EXPECT_EQ(loadProfile(child).format, NumberFormat::kBFloat16);
  std::ofstream(child) << R"({"extends": ")" + parent + R"(", "name": "second one"})";
  EXPECT_EQ(loadProfile(child).name, "second one");

  std::ofstream(parent) << R"({"number_format": "float32"})";
  EXPECT_THROW(loadProfile(child), UserError);
  std::remove(parent.c_str());
  EXPECT_THROW(loadProfile(child), UserError);
  std::remove(child.c_str());
}

// A profile rewritten at once with as many bytes keeps its inode, and on kernels before 6.13
// (Debian 12's 6.1) its times too: they move by the clock tick. (Later kernels give a file whose
// times were read a finer time at its next write.) The cache must serve the new one.
TEST(Profiles, AProfileRewrittenWithinOneClockTickIsSeen) {
  const std::string path = ::testing::TempDir() + "/racy-" + std::to_string(::getpid()) + ".json";
  for (int i = 0; i < 20; ++i) {
    const std::string first = "first-" + std::to_string(i % 10);
    const std::string second = "other-" + std::to_string(i % 10);
    std::ofstream(path) << R"({"name": ")" + first + R"("})";
    EXPECT_EQ(loadProfile(path).name, first);
    std::ofstream(path) << R"({"name": ")" + second + R"("})";
    EXPECT_EQ(loadProfile(path).name, second);
  }
  std::remove(path.c_str());
}

TEST(CoreSpan, TheLmHeadVocabularyExample) {
  // FACTS.md: 151936 -> 2374 sticks = 2 x 1187, bumped to 2375 = 5^3 x 19.
  const int64_t span = 268431360;
  const SpanCheck original = checkCoreSpan(151936, 3584, 64, 2, span);
  EXPECT_EQ(original.sticks, 2374);
  EXPECT_EQ(original.largest_prime_factor, 1187);
  EXPECT_EQ(original.slice_bytes, int64_t{1187} * 3584 * 64 * 2);
  EXPECT_FALSE(original.fits);
  EXPECT_EQ(sticksThatFitSpan(151936, 3584, 64, 2, span), 2375);
  EXPECT_EQ(largestPrimeFactorOf(2375), 19);
  EXPECT_TRUE(checkCoreSpan(int64_t{2375} * 64, 3584, 64, 2, span).fits);
  EXPECT_TRUE(checkCoreSpan(151936, 896, 64, 2, span).fits);  // a small hidden size fits as is
}

}  // namespace
}  // namespace stickler
