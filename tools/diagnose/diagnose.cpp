// diagnose: what stops a model on the device, in one report. Mode compile lists every blocker
// with the catalog adapters that clear it and a checked repro bundle per distinct blocker; mode
// run runs the model and, when the device aborts, names the module and operator that were
// executing, then confirms it by running that module alone on the device; mode numerics compares
// each module with the reference in lockstep against derived thresholds.
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "adapters/engine/adapter_matching.h"
#include "knowledge/kb_index.h"
#include "simulator/backends/model_host_ahead.h"
#include "simulator/device/device_profile.h"
#include "simulator/diagnose/causal_localization.h"
#include "simulator/diagnose/repro_bundle.h"
#include "simulator/graph/model_facts.h"
#include "simulator/graph/module_table.h"
#include "simulator/lowering/check_support.h"
#include "simulator/run/run_model.h"
#include "simulator/support/errors.h"
#include "tools/adapters/adapter_support.h"
#include "tools/diagnose/decode_focus.h"
#include "tools/diagnose/localize_report.h"
#include "tools/diagnose/repro_bundles.h"
#include "tools/diagnose/threshold_options.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"
#include "tools/knowledge/knowledge_support.h"
#include "tools/model/lowering_text.h"
#include "tools/model/run_report.h"
#include "tools/reports/report_outputs.h"
#include "tools/reports/report_text.h"
#include "tools/reports/result_json.h"

