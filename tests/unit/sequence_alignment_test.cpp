// The longest common subsequence by Myers' algorithm: what module paths are restored by when a
// saved graph comes back with a few nodes fewer or more.
#include "simulator/support/sequence_alignment.h"

#include <gtest/gtest.h>

#include <random>

namespace stickler {
namespace {

using Pairs = std::vector<std::pair<size_t, size_t>>;

// Whether `pairs` is a common subsequence of a and b.
bool common(const std::vector<int>& a, const std::vector<int>& b, const Pairs& pairs) {
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto [x, y] = pairs[i];
    if (x >= a.size() || y >= b.size() || a[x] != b[y]) return false;
    if (i > 0 && (x <= pairs[i - 1].first || y <= pairs[i - 1].second)) return false;
  }
  return true;
}

// The LCS length by dynamic programming, to check against.
size_t lcsLength(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<std::vector<size_t>> table(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      table[i][j] = a[i - 1] == b[j - 1] ? table[i - 1][j - 1] + 1
                                         : std::max(table[i - 1][j], table[i][j - 1]);
    }
  }
  return table[a.size()][b.size()];
}

TEST(SequenceAlignment, PairsTheNodesThatRemainWhenSomeAreDroppedOrAdded) {
  // 7 8 (a tuple built and unpacked) dropped, 9 added.
  const std::vector<int> saved = {1, 2, 7, 8, 3, 4, 7, 8, 5};
  const std::vector<int> loaded = {1, 2, 3, 9, 4, 5};
  const auto pairs = commonSubsequence(saved, loaded, 100);
  ASSERT_TRUE(pairs);
  EXPECT_EQ(*pairs, (Pairs{{0, 0}, {1, 1}, {4, 2}, {5, 4}, {8, 5}}));
  EXPECT_EQ(commonSubsequence(saved, saved, 0)->size(), saved.size());
  EXPECT_TRUE(commonSubsequence({}, {}, 0)->empty());
  EXPECT_TRUE(commonSubsequence({1, 2}, {}, 2)->empty());
  EXPECT_TRUE(commonSubsequence({}, {1, 2}, 2)->empty());
}

TEST(SequenceAlignment, GivesUpBeyondItsEditBudget) {
  const std::vector<int> a = {1, 2, 3, 4};
  const std::vector<int> b = {5, 6, 7, 8};
  EXPECT_FALSE(commonSubsequence(a, b, 7));  // 8 edits: delete 4, insert 4
  ASSERT_TRUE(commonSubsequence(a, b, 8));
  EXPECT_TRUE(commonSubsequence(a, b, 8)->empty());
}

TEST(SequenceAlignment, IsALongestCommonSubsequenceOnRandomSequences) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int> a(random() % 40), b;
    for (int& value : a) value = static_cast<int>(random() % 5);
    for (int value : a) {  // b: a with some dropped, some changed and some added
      const unsigned roll = random() % 10;
      if (roll == 0) continue;
      b.push_back(roll == 1 ? static_cast<int>(random() % 5) : value);
      if (roll == 2) b.push_back(static_cast<int>(random() % 5));
    }
    const auto pairs = commonSubsequence(a, b, a.size() + b.size());
    ASSERT_TRUE(pairs);
    EXPECT_TRUE(common(a, b, *pairs));
    EXPECT_EQ(pairs->size(), lcsLength(a, b));
  }
}

}  // namespace
}  // namespace stickler
