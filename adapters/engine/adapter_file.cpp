#include "adapters/engine/adapter_file.h"

#include <tree_sitter/api.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "adapters/engine/adapter_name.h"
#include "simulator/support/errors.h"
#include "simulator/support/text_files.h"

extern "C" const TSLanguage* tree_sitter_python();

namespace stickler {
namespace {

using nlohmann::json;

SourcePosition positionOf(TSNode node) {
  const TSPoint point = ts_node_start_point(node);
  return {static_cast<int>(point.row) + 1, static_cast<int>(point.column) + 1};
}

// Errors about the file's content carry its position, as compilers print them.
class FileErrors {
 public:
  FileErrors(const std::string& path, const std::string& text) : path_(path), text_(text) {}
  [[noreturn]] void at(SourcePosition position, const std::string& message) const {
    throw UserError(path_ + ":" + std::to_string(position.line) + ":" +
                    std::to_string(position.column) + ": " + message);
  }
  [[noreturn]] void at(TSNode node, const std::string& message) const {
    at(positionOf(node), message);
  }
  std::string textOf(TSNode node) const {
    return text_.substr(ts_node_start_byte(node),
                        ts_node_end_byte(node) - ts_node_start_byte(node));
  }

 private:
  const std::string& path_;
  const std::string& text_;
};

std::string typeOf(TSNode node) {
  return ts_node_type(node);
}

std::vector<TSNode> namedChildren(TSNode node) {
  std::vector<TSNode> children;
  const uint32_t count = ts_node_named_child_count(node);
  children.reserve(count);
  for (uint32_t i = 0; i < count; ++i) children.push_back(ts_node_named_child(node, i));
  return children;
}

TSNode field(TSNode node, const char* name) {
  return ts_node_child_by_field_name(node, name, static_cast<uint32_t>(std::strlen(name)));
}

void collectTokens(TSNode node, std::vector<TSNode>& tokens) {
  const uint32_t count = ts_node_child_count(node);
  if (count == 0) {
    if (ts_node_end_byte(node) > ts_node_start_byte(node)) tokens.push_back(node);
    return;
  }
  for (uint32_t i = 0; i < count; ++i) collectTokens(ts_node_child(node, i), tokens);
}

// Where brackets first nest deeper than `limit`, by a scan of the text that skips strings and
// comments: tree-sitter's error recovery on thousands of unclosed brackets takes seconds, so
// the text is measured before it is parsed.
std::optional<SourcePosition> firstBracketDeeperThan(const std::string& text, uint32_t limit) {
  uint32_t depth = 0;
  SourcePosition position{1, 1};
  char quote = 0;  // the open string's quote character
  bool triple = false, comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const SourcePosition here = position;
    if (c == '\n') {
      ++position.line, position.column = 1;
    } else {
      ++position.column;
    }
    if (comment) {
      comment = c != '\n';
    } else if (quote != 0) {
      if (c == '\\') {
        if (i + 1 < text.size() && text[i + 1] != '\n') ++i, ++position.column;
      } else if (c == quote && (!triple || text.compare(i, 3, std::string(3, quote)) == 0)) {
        if (triple) i += 2, position.column += 2;
        quote = 0;
      } else if (c == '\n' && !triple) {
        quote = 0;  // an unterminated string ends at the line; the parser reports it
      }
    } else if (c == '#') {
      comment = true;
    } else if (c == '"' || c == '\'') {
      quote = c;
      triple = text.compare(i, 3, std::string(3, c)) == 0;
      if (triple) i += 2, position.column += 2;
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > limit) return here;
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

// The first node nested deeper than `limit`, found with a cursor (no recursion: the tree of a
// 50,000-term sum is 50,000 deep).
std::optional<TSNode> firstNodeDeeperThan(TSNode root, uint32_t limit) {
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  std::optional<TSNode> found;
  uint32_t depth = 0;
  bool walking = true;
  while (walking) {
    if (depth > limit) {
      found = ts_tree_cursor_current_node(&cursor);
      break;
    }
    if (ts_tree_cursor_goto_first_child(&cursor)) {
      ++depth;
      continue;
    }
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        walking = false;
        break;
      }
      --depth;
    }
  }
  ts_tree_cursor_delete(&cursor);
  return found;
}

// Where the parser lost track (an ERROR node): at a bracket never closed, as Python says it,
// or else at the last token it could not fit.
[[noreturn]] void reportErrorNode(TSNode error, const FileErrors& errors) {
  std::vector<TSNode> tokens;
  collectTokens(error, tokens);
  std::vector<TSNode> open;
  for (TSNode token : tokens) {
    const std::string text = errors.textOf(token);
    if (text == "(" || text == "[" || text == "{") {
      open.push_back(token);
    } else if (!open.empty() && (text == ")" || text == "]" || text == "}")) {
      open.pop_back();
    }
  }
  if (!open.empty()) {
    errors.at(open.front(), "syntax error: '" + errors.textOf(open.front()) + "' is never closed");
  }
  if (tokens.empty()) errors.at(error, "syntax error");
  std::string near = errors.textOf(tokens.back());
  if (const auto newline = near.find('\n'); newline != std::string::npos) near.resize(newline);
  if (near.size() > 40) near = near.substr(0, 40) + "...";
  if (near == "\"" || near == "'" || near == "\"\"\"" || near == "'''") {
    errors.at(tokens.back(), "syntax error: unterminated string");
  }
  errors.at(tokens.back(), "syntax error at '" + near + "'");
}

// The first syntax error in document order: where the parser lost track (the outermost ERROR
// node), or a token it had to assume (a MISSING node).
void reportFirstSyntaxError(TSNode node, const FileErrors& errors) {
  if (ts_node_is_missing(node)) errors.at(node, "syntax error: missing '" + typeOf(node) + "'");
  if (typeOf(node) == "ERROR") reportErrorNode(node, errors);
  for (uint32_t i = 0; i < ts_node_child_count(node); ++i) {
    const TSNode child = ts_node_child(node, i);
    if (ts_node_has_error(child) || ts_node_is_missing(child)) {
      reportFirstSyntaxError(child, errors);
    }
  }
}

// A Python string literal's value: prefixes, the four quotings, and the common escapes.
std::string decodeString(TSNode node, const FileErrors& errors) {
  const std::string text = errors.textOf(node);
  size_t start = 0;
  bool raw = false;
  while (start < text.size() && std::isalpha(static_cast<unsigned char>(text[start]))) {
    const char prefix = static_cast<char>(std::tolower(static_cast<unsigned char>(text[start])));
    if (prefix == 'f') errors.at(node, "f-strings are not literals: write the text out");
    if (prefix == 'b') errors.at(node, "a bytes literal is not text: drop the b prefix");
    raw = raw || prefix == 'r';
    ++start;
  }
  const bool triple = text.compare(start, 3, "\"\"\"") == 0 || text.compare(start, 3, "'''") == 0;
  const size_t quote = triple ? 3 : 1;
  std::string body = text.substr(start + quote, text.size() - start - 2 * quote);
  if (raw) return body;
  std::string value;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      value += body[i];
      continue;
    }
    const char escaped = body[++i];
    switch (escaped) {
      case 'n':
        value += '\n';
        break;
      case 't':
        value += '\t';
        break;
      case 'r':
        value += '\r';
        break;
      case '0':
        value += '\0';
        break;
      case '\\':
        value += '\\';
        break;
      case '\'':
        value += '\'';
        break;
      case '"':
        value += '"';
        break;
      case '\n':
        break;  // a line continuation
      default:
        value += '\\';
        value += escaped;
    }
  }
  return value;
}

