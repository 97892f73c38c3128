#include "simulator/backends/backend_spec.h"

#include "simulator/device/device_profile.h"
#include "simulator/support/errors.h"

namespace stickler {

BackendSpec parseBackendSpec(const std::string& text) {
  BackendSpec spec;
  spec.text = text;
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string argument = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "cpu" && colon == std::string::npos) {
    spec.kind = BackendSpec::Kind::kCpu;
  } else if (kind == "cpu64" && colon == std::string::npos) {
    spec.kind = BackendSpec::Kind::kCpu64;
  } else if (kind == "cpu-emulated") {
    auto format = formatFromName(argument);
    if (!format || *format == NumberFormat::kFloat32) {
      throw UserError("backend '" + text + "': cpu-emulated needs a device format: " +
                      "cpu-emulated:dl16, cpu-emulated:fp16 or cpu-emulated:bf16");
    }
    spec.kind = BackendSpec::Kind::kCpuEmulated;
    spec.format = *format;
  } else if (kind == "spyre-sim") {
    spec.kind = BackendSpec::Kind::kSpyreSim;
    spec.profile = argument.empty() ? kDefaultProfile : argument;
  } else {
    throw UserError("unknown backend '" + text +
                    "' (expected cpu, cpu64, cpu-emulated:<dl16|fp16|bf16> or "
                    "spyre-sim[:<profile name or path>])");
  }
  return spec;
}

BackendSpec spyreSimBackend(const std::string& profile) {
  return parseBackendSpec("spyre-sim:" + profile);
}

}  // namespace stickler
