// The adapter file format: metadata, rewrites, transforms, and errors with line and column.
#include "adapters/engine/adapter_file.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

const char* const kPowRewrite = R"PY("""Rewrite x ** 3.0 as x * x * x.

The 2025 stack cannot lower aten::pow.
"""
import torch
from torch import Tensor

name = "pow-cube"
gap = "aten::pow cannot be lowered"
why = "x * x * x is the same cube, in two multiplications the device has"
models = ["gpt2", "*"]   # any family with a GELU(tanh)
profiles = ["spyre-2025", "spyre-2025-clean"]
clears = ["unsupported-op aten::pow"]
remove_when = "the profile lowers aten::pow"
max_ulps = 2


def pattern(x: Tensor):
    return torch.pow(x, 3.0)


def replacement(x: Tensor):
    return x * x * x
)PY";

std::string errorOf(const std::string& text, const std::string& path = "adapters/pow-cube.py") {
  try {
    parseAdapterFile(text, path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(AdapterFile, ARewriteWithItsMetadata) {
  const AdapterFile file = parseAdapterFile(kPowRewrite, "adapters/pow-cube.py");
  EXPECT_EQ(file.metadata.name, "pow-cube");
  EXPECT_EQ(file.metadata.models, (std::vector<std::string>{"gpt2", "*"}));
  EXPECT_EQ(file.metadata.clears, std::vector<std::string>{"unsupported-op aten::pow"});
  EXPECT_EQ(file.metadata.max_ulps, 2);
  EXPECT_EQ(file.docstring.substr(0, 31), "Rewrite x ** 3.0 as x * x * x.\n");
  ASSERT_TRUE(file.pattern && file.replacement);
  EXPECT_EQ(file.pattern->source, "def pattern(x: Tensor):\n    return torch.pow(x, 3.0)");
  EXPECT_EQ(file.pattern->position.line, 18);
  EXPECT_EQ(file.replacement->parameters, std::vector<std::string>{"x"});
  EXPECT_FALSE(file.transform);
  EXPECT_EQ(file.positionOf("max_ulps").line, 15);
}

TEST(AdapterFile, ATransformWithLiteralArguments) {
  const AdapterFile file = parseAdapterFile(R"PY(
name = "pad-vocabulary"
gap = "vocabulary not in whole sticks"
why = "padded logits are sliced off"
models = ["*"]
profiles = ["spyre-2026"]
remove_when = "never: the hardware splits sticks"
transform = pad_to_sticks(module="lm_head", dim=-2, sizes=(1, 2.5), options={'fill': None, "raw": r"a\n"},
                          flag=True)  # a comment
)PY",
                                            "pad-vocabulary.py");
  ASSERT_TRUE(file.transform);
  EXPECT_EQ(file.transform->name, "pad_to_sticks");
  EXPECT_EQ(
      file.transform->arguments.dump(),
      R"({"dim":-2,"flag":true,"module":"lm_head","options":{"fill":null,"raw":"a\\n"},"sizes":[1,2.5]})");
  EXPECT_EQ(file.transform->position.line, 8);
  EXPECT_EQ(file.transform->position.column, 13);
  EXPECT_EQ(file.metadata.max_ulps, 0);  // bitwise unless declared
}

// The file's name follows the catalog's rule (adapter_name.h): a file that parses is never
// refused by `draft` for its name. These three passed the file's old, looser check.
TEST(AdapterFile, TheNameFollowsTheCatalogsRule) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1pow-cube", "start with a lower-case letter"},
      {"pow--cube", "hyphens go between words, one at a time (kebab-case)"},
      {std::string(65, 'a'), "use 1 to 64 characters"},
  };
  for (const auto& [name, problem] : cases) {
    std::string text = kPowRewrite;
    text.replace(text.find("\"pow-cube\""), 10, "\"" + name + "\"");
    EXPECT_EQ(errorOf(text, "adapters/" + name + ".py"),
              "adapters/" + name + ".py:8:8: invalid adapter name \"" + name + "\": " + problem);
  }
}

TEST(AdapterFile, SyntaxErrorsHaveLineAndColumn) {
  std::string broken = kPowRewrite;
  broken.replace(broken.find("return x * x * x"), 16, "return x * x *");
  EXPECT_EQ(errorOf(broken), "adapters/pow-cube.py:23:18: syntax error at '*'");

  std::string unclosed = kPowRewrite;
  unclosed.replace(unclosed.find("torch.pow(x, 3.0)"), 17, "torch.pow(x, 3.0");
  EXPECT_EQ(errorOf(unclosed), "adapters/pow-cube.py:19:21: syntax error: '(' is never closed");

  EXPECT_EQ(errorOf("name = \"a\nb\"\n"),
            "adapters/pow-cube.py:1:8: syntax error: unterminated string");
}

TEST(AdapterFile, HostileSizeAndDepthAreRefusedBeforeAnythingRecurses) {
  // 20,000 nested parentheses and a 5,000-term sum crashed the server (a recursion per level);
  // both are refused at the first node too deep, with its position.
  std::string parens = kPowRewrite;
  parens.replace(parens.find("return x * x * x"), 16,
                 "return " + std::string(20000, '(') + "x" + std::string(20000, ')'));
  const std::string deep = errorOf(parens);
  EXPECT_NE(deep.find("adapters/pow-cube.py:23:"), std::string::npos) << deep;
  EXPECT_NE(deep.find("brackets nested more than 100 levels deep here"), std::string::npos) << deep;

  std::string sum = "return x";
  for (int i = 0; i < 5000; ++i) sum += " + x";
  std::string chain = kPowRewrite;
  chain.replace(chain.find("return x * x * x"), 16, sum);
  EXPECT_NE(errorOf(chain).find("nested more than 100 levels deep here"), std::string::npos);

  // Unclosed brackets deep enough to break the syntax-error report's recursion.
  EXPECT_NE(errorOf("name = " + std::string(30000, '[')).find("nested more than 100 levels"),
            std::string::npos);

  std::string large = kPowRewrite;
  large += "\n# " + std::string(kMaxAdapterFileBytes, 'x') + "\n";
  EXPECT_EQ(errorOf(large), "adapters/pow-cube.py: " + std::to_string(large.size()) +
                                " bytes; an adapter file is at most 65536");

  // Brackets in strings and comments are text, not nesting.
  std::string quoted = kPowRewrite;
  quoted.replace(quoted.find("gap = \"aten::pow cannot be lowered\""), 35,
                 "# " + std::string(500, '(') + "\ngap = \"" + std::string(500, '[') + "\"");
  EXPECT_EQ(errorOf(quoted), "(parsed)");

  // What real adapters nest, with room: 60 levels of parentheses parse.
  std::string moderate = kPowRewrite;
  moderate.replace(moderate.find("return x * x * x"), 16,
                   "return " + std::string(60, '(') + "x * x * x" + std::string(60, ')'));
  EXPECT_EQ(errorOf(moderate), "(parsed)");
}

TEST(AdapterFile, FieldsAreCheckedWithTheirPosition) {
  std::string text = kPowRewrite;
  text.replace(text.find("max_ulps = 2"), 12, "max_ulps = -1");
  EXPECT_EQ(errorOf(text),
            "adapters/pow-cube.py:15:12: 'max_ulps' must be a whole number, 0 or more");

  // Numbers no field can hold are the file's error, with its position, not an internal one.
  text = kPowRewrite;
  text.replace(text.find("max_ulps = 2"), 12, "max_ulps = 1e999");
  EXPECT_EQ(errorOf(text),
            "adapters/pow-cube.py:15:12: '1e999' is not a finite number Stickler can read");
  text = kPowRewrite;
  text.replace(text.find("max_ulps = 2"), 12, "max_ulps = 99999999999999999999");
  EXPECT_EQ(errorOf(text),
            "adapters/pow-cube.py:15:12: '99999999999999999999' is not an integer Stickler can "
            "read");
  text = kPowRewrite;
  text.replace(text.find("max_ulps = 2"), 12, "max_ulps = 1.5j");
  EXPECT_EQ(errorOf(text),
            "adapters/pow-cube.py:15:12: '1.5j' is not a finite number Stickler can read");

  text = kPowRewrite;
  text.replace(text.find("models = [\"gpt2\", \"*\"]"), 22, "models = \"gpt2\"");
  EXPECT_EQ(errorOf(text), "adapters/pow-cube.py:11:10: 'models' must be a list of strings");

  text = kPowRewrite;
  text.replace(text.find("clears"), 6, "clear");
  EXPECT_NE(errorOf(text).find(":13:1: unknown field 'clear' (expected name, gap"),
            std::string::npos)
      << errorOf(text);

  text = kPowRewrite;
  text.erase(text.find("gap = "), text.find("why = ") - text.find("gap = "));
  EXPECT_NE(errorOf(text).find(":1:1: missing field 'gap'"), std::string::npos) << errorOf(text);

  EXPECT_NE(errorOf(kPowRewrite, "adapters/pow-square.py")
                .find("name 'pow-cube' must match the file name 'pow-square'"),
            std::string::npos);

  text = kPowRewrite;
  text.replace(text.find("why = "), 6, "why = why + ");
  EXPECT_NE(errorOf(text).find("expected a literal"), std::string::npos) << errorOf(text);

  text = kPowRewrite;
  text += "name = \"again\"\n";
  EXPECT_NE(errorOf(text).find(":24:1: 'name' is assigned twice"), std::string::npos)
      << errorOf(text);
}

TEST(AdapterFile, TheShapeOfARewriteIsChecked) {
  std::string text = kPowRewrite;
  text.replace(text.find("def replacement(x: Tensor)"), 26, "def replacement(y: Tensor)");
  EXPECT_NE(errorOf(text).find(":22:1: replacement must take the same parameters as pattern"),
            std::string::npos)
      << errorOf(text);

  text = kPowRewrite;
  text.replace(text.find("def replacement"), 15, "def other");
  EXPECT_NE(errorOf(text).find(":18:1: a rewrite needs both pattern and replacement; "
                               "replacement is missing"),
            std::string::npos)
      << errorOf(text);

  text = kPowRewrite;
  text += "transform = pad_heads(size=64)\n";
  EXPECT_NE(errorOf(text).find("a rewrite (pattern and replacement) or a transform, not both"),
            std::string::npos);

  text = kPowRewrite;
  text += "transform = pad_heads(64)\n";
  EXPECT_NE(errorOf(text).find(":24:23: give the transform's arguments by name"), std::string::npos)
      << errorOf(text);

  text = kPowRewrite;
  text += "for i in range(3):\n    pass\n";
  EXPECT_NE(errorOf(text).find(":24:1: an adapter file holds a docstring"), std::string::npos)
      << errorOf(text);
}

TEST(AdapterFile, HelpersAndConditionsAreKept) {
  std::string text = kPowRewrite;
  text += R"PY(

def condition(x: Tensor) -> bool:
    return x.dtype == torch.float32


def _cube(x: Tensor):
    return x * x * x
)PY";
  const AdapterFile file = parseAdapterFile(text, "pow-cube.py");
  ASSERT_TRUE(file.condition);
  EXPECT_EQ(file.condition->position.line, 26);
  ASSERT_EQ(file.helpers.size(), 1u);
  EXPECT_EQ(file.helpers[0].name, "_cube");
}

}  // namespace
}  // namespace stickler
