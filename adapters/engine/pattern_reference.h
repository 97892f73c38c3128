// How to write each aten operator in an adapter's pattern: produced by compiling candidate
// spellings with the rewrite compiler's own resolver and keeping the first that yields the
// operator's overload, so the reference cannot say what the compiler does not accept.
#pragma once

#include <string>
#include <vector>

namespace stickler {

struct PatternSpelling {
  std::string op;        // "aten::topk"
  std::string overload;  // "default" for the unnamed overload
  std::string schema;  // "aten::topk(Tensor self, int k, int dim=-1, ...) -> (Tensor values, ...)"
  // A pattern that matches the overload, its arguments as parameters:
  // "def pattern(self: Tensor, k: int, ...):\n    values, indices = torch.topk(self, k, ...)\n
  //  return values, indices". Empty when no spelling compiles to it (see `note`).
  std::string pattern;
  int results = 1;
  std::string note;
};

// Every overload of `op` ("aten::topk" or "topk") that can appear in a model's graph (no out=
// variants, no named-tensor overloads). UserError for an operator LibTorch does not have.
std::vector<PatternSpelling> patternSpellings(const std::string& op);

// The operators the reference page covers: every operator a shipped device profile names.
std::vector<std::string> referenceOperators();

// The Markdown page (docs/pattern-reference.md is this text), and the section of one operator.
std::string patternReferenceMarkdown();
std::string operatorReferenceMarkdown(const std::string& op);

}  // namespace stickler
