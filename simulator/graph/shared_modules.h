// One loaded module per archive in a process, while any model made from it lives.
//
// A decoder is three graphs of one archive (the forward, the prefill and the decode step), and
// adapt --decode, run --decode and a model host switching from the prefill to the step each
// load the graphs they need. Each load of the archive held the weights again (the module's
// tensors, and the records a load makes of them). A graph copies its method's graph before it
// changes it and adapters keep their new weights in the graph, so the graphs can share the
// module: the weights are then held once however many graphs are made.
#pragma once

#include <torch/script.h>

#include <functional>
#include <string>

namespace stickler {

// The module of the archive at `path` whose content is `sha256`: the one a model still alive
// in this process was made from, else `load()`'s, remembered (weakly) for the next caller.
torch::jit::Module sharedModule(const std::string& path, const std::string& sha256,
                                const std::function<torch::jit::Module()>& load);

}  // namespace stickler
