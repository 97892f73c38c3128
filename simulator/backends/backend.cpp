#include "simulator/backends/backend.h"

#include "simulator/backends/cpu_backends.h"
#include "simulator/backends/device_backends.h"

namespace stickler {

std::string runStatusName(BackendRun::Status status) {
  switch (status) {
    case BackendRun::Status::kCompleted:
      return "completed";
    case BackendRun::Status::kAborted:
      return "aborted";
    case BackendRun::Status::kTimedOut:
      return "timed_out";
    case BackendRun::Status::kFailed:
      return "failed";
    case BackendRun::Status::kCancelled:
      return "cancelled";
    case BackendRun::Status::kBlocked:
      return "blocked";
  }
  return "failed";
}

RunVerdict incompleteRunVerdict(BackendRun::Status status) {
  switch (status) {
    case BackendRun::Status::kAborted:
      return RunVerdict::kAborted;
    case BackendRun::Status::kTimedOut:
      return RunVerdict::kTimedOut;
    case BackendRun::Status::kBlocked:
      return RunVerdict::kBlocked;
    default:
      return RunVerdict::kFailed;
  }
}

std::unique_ptr<Backend> makeBackend(const BackendSpec& spec) {
  switch (spec.kind) {
    case BackendSpec::Kind::kCpu:
    case BackendSpec::Kind::kCpu64:
      return makeCpuBackend(spec);
    case BackendSpec::Kind::kCpuEmulated:
      return makeEmulatedBackend(spec);
    case BackendSpec::Kind::kSpyreSim:
      return makeSpyreSimBackend(spec);
  }
  return makeCpuBackend(spec);
}

}  // namespace stickler
