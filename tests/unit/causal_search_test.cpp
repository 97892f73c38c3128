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

using Units = std::vector<size_t>;

std::vector<std::string> names(size_t count) {
  std::vector<std::string> result;
  for (size_t i = 0; i < count; ++i) result.push_back(std::to_string(i).insert(0, 1, 'm'));
  return result;
}

// A probe that fails when `fails` says so for the units on the device, counting its calls and
// remembering every set it was asked for.
struct Probe {
  std::function<bool(const std::set<size_t>&)> fails;
  int calls = 0;
  std::vector<Units> asked;

  CausalProbe function() {
    return [this](const Units& units, const std::string&) {
      ++calls;
      asked.push_back(units);
      return fails(std::set<size_t>(units.begin(), units.end())) ? RunVerdict::kFail
                                                                 : RunVerdict::kPass;
    };
  }
};

// Fails when every unit of any one of `causes` is on the device.
Probe failsWithAnyOf(std::vector<Units> causes) {
  return Probe{[causes](const std::set<size_t>& on_device) {
    return std::any_of(causes.begin(), causes.end(), [&](const Units& cause) {
      return std::all_of(cause.begin(), cause.end(),
                         [&](size_t unit) { return on_device.count(unit) > 0; });
    });
  }};
}

int log2Ceil(size_t units) {
  return static_cast<int>(std::ceil(std::log2(static_cast<double>(units))));
}

// The probes the search spent before sets and every cause were searched, when it probed every
// set it meant to: the smallest failing prefix by bisection, then the culprit alone and
// everything but it.
int singleCulpritProbes(size_t count, size_t culprit) {
  int probes = 2;
  for (size_t pass = 0, fail = count; fail - pass > 1; ++probes) {
    const size_t middle = pass + (fail - pass) / 2;
    (culprit < middle ? fail : pass) = middle;
  }
  return probes;
}

bool noSetAskedTwice(const Probe& probe) {
  std::set<Units> distinct(probe.asked.begin(), probe.asked.end());
  return distinct.size() == probe.asked.size();
}

TEST(CausalSearch, FindsEverySingleCulpritInAsManyProbesAsBefore) {
  for (size_t count : {1, 2, 3, 7, 31, 64, 100}) {
    for (size_t culprit = 0; culprit < count; ++culprit) {
      Probe probe = failsWithAnyOf({{culprit}});
      const CausalSearchResult found = causalSearch(names(count), probe.function());
      ASSERT_EQ(found.causes.size(), 1u) << count << " " << culprit;
      const FoundCause& cause = found.causes[0];
      EXPECT_EQ(cause.units, Units{culprit});
      EXPECT_EQ(cause.completing, culprit);
      EXPECT_EQ(cause.alone_verdict, RunVerdict::kFail);
      EXPECT_EQ(cause.rest_verdict, RunVerdict::kPass);
      EXPECT_TRUE(cause.confirmed());
      EXPECT_FALSE(found.budget_exhausted);
      EXPECT_EQ(found.clean_prefix, culprit);
      // One cause never costs more than it did before sets and budgets: ceil(log2 M) + 2 at
      // most, and no more than the old search at any position (less where a confirmation is
      // a set already probed: the culprit alone is the prefix of one).
      EXPECT_LE(probe.calls, log2Ceil(count) + 2) << count << " " << culprit;
      EXPECT_LE(probe.calls, singleCulpritProbes(count, culprit)) << count << " " << culprit;
      EXPECT_EQ(found.probes, static_cast<size_t>(probe.calls));
    }
  }
}

TEST(CausalSearch, ModulesThatFailOnlyTogetherAreNamedAsAMinimalSet) {
  // Units 5 and 9 each pass alone on the device and fail together (two compounding errors):
  // exactly those two, not the run 5..9, each removal confirmed.
  Probe probe = failsWithAnyOf({{5, 9}});
  const CausalSearchResult found = causalSearch(names(20), probe.function());
  ASSERT_EQ(found.causes.size(), 1u);
  const FoundCause& cause = found.causes[0];
  EXPECT_EQ(cause.units, (Units{5, 9}));
  EXPECT_EQ(cause.completing, 9u);  // the later one completes the failure
  EXPECT_EQ(cause.completing_alone_verdict, RunVerdict::kPass);
  EXPECT_EQ(cause.alone_verdict, RunVerdict::kFail);
  EXPECT_EQ(cause.without_each, (std::vector<RunVerdict>{RunVerdict::kPass, RunVerdict::kPass}));
  EXPECT_EQ(cause.rest_verdict, RunVerdict::kPass);
  EXPECT_TRUE(cause.confirmed());
  EXPECT_TRUE(cause.isSet());
  // O(k log M): a bisection per member, and the set, its removals and the rest confirmed.
  EXPECT_LE(probe.calls, 2 * log2Ceil(20) + 4);
  EXPECT_TRUE(noSetAskedTwice(probe));
}

TEST(CausalSearch, ASetOfThreeFarApartIsNarrowedToThoseThree) {
  Probe probe = failsWithAnyOf({{2, 11, 27}});
  const CausalSearchResult found = causalSearch(names(40), probe.function());
  ASSERT_EQ(found.causes.size(), 1u);
  EXPECT_EQ(found.causes[0].units, (Units{2, 11, 27}));
  EXPECT_TRUE(found.causes[0].confirmed());
  EXPECT_EQ(found.causes[0].without_each.size(), 3u);
  EXPECT_LE(probe.calls, 3 * log2Ceil(40) + 6);
  EXPECT_TRUE(noSetAskedTwice(probe));
}

