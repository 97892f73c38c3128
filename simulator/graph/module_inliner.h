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

// Gives the nodes of a saved adapted forward (a flat graph) the module calls recorded when it
// was saved (ModelCard::kModulePathsPath: the non-constant nodes in order, each with its scope in
// a tree of scopes). Only when the graph's operators are the recorded ones, in order: a record
// that does not fit changes nothing, as a wrong path would mislead every report.
void restoreModulePaths(torch::jit::Graph& graph, const std::string& record_json);

}  // namespace stickler
