// The search behind `stickler localize`, with synthetic probes: which units on the device make
// the verdict fail is decided here, so every outcome of the search can be checked, with the
// number of probes it used.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "simulator/diagnose/causal_search.h"

namespace stickler {
namespace {

std::vector<std::string> names(size_t count) {
  std::vector<std::string> result;
  for (size_t i = 0; i < count; ++i) result.push_back("m" + std::to_string(i));
  return result;
}

// A probe that fails when `fails` says so for the units on the device, counting its calls.
struct Probe {
  std::function<bool(const std::set<size_t>&)> fails;
  int calls = 0;

  CausalProbe function() {
    return [this](const std::vector<size_t>& units, const std::string&) {
      ++calls;
      return fails(std::set<size_t>(units.begin(), units.end())) ? RunVerdict::kFail
                                                                 : RunVerdict::kPass;
    };
  }
};

int singleCulpritBudget(size_t units) {
  return static_cast<int>(std::ceil(std::log2(static_cast<double>(units)))) + 2;
}

TEST(CausalSearch, FindsEverySingleCulpritWithinTheBudget) {
  for (size_t count : {1, 2, 3, 7, 31, 64, 100}) {
    for (size_t culprit = 0; culprit < count; ++culprit) {
      Probe probe{[&](const std::set<size_t>& on_device) { return on_device.count(culprit) > 0; }};
      const CausalFinding finding = causalSearch(names(count), probe.function());
      ASSERT_EQ(finding.kind, CausalFinding::Kind::kLocalized) << count << " " << culprit;
      EXPECT_EQ(finding.culprit, culprit);
      EXPECT_EQ(finding.alone_verdict, RunVerdict::kFail);
      EXPECT_EQ(finding.rest_verdict, RunVerdict::kPass);
      EXPECT_LE(probe.calls, singleCulpritBudget(count)) << count << " " << culprit;
    }
  }
}

TEST(CausalSearch, ModulesThatFailOnlyTogetherAreNamedAsARun) {
  // Units 5 and 9 each pass alone on the device and fail together (two compounding errors).
  Probe probe{[](const std::set<size_t>& on_device) {
    return on_device.count(5) > 0 && on_device.count(9) > 0;
  }};
  const CausalFinding finding = causalSearch(names(20), probe.function());
  EXPECT_EQ(finding.kind, CausalFinding::Kind::kNeedsSeveral);
  EXPECT_EQ(finding.culprit, 9u);  // the later one completes the failure
  EXPECT_EQ(finding.first, 5u);    // the shortest failing run is 5..9
  EXPECT_EQ(finding.alone_verdict, RunVerdict::kPass);
}

TEST(CausalSearch, ASecondCauseIsReportedNotHidden) {
  // Both 3 and 12 fail the model on their own: 3 is found first, and the model still fails
  // without it.
  Probe probe{[](const std::set<size_t>& on_device) {
    return on_device.count(3) > 0 || on_device.count(12) > 0;
  }};
  const CausalFinding finding = causalSearch(names(16), probe.function());
  EXPECT_EQ(finding.kind, CausalFinding::Kind::kWithOtherCauses);
  EXPECT_EQ(finding.culprit, 3u);
  EXPECT_EQ(finding.rest_verdict, RunVerdict::kFail);
}

TEST(CausalSearch, AnyVerdictButPassIsAFailure) {
  // An abort is a failure like a wrong answer: the search treats kAborted as kFail.
  const CausalProbe probe = [](const std::vector<size_t>& units, const std::string&) {
    return std::find(units.begin(), units.end(), size_t{6}) != units.end() ? RunVerdict::kAborted
                                                                           : RunVerdict::kPass;
  };
  const CausalFinding finding = causalSearch(names(10), probe);
  EXPECT_EQ(finding.kind, CausalFinding::Kind::kLocalized);
  EXPECT_EQ(finding.culprit, 6u);
  EXPECT_EQ(finding.alone_verdict, RunVerdict::kAborted);
}

}  // namespace
}  // namespace stickler
