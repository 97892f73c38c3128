#include "simulator/device/core_span.h"

namespace stickler {

int64_t largestPrimeFactorOf(int64_t n) {
  int64_t largest = 1;
  for (int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      largest = p;
      n /= p;
    }
  }
  return n > 1 ? n : largest;
}

SpanCheck checkCoreSpan(int64_t output_size, int64_t inner_size, int64_t stick_elements,
                        int64_t bytes_per_value, int64_t core_span_bytes) {
  SpanCheck check;
  check.sticks = (output_size + stick_elements - 1) / stick_elements;
  check.largest_prime_factor = largestPrimeFactorOf(check.sticks);
  check.slice_bytes = check.largest_prime_factor * inner_size * stick_elements * bytes_per_value;
  check.fits = check.slice_bytes <= core_span_bytes;
  return check;
}

int64_t sticksThatFitSpan(int64_t output_size, int64_t inner_size, int64_t stick_elements,
                          int64_t bytes_per_value, int64_t core_span_bytes) {
  const int64_t needed = (output_size + stick_elements - 1) / stick_elements;
  for (int64_t sticks = needed; sticks <= 2 * needed; ++sticks) {
    if (largestPrimeFactorOf(sticks) * inner_size * stick_elements * bytes_per_value <=
        core_span_bytes) {
      return sticks;
    }
  }
  return 0;
}

}  // namespace stickler
