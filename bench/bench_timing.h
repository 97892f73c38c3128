#pragma once

// Timing shared by the benchmarks: two candidates run alternately, so that drift in the
// machine's speed hits both alike; medians in seconds.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

namespace stickler::bench {

inline double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// Warms both up, then alternates until `budget_seconds` pass (at least `at_least` rounds, at
// most 2000).
template <typename A, typename B>
std::pair<double, double> timeInterleaved(A&& a, B&& b, double budget_seconds, size_t at_least = 11,
                                          int warmups = 3) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < warmups; ++i) {  // the JIT profiles, then optimizes
    a();
    b();
  }
  std::vector<double> ta, tb;
  const auto deadline = Clock::now() + std::chrono::duration<double>(budget_seconds);
  while ((Clock::now() < deadline && ta.size() < 2000) || ta.size() < at_least) {
    const auto t0 = Clock::now();
    a();
    const auto t1 = Clock::now();
    b();
    const auto t2 = Clock::now();
    ta.push_back(std::chrono::duration<double>(t1 - t0).count());
    tb.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  return {median(ta), median(tb)};
}

// The geometric mean of ratios, the summary every benchmark prints.
struct GeometricMean {
  double log_sum = 0;
  int count = 0;
  void add(double ratio) { log_sum += std::log(ratio), ++count; }
  double value() const { return count > 0 ? std::exp(log_sum / count) : NAN; }
};

}  // namespace stickler::bench