// Python allows 1_000_000; the C++ parsers do not.
std::string withoutUnderscores(const std::string& written) {
  std::string digits;
  for (char c : written) {
    if (c != '_') digits += c;
  }
  return digits;
}

int64_t parseInteger(const std::string& written, TSNode node, const FileErrors& errors) {
  const std::string digits = withoutUnderscores(written);
  try {
    size_t used = 0;
    const int64_t value = std::stoll(digits, &used, 0);
    if (used == digits.size()) return value;
  } catch (const std::exception&) {
  }
  errors.at(node, "'" + written + "' is not an integer Stickler can read");
}

// A finite double: 1e999 (infinite in float64) and 1.5j (imaginary) are not numbers a field or
// an argument can hold.
double parseFloat(const std::string& written, TSNode node, const FileErrors& errors) {
  const std::string digits = withoutUnderscores(written);
  try {
    size_t used = 0;
    const double value = std::stod(digits, &used);
    if (used == digits.size() && std::isfinite(value)) return value;
  } catch (const std::exception&) {  // out of range, either way
  }
  errors.at(node, "'" + written + "' is not a finite number Stickler can read");
}

// A literal (string, number, True/False/None, list, tuple, dict of them) as JSON.
json literalValue(TSNode node, const FileErrors& errors) {
  const std::string type = typeOf(node);
  if (type == "string") return decodeString(node, errors);
  if (type == "concatenated_string") {
    std::string joined;
    for (TSNode part : namedChildren(node)) joined += decodeString(part, errors);
    return joined;
  }
  if (type == "integer") return parseInteger(errors.textOf(node), node, errors);
  if (type == "float") return parseFloat(errors.textOf(node), node, errors);
  if (type == "true") return true;
  if (type == "false") return false;
  if (type == "none") return nullptr;
  if (type == "parenthesized_expression") return literalValue(ts_node_named_child(node, 0), errors);
  if (type == "unary_operator") {
    json operand = literalValue(field(node, "argument"), errors);
    const std::string op = errors.textOf(field(node, "operator"));
    if (!operand.is_number() || (op != "-" && op != "+")) {
      errors.at(node, "only numbers can be negated in a literal");
    }
    if (op == "+") return operand;
    return operand.is_number_integer() ? json(-operand.get<int64_t>())
                                       : json(-operand.get<double>());
  }
  if (type == "list" || type == "tuple") {
    json items = json::array();
    for (TSNode item : namedChildren(node)) {
      if (typeOf(item) != "comment") items.push_back(literalValue(item, errors));
    }
    return items;
  }
  if (type == "dictionary") {
    json object = json::object();
    for (TSNode pair : namedChildren(node)) {
      if (typeOf(pair) == "comment") continue;
      if (typeOf(pair) != "pair") errors.at(pair, "a dictionary literal holds key: value pairs");
      const json key = literalValue(field(pair, "key"), errors);
      if (!key.is_string()) errors.at(pair, "dictionary keys must be strings");
      object[key.get<std::string>()] = literalValue(field(pair, "value"), errors);
    }
    return object;
  }
  errors.at(node,
            "expected a literal (a string, number, True/False/None, or a list, tuple or "
            "dict of them), not '" +
                errors.textOf(node) + "'");
}

