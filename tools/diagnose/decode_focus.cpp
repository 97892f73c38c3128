#include "tools/diagnose/decode_focus.h"

#include "simulator/graph/decode_card.h"
#include "simulator/run/run_decode.h"
#include "tools/adapters/adapter_support.h"
#include "tools/model/run_report.h"

namespace stickler {

using nlohmann::json;

DecodeFocus focusOnDecodeStep(OperationContext& context, const std::string& model_path,
                              const std::vector<std::string>& input_flags,
                              const LocalizeOptions& options, int64_t steps,
                              std::optional<int64_t> wanted, const std::string& tool) {
  if (input_flags.empty()) refuseDecodeOfSessionAdaptedModel(context, model_path, tool);
  RunRequest request;
  request.model = model_path;
  request.inputs = input_flags;
  request.backend = options.backend;
  request.timeout_seconds = options.timeout_seconds;
  request.decode_steps = steps;
  StepToLocalize to_localize;
  to_localize.wanted = wanted;
  const RunResult decoded = runDecode(request, options.control, &to_localize);
  DecodeFocus focus;
  focus.model = to_localize.model;
  focus.decode = decodeReportToJson(*decoded.decode);
  focus.decode["verdict"] = runVerdictName(decoded.verdict);
  focus.decode["cache"] = "reference";
  focus.decode["localized_step"] = to_localize.step ? json(*to_localize.step) : json(nullptr);
  focus.decode["graph"] = modelGraphName(to_localize.graph);
  return focus;
}

std::string decodeFocusText(const json& decode, const std::string& examined) {
  std::string text =
      "\ndecode: " + decode["steps"].dump() + " steps, " + decode["verdict"].get<std::string>();
  const json& step = decode["localized_step"];
  const json& first = decode.value("first_failing_step", json());
  if (step.is_null()) return text + "; every step passes (the prefill is " + examined + ")\n";
  const std::string name = step == 0 ? "the prefill" : "step " + step.dump();
  if (step == first) {
    text += "; " + name + " is the first that fails, " + examined + " below";
  } else {
    text += "; " + name + " (" +
            (first.is_null() ? std::string("every step passes")
                             : "the first that fails is " + first.dump()) +
            "), " + examined + " below";
  }
  return text + (step == 0 ? "\n" : " on the reference's cache for the steps before it\n");
}

}  // namespace stickler
