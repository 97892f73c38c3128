// Repro bundles: one failing operator of a model, alone in a TorchScript archive of its own,
// with the inputs the model really fed it (DESIGN.md: real inputs for repros) stored in the
// archive as inputs of kind captured, its weights as constants, and one command that shows the
// failure. A bundle is checked to fail the same way before it is handed over.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace torch::jit {
struct Node;
}  // namespace torch::jit

namespace stickler {

struct LoadedModel;
struct DeviceProfile;

struct ReproBundle {
  std::string directory;
  std::string archive;  // <directory>/repro.pt
  std::string command;  // the one command that reproduces the failure
  bool reproduces = false;
  std::string observed;  // what the repro showed on the profile, in words
  double seconds = 0.0;  // how long writing and checking it took
};

// Writes the bundle for `node` (a node of `model`'s graph) that the profile blocks with `rule`,
// and checks that the archive alone is blocked by the same rule on the same operator.
ReproBundle writeBlockerRepro(const LoadedModel& model, const torch::jit::Node& node,
                              const std::string& rule, const DeviceProfile& profile,
                              const std::string& directory);

nlohmann::json reproToJson(const ReproBundle& bundle);

}  // namespace stickler
