// Tensors whose values are rounded to a number format each time they are widened to float32.
//
// A device holds a 16-bit weight in its own format. When that format rounds some of the weight's
// values to numbers the weight's dtype cannot hold (a bfloat16 value below DL16's smallest,
// 2^-31 x (1 + 2^-9), which bfloat16 has no bits for), the device would need a float32 copy of
// the whole weight: 2x its bytes, for a handful of values. Instead it reads the archive's own
// 16-bit values through the rounding, as each operator widens them (widening_buffers.h,
// sixteen_bit.h): DL16 rounding of those values gives exactly the rounded weight.
//
// Registration is by storage, so a view of a registered tensor (a slice, a transpose) is rounded
// too. The device registers a tensor of its own (a second mapping of the archive's pages,
// mapped_archive.h), never one the CPU reference reads.
#pragma once

#include <torch/script.h>

#include "simulator/numerics/number_format.h"

namespace stickler {

void roundWhenWidened(const at::Tensor& tensor, NumberFormat format);
void stopRoundingWhenWidened(const at::Tensor& tensor);
bool isRoundedWhenWidened(const at::Tensor& tensor);

// `widened`, the floating values of `source`, rounded in place when `source` is registered.
void roundIfRegistered(const at::Tensor& source, const at::Tensor& widened);

}  // namespace stickler
