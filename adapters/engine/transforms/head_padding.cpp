#include "adapters/engine/transforms/head_padding.h"

#include "adapters/engine/graph_edit.h"

namespace stickler {

at::Tensor padHalves(const at::Tensor& rows, int64_t head_dim, int64_t padded) {
  const at::Tensor values = rows.detach();
  std::vector<int64_t> split = {-1, 2, head_dim / 2};
  std::vector<int64_t> merged = {-1};
  for (int64_t d = 1; d < values.dim(); ++d) {
    split.push_back(values.size(d));
    merged.push_back(values.size(d));
  }
  // constant_pad_nd pads the last dimension first: move the half there, pad, move it back.
  at::Tensor halves = values.reshape(split).movedim(2, -1);
  halves = at::constant_pad_nd(halves, {0, (padded - head_dim) / 2}, 0).movedim(-1, 2);
  return halves.reshape(merged).contiguous();
}

at::Tensor padHeads(const at::Tensor& rows, int64_t head_dim, int64_t padded) {
  const at::Tensor values = rows.detach();
  std::vector<int64_t> split = {-1, head_dim};
  for (int64_t d = 1; d < values.dim(); ++d) split.push_back(values.size(d));
  at::Tensor heads = values.reshape(split).movedim(1, -1);
  heads = at::constant_pad_nd(heads, {0, padded - head_dim}, 0).movedim(-1, 1);
  std::vector<int64_t> merged = {-1};
  for (int64_t d = 1; d < values.dim(); ++d) merged.push_back(values.size(d));
  return heads.reshape(merged).contiguous();
}

at::Tensor padHeadsAlong(const at::Tensor& tensor, int64_t dim, int64_t head_dim, int64_t padded) {
  return padHeads(tensor.detach().movedim(dim, 0), head_dim, padded).movedim(0, dim).contiguous();
}

torch::jit::Node* viewShapeList(const torch::jit::Node& node) {
  if (node.kind() != torch::jit::aten::view && node.kind() != torch::jit::aten::reshape) {
    return nullptr;
  }
  torch::jit::Node* shape = node.input(1)->node();
  return shape->kind() == torch::jit::prim::ListConstruct && !shape->inputs().empty() ? shape
                                                                                      : nullptr;
}

std::optional<int64_t> lastInt(const GraphEdit& edit, const torch::jit::Node& shape,
                               size_t from_end) {
  if (shape.inputs().size() <= from_end) return std::nullopt;
  auto value = edit.constantOrWeight(shape.input(shape.inputs().size() - 1 - from_end));
  if (!value || !value->isInt()) return std::nullopt;
  return value->toInt();
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

bool endsWithSuffix(const std::string& path, const std::string& suffix) {
  return path.size() > suffix.size() &&
         path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void replaceWeightRead(GraphEdit& edit, torch::jit::Value* read, const at::Tensor& tensor) {
  torch::jit::Node* reader = read->node();
  torch::jit::WithInsertPoint insert_point(reader);
  torch::jit::WithCurrentScope scope(edit.graph(), reader->scope());
  torch::jit::Value* constant = edit.graph().insertConstant(tensor);
  read->replaceAllUsesWith(constant);
  edit.destroyIfUnused(reader);
}

}  // namespace stickler
