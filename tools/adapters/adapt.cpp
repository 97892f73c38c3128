// adapt: every catalog adapter meant for the model and profile, applied in turn, then the
// model run end to end on the simulator: the one-command bring-up.
#include "adapters/engine/adapted_archive.h"
#include "adapters/engine/adapter_matching.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/model_facts.h"
#include "simulator/run/run_model.h"
#include "tools/adapters/adapter_support.h"
#include "tools/adapters/bring_up.h"
#include "tools/adapters/decode_summary.h"
#include "tools/adapters/saved_archive_report.h"
#include "tools/framework/operation_table.h"
#include "tools/framework/schema_fields.h"
#include "tools/model/run_report.h"

namespace stickler {
namespace {

using nlohmann::json;

json run(const json& input, OperationContext& context) {
  const std::string model_path = context.resolvePath(requireString(input, "model"));
  const std::string profile_name = resolveProfile(requireString(input, "profile"), context);
  const std::vector<std::string> input_flags = optionalStrings(input, "inputs");
  const auto catalog = adapterCatalog(context);
  json stacked;
  json report;
  std::vector<std::string> already_applied;
  json session;
  {
    ModelAdapters adapters(context, model_path, input_flags);
    AdapterStack& stack = adapters.stack();
    already_applied = stack.names();
    BringUpRequest request;
    request.model = model_path;
    request.input_flags = input_flags;
    request.catalog = &catalog;
    request.profile = profile_name;
    request.run_seconds = input.at("timeout_seconds").get<double>();
    request.decode_steps = input.value("decode", int64_t{0});
    // The device run goes beside the check of the whole stack; it runs again in the rare case
    // that the check takes adapters off.
    request.run_beside_check = true;
    request.stack = &stack;
    request.cache = adapters.cache();
    request.before_run = [&] {
      if (input.contains("save")) requireSavable(*stack.current());  // before the run, not after
      adapters.publish();
    };
    const BringUpResult brought = bringUp(request, context.task());
    report = runReport(brought.decode ? *brought.decode : *brought.run);
    if (brought.decode) {
      report["forward_verdict"] = runVerdictName(brought.run->verdict);
      report["decode"]["adapters"] = decodeAdaptationToJson(*brought.decode_adaptation);
    }
    stacked = stackingToJson(brought.stacking, stack, context.listLimit());
    const LoadedModel& original = *brought.original;
    if (cardOf(original).decode && !input.contains("decode")) {
      // A decoder is served token by token: the forward's verdict alone does not say it runs.
      // `decode: 0` asks for the forward alone, and gets it without this.
      report["not_decoded"] =
          "its card has a decode interface, which this call did not judge: give decode "
          "(stickler adapt --decode 4) to apply the adapters to its prefill and step graphs "
          "and decode it";
    }
    // What the end-to-end run says about each workspace adapter goes into its history.
    for (const auto& application : stack.applied()) {
      // A probe applied inline is in no catalog and leaves no trace in one.
      if (isInlineAdapter(application.adapter)) continue;
      const CatalogEntry& entry = findCatalogEntry(catalog, application.adapter.metadata.name);
      recordEvidence(context, entry.name, entry.origin,
                     "End to end on " + brought.profile.name + ": " + report.value("verdict", "") +
                         " for " + cardOf(original).name,
                     {{"Evidence", "stickler adapt: verdict " + report.value("verdict", "") +
                                       ", equivalence " + equivalenceText(application.equivalence)},
                      {"Model", cardOf(original).name},
                      {"Profile", brought.profile.name}});
    }
    if (input.contains("save")) {
      const std::string out = context.resolveOutputPath(requireString(input, "save"));
      const auto& adapted_decode = brought.decode_adaptation;
      DecodeGraphsToSave decode;
      std::string without_decode;  // why the saved card has no decode interface
      if (cardOf(original).decode) {
        if (!adapted_decode || !adapted_decode->prefill || !adapted_decode->step) {
          without_decode =
              "its prefill and step graphs were not adapted: give decode to adapt them too and "
              "keep its decode interface";
        } else {
          std::string why = whyNotSavable(*adapted_decode->prefill);
          if (why.empty()) why = whyNotSavable(*adapted_decode->step);
          if (!why.empty()) {
            without_decode = "its adapted decode graphs cannot be saved: " + why;
          } else {
            decode = {adapted_decode->prefill.get(), adapted_decode->step.get(),
                      adapted_decode->prefill_applied, adapted_decode->step_applied};
          }
        }
      }
      saveAdaptedArchive(*stack.current(), stack.names(), out,
                         decode.prefill != nullptr ? &decode : nullptr);
      noteSavedArchive(report, out, cardOf(original).decode.has_value(), without_decode);
    }
    session = sessionStackToJson(stack);
  }
  report["schema"] = "stickler.adapt_run";
  // `applied` are this call's; the session may have had some already, which adapt never applies
  // again: `stack` is what the run used.
  report["adapters"] = {{"applied", stacked["applied"]},
                        {"refused", stacked["refused"]},
                        {"already_applied", already_applied},
                        {"stack", session["adapters"]}};
  report["session"] = session;
  if (stacked.contains("whole_model")) report["adapters"]["whole_model"] = stacked["whole_model"];
  return report;
}

std::string renderText(const json& report) {
  std::string text;
  if (!report["adapters"]["already_applied"].empty()) {
    text += "already applied in this session:";
    for (const auto& name : report["adapters"]["already_applied"]) {
      text += " " + name.get<std::string>();
    }
    text += "\n";
  }
  text += "adapters applied:";
  for (const auto& application : report["adapters"]["applied"]) {
    text += " " + application["adapter"].get<std::string>();
  }
  if (report["adapters"]["applied"].empty()) text += " none";
  text += "\n";
  for (const auto& application : report["adapters"]["applied"]) {
    if (!application.contains("equivalence")) continue;
    text += "  " + application["adapter"].get<std::string>() + ": " +
            equivalenceLine(application["equivalence"]) + "\n";
  }
  if (report["adapters"].contains("whole_model")) {
    text +=
        "  the whole adapted model: " + equivalenceLine(report["adapters"]["whole_model"]) + "\n";
  }
  for (const auto& refused : report["adapters"]["refused"]) {
    text += "refused: " + refused["adapter"].get<std::string>() + " (" +
            refused["reason"].get<std::string>() + ")\n";
  }
  if (report.contains("forward_verdict")) {
    const json& decode_adapters = report["decode"]["adapters"];
    text += "the forward: " + report["forward_verdict"].get<std::string>() +
            "; the decode graphs took:";
    for (const char* graph : {"prefill", "decode_step"}) {
      text += std::string(" ") + graph + " [";
      std::string names;
      for (const auto& name : decode_adapters[graph]) {
        names += (names.empty() ? "" : " ") + name.get<std::string>();
      }
      text += names + "]";
    }
    text += "\n";
    for (const auto& refused : decode_adapters["refused"]) {
      text += "refused on " + refused["graph"].get<std::string>() + ": " +
              refused["adapter"].get<std::string>() + " (" + refused["reason"].get<std::string>() +
              ")\n";
    }
  }
  text += operationNamed("run_model").render_text(report);
  if (report.contains("not_decoded")) {
    text += "not judged through decode: " + report["not_decoded"].get<std::string>() + "\n";
  }
  return text + savedArchiveText(report);
}

}  // namespace

Operation makeAdaptModelOperation() {
  Operation operation;
  operation.name = "adapt_model";
  operation.title = "Adapt a model and run it";
  operation.description =
      "Apply every catalog adapter meant for the model and the device profile (each checked for "
      "equivalence on the CPU, in float64 and float32, on the modules it changed; refused ones "
      "are reported and skipped; then the whole adapted model once against the original), then run "
      "the adapted model "
      "end to end on the simulator for that profile and compare it with the CPU reference. The "
      "result is run_model's, with the adapters applied; exit status as run_model's. With save, "
      "the adapted model is written as an archive. Adapters the session's model already has are "
      "never applied again (adapters.already_applied); adapters.stack is the whole stack the run "
      "used. " +
      std::string(kChangesTheSession);
  json schema = {{"type", "object"}, {"required", {"model"}}, {"additionalProperties", false}};
  schema["properties"]["model"] = modelField();
  schema["properties"]["profile"] = profileField();
  schema["properties"]["inputs"] = inputsField();
  schema["properties"]["save"] = {
      {"type", "string"},
      {"description",
       "Write the adapted model to this archive (.pt). With decode, its adapted prefill and step "
       "graphs are saved too and the saved card keeps its decode interface (saved_decode); "
       "without, the saved card has none (saved_without_decode says why)."}};
  schema["properties"]["decode"] = {
      {"type", "integer"},
      {"minimum", 0},
      {"maximum", 4096},
      {"description",
       "Judge a decoder with decode: after the forward's run, the adapters it took are applied "
       "to the prefill and step graphs of its card's decode interface too (each checked; one "
       "that folds values for the example's positions is refused on the step), and the model "
       "is decoded this many greedy steps as run_model's decode does. The verdict is then the "
       "decode's; forward_verdict is the forward's."}};
  schema["properties"]["timeout_seconds"] = timeoutField();
  operation.input_schema = schema;
  operation.output_schema = {{"type", "object"},
                             {"properties",
                              {{"schema", {{"const", "stickler.adapt_run"}}},
                               {"verdict", {{"type", "string"}}},
                               {"adapters", {{"type", "object"}}},
                               {"session", {{"type", "object"}}},
                               {"saved", {{"type", "string"}}},
                               {"saved_decode", {{"type", "boolean"}}},
                               {"saved_without_decode", {{"type", "string"}}},
                               {"not_decoded", {{"type", "string"}}}}},
                             {"required", {"schema", "verdict", "adapters", "session"}}};
  operation.annotations = {false, false, false};
  operation.cli = {"adapt", {"model"}, {{"inputs", "input"}, {"timeout_seconds", "timeout"}}};
  operation.run = run;
  operation.render_text = renderText;
  operation.exit_status = [](const json& report) {
    return static_cast<ExitStatus>(report.at("exit_status").get<int>());
  };
  return operation;
}

}  // namespace stickler
