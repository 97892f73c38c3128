#include "simulator/lowering/check_support.h"

#include "simulator/lowering/host_placement.h"
#include "simulator/lowering/lowering.h"
#include "simulator/support/errors.h"

namespace stickler {

nlohmann::json checkSupport(const CheckSupportRequest& request, const TaskControl& control,
                            ModelCache* cache) {
  const DeviceProfile profile = loadProfile(request.profile);
  control.progress(0, 2, "loading " + request.model);
  const auto model = obtainModel(request.model, request.inputs, cache);
  control.checkCancelled();
  control.progress(1, 2, "lowering for " + profile.name);
  const Placement placement =
      makePlacement(model->modules, request.device_modules, request.model, model->host_modules);
  const LoweringResult result = lower(*model, profile, placement);
  nlohmann::json report = loweringToJson(result, *model, profile);
  nlohmann::json check = {
      {"schema", "stickler.check"},
      {"version", 1},
      {"model", {{"path", model->path}, {"sha256", model->sha256}, {"name", model->card.name}}},
      {"profile", profileSummary(profile)},
      {"placement", placement.wholeModel() ? nlohmann::json("whole model")
                                           : nlohmann::json(placement.device_modules)},
      {"lowering", report}};
  if (!placement.host_modules.empty()) check["host_modules"] = placement.host_modules;
  if (const int64_t nodes = countPlacedOnHost(*model->graph)) check["host_nodes"] = nodes;
  return check;
}

}  // namespace stickler
