#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/graph/model_cache.h"
#include "simulator/support/task_control.h"

namespace stickler {

struct InspectRequest {
  std::string model;                // path to a TorchScript archive
  std::vector<std::string> inputs;  // --input flags, replacing the model card's inputs
  bool include_nodes = true;        // list every aten node
};

// The inspect report (docs/inspect-json.md): module tree, parameters, operator histogram,
// inputs, outputs from a CPU run and, optionally, every aten node with its module path,
// source position and shapes.
// `cache`, when given, keeps the loaded model for later calls.
nlohmann::json inspectModel(const InspectRequest& request, const TaskControl& control = {},
                            ModelCache* cache = nullptr);

}  // namespace stickler