// `torch.ops.aten.add` -> {"torch", "ops", "aten", "add"}; a callee that is not a chain of
// names keeps its last name (`x[0].fill_` -> {"fill_"}).
std::vector<std::string> calleeOf(TSNode callee, const FileErrors& errors) {
  std::vector<std::string> names;
  TSNode node = callee;
  while (typeOf(node) == "attribute") {
    names.insert(names.begin(), errors.textOf(field(node, "attribute")));
    node = field(node, "object");
  }
  if (typeOf(node) == "identifier") {
    names.insert(names.begin(), errors.textOf(node));
  } else if (names.size() > 1) {
    names.erase(names.begin(), names.end() - 1);
  }
  return names;
}

// Every call in `node`, dead code included: TorchScript drops a branch it can decide while
// compiling (`if False:`), so only the text shows what such a branch would call.
void collectCalls(TSNode node, const FileErrors& errors, std::vector<WrittenCall>& calls) {
  if (typeOf(node) == "call") {
    WrittenCall call;
    call.callee = calleeOf(field(node, "function"), errors);
    call.position = positionOf(node);
    for (TSNode argument : namedChildren(field(node, "arguments"))) {
      if (typeOf(argument) == "keyword_argument") {
        call.keywords.push_back(errors.textOf(field(argument, "name")));
      }
    }
    if (!call.callee.empty()) calls.push_back(std::move(call));
  }
  for (TSNode child : namedChildren(node)) collectCalls(child, errors, calls);
}

AdapterFunction functionOf(TSNode node, const FileErrors& errors) {
  AdapterFunction function;
  function.name = errors.textOf(field(node, "name"));
  function.source = errors.textOf(node);
  function.position = positionOf(node);
  for (TSNode parameter : namedChildren(field(node, "parameters"))) {
    const std::string type = typeOf(parameter);
    if (type == "identifier") {
      function.parameters.push_back(errors.textOf(parameter));
    } else if (type == "typed_parameter") {
      function.parameters.push_back(errors.textOf(ts_node_named_child(parameter, 0)));
    } else if (type == "default_parameter" || type == "typed_default_parameter") {
      function.parameters.push_back(errors.textOf(field(parameter, "name")));
    } else if (type != "comment") {
      errors.at(parameter, "parameters are plain names (with a type): no *args or **kwargs");
    }
  }
  collectCalls(node, errors, function.calls);  // default values are code too
  return function;
}

TransformCall transformOf(TSNode call, const FileErrors& errors) {
  if (typeOf(call) != "call" || typeOf(field(call, "function")) != "identifier") {
    errors.at(call,
              "transform is a call of a built-in transform: transform = name(key=value, ...)");
  }
  TransformCall transform;
  transform.name = errors.textOf(field(call, "function"));
  transform.position = positionOf(call);
  for (TSNode argument : namedChildren(field(call, "arguments"))) {
    if (typeOf(argument) == "comment") continue;
    if (typeOf(argument) != "keyword_argument") {
      errors.at(argument,
                "give the transform's arguments by name: " + transform.name + "(key=value, ...)");
    }
    const std::string key = errors.textOf(field(argument, "name"));
    if (transform.arguments.contains(key))
      errors.at(argument, "argument '" + key + "' given twice");
    transform.arguments[key] = literalValue(field(argument, "value"), errors);
  }
  return transform;
}

