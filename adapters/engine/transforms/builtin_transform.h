// Built-in transforms: adaptations a local rewrite cannot express (padding weights and slicing
// results back, reshaping attention heads), called from an adapter file as
// `transform = name(key=value, ...)`. Each keeps module paths on the nodes it creates.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/device/device_profile.h"

namespace stickler {

class GraphEdit;

struct TransformParameter {
  std::string name;
  std::string type;              // "string", "integer", "boolean"
  nlohmann::json default_value;  // null: required
  std::string description;
};

struct BuiltinTransform {
  std::string name;
  std::string description;
  std::vector<TransformParameter> parameters;
  // Changes `edit`'s graph; `arguments` are checked against `parameters` and completed with
  // the defaults. Throws UserError for arguments the model or profile cannot honor.
  void (*apply)(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile);
};

const std::vector<BuiltinTransform>& builtinTransforms();

// The transform and its arguments, checked and completed; UserError "where: message" for an
// unknown transform, an unknown or mistyped argument, or a missing one.
const BuiltinTransform& resolveTransform(const std::string& name, nlohmann::json& arguments,
                                         const std::string& where);

// The vocabulary rule (FACTS.md): outputs padded to whole sticks, then to a stick count
// whose largest prime factor's slice fits the per-core span. 151936 outputs over a hidden
// size of 4096 in fp16 become 2375 sticks (152000 outputs).
int64_t paddedOutputSize(int64_t outputs, int64_t inputs, const DeviceProfile& profile);

void padToSticks(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile);
void padHiddenSize(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile);
void padIntermediateSize(const nlohmann::json& arguments, GraphEdit& edit,
                         const DeviceProfile& profile);
void precomputeTables(const nlohmann::json& arguments, GraphEdit& edit,
                      const DeviceProfile& profile);
void runOnHost(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile);
void decomposeOp(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile);
void buildMasksOnHost(const nlohmann::json& arguments, GraphEdit& edit,
                      const DeviceProfile& profile);
void padAttentionHeads(const nlohmann::json& arguments, GraphEdit& edit,
                       const DeviceProfile& profile);
void restickify(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile);

}  // namespace stickler
