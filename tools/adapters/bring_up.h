// The one bring-up pipeline: a model (loaded afresh, or a session's stack), the catalog's adapters
// meant for it and the profile stacked on it (each checked for equivalence, or none for a
// weightless archive), its compile reports without and with them, a run end to end on the
// simulated device, and a localization when the run diverges. The result is typed; `adapt`, the
// review gate's check of a model and a sweep's probe are renderers of it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/adapter_stacking.h"
#include "adapters/engine/decode_adaptation.h"
#include "simulator/device/device_profile.h"
#include "simulator/diagnose/localization_result.h"
#include "simulator/lowering/compile_report.h"
#include "simulator/run/run_model.h"
#include "simulator/support/task_control.h"

namespace stickler {

struct LoadedModel;
class ModelCache;

struct BringUpResult;

struct BringUpRequest {
  std::string model;                            // the archive's path
  uint64_t seed = 0;                            // of the example inputs (the gate draws fresh ones)
  std::shared_ptr<const LoadedModel> original;  // loaded already (else loaded here)
  const std::vector<CatalogEntry>* catalog = nullptr;
  std::string profile;           // a name or a path
  bool compile_reports = false;  // the compile reports without and with the adapters
  double run_seconds = 300;      // the device run's timeout
  // Whether to run, from what the compile reports say; empty: always (a blocked model's run
  // says it is blocked).
  std::function<bool(const BringUpResult&)> run_if;
  // Run beside the whole stack's equivalence check (the run waits on a model host, the check on
  // this process's cores), and again should the check take adapters off.
  bool run_beside_check = false;
  bool localize = false;  // name the module of a divergence (about log2(M) more runs)
  // After the forward's run, the adapters applied to the decode graphs too and the model
  // decoded this many steps (run_decode.h); a model without a decode interface is a UserError.
  int64_t decode_steps = 0;
  // Whether to decode, from what the forward's run says; empty: always.
  std::function<bool(const BringUpResult&)> decode_if;

  // A session's: the stack to adapt further (its original is the model), the cache runModel
  // reads it from, and what to do before the run (make the session see the stack).
  AdapterStack* stack = nullptr;
  ModelCache* cache = nullptr;
  std::vector<std::string> input_flags;
  std::function<void()> before_run;
};

struct BringUpResult {
  std::shared_ptr<const LoadedModel> original;
  DeviceProfile profile;
  bool weightless = false;  // the archive stores no weights: its adapters are not checked
  std::shared_ptr<AdapterStack> own_stack;  // when the request gave none
  AdapterStack* stack = nullptr;            // where the adapters went
  StackingOutcome stacking;
  std::optional<CompileReport> without;  // compile_reports
  std::optional<CompileReport> with;
  std::optional<RunResult> run;
  std::optional<LocalizationResult> localization;
  std::optional<DecodeAdaptation> decode_adaptation;  // decode_steps
  std::optional<RunResult> decode;
};

// A decoder decoded with the adapters its forward took (`forward`'s, found in `catalog`), applied
// to its prefill and step graphs in the same order: how bringUp and `adapters stale` judge a
// decoder whose forward passed.
struct DecodeWithAdapters {
  std::string model;  // the archive's path
  uint64_t seed = 0;
  const AdapterStack& forward;
  const std::vector<const CatalogEntry*>& catalog;
  const DeviceProfile& profile;
  std::string profile_name;  // as the backend names it: a shipped name or a path
  bool checked = true;       // false for a weightless archive, as for its forward
  int64_t steps = 0;
  double run_seconds = 300;
};
struct AdaptedDecode {
  DecodeAdaptation adaptation;
  RunResult run;
};
AdaptedDecode decodeWithAdapters(const DecodeWithAdapters& request,
                                 const TaskControl& control = {});

// A decode_if for judging a decoder as the gate and a sweep do: decode once its forward passed.
bool forwardPassed(const BringUpResult& so_far);

// Throws UserError when the archive cannot be loaded (a sweep's "bad archive"), Cancelled when
// `control` is cancelled.
BringUpResult bringUp(const BringUpRequest& request, const TaskControl& control = {});

}  // namespace stickler
