#include "simulator/interpreter/widening_buffers.h"

#include <algorithm>

#include "simulator/interpreter/rounded_when_widened.h"

namespace stickler {

at::Tensor WideningBuffers::widen(const at::Tensor& tensor) {
  // A weight left unread (shape_only.h) widens to its shape, laid out as a buffer's would be.
  if (tensor.is_meta()) return at::empty(tensor.sizes(), tensor.options().dtype(dtype_));
  if (in_use_ >= slots_.size()) slots_.resize(in_use_ + 1);
  at::Tensor& buffer = slots_[in_use_++];
  if (!buffer.defined() || buffer.numel() < tensor.numel()) {
    buffer = at::empty({std::max<int64_t>(tensor.numel(), 1)}, tensor.options().dtype(dtype_));
  }
  // In the tensor's own memory order when it has one (a permuted view): the layout decides the
  // stick dimension the operator's result is recorded with, whatever the dtype it ran in.
  at::Tensor widened =
      tensor.is_non_overlapping_and_dense()
          ? buffer.narrow(0, 0, tensor.numel()).as_strided(tensor.sizes(), tensor.strides())
          : buffer.narrow(0, 0, tensor.numel()).view(tensor.sizes());
  widened.copy_(tensor);
  roundIfRegistered(tensor, widened);
  return widened;
}

size_t WideningBuffers::bytes() const {
  size_t total = 0;
  for (const at::Tensor& slot : slots_) {
    if (slot.defined()) total += slot.nbytes();
  }
  return total;
}

void WideningBuffers::keepShared(const c10::IValue& result) {
  std::vector<c10::IValue> leaves = {result};
  while (!leaves.empty()) {
    const c10::IValue leaf = leaves.back();
    leaves.pop_back();
    if (leaf.isTensor()) {
      const at::Tensor& tensor = leaf.toTensor();
      if (!tensor.defined() || !tensor.has_storage()) continue;
      for (size_t slot = 0; slot < in_use_; ++slot) {
        if (slots_[slot].defined() && tensor.storage().is_alias_of(slots_[slot].storage())) {
          slots_[slot] = at::Tensor();
        }
      }
    } else if (leaf.isTuple()) {
      for (const auto& element : leaf.toTupleRef().elements()) leaves.push_back(element);
    } else if (leaf.isList()) {
      for (const auto& element : leaf.toListRef()) leaves.push_back(element);
    }
  }
}

}  // namespace stickler
