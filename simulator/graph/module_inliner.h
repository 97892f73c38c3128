#pragma once

#include <memory>
#include <string>

#include <torch/script.h>

namespace stickler {

// Inlines every module method call and function call of `module.<method>` into one graph in
// which each node's scope names the module call that produced it: a scope per call, whose
// name is the module's full attribute path (ModuleList levels included, e.g.
// `transformer.h.0.attn.c_attn`); nodes of the root module keep the root scope.
//
// torch::jit::Inline would lose ModuleList levels and share constants across layers, so the
// calls are inlined one by one under their own scope.
std::shared_ptr<torch::jit::Graph> inlineWithModulePaths(const torch::jit::Module& module,
                                                         const std::string& method = "forward");

// The module path a node belongs to: "" for the root module.
std::string modulePathOf(const torch::jit::Node& node);
// "aten::mul in model.layers.0.mlp", or "... in the model's forward" for the root module.
std::string operatorWhere(const torch::jit::Node& node);

// Gives the nodes of a saved adapted forward (a flat graph) the module calls recorded when it
// was saved (ModelCard::kModulePathsPath: the non-constant nodes in order, each with its scope in
// a tree of scopes). Saving and loading do not give back every node (a tuple built and unpacked
// at once is gone), so the recorded operators are aligned with the graph's (a longest common
// subsequence); a node the load added takes the module of the next node aligned. Throws
// UserError when the record is malformed or does not fit the graph (more than a twentieth of
// the graph's nodes not in it): a model whose nodes all sat at the root would be judged
// differently.
// `method` other than the forward: its own record in the record's `methods` (an adapted archive
// saved with its decode graphs); nothing is restored when it has none.
void restoreModulePaths(torch::jit::Graph& graph, const std::string& record_json,
                        const std::string& method = "forward");

}  // namespace stickler
