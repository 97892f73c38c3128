// The search behind causal localization, apart from running anything: given M units in
// execution order whose all-on-device run fails, find what makes it fail and confirm it. A
// probe runs the model with a set of units on the device (the rest on the CPU reference) and
// returns the verdict (kPass, or anything else for a failure). Kept free of LibTorch so that the
// search itself is tested with synthetic probes.
//
// A cause is one unit (alone on the device it fails) or a 1-minimal set of units that fail only
// together (the set fails; without any one member it passes), found by delta debugging over the
// order: a binary search for the smallest failing prefix names the unit that completes the
// failure; when it passes alone, the next binary search finds the latest unit before it that the
// failure still needs, and so on, one member per O(log M) probes (Zeller's ddmin reaches the same
// 1-minimal sets without using the order, in more probes). With `all_causes`, each cause found is
// kept on the CPU reference and the units left are searched again, until they pass on the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "simulator/run/run_verdict.h"

namespace stickler {

// `units` are indices into the execution order, ascending; `label` says what is on the device,
// for reports.
using CausalProbe =
    std::function<RunVerdict(const std::vector<size_t>& units, const std::string& label)>;

struct CausalSearchOptions {
  bool all_causes = false;           // go on past the first cause until what is left passes
  std::optional<size_t> max_probes;  // none: no limit; the search stops (undecided) at this many
  std::string noun = "module";       // what a unit is, in labels: "the first 3 of 7 modules"
};

// One cause, with the probes that confirm it.
struct FoundCause {
  std::vector<size_t> units;  // ascending: one unit, or a 1-minimal set
  size_t completing = 0;      // the unit whose device execution completed the failure (a member)
  RunVerdict completing_alone_verdict = RunVerdict::kFail;  // that unit alone on the device
  RunVerdict alone_verdict = RunVerdict::kFail;             // the cause alone on the device
  std::vector<RunVerdict> without_each;  // sets: the set without units[i] on the device
  // The candidates left without this cause on the device (none when the budget ended first, or
  // nothing is left: kPass without a probe then).
  std::optional<RunVerdict> rest_verdict;
  size_t first_probe = 0;  // 0-based, among the search's probes
  size_t probes = 0;       // spent finding and confirming it

  bool isSet() const { return units.size() > 1; }
  // Alone it fails, and (a set) without any one member it passes.
  bool confirmed() const;
};

struct CausalSearchResult {
  std::vector<FoundCause> causes;  // in order of discovery
  // The search ran out of probes before it ended; `undecided` says where the next cause lies
  // (a set being built: the members found so far and the units still searched).
  bool budget_exhausted = false;
  std::string undecided;
  std::vector<size_t> undecided_units;
  // The first bisection's longest prefix that passed: these units ran on the device in a
  // passing run.
  size_t clean_prefix = 0;
  size_t probes = 0;
};

// `unit_names` label the probes; the probe for all units is not repeated (the caller has the
// whole-model verdict, a failure). Uses ceil(log2 M) + 2 probes for a single culprit, and never
// probes the same set twice.
CausalSearchResult causalSearch(const std::vector<std::string>& unit_names,
                                const CausalProbe& probe, const CausalSearchOptions& options = {});

}  // namespace stickler
