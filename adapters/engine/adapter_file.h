// An adapter file as written: Python syntax (the TorchScript subset), parsed with tree-sitter
// before LibTorch sees any of it, so that a syntax error or a bad field is reported with its
// file, line and column. See docs/adapter-format.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stickler {

// 1-based, as editors count. Columns count bytes.
struct SourcePosition {
  int line = 0;
  int column = 0;
};

// What the adapter is for: the module-level assignments of the file.
struct AdapterMetadata {
  std::string name;                   // kebab-case, the file's stem
  std::string gap;                    // the gap in the device stack it bridges
  std::string why;                    // why this rewrite is right
  std::vector<std::string> models;    // model families it applies to (fnmatch patterns)
  std::vector<std::string> profiles;  // device profiles that need it
  std::vector<std::string> clears;    // blockers it clears: "rule" or "rule op", e.g.
                                      // "unsupported-op aten::pow"
  std::string remove_when;            // when it can come down
  int64_t max_ulps = 0;               // the equivalence bound: 0 is bitwise equal
};

// A call as written in a function's text, whether or not the code around it can run:
// `torch.save(x, f)` is callee {"torch", "save"}, keywords {}. A callee that is not a chain of
// names (`x[0].fill_`) keeps its last name alone.
struct WrittenCall {
  std::vector<std::string> callee;
  std::vector<std::string> keywords;
  SourcePosition position;
};

// A top-level function, in the file's own text, to be compiled by LibTorch.
struct AdapterFunction {
  std::string name;
  std::string source;  // the whole `def`, dedented as written at top level
  SourcePosition position;
  std::vector<std::string> parameters;
  std::vector<WrittenCall> calls;  // every call in its body, in the order written
};

// `transform = name(key=value, ...)`: a built-in transform with literal arguments.
struct TransformCall {
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
  SourcePosition position;
};

struct AdapterFile {
  std::string path;
  std::string source;  // the file's text, from which a model host applies it again
  // Its SHA-256, set by the catalog that read it (adapter_catalog.h): a session's adapted model
  // is looked up by it on every call.
  std::string source_sha256;
  std::string docstring;
  AdapterMetadata metadata;
  // A rewrite: pattern and replacement (same parameters), with an optional `condition`
  // that sees the matched values and says whether to rewrite.
  std::optional<AdapterFunction> pattern;
  std::optional<AdapterFunction> replacement;
  std::optional<AdapterFunction> condition;
  std::vector<AdapterFunction> helpers;  // other functions the rewrite calls
  // Or a built-in transform.
  std::optional<TransformCall> transform;
  // Whether people reviewed the file (the shipped catalog, a workspace catalog's main): code
  // that no one has, such as a draft, first runs in a sandboxed worker when it is applied.
  bool reviewed = false;
  // Where each metadata field was assigned, for messages about its value.
  std::vector<std::pair<std::string, SourcePosition>> field_positions;

  SourcePosition positionOf(const std::string& field) const;
};

// Parses `text` (the content of `path`). Throws UserError "path:line:column: message" on a
// syntax error, an unknown or mistyped field, a missing required field, a statement the format
// does not allow, or neither (or both) of a rewrite and a transform.
// Bounds on what an adapter file may be, checked before anything walks its syntax tree or hands
// its functions to TorchScript (both recurse once per level): the shipped adapters are under
// 2 KiB and 30 levels deep.
inline constexpr size_t kMaxAdapterFileBytes = 64 * 1024;
inline constexpr uint32_t kMaxAdapterSyntaxDepth = 100;

AdapterFile parseAdapterFile(const std::string& text, const std::string& path);
AdapterFile readAdapterFile(const std::string& path);

}  // namespace stickler
