// A look at a model before its reference run. LibTorch-free, for the tools' interface.
#pragma once

#include <functional>
#include <memory>

namespace stickler {

struct LoadedModel;

// Sees a model that recorded from shapes before it runs its example inputs on the CPU for a
// diagnosis's reference: what needs the model but not its outputs (a model host's making,
// simulator/backends/model_host_ahead.h) starts beside that run.
using BeforeReference = std::function<void(const std::shared_ptr<const LoadedModel>&)>;

}  // namespace stickler
