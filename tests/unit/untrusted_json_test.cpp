// JSON from outside is measured before it is parsed: nesting is bounded far below the stack,
// brackets inside strings do not count, and errors are printable.
#include "simulator/support/untrusted_json.h"

#include <gtest/gtest.h>

#include <string>

namespace stickler {
namespace {

TEST(UntrustedJson, NestingIsMeasuredOutsideStringsOnly) {
  EXPECT_EQ(jsonNestingDepth("1"), 0u);
  EXPECT_EQ(jsonNestingDepth(R"({"a": [1, {"b": []}]})"), 4u);
  EXPECT_EQ(jsonNestingDepth(R"({"a": "[[[[{{{{"})"), 1u);
  EXPECT_EQ(jsonNestingDepth(R"(["\"[[[", "\\", [[]]])"), 3u);
  EXPECT_EQ(jsonNestingDepth(std::string(1000, '['), 10), 11u);  // stops counting past the limit
}

TEST(UntrustedJson, TooDeepIsAnErrorNotACrash) {
  const std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parseUntrustedJson(at_limit).is_array());
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  try {
    parseUntrustedJson(deep);
    FAIL() << "200,000 levels were parsed";
  } catch (const JsonInputError& error) {
    EXPECT_EQ(std::string(error.what()), "JSON nested deeper than 256 levels");
  }
  EXPECT_THROW(parseUntrustedJson(std::string(kMaxJsonDepth + 1, '{')), JsonInputError);
}

TEST(UntrustedJson, ParseErrorsArePrintableUtf8) {
  try {
    parseUntrustedJson("{\"method\": \"\xff\xfe\x01\"}");
    FAIL() << "invalid UTF-8 was parsed";
  } catch (const JsonInputError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message, printableUtf8(message));  // nothing left to replace
    EXPECT_NO_THROW(nlohmann::json(message).dump());
  }
  EXPECT_EQ(printableUtf8("caf\xc3\xa9 \xff\x01ok \xe2\x82"), "caf\xc3\xa9 ??ok ??");
}

TEST(UntrustedJson, ANumberBeyondADoubleIsAnInputError) {
  // nlohmann reports it as out_of_range, not parse_error: it escaped and ended the server.
  try {
    parseUntrustedJson(R"({"id": 1e400})");
    FAIL() << "1e400 was parsed";
  } catch (const JsonInputError& error) {
    EXPECT_NE(std::string(error.what()).find("number overflow"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace stickler
