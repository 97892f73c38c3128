#include "simulator/support/sequence_alignment.h"

#include <algorithm>
#include <cstdint>

namespace stickler {

std::optional<std::vector<std::pair<size_t, size_t>>> commonSubsequence(const std::vector<int>& a,
                                                                        const std::vector<int>& b,
                                                                        size_t max_edits) {
  const auto n = static_cast<int64_t>(a.size());
  const auto m = static_cast<int64_t>(b.size());
  const int64_t limit = std::min<int64_t>(static_cast<int64_t>(max_edits), n + m);
  const int64_t offset = limit + 1;
  // v[offset + k]: the furthest x reached on diagonal k (y = x - k) with d edits.
  std::vector<int64_t> v(static_cast<size_t>(2 * limit + 3), 0);
  // trace[d]: v's diagonals -d-1 .. d+1 before step d, to walk the path back (32 bits: D^2
  // of them in all, for D edits).
  std::vector<std::vector<int32_t>> trace;
  for (int64_t d = 0; d <= limit; ++d) {
    trace.emplace_back(v.begin() + (offset - d - 1), v.begin() + (offset + d + 2));
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t x = (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]))
                      ? v[offset + k + 1]       // down: an insertion from b
                      : v[offset + k - 1] + 1;  // right: a deletion from a
      int64_t y = x - k;
      while (x < n && y < m && a[x] == b[y]) ++x, ++y;
      v[offset + k] = x;
      if (x < n || y < m) continue;
      // Reached the end: walk back, collecting the diagonal moves (the matches).
      std::vector<std::pair<size_t, size_t>> pairs;
      int64_t px = n, py = m;
      for (int64_t e = d; e >= 0; --e) {
        const std::vector<int32_t>& before = trace[e];
        const auto at = [&](int64_t diagonal) -> int64_t { return before[diagonal + e + 1]; };
        const int64_t kk = px - py;
        const int64_t prev_k = (kk == -e || (kk != e && at(kk - 1) < at(kk + 1))) ? kk + 1 : kk - 1;
        const int64_t prev_x = e == 0 ? 0 : at(prev_k);
        const int64_t prev_y = e == 0 ? 0 : prev_x - prev_k;
        while (px > prev_x && py > prev_y) {
          --px, --py;
          pairs.emplace_back(static_cast<size_t>(px), static_cast<size_t>(py));
        }
        px = prev_x;
        py = prev_y;
      }
      std::reverse(pairs.begin(), pairs.end());
      return pairs;
    }
  }
  return std::nullopt;
}

}  // namespace stickler
