#include "simulator/lowering/compile_report.h"

namespace stickler {

const char* compileStatusName(CompileStatus status) {
  switch (status) {
    case CompileStatus::kOk:
      return "ok";
    case CompileStatus::kBlocked:
      return "blocked";
    case CompileStatus::kCompilerError:
      return "compiler_error";
  }
  return "?";
}

}  // namespace stickler
