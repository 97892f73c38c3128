// Attention found by what it computes, not by what its modules are called: a softmax over the
// product of queries and keys, whose probabilities multiply the values. Following the data back
// from those products gives the query, key and value projections (three, or one fused), forward
// from the context gives the projection that reads the merged heads, and frequencies that reach
// the queries through cos or sin (or a table gathered at the positions) are the rotary table.
// BERT's self.query ... output.dense, Llama's q_proj ... o_proj, MPNet's q ... o and GPT-2's c_attn
// ... c_proj are found alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/script.h>

namespace stickler {

class GraphEdit;

struct FoundAttention {
  // The innermost module holding its projections ("model.layers.0.self_attn",
  // "encoder.layer.0.attention").
  std::string module;
  // aten::linear, the aten::addmm of GPT-2's Conv1D, or the aten::matmul of `x @ W.T`
  // (Falcon's FalconLinear); the same node three times when fused.
  torch::jit::Node* q = nullptr;
  torch::jit::Node* k = nullptr;
  torch::jit::Node* v = nullptr;
  torch::jit::Node* o = nullptr;  // the projection reading the merged heads; null when none does
  // The queries as the scores read them, [..., heads, length, head_dim] when recorded so.
  int64_t heads = 0;
  int64_t head_dim = 0;
  // The rotary tables: 1-D frequencies (weights or buffers reaching the queries through cos or
  // sin), or 2-D [positions, rotated] tables of sines and cosines gathered at the positions
  // (GPT-J's embed_positions, sin then cos); empty without RoPE.
  std::vector<torch::jit::Value*> rotary;

  bool fused() const { return q == k && k == v; }
};

// Every attention of the graph, in graph order. A softmax that is not attention (a router's, a
// classifier's) is not; an attention whose queries, keys or values do not each come from one
// projection is left out, with why in `left_out` (one line each).
std::vector<FoundAttention> findAttention(GraphEdit& edit, std::vector<std::string>* left_out);

// What a projection node reads: the weight (aten::linear's input 1, addmm's input 2, W of a
// matmul `x @ W.T`) and the bias (null when there is none; for `x @ W.T`, the weight its only
// reader adds), and the dimension of the weight that holds the outputs (0 for linear's
// [out, in], 1 for Conv1D's [in, out]).
torch::jit::Value* projectionWeight(const torch::jit::Node& projection);
torch::jit::Value* projectionBias(const torch::jit::Node& projection);
int64_t projectionOutputDim(const torch::jit::Node& projection);
// The projection's result, its bias included: the output, or that of `x @ W.T`'s bias add.
torch::jit::Value* projectionResult(const torch::jit::Node& projection);
// A linear layer: aten::linear, GPT-2's Conv1D addmm, or a matmul with a transposed weight.
bool isProjection(const torch::jit::Node& node);
// A product of two computed values (aten::matmul, aten::bmm), not a projection written as one.
bool isProduct(const torch::jit::Node& node);

}  // namespace stickler
