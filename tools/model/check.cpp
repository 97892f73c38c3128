// check_support: what stops a model from compiling for a device profile, found in one pass.
#include "simulator/lowering/check_support.h"
#include "tools/framework/list_pages.h"
#include "tools/model/lowering_text.h"
#include "tools/framework/operation_table.h"
#include "tools/reports/result_json.h"
#include "tools/framework/schema_fields.h"

namespace stickler {
namespace {

using nlohmann::json;

json inputSchema() {
  json schema = json::parse(R"({
    "type": "object",
    "required": ["model"],
    "additionalProperties": false
  })");
  schema["properties"]["model"] = modelField();
  schema["properties"]["profile"] = profileField();
  schema["properties"]["inputs"] = inputsField();
  schema["properties"]["modules"] = modulesField(
      "Module paths to place on the device (the rest stays on the CPU); all of the model when "
      "absent.");
  schema["properties"].update(pageFields("blocker", "blockers"));
  return schema;
}

json outputSchema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "schema": {"const": "stickler.check"},
      "version": {"type": "integer"},
      "model": {"type": "object"},
      "profile": {"type": "object"},
      "placement": {},
      "lowering": {"type": "object"}
    },
    "required": ["schema", "version", "model", "profile", "lowering"]
  })");
}

json run(const json& input, OperationContext& context) {
  CheckSupportRequest request;
  request.model = context.resolvePath(requireString(input, "model"));
  request.profile = resolveProfile(requireString(input, "profile"), context);
  request.inputs = optionalStrings(input, "inputs");
  request.device_modules = optionalStrings(input, "modules");
  const PageRequest blockers = pageRequest(input, "blocker", context);
  const CheckSupportResult result = checkSupport(request, context.task(), context.models());
  json report{{"schema", "stickler.check"},
              {"version", 1},
              {"model", modelIdentityToJson(result.model)},
              {"profile", profileSummary(result.profile)},
              {"lowering", compileReportToJson(result.compile)}};
  addPlacement(report, result.placement, result.host_nodes);
  keepPage(report["lowering"], "blockers", blockers.offset, blockers.limit);
  keepPage(report["lowering"]["fallbacks"], "nodes", 0, context.listLimit());
  return report;
}

std::string renderText(const json& report) {
  const auto& lowering = report.at("lowering");
  std::string out = report["model"].value("name", report["model"]["path"].get<std::string>()) +
                    " on " + report["profile"]["name"].get<std::string>() + ": ";
  const std::string status = lowering.at("status");
  const auto& blockers = lowering.at("blockers");
  if (status == "blocked") {
    out += std::to_string(blockers.size()) + " blocker" + (blockers.size() == 1 ? "" : "s") + "\n";
  } else if (status == "compiler_error") {
    out += "the compiler failed\n";
  } else {
    out += "compiles\n";
  }
  return out + renderLoweringText(lowering);
}

}  // namespace

Operation makeCheckSupportOperation() {
  Operation op;
  op.name = "check_support";
  op.title = "Check device support";
  op.description =
      "Lower a model for a Spyre device profile and list everything that stops it from "
      "compiling, in one pass: unsupported operators, stick-alignment problems (sizes not in "
      "whole 64-value sticks, RoPE with head_dim/2 < 64, mismatched stick dims, zero-length "
      "tensors), weights that exceed the per-core span, kernels that cannot tile into the "
      "scratchpad. Each blocker names the op, module path, class, shapes and source line and the "
      "rule that fired. Also reports CPU-fallback operators and their transfer cost.";
  op.input_schema = inputSchema();
  op.output_schema = outputSchema();
  op.annotations = {.read_only = true, .destructive = false, .idempotent = true};
  op.cli = {.command = "check",
            .positional = {"model"},
            .renamed = {{"inputs", "input"}, {"modules", "module"}}};
  op.run = run;
  op.render_text = renderText;
  return op;
}

}  // namespace stickler
