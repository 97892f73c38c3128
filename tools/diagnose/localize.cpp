// localize: the module whose execution on the device flips the end-to-end verdict, found by
// bisecting hybrid runs and confirmed (simulator/diagnose/causal_localization.h).
#include <algorithm>
#include <cstdio>

#include "simulator/backends/model_host_ahead.h"
#include "simulator/device/device_profile.h"
#include "simulator/diagnose/causal_localization.h"
#include "simulator/graph/model_facts.h"
#include "simulator/graph/module_table.h"
#include "simulator/support/errors.h"
#include "simulator/workers/fork_server.h"
#include "tools/adapters/adapter_support.h"
#include "tools/diagnose/decode_focus.h"
#include "tools/diagnose/localize_report.h"
#include "tools/diagnose/repro_bundles.h"
#include "tools/diagnose/threshold_options.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"
#include "tools/reports/report_outputs.h"
#include "tools/reports/report_text.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string model_path = context.resolvePath(requireString(input, "model"));
  const std::string profile_name = resolveProfile(requireString(input, "profile"), context);
  const std::shared_ptr<const DeviceProfile> shared_profile = sharedProfile(profile_name);
  const DeviceProfile& profile = *shared_profile;
  const std::vector<std::string> input_flags = optionalStrings(input, "inputs");
  const bool adapt = input.value("adapt", false);
  checkReportOutputs(input, context);
  json adapters = json::array();
  LocalizeOptions options;
  options.backend = spyreSimBackend(profile_name);
  options.timeout_seconds = input.at("timeout_seconds").get<double>();
  options.control = context.task();
  options.passes = input.value("passes", false);
  options.thresholds = thresholdSettings(input);
  options.all_causes = input.value("all_causes", false);
  options.max_runs = input.value("max_runs", int64_t{0});
  options.operators = input.value("operators", true);
  if (options.passes && (options.all_causes || options.max_runs > 0)) {
    throw UserError(
        "passes bisects the pass applications, once: all_causes and max_runs apply to the "
        "search over modules");
  }
  const int64_t decode_steps = input.value("decode", int64_t{0});
  if (decode_steps > 0 && adapt) {
    throw UserError(
        "decode localizes the archive's own prefill and step graphs, to which adapters are "
        "not applied yet: localize with adapt or with decode, not both");
  }
  // Every device run goes to the model's host, made by the fork server: started while the model
  // loads (and is adapted).
  startForkServerAhead();
  json decode;
  ModelHostAhead host_ahead;  // outlives the localization, whose first device run takes it over
  std::shared_ptr<const LoadedModel> model;
  if (decode_steps > 0) {
    const DecodeFocus found = focusOnDecodeStep(context, model_path, input_flags, options,
                                                decode_steps, std::nullopt, "localize_divergence");
    model = found.model;
    decode = found.decode;
  } else {
    // The model's host is made while this process runs the model for its reference, not after.
    model = modelToDiagnose(context, model_path, input_flags, adapt ? &profile : nullptr, &adapters,
                            [&](const std::shared_ptr<const LoadedModel>& shaped) {
                              host_ahead = startModelHostAhead(shaped, options.control.cancelled);
                            });
  }
  const LocalizationResult result = localizeDivergence(*model, options);
  json report = localizeReport(result);
  if (input.value("repro", true) && !options.passes) {
    if (json repro = numericsRepro(*model, result, profile, input, context); !repro.is_null()) {
      report["repro"] = std::move(repro);
    }
  }
  if (adapt) report["adapters_applied"] = adapters;
  if (decode_steps > 0) report["decode"] = decode;
  publishReport(report, input, context);
  return report;
}

