// Interleaved rotary (GPT-J's and CodeGen's rotate_every_two): the two values of each pair
// (2i, 2i+1) of a head turn together. They are taken with strided slices (x[..., ::2] and
// x[..., 1::2]), put back with stack(..., dim=-1).flatten(-2), and each half of the sin and cos
// tables is repeat_interleave'd to match. No strided slice lowers along the stick dimension
// (stick-strided-slice). With the rotated rows of every query and key head permuted (the pairs'
// first values, then their second ones), the same rotation is rotate_half's: the halves are
// plain slices, the stack is a cat, and each repeat_interleave a cat of the table with itself.
// Scores are the same dot products over permuted terms.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <torch/script.h>

namespace stickler {

class GraphEdit;

// One rotate_every_two: the slices of the pairs' first and second values of `rotated`, and the
// stack and flatten that interleave them again.
struct PairRotation {
  torch::jit::Value* rotated = nullptr;
  torch::jit::Node* firsts = nullptr;
  torch::jit::Node* seconds = nullptr;
  torch::jit::Node* stack = nullptr;
  torch::jit::Node* flatten = nullptr;
};

struct InterleavedRotations {
  std::vector<PairRotation> rotations;
  // The repeat_interleave by 2 along the last dimension of what the rotary tables give.
  std::vector<torch::jit::Node*> repeats;
  // Strided slices along the last dimension that are not part of a rotation found (a spelling
  // not recognised): the caller refuses rather than pad what it does not understand.
  std::vector<torch::jit::Node*> unrecognised;
};

// The values computed from what a projection gives (the activations, as against positions,
// masks and tables).
std::set<const torch::jit::Value*> computedFromProjections(const torch::jit::Graph& graph);

// The interleaved rotations within `module`, with the repeats of what `tables` (the attention's
// rotary tables) give; `activations` as computedFromProjections gives them.
InterleavedRotations findInterleavedRotations(
    GraphEdit& edit, const std::string& module, const std::vector<torch::jit::Value*>& tables,
    const std::set<const torch::jit::Value*>& activations);

// The nodes of `kind` that what the rotary `tables` give reaches before it meets the
// `activations` (the queries and keys it turns): GPT-J's split of its table into sin and cos,
// Cohere's repeat_interleave of the angles before cos and sin.
std::vector<torch::jit::Node*> tableReaders(const std::vector<torch::jit::Value*>& tables,
                                            c10::Symbol kind,
                                            const std::set<const torch::jit::Value*>& activations);

// Where each value of a head sits once the first `rotated` are permuted: a pair's first value
// 2i at i, its second 2i+1 at rotated/2 + i; the rest stay.
std::vector<int64_t> deinterleavedPositions(int64_t head_dim, int64_t rotated);

// Along `dim` (heads of head_dim), the rows permuted as deinterleavedPositions says.
at::Tensor deinterleaveHeads(const at::Tensor& tensor, int64_t dim, int64_t head_dim,
                             int64_t rotated);

// Rewrites each rotation as rotate_half's on heads whose halves are `half` wide (the rotated
// part's halves, or their padded width): slices [0, half) and [half, 2 half), a cat instead of
// the stack and flatten; and each repeat of the tables becomes a cat of its input with itself.
void rewriteAsHalves(GraphEdit& edit, const InterleavedRotations& found, int64_t half);

}  // namespace stickler
