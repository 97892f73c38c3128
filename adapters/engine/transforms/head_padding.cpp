#include "adapters/engine/transforms/head_padding.h"

#include <algorithm>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/shared_constants.h"
#include "simulator/graph/graph_nodes.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/graph/module_table.h"

namespace stickler {

namespace {

// What returns a cache (the module's outputs, the stack of every layer's) rather than reads it.
bool returns(const torch::jit::Node& user, const std::string& module) {
  const torch::jit::Node* branch =
      user.kind() == torch::jit::prim::Return
          ? user.owningBlock()->owningNode()
          : nullptr;  // a Return has no scope of its own: its branch has
  if (!isWithin(modulePathOf(branch ? *branch : user), module)) return true;
  return user.kind() == torch::jit::prim::TupleConstruct ||
         user.kind() == torch::jit::prim::ListConstruct ||
         (user.kind() == torch::jit::prim::Return && branch == nullptr);
}

// Attention reads the padded cache, `put_back` times what the cache holds; what returns the
// cache keeps it as it is. A branch's result is a read: repeat_kv with one query head per key
// head returns the cache it was given from its `n_rep == 1` branch. A cast of the cache that is
// returned is the cache too: a traced `key.to(torch.float32)` of a float32 cache returns the
// cache itself, which the trace then records as the cast's result (GPT-J's _attn).
void readCachePadded(GraphEdit& edit, const std::string& module, torch::jit::Value* cache,
                     const at::Tensor& put_back, torch::jit::Node& write) {
  torch::jit::Graph& graph = edit.graph();
  torch::jit::Value* read = nullptr;
  const std::vector<torch::jit::Use> uses = cache->uses();  // replaceInput edits the list
  for (const auto& use : uses) {
    torch::jit::Node* user = use.user;
    if (returns(*user, module)) continue;
    const bool cast =
        user->kind() == torch::jit::aten::to || user->kind() == torch::jit::aten::contiguous;
    const auto cast_uses =
        user->outputs().size() == 1 ? user->output()->uses() : std::vector<torch::jit::Use>{};
    if (cast && std::any_of(cast_uses.begin(), cast_uses.end(),
                            [&](const torch::jit::Use& u) { return returns(*u.user, module); })) {
      readCachePadded(edit, module, user->output(), put_back, write);
      continue;
    }
    if (read == nullptr) {
      torch::jit::WithInsertPoint insert_point(cache->node()->next());
      torch::jit::WithCurrentScope scope(graph, write.scope());
      read = graph.insert(torch::jit::aten::matmul, {cache, graph.insertConstant(put_back)});
      read->node()->setSourceRange(write.sourceRange());
      edit.noteAdded(read->node());
    }
    user->replaceInput(use.offset, read);
  }
}

// Dimension `dim` seen as blocks of `block` values, each zero-padded to `padded_block`.
at::Tensor padBlocks(const at::Tensor& tensor, int64_t dim, int64_t block, int64_t padded_block) {
  return padSegmentsAlong(tensor, dim, {{block, padded_block}});
}

}  // namespace

// One allocation and one copy per segment, written straight into place (large weights make the
// intermediate copies of pad-then-reshape cost more than the padding).
at::Tensor padSegmentsAlong(const at::Tensor& tensor, int64_t dim,
                            const std::vector<HeadSegment>& segments) {
  int64_t head = 0;
  int64_t padded_head = 0;
  for (const HeadSegment& segment : segments) {
    head += segment.size;
    padded_head += segment.padded;
  }
  const at::Tensor values = tensor.detach();
  std::vector<int64_t> sizes = values.sizes().vec();
  std::vector<int64_t> split(sizes.begin(), sizes.begin() + dim);
  split.push_back(sizes[dim] / head);
  split.push_back(head);
  split.insert(split.end(), sizes.begin() + dim + 1, sizes.end());
  std::vector<int64_t> padded_split = split;
  padded_split[dim + 1] = padded_head;
  at::Tensor padded = at::zeros(padded_split, values.options());
  const at::Tensor heads = values.reshape(split);
  int64_t from = 0;
  int64_t to = 0;
  for (const HeadSegment& segment : segments) {
    padded.narrow(dim + 1, to, segment.size).copy_(heads.narrow(dim + 1, from, segment.size));
    from += segment.size;
    to += segment.padded;
  }
  sizes[dim] = sizes[dim] / head * padded_head;
  return padded.view(sizes);
}

at::Tensor padHeads(const at::Tensor& rows, int64_t head_dim, int64_t padded) {
  return padBlocks(rows, 0, head_dim, padded);
}

at::Tensor padHeadsAlong(const at::Tensor& tensor, int64_t dim, int64_t head_dim, int64_t padded) {
  return padBlocks(tensor, dim, head_dim, padded);
}

torch::jit::Node* viewShapeList(const torch::jit::Node& node) {
  if (node.kind() != torch::jit::aten::view && node.kind() != torch::jit::aten::reshape) {
    return nullptr;
  }
  torch::jit::Node* shape = node.input(1)->node();
  return shape->kind() == torch::jit::prim::ListConstruct && !shape->inputs().empty() ? shape
                                                                                      : nullptr;
}

std::optional<int64_t> intInput(const GraphEdit& edit, const torch::jit::Node& node, size_t index) {
  if (node.inputs().size() <= index) return std::nullopt;
  const auto value = edit.constantOrWeight(node.input(index));
  if (!value || !value->isInt()) return std::nullopt;
  return value->toInt();
}

std::optional<int64_t> lastInt(const GraphEdit& edit, const torch::jit::Node& shape,
                               size_t from_end) {
  if (shape.inputs().size() <= from_end) return std::nullopt;
  return intInput(edit, shape, shape.inputs().size() - 1 - from_end);
}

bool namesLastDim(const GraphEdit& edit, const torch::jit::Node& node, size_t index,
                  const torch::jit::Value* tensor, int64_t extra) {
  const auto dim = intInput(edit, node, index);
  const auto described = edit.describe(tensor);
  if (!dim || !described) return false;
  const auto rank = static_cast<int64_t>(described->shape.size()) + extra;
  return *dim == -1 || *dim == rank - 1;
}

void setIntInput(GraphEdit& edit, torch::jit::Node& node, size_t index, int64_t value) {
  torch::jit::WithInsertPoint insert_point(&node);
  node.replaceInput(index, edit.graph().insertConstant(value));
}

int64_t headSizeFillingSticks(int64_t heads, int64_t head_dim, int64_t stick) {
  int64_t size = head_dim;
  while (heads * size % stick != 0) ++size;  // ends within a stick
  return size;
}

int64_t paddedHeadSize(GraphEdit& edit, const std::string& module, int64_t heads, int64_t head_dim,
                       int64_t stick) {
  for (const torch::jit::Node* node : allNodes(edit.graph())) {
    if (node->kind() == torch::jit::aten::index_copy && isWithin(modulePathOf(*node), module)) {
      return headSizeFillingSticks(1, head_dim, stick);
    }
  }
  return headSizeFillingSticks(heads, head_dim, stick);
}

void replaceWeightRead(GraphEdit& edit, torch::jit::Value* read, const at::Tensor& tensor) {
  torch::jit::Node* reader = read->node();
  torch::jit::WithInsertPoint insert_point(reader);
  torch::jit::WithCurrentScope scope(edit.graph(), reader->scope());
  torch::jit::Value* constant = insertSharedConstant(edit.graph(), tensor);
  read->replaceAllUsesWith(constant);
  edit.destroyIfUnused(reader);
}

void keepCachesUnpadded(
    GraphEdit& edit, const std::string& module, const at::TensorOptions& options, int64_t head_dim,
    int64_t padded, int64_t stick,
    const std::function<std::vector<int64_t>(const torch::jit::Node& write)>& positions) {
  using torch::jit::Node;
  using torch::jit::Value;
  std::vector<Node*> writes;
  for (const Node* node : allNodes(edit.graph())) {
    if (node->kind() == torch::jit::aten::index_copy && isWithin(modulePathOf(*node), module)) {
      writes.push_back(const_cast<Node*>(node));  // this edit owns the graph
    }
  }
  torch::jit::Graph& graph = edit.graph();
  for (Node* write : writes) {
    // [padded, head_dim]: row p has a one where padded position p holds a model value.
    at::Tensor take_out = at::zeros({padded, head_dim}, options);
    const std::vector<int64_t> at = positions(*write);
    bool in_place = padded == head_dim;
    for (int64_t i = 0; i < head_dim; ++i) {
      take_out[at[i]][i] = 1;
      in_place = in_place && at[i] == i;
    }
    if (in_place) continue;  // this write's values are where the model has them
    // What is written takes the model's values out of the padded head by slicing: each run of
    // them (a head, a RoPE half, partial rotary's parts) starts on a stick, where a selection
    // matmul would have outputs (head_dim: 32, 80) that do not fill sticks. Values permuted
    // one by one (interleaved rotary's pairs) are put back by such a matmul instead, its outputs
    // widened to whole sticks and cut back to head_dim by a slice from 0.
    std::vector<std::pair<int64_t, int64_t>> runs;  // where each run starts, and its length
    bool on_sticks = true;
    for (int64_t i = 0; i < head_dim;) {
      int64_t length = 1;
      while (i + length < head_dim && at[i + length] == at[i] + length) ++length;
      runs.emplace_back(at[i], length);
      on_sticks = on_sticks && at[i] % stick == 0;
      i += length;
    }
    Value* written = nullptr;
    {
      torch::jit::WithInsertPoint insert_point(write);
      torch::jit::WithCurrentScope scope(graph, write->scope());
      std::vector<Value*> pieces;
      if (on_sticks) {
        for (const auto& [from, length] : runs) {
          pieces.push_back(
              graph.insert(torch::jit::aten::slice, {write->input(3), -1, from, from + length, 1}));
        }
      } else {
        // Its outputs widened to whole sticks with zero columns, then cut back at the start.
        const int64_t wide = (head_dim + stick - 1) / stick * stick;
        at::Tensor select = at::zeros({padded, wide}, options);
        select.narrow(1, 0, head_dim).copy_(take_out);
        Value* selected =
            graph.insert(torch::jit::aten::matmul, {write->input(3), graph.insertConstant(select)});
        if (wide != head_dim) {
          selected->node()->setSourceRange(write->sourceRange());
          edit.noteAdded(selected->node());
          selected = graph.insert(torch::jit::aten::slice, {selected, -1, 0, head_dim, 1});
        }
        pieces.push_back(selected);
      }
      for (Value* piece : pieces) {
        piece->node()->setSourceRange(write->sourceRange());
        edit.noteAdded(piece->node());
      }
      written = pieces.front();
      if (pieces.size() > 1) {
        Value* list = graph.insertNode(graph.createList(c10::TensorType::get(), pieces))->output();
        list->node()->setSourceRange(write->sourceRange());
        written = graph.insert(torch::jit::aten::cat, {list, -1});
        written->node()->setSourceRange(write->sourceRange());
        edit.noteAdded(written->node());
      }
    }
    write->replaceInput(3, written);
    readCachePadded(edit, module, write->output(), take_out.t().contiguous(), *write);
  }
}

}  // namespace stickler
