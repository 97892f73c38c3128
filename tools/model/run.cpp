// run_model: the model on a backend against the CPU reference, end to end, with a verdict.
#include <algorithm>
#include <cstdio>

#include "simulator/device/device_profile.h"
#include "simulator/run/run_model.h"
#include "simulator/support/errors.h"
#include "tools/adapters/adapter_support.h"
#include "tools/framework/list_pages.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"
#include "tools/model/lowering_text.h"
#include "tools/model/run_report.h"

namespace stickler {
namespace {

using nlohmann::json;

json inputSchema() {
  json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "backend": {
        "type": "string",
        "description": "cpu, cpu64, cpu-emulated:<dl16|fp16|bf16>, or spyre-sim:<profile name or path> (spyre-2026, spyre-2025, spyre-2026-clean, spyre-2025-clean)."
      }
    },
    "required": ["model"],
    "additionalProperties": false
  })");
  schema["properties"]["backend"]["default"] = std::string("spyre-sim:") + kDefaultProfile;
  schema["properties"]["model"] = modelField();
  schema["properties"]["inputs"] = inputsField();
  schema["properties"]["timeout_seconds"] = timeoutField();
  schema["properties"]["modules"] = modulesField(
      "Run only these modules on the device and the rest on the CPU reference (a hybrid run); "
      "all of the model when absent.");
  schema["properties"]["decode"] = {
      {"type", "integer"},
      {"minimum", 0},
      {"maximum", 4096},
      {"description",
       "Greedy decode steps after the prefill, through the model card's decode interface (a "
       "prefill and a step graph with a static KV cache): each step on the backend and on the "
       "CPU reference, the reference's token fed to both, judged per step (greedy token, logits' "
       "error, the KV cache's cosine per layer). 0: one forward pass."}};
  schema["properties"].update(pageFields("blocker", "blockers"));
  return schema;
}

json outputSchema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "schema": {"const": "stickler.run"},
      "version": {"type": "integer"},
      "model": {"type": "object"},
      "backend": {"type": "object"},
      "placement": {},
      "compile": {"type": "object"},
      "run": {"type": "object"},
      "comparison": {"type": "object"},
      "decode": {"type": "object"},
      "verdict": {"enum": ["pass", "fail", "blocked", "aborted", "timed_out", "failed"]},
      "exit_status": {"type": "integer"}
    },
    "required": ["schema", "version", "model", "backend", "compile", "verdict", "exit_status"]
  })");
}

json run(const json& input, OperationContext& context) {
  RunRequest request;
  request.model = context.resolvePath(requireString(input, "model"));
  if (input.contains("backend"))
    request.backend = parseBackendSpec(resolveBackend(requireString(input, "backend"), context));
  request.inputs = optionalStrings(input, "inputs");
  request.device_modules = optionalStrings(input, "modules");
  request.timeout_seconds = input.at("timeout_seconds").get<double>();
  if (input.contains("decode")) request.decode_steps = input["decode"].get<int64_t>();
  if (request.decode_steps > 0 && request.inputs.empty()) {
    refuseDecodeOfSessionAdaptedModel(context, request.model, "run_model");
  }
  const PageRequest blockers = pageRequest(input, "blocker", context);
  json report = runReport(runModel(request, context.task(), context.models()));
  if (report["compile"].contains("blockers")) {
    keepPage(report["compile"], "blockers", blockers.offset, blockers.limit);
    keepPage(report["compile"]["fallbacks"], "nodes", 0, context.listLimit());
  }
  return report;
}

