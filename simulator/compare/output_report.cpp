#include "simulator/compare/output_report.h"

namespace stickler {

const char* outputVerdictName(OutputVerdict verdict) {
  switch (verdict) {
    case OutputVerdict::kPass:
      return "pass";
    case OutputVerdict::kFail:
      return "fail";
    case OutputVerdict::kNone:
      return "none";
  }
  return "?";
}

}  // namespace stickler