// "a:1x16x64:float32, b:..." of an operator's recorded values (tensors only).
std::string shapesText(const json& values) {
  std::string text;
  for (const auto& value : values) {
    if (value.value("kind", "") != "Tensor") continue;
    std::string shape;
    for (const auto& size : value.value("shape", json::array())) {
      shape += (shape.empty() ? "" : "x") + std::to_string(size.get<int64_t>());
    }
    text += (text.empty() ? "" : ", ") + (shape.empty() ? "scalar" : shape) + " " +
            value.value("dtype", std::string());
  }
  return text.empty() ? "-" : text;
}

// The culprit's operators: which one fails the model, how it was confirmed, and what it saw.
std::string operatorLines(const json& found) {
  const int64_t candidates = found.value("candidates", int64_t{0});
  std::string text = candidates > 1
                         ? "  within it, of its " + std::to_string(candidates) + " operators (" +
                               std::to_string(found.value("runs", int64_t{0})) + " runs):\n"
                         : "  its only operator:\n";
  for (const auto& op : found["operators"]) {
    text += "    " + op["where"].get<std::string>() +
            (op.value("cpu_fallback", false) ? " [runs on the host CPU]" : "") + "\n      " +
            shapesText(op["inputs"]) + " -> " + shapesText(op["outputs"]) + "\n";
  }
  if (candidates > 1) {
    const json& confirmation = found["confirmation"];
    text += "    alone on the device " + confirmation["alone_on_device"].get<std::string>() +
            ", the module's other operators there " +
            confirmation["everything_else_on_device"].get<std::string>() +
            (confirmation["confirmed"].get<bool>() ? " (confirmed)" : " (NOT confirmed)") + "\n";
  }
  return text;
}

std::string renderText(const json& report) {
  std::string text = headlineText(report);
  if (report.contains("decode")) text += decodeFocusText(report["decode"], "localized");
  if (report.contains("adapters_applied") && !report["adapters_applied"].empty()) {
    text += "\nadapters applied first:";
    for (const auto& name : report["adapters_applied"]) text += " " + name.get<std::string>();
    text += "\n";
  }
  if (report.contains("culprit")) {
    const json& culprit = report["culprit"];
    text += "\nculprit: " + culprit["module"].get<std::string>() + " (" +
            culprit["module_class"].get<std::string>() + "), module " +
            std::to_string(culprit["position"].get<int64_t>()) + " of " +
            std::to_string(report["units"].get<int64_t>()) + " in execution order\n";
  }
  if (report.contains("culprit") && report["culprit"].contains("deviation") &&
      !report["culprit"]["deviation"].is_null()) {
    const json& deviation = report["culprit"]["deviation"];
    const std::string error =
        deviation["rel_l2"].is_number() ? metricText(deviation["rel_l2"]) : "non-finite";
    text += "  its error: relative L2 " + error + " against a threshold of " +
            metricText(deviation["threshold"]) + " (" + metricText(deviation["ratio_to_emulated"]) +
            "x the emulated format's)\n";
  }
  if (report.contains("culprit_operators")) text += operatorLines(report["culprit_operators"]);
  if (report.contains("numerics_onset")) {
    text += "  numerics: " + report["numerics_onset"]["explanation"].get<std::string>() + "\n";
  }
  if (report.contains("absorbed") && !report["absorbed"].empty()) {
    text +=
        "\nabsorbed downstream (over threshold, yet the model passes with them on the device):\n";
    text += deviationLines(report["absorbed"]);
  }
  if (report.contains("pass_culprit")) {
    const json& culprit = report["pass_culprit"];
    text += "\npass application " + std::to_string(culprit["application"].get<int64_t>()) + " of " +
            std::to_string(report["pass_applications"].get<int64_t>()) + ": " +
            culprit["pass"].get<std::string>() + " of " + culprit["op"].get<std::string>() + " (" +
            culprit["module"].get<std::string>() + ") into the kernel of " +
            culprit["into_op"].get<std::string>() + " (" +
            culprit["into_module"].get<std::string>() + ")\n";
  }
  if (report.contains("causes") && !report["causes"].empty() &&
      (report["causes"].size() > 1 || report["status"] != "localized")) {
    text += "\ncauses, in the order found:\n";
    int64_t number = 0;
    for (const auto& cause : report["causes"]) {
      text += "  " + std::to_string(++number) + ".";
      for (const auto& module : cause["modules"]) text += " " + module["module"].get<std::string>();
      const json& confirmation = cause["confirmation"];
      text += std::string(cause["kind"] == "together" ? " (only together)" : "") + ": alone " +
              confirmation["alone_on_device"].get<std::string>();
      for (const auto& without : confirmation["without_each"]) {
        text += ", without " + without["module"].get<std::string>() + " " +
                without["verdict"].get<std::string>();
      }
      text += ", everything else " + confirmation["everything_else_on_device"].get<std::string>() +
              (confirmation["confirmed"].get<bool>() ? " (confirmed" : " (NOT confirmed") + "; " +
              std::to_string(cause["runs"].get<int64_t>()) + " runs from run " +
              std::to_string(cause["first_run"].get<int64_t>()) + ")\n";
      if (cause.contains("span")) {
        text += "     within " + std::to_string(cause["span"]["modules"].get<int64_t>()) +
                " consecutive modules, " + cause["span"]["from"].get<std::string>() + " to " +
                cause["span"]["to"].get<std::string>() + "\n";
      }
    }
  }
  if (report.contains("repro")) text += numericsReproText(report["repro"]);
  if (report.contains("budget") && report["budget"]["exhausted"].get<bool>()) {
    const json& budget = report["budget"];
    text += "\nrun budget of " + std::to_string(budget["max_runs"].get<int64_t>()) +
            " spent; undecided: " + budget["undecided"]["reason"].get<std::string>();
    for (const auto& module : budget["undecided"]["modules"]) {
      text += "\n  " + module.get<std::string>();
    }
    text += "\n";
  }
  if (report.contains("runs") && !report["runs"].empty()) {
    text += "\ndevice runs (" + std::to_string(report["device_runs"].get<int64_t>()) +
            ", target at most " + std::to_string(report["device_run_target"].get<int64_t>()) +
            "):\n";
    for (const auto& trial : report["runs"]) {
      std::string verdict = trial["verdict"];
      verdict.resize(std::max<size_t>(verdict.size(), 9), ' ');  // aligned under "timed_out"
      text += "  " + verdict + " " + trial["device"].get<std::string>() + "\n";
    }
  }
  return text + reportFilesText(report);
}

}  // namespace

