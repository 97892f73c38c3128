#pragma once

#include <string>

#include "simulator/numerics/number_format.h"

namespace stickler {

// A backend named on the command line: cpu, cpu64, cpu-emulated:<dtype>, spyre-sim[:<profile>].
struct BackendSpec {
  enum class Kind {
    kCpu,          // fp32: the reference
    kCpu64,        // float64
    kCpuEmulated,  // the CPU with values rounded to a device format at every op boundary
    kSpyreSim,     // the simulated device, for a profile
  };
  Kind kind = Kind::kCpu;
  NumberFormat format = NumberFormat::kFloat32;  // kCpuEmulated
  std::string profile;                           // kSpyreSim: a profile name or path
  std::string text;                              // as given
};

// Throws UserError naming the text and what is accepted.
BackendSpec parseBackendSpec(const std::string& text);

// spyre-sim for a profile (a name or a path).
BackendSpec spyreSimBackend(const std::string& profile);

}  // namespace stickler