namespace stickler {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The knowledge-base pages that speak of a blocker's rule and operator: where an agent reads
// what the device does there and what was done about it before.
json knowledgeHints(const std::string& rule, const std::string& op, const std::string& module_class,
                    OperationContext& context) {
  std::string query = op.substr(op.find("::") == std::string::npos ? 0 : op.find("::") + 2);
  query += " " + rule + " " + module_class;
  json hints = json::array();
  try {
    for (const KbHit& hit : knowledgeIndexFor(gotchasDirectory(context)).search(query, 2)) {
      hints.push_back({{"id", hit.id},
                       {"title", hit.title},
                       {"heading", hit.heading},
                       {"uri", knowledgeUri(hit.kind, hit.id)}});
    }
  } catch (const std::exception&) {
    // No hints is not a failed diagnosis.
  }
  return hints;
}

json diagnoseCompile(const std::shared_ptr<const LoadedModel>& model, const DeviceProfile& profile,
                     const std::string& bundle_dir, OperationContext& context) {
  const CompileReport compile = compileLoaded(*model, profile);
  json report = compileReportToJson(compile);
  // Which catalog adapters clear which blockers (rule, op, module).
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::string>> clearing;
  if (!compile.blockers.empty()) {
    for (const AdapterMatch& match : matchAdapters(adapterCatalog(context), model, profile)) {
      if (!match.applies) continue;
      for (const BlockerCount& cleared : match.clears) {
        clearing[{cleared.rule, cleared.op, cleared.module}].push_back(match.name);
      }
    }
  }
  std::map<std::tuple<std::string, std::string, std::string>, json> bundles;
  for (size_t i = 0; i < compile.blockers.size(); ++i) {
    context.task().checkCancelled();
    const BlockerReport& blocker = compile.blockers[i];
    const auto key = std::make_tuple(blocker.rule, blocker.op, blocker.module_path);
    json& entry = report["blockers"][i];
    entry["adapters"] = clearing.count(key) ? json(clearing[key]) : json::array();
    entry["hints"] = knowledgeHints(blocker.rule, blocker.op, blocker.module_class, context);
    if (!bundles.count(key)) {
      const std::string directory =
          (fs::path(bundle_dir) /
           bundleName(bundles.size(), blocker.rule, blocker.op, blocker.module_path))
              .string();
      try {
        bundles[key] = reproToJson(
            writeBlockerRepro(*model, blocker.node_index, blocker.rule, profile, directory));
      } catch (const std::exception& e) {
        // One bundle that cannot be made (an operator without activations, an archive LibTorch
        // cannot write) is reported in its place; the diagnosis goes on.
        bundles[key] = {{"error", std::string(e.what()).substr(0, 500)}};
      }
    }
    entry["repro"] = bundles[key];
  }
  // The device compiler itself failing (no blocker names it): where, and a bundle that makes
  // it fail the same way.
  if (const auto& site = compile.compiler_error_site) {
    json failure = {{"op", site->op},
                    {"module", displayPath(site->module_path)},
                    {"module_class", site->module_class},
                    {"message", compile.compiler_error.value_or("")}};
    const std::string directory =
        (fs::path(bundle_dir) /
         bundleName(bundles.size(), kCompilerErrorRule, site->op, site->module_path))
            .string();
    try {
      failure["repro"] = reproToJson(
          writeBlockerRepro(*model, site->node_index, kCompilerErrorRule, profile, directory));
      bundles[{kCompilerErrorRule, site->op, site->module_path}] = failure["repro"];
    } catch (const std::exception& e) {
      failure["repro"] = {{"error", std::string(e.what()).substr(0, 500)}};
    }
    report["compiler_failure"] = failure;
  }
  report["repro_bundles"] = bundles.size();
  return report;
}

json diagnoseRun(const std::shared_ptr<const LoadedModel>& model, const DeviceProfile& profile,
                 const std::string& profile_name, double timeout_seconds,
                 const std::string& bundle_dir, OperationContext& context) {
  RunRequest request;
  request.timeout_seconds = timeout_seconds;
  request.loaded = model;
  request.model = identityOf(*model).path;
  request.backend = spyreSimBackend(profile_name);
  json report = runReport(runModel(request, context.task()));
  if (!report.contains("run") || report["run"]["status"] == "completed") return report;
  // The device died: the module it was in, run alone on the device, must die the same way.
  const json& run = report["run"];
  const std::string module = run.value("module", "");
  json pinned = {{"module", module},
                 {"module_class", run.value("module_class", "")},
                 {"op", run.value("op", "")},
                 {"last_module_entered", run.value("last_module_entered", "")}};
  if (!module.empty() && module != "<root>" && modulesOf(*model).find(module) != nullptr) {
    request.device_modules = {module};
    const RunResult alone = runModel(request, context.task());
    const std::string status = alone.run ? alone.run->status : "";
    pinned["alone_on_device"] = status.empty() ? runVerdictName(alone.verdict) : status;
    pinned["confirmed"] = status == run.value("status", "");
  } else {
    pinned["confirmed"] = false;
  }
  // A bundle that fails the same way alone: the operator, grown to its module and beyond until
  // it does.
  const std::string status = run.value("status", "");
  const std::string op = run.value("op", "");
  const std::string directory =
      (fs::path(bundle_dir) / bundleName(0, "run-" + status, op, module)).string();
  try {
    if (const auto bundle =
            writeRunFailureRepro(*model, module, op, status, profile, directory, timeout_seconds)) {
      pinned["repro"] = reproToJson(*bundle);
    }
  } catch (const std::exception& e) {
    pinned["repro"] = {{"error", std::string(e.what()).substr(0, 500)}};
  }
  report["failing_module"] = pinned;
  return report;
}

json diagnoseNumerics(const LoadedModel& model, const DeviceProfile& profile,
                      const std::string& profile_name, const json& input,
                      OperationContext& context) {
  LocalizeOptions options;
  options.backend = spyreSimBackend(profile_name);
  options.timeout_seconds = input.at("timeout_seconds").get<double>();
  options.control = context.task();
  options.thresholds = thresholdSettings(input);
  const LocalizationResult result = lockstepNumerics(model, options);
  json report = localizeReport(result);
  if (json repro = numericsRepro(model, result, profile, input, context); !repro.is_null()) {
    report["repro"] = std::move(repro);
  }
  return report;
}

// diagnose --models: the blocker ranking across models (rank_blockers), as a diagnosis report.
json rankAcrossModels(const json& input, OperationContext& context) {
  if (input.contains("model")) throw UserError("give either model or models, not both");
  if (input.value("mode", "compile") != "compile") {
    throw UserError("models ranks compile blockers: it takes mode compile only");
  }
  json ranking =
      runOperation(operationNamed("rank_blockers"),
                   {{"profile", input["profile"]}, {"models", input["models"]}}, context);
  publishReport(ranking, input, context);
  return ranking;
}

json run(const json& input, OperationContext& context) {
  checkReportOutputs(input, context);
  if (input.contains("models")) return rankAcrossModels(input, context);
  if (!input.contains("model")) throw UserError("missing required field 'model' (or 'models')");
  const std::string model_path = context.resolvePath(requireString(input, "model"));
  const std::string profile_name = resolveProfile(requireString(input, "profile"), context);
  const DeviceProfile profile = loadProfile(profile_name);
  const std::vector<std::string> input_flags = optionalStrings(input, "inputs");
  const std::string mode = input.value("mode", "compile");
  if (mode != "compile" && mode != "run" && mode != "numerics") {
    throw UserError("mode must be compile, run or numerics, not '" + mode + "'");
  }
  json adapters = json::array();
  ModelHostAhead host_ahead;  // outlives the comparison, whose device run takes it over
  std::shared_ptr<const LoadedModel> model;
  json decode;
  const int64_t decode_steps = input.value("decode", int64_t{0});
  if (decode_steps > 0) {
    if (mode != "numerics") {
      throw UserError("decode compares a decode step module by module: it takes mode numerics");
    }
    if (input.value("adapt", false)) {
      throw UserError(
          "decode compares the archive's own prefill and step graphs, to which adapters are not "
          "applied: diagnose with adapt or with decode, not both");
    }
    LocalizeOptions options;
    options.backend = spyreSimBackend(profile_name);
    options.timeout_seconds = input.at("timeout_seconds").get<double>();
    options.control = context.task();
    const std::optional<int64_t> wanted =
        input.contains("decode_step") ? std::optional<int64_t>(input["decode_step"].get<int64_t>())
                                      : std::nullopt;
    DecodeFocus focus = focusOnDecodeStep(context, model_path, input_flags, options, decode_steps,
                                          wanted, "diagnose_model");
    model = std::move(focus.model);
    decode = std::move(focus.decode);
  } else if (input.contains("decode_step")) {
    throw UserError("decode_step picks a step of a decode: give decode (the steps) too");
  } else {
    // Numerics compares the model's run on the device with its reference module call by module
    // call: the model's host is made while this process runs the reference, not after.
    BeforeReference before_reference;
    if (mode == "numerics") {
      before_reference = [&](const std::shared_ptr<const LoadedModel>& shaped) {
        host_ahead = startModelHostAhead(shaped, context.task().cancelled);
      };
    }
    model = modelToDiagnose(context, model_path, input_flags,
                            input.value("adapt", false) ? &profile : nullptr, &adapters,
                            before_reference);
  }
  json report;
  if (mode == "compile") {
    report = diagnoseCompile(model, profile, bundleDirectory(input, *model, context), context);
  } else if (mode == "run") {
    report = diagnoseRun(model, profile, profile_name, input.at("timeout_seconds").get<double>(),
                         bundleDirectory(input, *model, context), context);
  } else {
    report = diagnoseNumerics(*model, profile, profile_name, input, context);
  }
  report["schema"] = "stickler.diagnose";
  report["version"] = 1;
  report["mode"] = mode;
  report["model"] = modelIdentityToJson(identityOf(*model));
  if (input.value("adapt", false)) report["adapters_applied"] = adapters;
  if (decode_steps > 0) report["decode"] = decode;
  publishReport(report, input, context);
  return report;
}

std::string renderNumerics(const json& report) {
  std::string text = headlineText(report);
  if (report.contains("decode")) text += decodeFocusText(report["decode"], "compared");
  if (!report.contains("numerics")) return text;
  const json& thresholds = report["numerics"]["thresholds"];
  size_t over = 0;
  for (const auto& entry : report["numerics"]["modules"]) over += entry["over_threshold"] ? 1 : 0;
  text += "\n" + std::to_string(report["numerics"]["modules"].size()) +
          " module calls compared in lockstep; " + std::to_string(over) +
          " over their threshold (" + metricText(thresholds["margin"]) + "x the " +
          metricText(thresholds["percentile"]) + " percentile of " +
          thresholds["emulated"].get<std::string>() + "'s error over " +
          std::to_string(thresholds["input_sets"].get<int64_t>()) + " input sets)\n";
  for (const char* key : {"deviations", "absorbed"}) {
    if (!report.contains(key) || report[key].empty()) continue;
    text += std::string(key) == "absorbed" ? "absorbed downstream:\n" : "deviation onsets:\n";
    text += deviationLines(report[key]);
  }
  if (report.contains("repro")) text += numericsReproText(report["repro"]);
  return text;
}

std::string renderReport(const json& report) {
  std::string text;
  if (report.value("schema", "") == "stickler.blocker_ranking") {
    return operationNamed("rank_blockers").render_text(report);
  }
  if (report.value("mode", "") == "numerics") return renderNumerics(report);
  if (report.value("mode", "") == "compile") {
    text = report["model"]["name"].get<std::string>() + " on " +
           report["profile"].get<std::string>() + ": " + report["status"].get<std::string>() + "\n";
    text += renderLoweringText(report);
    for (const auto& blocker : report["blockers"]) {
      if (!blocker.contains("repro") || !blocker["repro"].contains("command")) continue;
      text += "\n" + blocker["rule"].get<std::string>() + " " + blocker["op"].get<std::string>() +
              " in " + blocker["module"].get<std::string>() + ":";
      if (!blocker["adapters"].empty()) {
        text += " adapters";
        for (const auto& name : blocker["adapters"]) text += " " + name.get<std::string>();
        text += ";";
      }
      text += " repro " +
              std::string(blocker["repro"]["reproduces"] ? "(checked)" : "(NOT reproduced)") +
              ": " + blocker["repro"]["command"].get<std::string>() + "\n";
      if (blocker.contains("hints") && !blocker["hints"].empty()) {
        text += "  read:";
        for (const auto& hint : blocker["hints"]) text += " " + hint["id"].get<std::string>();
        text += "\n";
      }
    }
    return text;
  }
  text = operationNamed("run_model").render_text(report);
  if (report.contains("failing_module")) {
    const json& pinned = report["failing_module"];
    text += "\nfailing module: " + pinned["module"].get<std::string>() + " (" +
            pinned["module_class"].get<std::string>() + "), in " + pinned["op"].get<std::string>();
    text += pinned["confirmed"] ? "; alone on the device it fails the same way\n"
                                : "; not confirmed alone on the device\n";
  }
  return text;
}

std::string renderText(const json& report) {
  return renderReport(report) + reportFilesText(report);
}

}  // namespace

