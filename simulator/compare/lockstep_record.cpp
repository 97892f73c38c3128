#include "simulator/compare/lockstep_record.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace stickler {
namespace {

// strtod reads the "inf" and "nan" that printf writes (operator>> does not) and, unlike
// std::stod, does not throw on a subnormal.
bool parsed(const std::string& token, double* value) {
  char* end = nullptr;
  *value = std::strtod(token.c_str(), &end);
  return end != token.c_str() && *end == '\0';
}

bool parsed(const std::string& token, int64_t* value) {
  char* end = nullptr;
  *value = std::strtoll(token.c_str(), &end, 10);
  return end != token.c_str() && *end == '\0';
}

}  // namespace

std::string encodeLockstepRecord(const LockstepRecord& record) {
  std::string text;
  char line[256];
  for (const ModuleErrors& errors : record.modules) {
    std::snprintf(line, sizeof line, "%lld %.9g %.9g %.9g %.9g %.9g %d\n",
                  static_cast<long long>(errors.call), errors.max_abs, errors.mean_abs,
                  errors.cosine, errors.rel_l2, errors.sqnr_db, errors.non_finite ? 1 : 0);
    text += line;
  }
  for (const NonFiniteMark& mark : record.non_finite) {
    std::snprintf(line, sizeof line, "nonfinite %lld %s %lld\n",
                  static_cast<long long>(mark.position), mark.nan ? "nan" : "inf",
                  static_cast<long long>(mark.elements));
    text += line;
  }
  return text;
}

LockstepRecord decodeLockstepRecord(const std::string& text) {
  LockstepRecord record;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::vector<std::string> tokens;
    for (std::string token; fields >> token;) tokens.push_back(token);
    if (tokens.size() == 4 && tokens[0] == "nonfinite") {
      NonFiniteMark mark;
      mark.nan = tokens[2] == "nan";
      if (parsed(tokens[1], &mark.position) && parsed(tokens[3], &mark.elements)) {
        record.non_finite.push_back(mark);
      }
    } else if (tokens.size() == 7) {
      ModuleErrors errors;
      errors.non_finite = tokens[6] == "1";
      if (parsed(tokens[0], &errors.call) && parsed(tokens[1], &errors.max_abs) &&
          parsed(tokens[2], &errors.mean_abs) && parsed(tokens[3], &errors.cosine) &&
          parsed(tokens[4], &errors.rel_l2) && parsed(tokens[5], &errors.sqnr_db)) {
        record.modules.push_back(errors);
      }
    }
  }
  return record;
}

}  // namespace stickler
