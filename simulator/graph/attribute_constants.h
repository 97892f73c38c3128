// Turning a graph's attribute reads into constants, as torch.jit.freeze does: a graph that no
// longer reads its module's weights can be saved on its own (an adapted archive), or widened to
// float64 without widening the whole module (a region run alone).
#pragma once

#include <torch/script.h>

namespace stickler {

// Every chain of prim::GetAttr from `graph`'s first input (self, whose value is `self_value`)
// that yields a value, not a module, becomes a constant where it is read, in blocks too;
// attribute reads left without readers are removed.
void attributesToConstants(torch::jit::Graph& graph, const c10::IValue& self_value);

}  // namespace stickler