TEST(CausalSearch, ASecondCauseIsReportedNotHidden) {
  // Both 3 and 12 fail the model on their own: 3 is found first, and the model still fails
  // without it. Only with all_causes is 12 searched for.
  Probe probe = failsWithAnyOf({{3}, {12}});
  const CausalSearchResult first = causalSearch(names(16), probe.function());
  ASSERT_EQ(first.causes.size(), 1u);
  EXPECT_EQ(first.causes[0].units, Units{3});
  EXPECT_EQ(first.causes[0].rest_verdict, RunVerdict::kFail);

  Probe again = failsWithAnyOf({{3}, {12}});
  const CausalSearchResult every = causalSearch(names(16), again.function(), {.all_causes = true});
  ASSERT_EQ(every.causes.size(), 2u);
  EXPECT_EQ(every.causes[0].units, Units{3});
  EXPECT_EQ(every.causes[1].units, Units{12});
  EXPECT_EQ(every.causes[1].rest_verdict, RunVerdict::kPass);
  EXPECT_TRUE(every.causes[1].confirmed());
  EXPECT_EQ(every.causes[1].first_probe, every.causes[0].probes);
  EXPECT_EQ(every.probes, every.causes[0].probes + every.causes[1].probes);
}

TEST(CausalSearch, EveryLayerIsNamedWithAllCauses) {
  // The same faulty operator in each of 6 layers of 10 units: 6 causes, in execution order,
  // each confirmed, the search over the units after the one before.
  const std::vector<Units> layers = {{4}, {14}, {24}, {34}, {44}, {54}};
  Probe probe = failsWithAnyOf(layers);
  const CausalSearchResult found = causalSearch(names(60), probe.function(), {.all_causes = true});
  ASSERT_EQ(found.causes.size(), layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(found.causes[i].units, layers[i]);
    EXPECT_TRUE(found.causes[i].confirmed());
    EXPECT_LE(found.causes[i].probes, static_cast<size_t>(log2Ceil(60) + 2)) << i;
  }
  EXPECT_EQ(found.causes.back().rest_verdict, RunVerdict::kPass);
  EXPECT_TRUE(noSetAskedTwice(probe));
}

TEST(CausalSearch, SingleCausesAndSetsAreFoundTogether) {
  Probe probe = failsWithAnyOf({{7, 30}, {18}});
  const CausalSearchResult found = causalSearch(names(40), probe.function(), {.all_causes = true});
  ASSERT_EQ(found.causes.size(), 2u);
  EXPECT_EQ(found.causes[0].units, Units{18});  // the first completed failure
  EXPECT_EQ(found.causes[1].units, (Units{7, 30}));
  EXPECT_TRUE(found.causes[1].confirmed());
  EXPECT_EQ(found.causes[1].rest_verdict, RunVerdict::kPass);
}

TEST(CausalSearch, TheBudgetStopsTheSearchAndSaysWhereItWas) {
  // Three probes of a bisection over 64 units: the culprit is bracketed, not found.
  Probe probe = failsWithAnyOf({{41}});
  const CausalSearchResult found =
      causalSearch(names(64), probe.function(), {.max_probes = size_t{3}});
  EXPECT_TRUE(found.budget_exhausted);
  EXPECT_EQ(probe.calls, 3);
  EXPECT_EQ(found.probes, 3u);
  EXPECT_TRUE(found.causes.empty());
  EXPECT_EQ(found.undecided_units.size(), 8u);  // 64 halved three times
  EXPECT_NE(std::find(found.undecided_units.begin(), found.undecided_units.end(), size_t{41}),
            found.undecided_units.end());
  EXPECT_NE(found.undecided.find("first"), std::string::npos) << found.undecided;

  // Enough for the first of two causes, not the second: the first is kept, the second is
  // undecided, and no probe goes past the budget.
  Probe two = failsWithAnyOf({{10}, {50}});
  const CausalSearchResult part =
      causalSearch(names(64), two.function(), {.all_causes = true, .max_probes = size_t{10}});
  EXPECT_TRUE(part.budget_exhausted);
  EXPECT_EQ(two.calls, 10);
  ASSERT_EQ(part.causes.size(), 1u);
  EXPECT_EQ(part.causes[0].units, Units{10});
  EXPECT_NE(part.undecided.find("second"), std::string::npos) << part.undecided;

  // No probe at all.
  Probe none = failsWithAnyOf({{3}});
  const CausalSearchResult nothing =
      causalSearch(names(8), none.function(), {.max_probes = size_t{0}});
  EXPECT_TRUE(nothing.budget_exhausted);
  EXPECT_EQ(none.calls, 0);
}

TEST(CausalSearch, AnyVerdictButPassIsAFailure) {
  // An abort is a failure like a wrong answer: the search treats kAborted as kFail.
  const CausalProbe probe = [](const Units& units, const std::string&) {
    return std::find(units.begin(), units.end(), size_t{6}) != units.end() ? RunVerdict::kAborted
                                                                           : RunVerdict::kPass;
  };
  const CausalSearchResult found = causalSearch(names(10), probe);
  ASSERT_EQ(found.causes.size(), 1u);
  EXPECT_EQ(found.causes[0].units, Units{6});
  EXPECT_EQ(found.causes[0].alone_verdict, RunVerdict::kAborted);
  EXPECT_TRUE(found.causes[0].confirmed());
}

}  // namespace
}  // namespace stickler
