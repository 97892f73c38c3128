// What a run compared with its reference in lockstep found (module_errors.h): each module
// call's error and the operators whose results turned non-finite. Plain data, so that a model
// host can send it back with the run's outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stickler {

// How far a module call's outputs (its float tensors, together) are from the reference's.
struct ModuleErrors {
  int64_t call = -1;  // index into the interpreter's module calls
  double max_abs = 0.0;
  double mean_abs = 0.0;
  double cosine = 1.0;
  double rel_l2 = 0.0;      // |device - reference| / |reference|
  double sqnr_db = 0.0;     // 10 log10(|reference|^2 / |device - reference|^2); inf when equal
  bool non_finite = false;  // NaN or inf where the reference is finite
};

// An operator whose result turned non-finite from inputs that were not, by its position in
// allNodes() order (the run may have been a model host's, of the same graph).
struct NonFiniteMark {
  int64_t position = -1;
  bool nan = false;  // NaN from inputs without; else inf from finite inputs
  int64_t elements = 0;
};

struct LockstepRecord {
  std::vector<ModuleErrors> modules;      // in execution order
  std::vector<NonFiniteMark> non_finite;  // in the order they ran
};

// One line per entry; inf and nan as printf writes them.
std::string encodeLockstepRecord(const LockstepRecord& record);
// Lines that do not parse are skipped: a record is evidence, not a contract.
LockstepRecord decodeLockstepRecord(const std::string& text);

}  // namespace stickler