struct FieldSpec {
  const char* name;
  bool required;
  enum Kind { kText, kList, kCount } kind;
};

const FieldSpec kFields[] = {
    {"name", true, FieldSpec::kText},        {"gap", true, FieldSpec::kText},
    {"why", true, FieldSpec::kText},         {"models", true, FieldSpec::kList},
    {"profiles", true, FieldSpec::kList},    {"clears", false, FieldSpec::kList},
    {"remove_when", true, FieldSpec::kText}, {"max_ulps", false, FieldSpec::kCount},
};

std::string fieldNames() {
  std::string names;
  for (const auto& spec : kFields) names += std::string(names.empty() ? "" : ", ") + spec.name;
  return names + ", transform";
}

void setField(AdapterMetadata& metadata, const FieldSpec& spec, const json& value, TSNode where,
              const FileErrors& errors) {
  const std::string name = spec.name;
  switch (spec.kind) {
    case FieldSpec::kText:
      if (!value.is_string() || value.get<std::string>().empty()) {
        errors.at(where, "'" + name + "' must be a non-empty string");
      }
      break;
    case FieldSpec::kList:
      if (!value.is_array()) errors.at(where, "'" + name + "' must be a list of strings");
      for (const auto& item : value) {
        if (!item.is_string()) errors.at(where, "'" + name + "' must be a list of strings");
      }
      break;
    case FieldSpec::kCount:
      if (!value.is_number_integer() || value.get<int64_t>() < 0) {
        errors.at(where, "'" + name + "' must be a whole number, 0 or more");
      }
      break;
  }
  if (name == "name") metadata.name = value;
  if (name == "gap") metadata.gap = value;
  if (name == "why") metadata.why = value;
  if (name == "models") metadata.models = value.get<std::vector<std::string>>();
  if (name == "profiles") metadata.profiles = value.get<std::vector<std::string>>();
  if (name == "clears") metadata.clears = value.get<std::vector<std::string>>();
  if (name == "remove_when") metadata.remove_when = value;
  if (name == "max_ulps") metadata.max_ulps = value;
}

bool isImport(const std::string& type) {
  return type == "import_statement" || type == "import_from_statement" ||
         type == "future_import_statement";
}

struct TreeDeleter {
  void operator()(TSTree* tree) const { ts_tree_delete(tree); }
};
struct ParserDeleter {
  void operator()(TSParser* parser) const { ts_parser_delete(parser); }
};

}  // namespace

SourcePosition AdapterFile::positionOf(const std::string& field_name) const {
  for (const auto& [name, position] : field_positions) {
    if (name == field_name) return position;
  }
  return {1, 1};
}

