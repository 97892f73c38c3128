#include "tools/framework/schema_fields.h"

#include "simulator/device/device_profile.h"
#include "simulator/support/execution_limit.h"

namespace stickler {

using nlohmann::json;

json modelField() {
  return {
      {"type", "string"},
      {"description",
       "Path to a TorchScript archive (.pt), ideally with a model card (stickler/model.json)."}};
}

json inputsField() {
  return {{"type", "array"},
          {"items", {{"type", "string"}}},
          {"description",
           "Input specs name:shape:dtype[:kind] (e.g. input_ids:1x16:int64:tokens=50257), "
           "replacing the model card's inputs. Needed when the archive has no card."}};
}

json profileField() {
  return {{"type", "string"},
          {"default", kDefaultProfile},
          {"description",
           "Device profile: a shipped name (spyre-2026, spyre-2025, spyre-2026-clean, "
           "spyre-2025-clean) or a path to a profile JSON."}};
}

json modulesField(const char* description) {
  return {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", description}};
}

nlohmann::json timeoutField() {
  return {{"type", "number"},
          {"default", kDefaultExecutionSeconds},
          {"description",
           "A device run that takes longer is killed and reported as timed out. Each run of "
           "model or adapter code in the server's process (the example run when a model is "
           "loaded, equivalence checks) is stopped with an error after as long."}};
}

nlohmann::json modelTimeoutField() {
  return {{"type", "number"},
          {"exclusiveMinimum", 0},
          {"default", 600},
          {"description",
           "How long one model's worker process may take (load, adapt, check, run): a model "
           "that takes longer is killed and reported as timed out."}};
}

nlohmann::json judgeDecodeField() {
  return {{"type", "integer"},
          {"minimum", 0},
          {"maximum", 64},
          {"default", 4},
          {"description",
           "Greedy decode steps that judge a decoder (a model card with a decode interface) "
           "whose forward passes: the adapters it took applied to its prefill and step graphs "
           "too, then the prefill and this many steps compared with the CPU reference's; the "
           "decode's verdict is the model's. 0: the forward's verdict only."}};
}

nlohmann::json adaptField() {
  return {{"type", "boolean"},
          {"default", false},
          {"description",
           "Apply every catalog adapter meant for the model and profile first, without changing "
           "what the session has applied."}};
}

json htmlReportField() {
  return {{"type", "string"},
          {"description",
           "Also write the report as one self-contained HTML page (opens offline) to this path."}};
}

json junitReportField() {
  return {{"type", "string"},
          {"description", "Also write the report as JUnit XML (for CI) to this path."}};
}

}  // namespace stickler
