// `stickler run`: a model on a backend, compared end to end with the CPU reference. The result
// is data; tools/model/run_report.h writes it as the stickler.run report (docs/run-json.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "simulator/backends/backend_spec.h"
#include "simulator/compare/output_report.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/model_cache.h"
#include "simulator/graph/model_identity.h"
#include "simulator/graph/value_desc.h"
#include "simulator/lowering/compile_report.h"
#include "simulator/lowering/placement.h"
#include "simulator/numerics/number_format.h"
#include "simulator/run/decode_report.h"
#include "simulator/run/run_verdict.h"
#include "simulator/support/task_control.h"

namespace stickler {

struct BackendRun;

struct RunRequest {
  std::string model;
  std::vector<std::string> inputs;          // --input flags
  BackendSpec backend;                      // cpu, cpu-emulated:<format>, spyre-sim:<profile>
  std::vector<std::string> device_modules;  // hybrid runs: only these modules on the device
  // Per device run; no default here: the tools' input schema has it (timeoutField()).
  double timeout_seconds = 0;
  // The model already in hand (adapted or not): run as it is, `model` and `inputs` unread.
  std::shared_ptr<const LoadedModel> loaded;
  // Greedy decode steps after the prefill, through the card's decode interface (run_decode.h);
  // 0: one forward pass.
  int64_t decode_steps = 0;
  // The decode graphs already in hand (adapted: decode_adaptation.h); else loaded from `model`.
  std::shared_ptr<const LoadedModel> decode_prefill;
  std::shared_ptr<const LoadedModel> decode_step;
};

// The device run itself; where it stopped when it did not complete.
struct DeviceRunReport {
  std::string status;  // completed, aborted, timed_out, failed (runStatusName)
  double seconds = 0;
  std::string message;     // why it did not complete
  std::string device_log;  // what the device process printed
  int signal = 0;
  int64_t nodes_run = 0;
  std::optional<std::string> module;  // the innermost module (display path)
  std::optional<std::string> module_class;
  std::optional<std::string> last_module_entered;
  std::optional<std::string> op;
  std::optional<SourceLine> source;  // of that operator: the Python, else the TorchScript
};

struct RunComparison {
  double embedding_cosine = 0;  // the verdict's settings
  double logit_tolerance = 0;
  OutputComparison outputs;
};

struct RunResult {
  RunVerdict verdict = RunVerdict::kFail;
  ModelIdentity model;
  std::string backend;  // the spec as given
  NumberFormat format = NumberFormat::kFloat32;
  std::optional<DeviceProfile> profile;  // device backends
  Placement placement;
  int64_t host_nodes = 0;
  std::optional<CompileReport> compile;     // device backends (CPU ones always compile)
  std::optional<DeviceRunReport> run;       // when it compiled
  std::optional<RunComparison> comparison;  // when the run completed (decoding: the prefill's)
  std::optional<DecodeReport> decode;       // decoding
};

// What a run that did not complete got to; the seconds of one that did.
DeviceRunReport describeRun(const BackendRun& run, const LoadedModel& model);

// Runs the model on the backend and on the CPU reference, compares the outputs end to end and
// gives a verdict.
RunResult runModel(const RunRequest& request, const TaskControl& control = {},
                   ModelCache* cache = nullptr);

}  // namespace stickler
