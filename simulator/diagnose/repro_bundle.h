// Repro bundles: one failing operator of a model, alone in a TorchScript archive of its own,
// with the inputs the model really fed it (DESIGN.md: real inputs for repros) stored in the
// archive as inputs of kind captured, its weights as constants, and one command that shows the
// failure. A bundle is checked to fail the same way before it is handed over.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stickler {

struct LoadedModel;
struct DeviceProfile;

struct ReproBundle {
  std::string directory;
  std::string archive;  // <directory>/repro.pt
  std::string command;  // the one command that reproduces the failure
  bool reproduces = false;
  std::string observed;  // what the repro showed on the profile, in words
  std::string scope;     // "operator", or "module <path>" when it had to grow
  size_t grown = 0;      // how many smaller candidates failed to reproduce first
  double seconds = 0.0;  // how long writing and checking it took
};

// Writes the bundle for the aten node at `node_index` (in execution order among the graph's aten
// nodes, as compile reports number them) that the profile blocks with `rule`,
// checked: the archive alone must be blocked by the same rule on the same operator. When the
// operator alone is not, the bundle grows: the operator nested under its module path (for what
// the device does by path), then its module, then each enclosing module, until one is.
ReproBundle writeBlockerRepro(const LoadedModel& model, int64_t node_index, const std::string& rule,
                              const DeviceProfile& profile, const std::string& directory);

// The rule to pass writeBlockerRepro for the device compiler's own failure (a fault of kind
// compile_error): the archive alone must make the compiler fail in the same operator.
inline constexpr const char* kCompilerErrorRule = "compiler_error";

// The same for a run-time failure: the device run stopped in the first `op` of `module` (its
// display path, as run reports name it) with `status` (aborted, timed_out, failed); the archive
// alone on the device must stop the same way in the same operator, grown as above until it
// does. None when the module has no such operator.
std::optional<ReproBundle> writeRunFailureRepro(const LoadedModel& model, const std::string& module,
                                                const std::string& op, const std::string& status,
                                                const DeviceProfile& profile,
                                                const std::string& directory,
                                                double timeout_seconds);

}  // namespace stickler