AdapterFile parseAdapterFile(const std::string& text, const std::string& path) {
  if (text.size() > kMaxAdapterFileBytes) {
    throw UserError(path + ": " + std::to_string(text.size()) +
                    " bytes; an adapter file is at most " + std::to_string(kMaxAdapterFileBytes));
  }
  const FileErrors errors(path, text);
  if (const auto deep = firstBracketDeeperThan(text, kMaxAdapterSyntaxDepth)) {
    errors.at(*deep, "brackets nested more than " + std::to_string(kMaxAdapterSyntaxDepth) +
                         " levels deep here; write the expression in steps");
  }
  std::unique_ptr<TSParser, ParserDeleter> parser(ts_parser_new());
  ts_parser_set_language(parser.get(), tree_sitter_python());
  std::unique_ptr<TSTree, TreeDeleter> tree(ts_parser_parse_string(
      parser.get(), nullptr, text.data(), static_cast<uint32_t>(text.size())));
  if (!tree) throw UserError(path + ": could not be parsed");
  const TSNode root = ts_tree_root_node(tree.get());
  if (const auto deep = firstNodeDeeperThan(root, kMaxAdapterSyntaxDepth)) {
    errors.at(*deep, "nested more than " + std::to_string(kMaxAdapterSyntaxDepth) +
                         " levels deep here; write the expression in steps");
  }
  if (ts_node_has_error(root)) {
    reportFirstSyntaxError(root, errors);
    errors.at(root, "syntax error");
  }

  AdapterFile file;
  file.path = path;
  file.source = text;
  std::map<std::string, AdapterFunction> functions;
  std::vector<AdapterFunction> helpers;
  std::set<std::string> assigned;
  bool first_statement = true;
  for (TSNode statement : namedChildren(root)) {
    const std::string type = typeOf(statement);
    if (type == "comment" || isImport(type)) continue;
    const bool first = first_statement;
    first_statement = false;
    if (type == "function_definition") {
      AdapterFunction function = functionOf(statement, errors);
      if (functions.count(function.name)) {
        errors.at(statement, "function '" + function.name + "' is defined twice");
      }
      functions[function.name] = function;
      continue;
    }
    if (type != "expression_statement") {
      errors.at(statement, "an adapter file holds a docstring, field assignments (" + fieldNames() +
                               ") and functions; not a " + type);
    }
    const TSNode expression = ts_node_named_child(statement, 0);
    if (typeOf(expression) == "string" && first) {
      file.docstring = decodeString(expression, errors);
      continue;
    }
    if (typeOf(expression) != "assignment" || typeOf(field(expression, "left")) != "identifier" ||
        ts_node_is_null(field(expression, "right"))) {
      errors.at(statement, "expected a field assignment (name = value) or a function");
    }
    const std::string name = errors.textOf(field(expression, "left"));
    const TSNode value = field(expression, "right");
    if (assigned.count(name)) errors.at(statement, "'" + name + "' is assigned twice");
    assigned.insert(name);
    file.field_positions.emplace_back(name, positionOf(value));
    if (name == "transform") {
      file.transform = transformOf(value, errors);
      continue;
    }
    const FieldSpec* spec = nullptr;
    for (const auto& candidate : kFields) {
      if (name == candidate.name) spec = &candidate;
    }
    if (!spec) errors.at(statement, "unknown field '" + name + "' (expected " + fieldNames() + ")");
    setField(file.metadata, *spec, literalValue(value, errors), value, errors);
  }

  const SourcePosition top{1, 1};
  for (const auto& spec : kFields) {
    if (spec.required && !assigned.count(spec.name)) {
      errors.at(top, "missing field '" + std::string(spec.name) + "'");
    }
  }
  if (const auto problem = adapterNameProblem(file.metadata.name)) {
    errors.at(file.positionOf("name"),
              "invalid adapter name \"" + file.metadata.name + "\": " + *problem);
  }
  const std::filesystem::path as_path(path);
  if (as_path.extension() == ".py" && as_path.stem() != file.metadata.name) {
    errors.at(file.positionOf("name"), "name '" + file.metadata.name +
                                           "' must match the file name '" +
                                           as_path.stem().string() + "'");
  }

  for (auto& [name, function] : functions) {
    if (name == "pattern") {
      file.pattern = function;
    } else if (name == "replacement") {
      file.replacement = function;
    } else if (name == "condition") {
      file.condition = function;
    } else {
      helpers.push_back(function);
    }
  }
  file.helpers = std::move(helpers);
  if (file.pattern.has_value() != file.replacement.has_value()) {
    const auto& present = file.pattern ? *file.pattern : *file.replacement;
    errors.at(present.position, std::string("a rewrite needs both pattern and replacement; ") +
                                    (file.pattern ? "replacement" : "pattern") + " is missing");
  }
  if (file.pattern && file.transform) {
    errors.at(file.transform->position,
              "an adapter is a rewrite (pattern and replacement) or a transform, not both");
  }
  if (!file.pattern && !file.transform) {
    errors.at(top,
              "an adapter needs a rewrite (def pattern and def replacement) or a "
              "transform = name(...)");
  }
  if (file.condition && !file.pattern) {
    errors.at(file.condition->position,
              "condition applies to a rewrite's matches: there is no pattern");
  }
  if (file.pattern && file.pattern->parameters != file.replacement->parameters) {
    errors.at(file.replacement->position,
              "replacement must take the same parameters as pattern, in the same order");
  }
  if (file.condition && file.condition->parameters != file.pattern->parameters) {
    errors.at(file.condition->position,
              "condition must take the same parameters as pattern, in the same order");
  }
  return file;
}

AdapterFile readAdapterFile(const std::string& path) {
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > kMaxAdapterFileBytes) {
    throw UserError(path + ": " + std::to_string(size) + " bytes; an adapter file is at most " +
                    std::to_string(kMaxAdapterFileBytes));
  }
  const std::optional<std::string> text = readTextFileIfPresent(path);
  if (!text) throw UserError(path + ": no such adapter file");
  return parseAdapterFile(*text, path);
}

}  // namespace stickler