Operation makeLocalizeDivergenceOperation() {
  Operation operation;
  operation.name = "localize_divergence";
  operation.title = "Localize the module that makes a model fail";
  operation.description =
      "Find the module whose execution on the simulated device flips the end-to-end verdict: "
      "two identical whole-model runs first (nondeterminism is never blamed on a layer), then "
      "a binary search over the modules in execution order with hybrid runs (a prefix on the "
      "device, the rest on the CPU reference), then confirmation (the module alone on the "
      "device fails; everything but it on the device passes). Reports the culprit with its "
      "class and operators, or the modules that fail only together, and every device run "
      "(at most ceil(log2 M) + 4 for M modules and one culprit). Modules that fail only together "
      "are narrowed to a minimal set, each member confirmed; with all_causes every cause is "
      "named, within max_runs. With adapt, the catalog's "
      "adapters for the model and profile are applied first, without changing the session. "
      "The report is saved (report_id; get_report serves it as JSON, HTML or JUnit).";
  json schema = {
      {"type", "object"}, {"required", {"model", "profile"}}, {"additionalProperties", false}};
  schema["properties"]["model"] = modelField();
  schema["properties"]["profile"] = profileField();
  schema["properties"]["inputs"] = inputsField();
  schema["properties"]["adapt"] = adaptField();
  schema["properties"]["passes"] = {
      {"type", "boolean"},
      {"default", false},
      {"description",
       "Bisect the lowering's pass applications (fusions) instead of the modules: the whole "
       "model runs on the device with only the first N applications, like LLVM's "
       "-opt-bisect-limit, and the first application that makes the model fail is named."}};
  schema["properties"]["all_causes"] = {
      {"type", "boolean"},
      {"default", false},
      {"description",
       "Name every cause, not only the first: each cause found (one module, or a minimal set "
       "of modules that fail only together) is kept on the CPU reference and the modules left "
       "are searched again, until they pass on the device. Each cause comes with its "
       "confirmation runs, in the order found."}};
  schema["properties"]["operators"] = {
      {"type", "boolean"},
      {"default", true},
      {"description",
       "Within a culprit that is one module, search its own operators the same way (subsets of "
       "them on the device, everything else on the CPU reference) and name the operator, or the "
       "minimal set of operators, that makes it fail, with its node, source line, shapes and "
       "dtypes: about ceil(log2 K) + 2 more device runs for K operators."}};
  schema["properties"]["repro"] = {
      {"type", "boolean"},
      {"default", true},
      {"description",
       "Write a reproducer of the culprit (its operator when one was named, else the module, "
       "grown to an enclosing module until it fails alone): a small archive with the inputs "
       "the model fed it and its fp32 and float64 reference outputs, whose `stickler run` "
       "fails on the profile and passes on the same profile without its fault rules; checked "
       "(reproduces). A few runs of the region, none of the model."}};
  schema["properties"]["bundle_dir"] = {
      {"type", "string"},
      {"description",
       "Where the reproducer goes (default stickler-repros/<model name> in the workspace)."}};
  schema["properties"]["max_runs"] = {
      {"type", "integer"},
      {"minimum", 3},
      {"maximum", 100000},
      {"description",
       "At most this many device runs in all (the two determinism runs included); the report "
       "says what was left undecided when they ran out. Default: four times the single-cause "
       "target, 4 * (ceil(log2 M) + 4) for M modules."}};
  schema["properties"]["decode"] = {
      {"type", "integer"},
      {"minimum", 0},
      {"maximum", 4096},
      {"description",
       "Localize over decode: the prefill and this many greedy steps run in lockstep with the "
       "CPU reference (as run_model's decode), then the first step that does not pass is "
       "bisected on the inputs the reference fed it (the reference's KV cache for the steps "
       "before it), and its culprit module named. 0: one forward pass."}};
  schema["properties"]["timeout_seconds"] = timeoutField();
  addThresholdFields(schema["properties"]);
  schema["properties"]["html"] = htmlReportField();
  schema["properties"]["junit"] = junitReportField();
  operation.input_schema = schema;
  operation.output_schema = {
      {"type", "object"},
      {"properties",
       {{"schema", {{"const", "stickler.localize"}}},
        {"status",
         {{"enum",
           {"localized", "localized_with_other_causes", "needs_several", "several_causes",
            "budget_exhausted", "passes", "nondeterministic", "blocked", "pass_localized",
            "no_pass_applications", "fails_without_passes"}}}},
        {"summary", {{"type", "string"}}},
        {"culprit", {{"type", "object"}}},
        {"causes", {{"type", "array"}}},
        {"budget", {{"type", "object"}}},
        {"repro", {{"type", "object"}}},
        {"decode", {{"type", "object"}}},
        {"device_runs", {{"type", "integer"}}}}},
      {"required", {"schema", "status", "summary"}}};
  operation.annotations = {.read_only = false, .destructive = false, .idempotent = true};
  operation.cli = {"localize", {"model"}, {{"inputs", "input"}, {"timeout_seconds", "timeout"}}};
  operation.run = run;
  operation.render_text = renderText;
  operation.exit_status = [](const json& report) {
    return report["status"] == localizeStatusName(LocalizeStatus::kBlocked) ? ExitStatus::kBlocked
                                                                            : ExitStatus::kOk;
  };
  return operation;
}

}  // namespace stickler
