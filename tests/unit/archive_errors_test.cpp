// Broken archives: each gets one clear UserError naming the file and the problem.
#include <gtest/gtest.h>

#include "simulator/graph/loaded_model.h"
#include "simulator/support/errors.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using nlohmann::json;

class BrokenArchive : public ::testing::TestWithParam<json> {};

TEST_P(BrokenArchive, IsRefusedWithAOneLineMessage) {
  const std::string path = testing::zooPath(GetParam().at("file"));
  try {
    loadModel(path);
    FAIL() << path << " loaded";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(path, 0), 0u) << message;  // names the file first
    EXPECT_NE(message.find(GetParam().at("error").get<std::string>()), std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

std::vector<json> brokenEntries() {
  const auto& broken = testing::zooIndex().at("broken");
  return {broken.begin(), broken.end()};
}

INSTANTIATE_TEST_SUITE_P(Zoo, BrokenArchive, ::testing::ValuesIn(brokenEntries()),
                         [](const auto& info) { return testing::testName(info.param.at("name")); });

TEST(BrokenInputs, ShapesTheModelCannotTakeAreAUserError) {
  LoadOptions options;
  options.inputs = {parseInputFlag("input_ids:1x100:int64")};  // longer than n_positions (64)
  try {
    loadModel(testing::zooPath("gpt2-tiny.pt"), options);
    FAIL() << "ran with 100 positions";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("does not run on its example inputs"), std::string::npos) << message;
    EXPECT_NE(message.find("in transformer"), std::string::npos) << message;  // names the module
  }
}

TEST(BrokenInputs, TooManyFlagsForTheSignature) {
  LoadOptions options;
  options.inputs = {parseInputFlag("input_ids:1x4:int64"), parseInputFlag("extra:1:int64")};
  EXPECT_THROW(loadModel(testing::zooPath("gpt2-tiny.pt"), options), UserError);
}

}  // namespace
}  // namespace stickler
