#include "tools/diagnose/repro_bundles.h"

#include <filesystem>
#include <optional>

#include "simulator/diagnose/repro_bundle.h"
#include "simulator/graph/model_facts.h"
#include "simulator/graph/module_table.h"
#include "simulator/support/phase_times.h"
#include "tools/diagnose/threshold_options.h"
#include "tools/framework/operation.h"
#include "tools/framework/operation_table.h"
#include "tools/reports/result_json.h"

namespace stickler {

namespace fs = std::filesystem;
using nlohmann::json;

std::string bundleName(size_t index, const std::string& rule, const std::string& op,
                       const std::string& module) {
  std::string name = (index < 9 ? "0" : "") + std::to_string(index + 1) + "-" + rule + "-" +
                     op.substr(op.find("::") == std::string::npos ? 0 : op.find("::") + 2) + "-" +
                     (module.empty() ? "root" : module);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') c = '_';
  }
  return name;
}

std::string bundleDirectory(const json& input, const LoadedModel& model,
                            OperationContext& context) {
  if (input.contains("bundle_dir")) return context.resolvePath(requireString(input, "bundle_dir"));
  // Made first: the workspace resolves a path through its existing parent directory.
  const fs::path directory =
      fs::path(context.workspaceRoot()) / "stickler-repros" / cardOf(model).name;
  std::error_code ec;
  fs::create_directories(directory, ec);
  return context.resolvePath(directory.string());
}

json numericsRepro(const LoadedModel& model, const LocalizationResult& result,
                   const DeviceProfile& profile, const json& input, OperationContext& context) {
  std::string module;
  std::optional<int64_t> node;
  std::string op;
  if (result.numerics_mode) {
    if (result.whole_model_verdict != RunVerdict::kFail || !result.deviations ||
        result.deviations->empty()) {
      return nullptr;
    }
    module = result.deviations->front().module;
    op = result.deviations->front().module_class;
  } else {
    const bool single = result.status == LocalizeStatus::kLocalized ||
                        result.status == LocalizeStatus::kLocalizedWithOtherCauses ||
                        result.status == LocalizeStatus::kSeveralCauses;
    if (!single || !result.culprit || result.together) return nullptr;
    module = result.culprit->module;
    op = result.culprit->module_class;
    if (result.culprit_operators && result.culprit_operators->operators.size() == 1) {
      node = result.culprit_operators->operators.front().node;
      op = result.culprit_operators->operators.front().op;
    }
  }
  if (module == "<root>") module.clear();
  const double timeout = input.at("timeout_seconds").get<double>();
  try {
    // A culprit that stops the device (an abort, a hang) gets the run-failure bundle of its
    // operator, as diagnose's mode run writes it; a numerical one the bundle judged by values.
    const RunVerdict alone = result.alone_verdict.value_or(RunVerdict::kFail);
    if (!result.numerics_mode && alone != RunVerdict::kFail) {
      if (!node) return nullptr;
      const std::string status = runVerdictName(alone);
      const std::string directory = (fs::path(bundleDirectory(input, model, context)) /
                                     bundleName(0, "run-" + status, op, module))
                                        .string();
      const auto bundle =
          writeRunFailureRepro(model, displayPath(module), op, status, profile, directory, timeout);
      return bundle ? reproToJson(*bundle) : json(nullptr);
    }
    const std::string directory =
        (fs::path(bundleDirectory(input, model, context)) / bundleName(0, "numerics", op, module))
            .string();
    const double start = phaseClock();
    const ReproBundle bundle = writeNumericsRepro(model, module, node, profile, directory,
                                                  thresholdSettings(input).margin, timeout);
    notePhase("wrote and checked the reproducer: " + bundle.archive, phaseClock() - start);
    return reproToJson(bundle);
  } catch (const std::exception& e) {
    // A bundle that cannot be made does not undo the localization.
    return {{"error", std::string(e.what()).substr(0, 500)}};
  }
}

std::string numericsReproText(const json& repro) {
  if (repro.contains("error")) {
    return "\nno repro: " + repro["error"].get<std::string>() + "\n";
  }
  std::string text = "\nrepro (" +
                     std::string(repro.value("reproduces", false) ? "checked" : "NOT reproduced") +
                     ", " + repro.value("scope", "") + "): " + repro.value("command", "") +
                     "\n  on the profile: " + repro.value("observed", "") + "\n";
  const json numerics = repro.value("numerics", json::object());
  if (numerics.contains("clean_command")) {
    text += "  without its fault rules: " + numerics.value("clean_observed", "") + "\n    " +
            numerics["clean_command"].get<std::string>() + "\n";
  }
  return text;
}

}  // namespace stickler