Operation makeDiagnoseModelOperation() {
  Operation operation;
  operation.name = "diagnose_model";
  operation.title = "Diagnose why a model fails on the device";
  operation.description =
      "Mode compile: every compile blocker in one pass (op, module path and class, shapes, "
      "dtypes, source line, the rule that fired), the catalog adapters that clear each, and "
      "per distinct blocker a repro bundle: a TorchScript archive holding just that operator "
      "with the inputs the model really gave it, checked to be blocked the same way, and the "
      "command that shows it. Mode run: runs the model on the simulated device; when the "
      "device aborts, names the module and operator that were executing and confirms it by "
      "running that module alone on the device. Mode numerics: one device run compared with "
      "the CPU reference module by module, in lockstep: max/mean abs error, cosine, relative "
      "L2 and SQNR per module call against thresholds derived from the emulated number "
      "format, with the onsets of deviations (localize_divergence then proves the culprit). "
      "With models instead of model: the blockers ranked across those models. With adapt, "
      "the catalog's adapters for the model and profile are applied first (the session does "
      "not change). Every report is saved (report_id; get_report serves it as JSON, HTML or "
      "JUnit).";
  json schema = {{"type", "object"}, {"required", {"profile"}}, {"additionalProperties", false}};
  schema["properties"]["model"] = modelField();
  schema["properties"]["models"] = {
      {"type", "array"},
      {"items", {{"type", "string"}}},
      {"description",
       "Instead of one model: rank the compile blockers across these models by how many each "
       "stops (as rank_blockers), so the most blocking operator is built first."}};
  schema["properties"]["profile"] = profileField();
  schema["properties"]["inputs"] = inputsField();
  schema["properties"]["mode"] = {
      {"type", "string"},
      {"enum", {"compile", "run", "numerics"}},
      {"default", "compile"},
      {"description",
       "compile: blockers and repros; run: aborts, pinned and confirmed; numerics: per-module "
       "error against derived thresholds, in lockstep."}};
  schema["properties"]["adapt"] = adaptField();
  schema["properties"]["decode"] = {
      {"type", "integer"},
      {"minimum", 0},
      {"maximum", 4096},
      {"description",
       "Mode numerics over decode: the prefill and this many greedy steps run in lockstep with "
       "the CPU reference (as run_model's decode), then one step (decode_step, else the first "
       "that does not pass, else the prefill) compared module by module on the inputs the "
       "reference fed it. 0: one forward pass."}};
  schema["properties"]["decode_step"] = {
      {"type", "integer"},
      {"minimum", 0},
      {"description",
       "With decode: the step to compare (0 is the prefill), whether it passes or not."}};
  schema["properties"]["bundle_dir"] = {
      {"type", "string"},
      {"description",
       "Where repro bundles go (default stickler-repros/<model name> in the workspace). Mode "
       "numerics writes one for the first deviation onset when the model does not pass."}};
  schema["properties"]["timeout_seconds"] = timeoutField();
  addThresholdFields(schema["properties"]);
  schema["properties"]["html"] = htmlReportField();
  schema["properties"]["junit"] = junitReportField();
  operation.input_schema = schema;
  operation.output_schema = {
      {"type", "object"},
      {"properties",
       {{"schema", {{"enum", {"stickler.diagnose", "stickler.blocker_ranking"}}}},
        {"mode", {{"type", "string"}}},
        {"report_id", {{"type", "string"}}}}},
      {"required", {"schema"}}};
  operation.annotations = {.read_only = false, .destructive = false, .idempotent = true};
  operation.cli = {"diagnose", {"model"}, {{"inputs", "input"}, {"timeout_seconds", "timeout"}}};
  operation.run = run;
  operation.render_text = renderText;
  operation.exit_status = [](const json& report) {
    if (report.value("schema", "") == "stickler.blocker_ranking") return ExitStatus::kOk;
    if (report.value("mode", "") == "compile") {
      return report["status"] == compileStatusName(CompileStatus::kOk) ? ExitStatus::kOk
                                                                       : ExitStatus::kBlocked;
    }
    if (report.value("mode", "") == "numerics") {
      const std::string status = report.value("status", "");
      return status == localizeStatusName(LocalizeStatus::kPasses)    ? ExitStatus::kOk
             : status == localizeStatusName(LocalizeStatus::kBlocked) ? ExitStatus::kBlocked
                                                                      : ExitStatus::kFailed;
    }
    return static_cast<ExitStatus>(report.at("exit_status").get<int>());
  };
  return operation;
}

}  // namespace stickler
