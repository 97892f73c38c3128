#pragma once

#include <cstdint>

namespace stickler {

// The per-core span rule (FACTS: hf-adapters pad_lm_head). A weight whose output dimension
// spans `sticks` sticks is split across cores in slices of largestPrimeFactor(sticks) sticks;
// one slice, `sticks_per_slice * inner * stick_elements * bytes_per_value` bytes, must fit in
// the span one core can address.
struct SpanCheck {
  int64_t sticks = 0;
  int64_t largest_prime_factor = 0;
  int64_t slice_bytes = 0;
  bool fits = true;
};

SpanCheck checkCoreSpan(int64_t output_size, int64_t inner_size, int64_t stick_elements,
                        int64_t bytes_per_value, int64_t core_span_bytes);

// The fewest whole sticks, at least enough for `output_size`, whose slice fits the span
// (151936 outputs, 64-value sticks: 2374 sticks = 2 x 1187 is too coarse for a large inner
// size; 2375 = 5^3 x 19 fits). Returns 0 when no count up to twice the need fits.
int64_t sticksThatFitSpan(int64_t output_size, int64_t inner_size, int64_t stick_elements,
                          int64_t bytes_per_value, int64_t core_span_bytes);

int64_t largestPrimeFactorOf(int64_t n);

}  // namespace stickler
