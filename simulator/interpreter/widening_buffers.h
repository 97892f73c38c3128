#pragma once

// Wider copies of the tensors an operator reads, in buffers reused from one operator to the next:
// a 16-bit model's run in float32 (sixteen_bit.h) and an equivalence check's run in float64 widen
// each weight as an operator reads it, without holding a wide copy of every weight, and without
// a fresh allocation per weight (large blocks come from mmap and go back to it, so each would
// cost a page fault per page, several times the conversion).

#include <vector>

#include <torch/script.h>

namespace stickler {

class WideningBuffers {
 public:
  explicit WideningBuffers(c10::ScalarType dtype) : dtype_(dtype) {}

  // Before an operator's inputs are widened: its buffers are taken from the first slot on.
  void operatorStarts() { in_use_ = 0; }

  // `tensor`'s values in the buffers' dtype, in the current operator's next buffer.
  at::Tensor widen(const at::Tensor& tensor);

  // After the operator ran, with its results (a std::vector<c10::IValue> or a ValueView): a
  // buffer a result shares (a view of a widened input: t(), a slice) is the result's now, and
  // the next widening into that slot gets a buffer of its own.
  template <typename Results>
  void operatorDone(const Results& results) {
    for (size_t i = 0; i < results.size(); ++i) keepShared(results[i]);
  }

  // What the buffers hold now: the memory widening costs, whatever the model's size.
  size_t bytes() const;

 private:
  void keepShared(const c10::IValue& result);

  c10::ScalarType dtype_;
  std::vector<at::Tensor> slots_;
  size_t in_use_ = 0;
};

}  // namespace stickler
