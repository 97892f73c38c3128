// Decompositions: an operator written as a few simpler ones, in TorchScript, so that a transform
// can replace the operator's node with them where the device cannot run it as one kernel (or
// cannot run it over padded sizes). Each is compiled once and inlined in place of the node.
#pragma once

#include <string>
#include <vector>

#include <torch/script.h>

namespace stickler {

class GraphEdit;

// The operators decompose_op can decompose ("aten::layer_norm", "aten::gelu", "aten::silu").
std::vector<std::string> decomposableOps();

// Replaces `node` (of `edit`'s graph) with its decomposition; the new nodes keep the node's
// module scope and source range. Throws UserError naming the module for a form of the operator
// the table has no decomposition for (a layer_norm over several dimensions, without weights).
void decompose(GraphEdit& edit, torch::jit::Node* node);

// Ones at the first `real_size` positions of the first dimension of `shape`, zeros after them
// (the padding), in the dtype `like` had on the example inputs: the mask that keeps padded
// positions out of a norm's statistics.
at::Tensor realPositionsMask(const GraphEdit& edit, const torch::jit::Value* like,
                             const std::vector<int64_t>& shape, int64_t real_size);

// layer_norm over the last dimension when only its first `real_size` positions are real and the
// rest is zero padding: mean and variance are sums over the real positions divided by their
// count, and the padded positions come out zero (their weight and bias must be padded with
// zeros). `padded_size` is the padded dimension's size.
void decomposeLayerNormOverPadding(GraphEdit& edit, torch::jit::Node* node, int64_t real_size,
                                   int64_t padded_size);

}  // namespace stickler
