#include "simulator/graph/model_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "simulator/graph/loaded_model.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

TEST(ModelCache, LoadsOnceAndReloadsWhenTheFileChanges) {
  const std::string copy = ::testing::TempDir() + "/cached-model.pt";
  fs::copy_file(testing::zooPath("vit-tiny.pt"), copy, fs::copy_options::overwrite_existing);
  ModelCache cache;
  const auto first = cache.get(copy, {});
  const auto again = cache.get(copy, {});
  EXPECT_EQ(first.get(), again.get());
  EXPECT_EQ(cache.loads(), 1u);

  // Other inputs are another entry.
  const auto other = cache.get(copy, {"pixel_values:1x3x32x32:float32:range=0..1"});
  EXPECT_NE(other.get(), first.get());
  EXPECT_EQ(cache.loads(), 2u);

  // A new file under the same name is loaded anew.
  fs::copy_file(testing::zooPath("vit-h96.pt"), copy, fs::copy_options::overwrite_existing);
  const auto replaced = cache.get(copy, {});
  EXPECT_NE(replaced.get(), first.get());
  EXPECT_NE(replaced->sha256, first->sha256);
  EXPECT_EQ(cache.loads(), 3u);
  fs::remove(copy);
}

// A model kept for its shapes only serves callers that need shapes; one that needs values
// loads it again, and that model then serves both.
TEST(ModelCache, AShapesOnlyModelIsLoadedAgainWhenValuesAreNeeded) {
  ModelCache cache;
  const std::string path = testing::zooPath("gpt2-tiny.pt");
  const auto shapes = cache.get(path, {}, ModelNeeds::kShapes);
  EXPECT_TRUE(shapes->shapes_only);
  EXPECT_EQ(cache.get(path, {}, ModelNeeds::kShapes).get(), shapes.get());
  EXPECT_EQ(cache.loads(), 1u);
  const auto values = cache.get(path, {});
  EXPECT_FALSE(values->shapes_only);
  EXPECT_EQ(cache.loads(), 2u);
  EXPECT_EQ(cache.get(path, {}, ModelNeeds::kShapes).get(), values.get());
  EXPECT_EQ(cache.get(path, {}).get(), values.get());
  EXPECT_EQ(cache.loads(), 2u);
  EXPECT_FALSE(obtainModel(path, {}, nullptr)->shapes_only);
  EXPECT_TRUE(obtainModel(path, {}, nullptr, ModelNeeds::kShapes)->shapes_only);
}

TEST(ModelCache, KeepsAtMostItsCapacity) {
  ModelCache cache(2);
  cache.get(testing::zooPath("vit-tiny.pt"), {});
  cache.get(testing::zooPath("vit-h96.pt"), {});
  cache.get(testing::zooPath("bert-tiny.pt"), {});
  EXPECT_EQ(cache.size(), 2u);
  cache.get(testing::zooPath("bert-tiny.pt"), {});
  EXPECT_EQ(cache.loads(), 3u);  // the most recent stayed
}

}  // namespace
}  // namespace stickler
