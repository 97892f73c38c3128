#include "simulator/diagnose/causal_search.h"

#include <algorithm>
#include <map>

namespace stickler {

bool FoundCause::confirmed() const {
  if (alone_verdict == RunVerdict::kPass) return false;
  return std::all_of(without_each.begin(), without_each.end(),
                     [](RunVerdict verdict) { return verdict == RunVerdict::kPass; });
}

namespace {

using Units = std::vector<size_t>;

// Thrown when the next probe would go past the budget; the search reports where it was.
struct BudgetSpent {};

Units slice(const Units& units, size_t begin, size_t end) {
  return Units(units.begin() + static_cast<std::ptrdiff_t>(begin),
               units.begin() + static_cast<std::ptrdiff_t>(end));
}

Units joined(const Units& a, const Units& b) {
  Units both = a;
  both.insert(both.end(), b.begin(), b.end());
  std::sort(both.begin(), both.end());
  return both;
}

Units without(const Units& units, const Units& removed) {
  Units left;
  for (size_t unit : units) {
    if (std::find(removed.begin(), removed.end(), unit) == removed.end()) left.push_back(unit);
  }
  return left;
}

class Search {
 public:
  Search(const std::vector<std::string>& names, const CausalProbe& probe,
         const CausalSearchOptions& options)
      : names_(names), probe_(probe), options_(options) {
    Units all;
    for (size_t i = 0; i < names.size(); ++i) all.push_back(i);
    known_[all] = RunVerdict::kFail;  // the caller's whole-model run
    known_[{}] = RunVerdict::kPass;   // nothing on the device: the reference itself
  }

  CausalSearchResult run() {
    Units candidates;
    for (size_t i = 0; i < names_.size(); ++i) candidates.push_back(i);
    size_t floor = 0;  // leading candidates known to pass together
    try {
      while (!candidates.empty()) {
        FoundCause cause = findCause(candidates, floor);
        const RunVerdict rest = cause.rest_verdict.value_or(RunVerdict::kFail);
        const size_t completing = cause.completing;
        const Units members = cause.units;
        result_.causes.push_back(std::move(cause));
        if (!options_.all_causes || rest == RunVerdict::kPass) break;
        // The units before the completing one passed on the device without it (the bisection's
        // prefix): those left of them still do, as a subset of a passing set.
        candidates = without(candidates, members);
        floor = static_cast<size_t>(std::count_if(candidates.begin(), candidates.end(),
                                                  [&](size_t unit) { return unit < completing; }));
        ++round_;
      }
    } catch (const BudgetSpent&) {
      result_.budget_exhausted = true;
      result_.undecided = undecided_;
      result_.undecided_units = undecided_units_;
    }
    result_.probes = probes_;
    return std::move(result_);
  }

 private:
  RunVerdict verdictOf(const Units& units, const std::string& label) {
    if (const auto known = known_.find(units); known != known_.end()) return known->second;
    if (options_.max_probes && probes_ >= *options_.max_probes) throw BudgetSpent{};
    ++probes_;
    const RunVerdict verdict = probe_(units, label);
    known_[units] = verdict;
    return verdict;
  }

  bool fails(const Units& units, const std::string& label) {
    return verdictOf(units, label) != RunVerdict::kPass;
  }

  void pending(std::string what, Units units) {
    undecided_ = std::move(what);
    undecided_units_ = std::move(units);
  }

  std::string modules(size_t count) const {
    return std::to_string(count) + " " + options_.noun + "s" + (round_ == 0 ? "" : " left");
  }

  std::string count(size_t units) const {
    return std::to_string(units) + " " + options_.noun + (units == 1 ? "" : "s");
  }

  // "a, b and c"; a long list by its ends.
  std::string listed(const Units& units) const {
    if (units.size() > 4) {
      return count(units.size()) + " from " + names_[units.front()] + " to " + names_[units.back()];
    }
    std::string text;
    for (size_t i = 0; i < units.size(); ++i) {
      if (i > 0) text += i + 1 == units.size() ? " and " : ", ";
      text += names_[units[i]];
    }
    return text;
  }

