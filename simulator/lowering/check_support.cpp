#include "simulator/lowering/check_support.h"

#include "simulator/lowering/lowering.h"
#include "simulator/support/errors.h"

namespace stickler {

nlohmann::json checkSupport(const CheckSupportRequest& request) {
  const DeviceProfile profile = loadProfile(request.profile);
  LoadOptions options;
  for (const auto& flag : request.inputs) options.inputs.push_back(parseInputFlag(flag));
  const auto model = loadModel(request.model, options);
  Placement placement{request.device_modules};
  for (const auto& module : placement.device_modules) {
    if (model->modules.find(module) == nullptr) {
      throw UserError("no module '" + module + "' in " + request.model);
    }
  }
  const LoweringResult result = lower(*model, profile, placement);
  nlohmann::json report = loweringToJson(result, *model, profile);
  return {{"schema", "stickler.check"},
          {"version", 1},
          {"model", {{"path", model->path}, {"sha256", model->sha256}, {"name", model->card.name}}},
          {"profile", profileSummary(profile)},
          {"placement", placement.wholeModel() ? nlohmann::json("whole model")
                                               : nlohmann::json(placement.device_modules)},
          {"lowering", report}};
}

}  // namespace stickler
