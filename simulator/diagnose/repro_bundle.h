// Repro bundles: one failing operator of a model, alone in a TorchScript archive of its own,
// with the inputs the model really fed it (DESIGN.md: real inputs for repros) stored in the
// archive as inputs of kind captured, its weights as constants, and one command that shows the
// failure. A bundle is checked to fail the same way before it is handed over.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stickler {

struct LoadedModel;
struct DeviceProfile;

// A numerical failure's bundle (writeNumericsRepro): how its outputs were judged, and the
// profile without the fault on which it must pass.
struct NumericsReproCheck {
  // Per floating output: the largest relative L2 error against the CPU fp32 reference that
  // passes: margin x the error of the device's format emulated on the CPU for these inputs,
  // at least the format's unit roundoff (module_thresholds.h, on one input).
  std::vector<double> tolerances;
  std::vector<std::optional<double>> relative_l2;  // the device's, on the faulty profile
  // The fp32 reference's own error against float64 (both stored in the archive): how far the
  // reference itself may be trusted.
  std::vector<std::optional<double>> reference_relative_l2_float64;
  // The profile with no fault rules (a file in the bundle); empty when the profile has none,
  // so the failure is its number format's, with no fault to remove.
  std::string clean_profile;
  std::string clean_command;
  std::optional<bool> clean_passes;
  std::string clean_observed;
};

struct ReproBundle {
  std::string directory;
  std::string archive;  // <directory>/repro.pt
  std::string command;  // the one command that reproduces the failure
  bool reproduces = false;
  std::string observed;  // what the repro showed on the profile, in words
  std::string scope;     // "operator", or "module <path>" when it had to grow
  size_t grown = 0;      // how many smaller candidates failed to reproduce first
  double seconds = 0.0;  // how long writing and checking it took
  std::optional<NumericsReproCheck> numerics;  // a numerical failure's
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

// A numerical failure: the region's outputs on the device are further from the CPU reference
// than the tolerance, with everything else of the model on the CPU. The region starts at the
// aten node at `node` (a position in allNodes order) when given, else at the module `module`
// (its path in the model, as LoadedModel's module table has it), and grows as above until the
// archive alone fails its verdict on `profile` (`stickler run` exits 1) and, when the profile
// has fault rules, passes on the same profile without them (written into the bundle as
// clean-profile.json). The archive stores its captured inputs, and its fp32 and float64
// reference outputs (ModelCard::kReferenceOutputsPath); its card judges each output as an
// activation with the tolerance above (`margin` is the thresholds' margin).
ReproBundle writeNumericsRepro(const LoadedModel& model, const std::string& module,
                               std::optional<int64_t> node, const DeviceProfile& profile,
                               const std::string& directory, double margin, double timeout_seconds);

}  // namespace stickler
