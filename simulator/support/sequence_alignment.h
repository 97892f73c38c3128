// The longest common subsequence of two sequences, by Myers' O((N+M)D) difference algorithm
// ("An O(ND) Difference Algorithm and Its Variations", 1986): fast when the two differ in few
// places, as a graph and the same graph after a save and load do.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace stickler {

// The pairs (i, j), increasing in both, with a[i] == b[j], of a longest common subsequence; or
// nullopt when it takes more than `max_edits` insertions and deletions to turn a into b.
// Memory grows with the square of the edits made (D^2 32-bit entries), time with (N+M)D.
std::optional<std::vector<std::pair<size_t, size_t>>> commonSubsequence(const std::vector<int>& a,
                                                                        const std::vector<int>& b,
                                                                        size_t max_edits);

}  // namespace stickler
