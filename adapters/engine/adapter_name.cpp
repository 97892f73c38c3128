#include "adapters/engine/adapter_name.h"

namespace stickler {
namespace {

constexpr size_t kMaxNameLength = 64;

bool isLowerAlpha(char c) {
  return c >= 'a' && c <= 'z';
}
bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

std::optional<std::string> adapterNameProblem(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return "use 1 to 64 characters";
  if (!isLowerAlpha(name.front())) return "start with a lower-case letter";
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '-' && (i + 1 == name.size() || name[i + 1] == '-')) {
      return "hyphens go between words, one at a time (kebab-case)";
    }
    if (c != '-' && !isLowerAlpha(c) && !isDigit(c)) {
      return "use lower-case letters, digits and hyphens (kebab-case)";
    }
  }
  return std::nullopt;
}

}  // namespace stickler
