#include "simulator/diagnose/causal_search.h"

namespace stickler {
namespace {

std::vector<size_t> range(size_t begin, size_t end) {
  std::vector<size_t> units;
  for (size_t i = begin; i < end; ++i) units.push_back(i);
  return units;
}

}  // namespace

CausalFinding causalSearch(const std::vector<std::string>& unit_names, const CausalProbe& probe) {
  const size_t count = unit_names.size();
  const std::string of = " of " + std::to_string(count) + " modules";
  // The smallest failing prefix: with none on the device the run is the reference (passes),
  // with all of them it fails.
  size_t pass = 0, fail = count;
  while (fail - pass > 1) {
    const size_t middle = pass + (fail - pass) / 2;
    const bool passed =
        probe(range(0, middle), "the first " + std::to_string(middle) + of) == RunVerdict::kPass;
    (passed ? pass : fail) = middle;
  }
  CausalFinding finding;
  finding.culprit = fail - 1;
  const std::string& name = unit_names[finding.culprit];
  finding.alone_verdict = probe({finding.culprit}, "only " + name);
  std::vector<size_t> others = range(0, count);
  others.erase(others.begin() + static_cast<std::ptrdiff_t>(finding.culprit));
  finding.rest_verdict = probe(others, "everything but " + name);
  if (finding.alone_verdict != RunVerdict::kPass) {
    finding.kind = finding.rest_verdict == RunVerdict::kPass
                       ? CausalFinding::Kind::kLocalized
                       : CausalFinding::Kind::kWithOtherCauses;
    return finding;
  }
  // Alone it passes: the shortest run of units ending at the culprit that still fails. Units
  // [0, culprit] fail (the prefix); [culprit, culprit] passes.
  size_t failing_start = 0, passing_start = finding.culprit;
  while (passing_start - failing_start > 1) {
    const size_t middle = failing_start + (passing_start - failing_start) / 2;
    const bool passed = probe(range(middle, finding.culprit + 1),
                              "modules " + std::to_string(middle + 1) + " to " +
                                  std::to_string(finding.culprit + 1) + of) == RunVerdict::kPass;
    (passed ? passing_start : failing_start) = middle;
  }
  finding.kind = CausalFinding::Kind::kNeedsSeveral;
  finding.first = failing_start;
  return finding;
}

}  // namespace stickler