std::string number(double value, const char* format = "%.4g") {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string renderOutput(const json& output) {
  std::string line = "  " + output["name"].get<std::string>() + " (" +
                     output["kind"].get<std::string>() +
                     "): " + output.value("verdict", std::string("-"));
  if (output.contains("logits")) {
    const auto& logits = output["logits"];
    line += ", top-1 agrees at " + logits["top1_agree"].dump() + "/" + logits["positions"].dump() +
            " positions";
    if (logits["top1_ambiguous"].get<int64_t>() > 0) {
      line += " (" + logits["top1_ambiguous"].dump() + " ambiguous)";
    }
    line += ", top-5 error " +
            (logits["top5_relative_error"].is_null() ? std::string("inf")
                                                     : number(logits["top5_relative_error"])) +
            " (tolerance " + number(logits["tolerance"]) + ")";
  }
  if (output.contains("cosine")) {
    line += ", cosine " +
            (output["cosine"].is_null() ? std::string("nan") : number(output["cosine"], "%.6f"));
  }
  if (output.contains("max_abs_error") && !output["max_abs_error"].is_null()) {
    line += ", max abs error " + number(output["max_abs_error"]);
  }
  if (output.value("non_finite", 0) > 0) line += ", " + output["non_finite"].dump() + " non-finite";
  if (output.contains("reason")) line += "\n    " + output["reason"].get<std::string>();
  return line + "\n";
}

std::string lowest(const json& cosines) {
  if (cosines.empty()) return "-";  // no cache compared (a graph without layers' caches)
  double low = 1.0;
  for (const auto& value : cosines)
    low = value.is_null() ? -1.0 : std::min(low, value.get<double>());
  return low < -0.5 ? std::string("nan") : number(low, "%.6f");
}

std::string renderDecode(const json& decode) {
  if (decode.contains("blocked_graph")) {
    return "\nDecoding: the " + decode["blocked_graph"].get<std::string>() +
           " graph does not compile (its blockers above).\n";
  }
  std::string out = "\nDecoding: a prompt of " + decode["prompt_tokens"].dump() +
                    " tokens left-padded to " + decode["prompt_length"].dump() + ", then " +
                    decode["steps"].dump() +
                    " greedy steps; the reference's token is fed to both sides.\n";
  out +=
      "  step  slot  reference  device  top-5 error  min key cosine  min value cosine  verdict\n";
  for (const auto& step : decode["per_step"]) {
    const auto& logits = step["logits"];
    const std::string error =
        logits.contains("logits") && !logits["logits"]["top5_relative_error"].is_null()
            ? number(logits["logits"]["top5_relative_error"], "%.3g")
            : std::string("inf");
    char line[160];
    std::snprintf(line, sizeof line, "  %4lld  %4lld  %9lld  %6lld  %11s  %14s  %16s  %s\n",
                  static_cast<long long>(step["step"].get<int64_t>()),
                  static_cast<long long>(step["slot"].get<int64_t>()),
                  static_cast<long long>(step["reference_token"].get<int64_t>()),
                  static_cast<long long>(step["device_token"].get<int64_t>()), error.c_str(),
                  lowest(step["key_cosine"]).c_str(), lowest(step["value_cosine"]).c_str(),
                  step["verdict"].get<std::string>().c_str());
    out += line;
  }
  if (!decode["first_failing_step"].is_null()) {
    out += "The first failing step is " + decode["first_failing_step"].dump() +
           (decode["first_failing_step"] == 0 ? " (the prefill's last position).\n" : ".\n");
  }
  return out;
}

std::string renderText(const json& report) {
  const std::string verdict = report.at("verdict");
  std::string upper = verdict;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  std::string out = report["model"].value("name", report["model"]["path"].get<std::string>()) +
                    " on " + report["backend"]["spec"].get<std::string>() + " (" +
                    report["backend"]["format"].get<std::string>() + "): " + upper + "\n";
  if (report.contains("host_modules")) {
    out += "On the host (placed by adapters):";
    for (const auto& module : report["host_modules"]) out += " " + module.get<std::string>();
    out += "\n";
  }
  if (report.contains("host_nodes")) {
    out +=
        "On the host (placed by adapters): " + std::to_string(report["host_nodes"].get<int64_t>()) +
        " single operators (masks built from the inputs)\n";
  }
  const auto& compile = report.at("compile");
  if (compile.contains("blockers")) out += renderLoweringText(compile);
  if (report.contains("run")) {
    const auto& run = report["run"];
    if (run["status"] == "completed") {
      out += "\nRan in " + number(run["seconds"].get<double>() * 1e3, "%.2f") + " ms.\n";
    } else {
      out += "\nThe device run " + run["status"].get<std::string>() + ": " +
             run["message"].get<std::string>() + "\n";
      if (run.contains("module")) {
        out += "  in " + run["module"].get<std::string>();
        if (run.contains("module_class"))
          out += " (" + run["module_class"].get<std::string>() + ")";
        if (run.contains("op")) out += ", running " + run["op"].get<std::string>();
        if (run.contains("source")) {
          out += " at " + run["source"]["file"].get<std::string>() + ":" +
                 run["source"]["line"].dump();
        }
        out += "\n";
      }
      if (run.contains("device_log"))
        out += "  device log: " + run["device_log"].get<std::string>();
    }
  }
  if (report.contains("comparison")) {
    out += report.contains("decode") ? "\nThe prefill against the CPU reference:\n"
                                     : "\nAgainst the CPU reference:\n";
    for (const auto& output : report["comparison"]["outputs"]) out += renderOutput(output);
  }
  if (report.contains("decode")) out += renderDecode(report["decode"]);
  return out;
}

}  // namespace

Operation makeRunModelOperation() {
  Operation op;
  op.name = "run_model";
  op.title = "Run a model on a backend";
  op.description =
      "Run a model end to end on a backend (the Spyre simulator for a profile, the CPU, float64, "
      "or the CPU with values rounded to a device format) and compare its outputs with the CPU "
      "fp32 reference: top-1 agreement and top-5 error for logits, cosine similarity and errors "
      "for embeddings and hidden states, and a pass/fail verdict. Reports compile blockers "
      "instead when the model does not compile, and where the device was (module, op) when it "
      "aborted. Device runs happen in a worker process; a crash there is a result.";
  op.input_schema = inputSchema();
  op.output_schema = outputSchema();
  op.annotations = {.read_only = true, .destructive = false, .idempotent = true};
  op.cli = {
      .command = "run",
      .positional = {"model"},
      .renamed = {{"inputs", "input"}, {"modules", "module"}, {"timeout_seconds", "timeout"}}};
  op.run = run;
  op.render_text = renderText;
  op.exit_status = [](const json& report) {
    return static_cast<ExitStatus>(report.at("exit_status").get<int>());
  };
  return op;
}

}  // namespace stickler
