// What the head-padding transforms share: zero-padding the rows of projection weights head by
// head, and putting a padded weight where the graph read the original.
#pragma once

#include <torch/script.h>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/device/device_profile.h"

namespace stickler {

class GraphEdit;

// One piece of a head and the width it takes once padded (a RoPE half of 16 values in a stick
// of 64: {16, 64}).
struct HeadSegment {
  int64_t size = 0;
  int64_t padded = 0;
};

// Along dimension `dim`, each head (the segments' sizes, in order) becomes the segments each
// followed by its zeros: partial rotary's two rotated halves and its pass-through part each
// start on a stick.
at::Tensor padSegmentsAlong(const at::Tensor& tensor, int64_t dim,
                            const std::vector<HeadSegment>& segments);

// [heads * head_dim, ...] -> [heads * padded, ...], zeros at the end of each head.
at::Tensor padHeads(const at::Tensor& rows, int64_t head_dim, int64_t padded);

// The same along dimension `dim` instead of the first.
at::Tensor padHeadsAlong(const at::Tensor& tensor, int64_t dim, int64_t head_dim, int64_t padded);

// The shape list a view or reshape reads when the graph builds it of separate values, as traced
// models do ([size0, size1, heads, head_dim]); null for other nodes or shapes.
torch::jit::Node* viewShapeList(const torch::jit::Node& node);
// Input `index` of `node`, when it is a constant int (or an int attribute when scripted).
std::optional<int64_t> intInput(const GraphEdit& edit, const torch::jit::Node& node, size_t index);
// The last entry of a shape list, when it is a constant int (or an int attribute when scripted).
std::optional<int64_t> lastInt(const GraphEdit& edit, const torch::jit::Node& shape,
                               size_t from_end = 0);
// Whether input `index` of `node` names the last dimension of `tensor` (-1, or rank - 1;
// `extra` counts a dimension the node adds, as stack's does).
bool namesLastDim(const GraphEdit& edit, const torch::jit::Node& node, size_t index,
                  const torch::jit::Value* tensor, int64_t extra = 0);
// Makes input `index` of `node` the constant `value`.
void setIntInput(GraphEdit& edit, torch::jit::Node& node, size_t index, int64_t value);
// The smallest head size of at least `head_dim` whose `heads` together fill whole sticks.
int64_t headSizeFillingSticks(int64_t heads, int64_t head_dim, int64_t stick);
// The head size padding without RoPE chooses for the attention in `module`: heads together in
// whole sticks (headSizeFillingSticks), or each head on its own where the module writes a decode
// cache, whose read (keepCachesUnpadded) puts one head's zeros back at a time and must give
// whole sticks (two heads of 80: 96 each in the forward, 128 in the decode graphs).
int64_t paddedHeadSize(GraphEdit& edit, const std::string& module, int64_t heads, int64_t head_dim,
                       int64_t stick);

// Replaces what `read` (an attribute read or constant) yields with the constant `tensor`, in
// the reader's scope, and removes the read when nothing else uses it.
void replaceWeightRead(GraphEdit& edit, torch::jit::Value* read, const at::Tensor& tensor);

// A decode graph's static KV cache (written with index_copy at the tokens' slots, within
// `module`) is the graph's input and output, which an adapter does not change: it keeps the
// model's head_dim. What is written is the padded head with its zeros taken out, by slices that
// each start on a stick (joined with cat when there are several); what attention reads is the
// cache with the zeros put back, a matmul with a 0/1 matrix whose outputs fill sticks. Both are
// exact since the padding is exactly zero. `positions(write)` gives, for a cache write, where
// each of the model's head_dim values sits in the padded head (i, or past a RoPE half's padding,
// or anywhere in it when interleaved rotary's pairs are apart). Values whose runs do not start
// on sticks (of `stick` values) are written by a selection matmul instead of slices; a write
// whose values all stay where they are is left alone.
void keepCachesUnpadded(
    GraphEdit& edit, const std::string& module, const at::TensorOptions& options, int64_t head_dim,
    int64_t padded, int64_t stick,
    const std::function<std::vector<int64_t>(const torch::jit::Node& write)>& positions);

struct FoundAttention;

// Pads GPT-2-style attention, whose query, key and value come from one fused projection
// (pad_attention_heads finds it fused): `head_dim` the padded size, 0 for the smallest that fits.
void padFusedAttentionHeads(const FoundAttention& attention, int64_t head_dim, GraphEdit& edit,
                            const DeviceProfile& profile);

}  // namespace stickler
