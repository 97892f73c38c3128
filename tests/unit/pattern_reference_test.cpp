// The pattern reference: spellings the rewrite compiler itself accepted, and the docs page that
// is exactly what it generates.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_file.h"
#include "adapters/engine/pattern_reference.h"
#include "simulator/support/errors.h"
#include "tests/build_paths.h"

namespace stickler {
namespace {

const PatternSpelling* overload(const std::vector<PatternSpelling>& spellings,
                                const std::string& name) {
  for (const auto& spelling : spellings) {
    if (spelling.overload == name) return &spelling;
  }
  return nullptr;
}

TEST(PatternReference, EachOverloadGetsAPatternTheCompilerAccepts) {
  const auto topk = patternSpellings("aten::topk");
  const PatternSpelling* both = overload(topk, "default");
  ASSERT_NE(both, nullptr);
  EXPECT_EQ(both->results, 2);
  EXPECT_NE(both->pattern.find("values, indices = torch.topk(self, k, dim, largest, sorted)"),
            std::string::npos)
      << both->pattern;
  EXPECT_NE(both->pattern.find("return values, indices"), std::string::npos) << both->pattern;
  // out= variants are never in a model's graph.
  EXPECT_EQ(overload(topk, "values"), nullptr);

  // Where arguments of the function form call another overload, the spelling that reaches this
  // one is given: the Scalar overload of mul.
  const auto mul = patternSpellings("mul");
  const PatternSpelling* scalar = overload(mul, "Scalar");
  ASSERT_NE(scalar, nullptr);
  EXPECT_FALSE(scalar->pattern.empty()) << scalar->note;
  // Every spelling given compiles as an adapter's pattern does, in a whole adapter file.
  for (const auto& op : {"aten::topk", "aten::mul", "aten::to", "aten::softmax", "aten::slice"}) {
    for (const auto& spelling : patternSpellings(op)) {
      if (spelling.pattern.empty()) continue;
      std::string replacement = spelling.pattern;
      replacement.replace(0, std::string("def pattern").size(), "def replacement");
      const std::string file =
          "name = \"p\"\ngap = \"g\"\nwhy = \"w\"\nmodels = [\"*\"]\n"
          "profiles = [\"spyre-2026\"]\nremove_when = \"r\"\n\n\n" +
          spelling.pattern + "\n\n" + replacement;
      EXPECT_NO_THROW(validateAdapter(parseAdapterFile(file, "p.py")))
          << spelling.op << "." << spelling.overload << "\n"
          << file;
    }
  }
  EXPECT_THROW(patternSpellings("aten::no_such_operator"), UserError);
  EXPECT_THROW(patternSpellings("prim::If"), UserError);
}

TEST(PatternReference, TheDocsPageIsWhatTheRewriteCompilerGenerates) {
  const std::string path = std::string(testing::kSourceDir) + "/docs/pattern-reference.md";
  const std::string generated = patternReferenceMarkdown();
  if (std::getenv("STICKLER_UPDATE_SNAPSHOTS") != nullptr) {
    std::ofstream(path) << generated;
  }
  std::ifstream file(path);
  std::stringstream page;
  page << file.rdbuf();
  EXPECT_EQ(page.str(), generated)
      << "docs/pattern-reference.md differs from what the rewrite compiler generates; "
         "STICKLER_UPDATE_SNAPSHOTS=1 rewrites it";
  for (const auto& op : referenceOperators()) {
    EXPECT_NE(generated.find("## " + op + "\n"), std::string::npos) << op;
  }
}

}  // namespace
}  // namespace stickler