  FoundCause findCause(const Units& candidates, size_t floor) {
    FoundCause cause;
    cause.first_probe = probes_;
    // The smallest failing prefix: `floor` of them pass, all of them fail.
    size_t pass = floor, fail = candidates.size();
    while (fail - pass > 1) {
      pending("the " + options_.noun + " that completes the " + causeOrdinal() +
                  " failure is one of these",
              slice(candidates, pass, fail));
      const size_t middle = pass + (fail - pass) / 2;
      const bool failed =
          fails(slice(candidates, 0, middle),
                "the first " + std::to_string(middle) + " of " + modules(candidates.size()));
      (failed ? fail : pass) = middle;
      if (round_ == 0 && !failed) result_.clean_prefix = middle;
    }
    if (round_ == 0) result_.clean_prefix = pass;
    const size_t completing = candidates[fail - 1];
    cause.completing = completing;
    pending(names_[completing] + " completes the " + causeOrdinal() +
                " failure; whether alone or with others is not decided",
            {completing});
    Units members{completing};
    cause.completing_alone_verdict = verdictOf(members, "only " + names_[completing]);
    if (cause.completing_alone_verdict == RunVerdict::kPass) {
      members = minimalSet(completing, slice(candidates, 0, fail - 1));
      // Only when the device's failures are not monotone in the units on it can the reduction
      // drop the unit that completed the failure; the set's last member then stands for it.
      if (!std::binary_search(members.begin(), members.end(), completing)) {
        cause.completing = members.back();
      }
    }
    pending("the " + causeOrdinal() + " cause, not yet confirmed", members);
    cause.units = members;
    cause.alone_verdict = verdictOf(members, "only " + listed(members));
    if (members.size() > 1) {
      for (size_t member : members) {
        cause.without_each.push_back(
            verdictOf(without(members, {member}), "only " + listed(without(members, {member}))));
      }
    }
    const Units rest = without(candidates, members);
    cause.rest_verdict = verdictOf(rest, "everything but " + listed(members));
    cause.probes = probes_ - cause.first_probe;
    return cause;
  }

  // A 1-minimal set that fails, holding `completing` (which passes alone; `before` pass
  // together without it, and fail with it): the latest unit of `before` the failure still needs
  // is found by a binary search, and added, until the set fails alone; then any member without
  // which the set still fails is dropped.
  Units minimalSet(size_t completing, Units before) {
    Units members{completing};
    while (!before.empty()) {
      // members with before[0, low) pass, with before[0, high) fail. The unit just before is
      // tried first: a kernel fused across two modules makes that the usual partner, found in
      // one probe instead of log2 of them (one probe more when it is not).
      size_t low = 0, high = before.size();
      if (high > 2) {
        pending("fails only together: " + listed(members) + " with one of these at least",
                joined(members, before));
        const size_t all_but_last = high - 1;
        const bool failed = fails(joined(members, slice(before, 0, all_but_last)),
                                  listed(members) + " with the " + count(all_but_last) +
                                      " before, not the one just before");
        (failed ? high : low) = all_but_last;
      }
      while (high - low > 1) {
        pending("fails only together: " + listed(members) + " with one of these at least",
                joined(members, slice(before, low, high)));
        const size_t middle = low + (high - low) / 2;
        const bool failed = fails(joined(members, slice(before, 0, middle)),
                                  listed(members) + " with the first " + count(middle) + " before");
        (failed ? high : low) = middle;
      }
      members = joined(members, {before[high - 1]});
      before.resize(high - 1);
      pending("fails only together: " + listed(members) + ", whether with more not decided",
              members);
      if (fails(members, "only " + listed(members))) break;
    }
    for (bool dropped = true; dropped && members.size() > 1;) {
      dropped = false;
      for (size_t member : members) {
        const Units others = without(members, {member});
        if (fails(others, "only " + listed(others))) {
          members = others;
          dropped = true;
          break;
        }
      }
    }
    return members;
  }

  std::string causeOrdinal() const {
    static const char* const kOrdinals[] = {"first", "second", "third", "fourth", "fifth"};
    return round_ < 5 ? kOrdinals[round_] : "next";
  }

  const std::vector<std::string>& names_;
  const CausalProbe& probe_;
  CausalSearchOptions options_;
  std::map<Units, RunVerdict> known_;
  size_t probes_ = 0;
  size_t round_ = 0;
  std::string undecided_;
  Units undecided_units_;
  CausalSearchResult result_;
};

}  // namespace

CausalSearchResult causalSearch(const std::vector<std::string>& unit_names,
                                const CausalProbe& probe, const CausalSearchOptions& options) {
  return Search(unit_names, probe, options).run();
}

}  // namespace stickler
