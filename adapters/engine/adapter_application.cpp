#include "adapters/engine/adapter_application.h"

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/graph_rewrite.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "simulator/device/device_profile.h"
#include "simulator/support/errors.h"
#include "simulator/support/sha256.h"

namespace stickler {
namespace {

std::string transformLocation(const AdapterFile& adapter) {
  return adapter.path + ":" + std::to_string(adapter.transform->position.line) + ":" +
         std::to_string(adapter.transform->position.column);
}

}  // namespace

void validateAdapter(const AdapterFile& adapter) {
  if (adapter.transform) {
    nlohmann::json arguments = adapter.transform->arguments;
    resolveTransform(adapter.transform->name, arguments, transformLocation(adapter));
  } else {
    compileRewrite(adapter);
  }
}

std::string adaptedIdentity(const std::string& base_identity, const std::string& adapter_name) {
  return sha256Bytes(base_identity + "+" + adapter_name);
}

AdapterApplication applyAdapter(const AdapterFile& adapter,
                                std::shared_ptr<const LoadedModel> model,
                                const DeviceProfile& profile, bool check_equivalence) {
  AdapterApplication application;
  application.adapter = adapter;
  application.before = model;
  GraphEdit edit(*model);
  if (adapter.transform) {
    nlohmann::json arguments = adapter.transform->arguments;
    const std::string where = transformLocation(adapter);
    const BuiltinTransform& transform = resolveTransform(adapter.transform->name, arguments, where);
    try {
      transform.apply(arguments, edit, profile);
    } catch (const UserError& e) {
      throw UserError(where + ": " + e.what());
    }
  } else {
    const CompiledRewrite rewrite = compileRewrite(adapter);
    application.refused_by_condition =
        applyRewrite(rewrite, edit, adapter.path).refused_by_condition;
  }
  application.change = edit.change();
  if (!application.changed()) return application;
  edit.graph().lint();
  auto after = rebuildModel(*model, model->module, edit.takeGraph(),
                            adaptedIdentity(model->sha256, adapter.metadata.name));
  after->host_modules = edit.hostModules();
  if (edit.change().fixes_shapes) after->card.fixed_shapes = true;
  application.after = std::move(after);
  if (check_equivalence) {
    application.equivalence =
        checkEquivalence(*model, *application.after, adapter.metadata.max_ulps);
  }
  return application;
}

}  // namespace stickler
