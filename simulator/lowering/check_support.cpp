#include "simulator/lowering/check_support.h"

#include "simulator/lowering/host_placement.h"
#include "simulator/lowering/lowering.h"

namespace stickler {

CheckSupportResult checkSupport(const CheckSupportRequest& request, const TaskControl& control,
                                ModelCache* cache) {
  CheckSupportResult result;
  result.profile = loadProfile(request.profile);
  control.progress(0, 2, "loading " + request.model);
  // Lowering reads shapes, dtypes and strides: the weights' values are never needed.
  const auto model = obtainModel(request.model, request.inputs, cache, ModelNeeds::kShapes);
  control.checkCancelled();
  control.progress(1, 2, "lowering for " + result.profile.name);
  result.model = model->identity();
  result.placement =
      makePlacement(model->modules, request.device_modules, request.model, model->host_modules);
  result.compile =
      describeLowering(lower(*model, result.profile, result.placement), *model, result.profile);
  result.host_nodes = countPlacedOnHost(*model->graph);
  return result;
}

CompileReport compileLoaded(const LoadedModel& model, const DeviceProfile& profile) {
  const Placement placement = makePlacement(model.modules, {}, model.path, model.host_modules);
  return describeLowering(lower(model, profile, placement), model, profile);
}

}  // namespace stickler
