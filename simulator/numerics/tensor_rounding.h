#pragma once

#include <torch/script.h>

#include "simulator/numerics/number_format.h"

namespace stickler {

// The tensor as a device holding it in `format` would give it back: floating values rounded
// (the dtype is kept, but a bfloat16 or float16 tensor comes back as float32, as 16-bit models
// are computed), anything else unchanged. Returns the input itself for kFloat32.
at::Tensor roundToFormat(const at::Tensor& tensor, NumberFormat format);

// Whether every value of a floating tensor is its own rounding to `format` (bitwise), checked a
// slice at a time: a large 16-bit weight is judged without a float32 copy of it.
bool holdsExactly(const at::Tensor& tensor, NumberFormat format);

// Rounds a contiguous 16-bit tensor in place to `format`, writing only the values that change, a
// slice at a time (no float32 copy of it; on a copy-on-write mapping only the pages holding a
// changed value are copied). Returns false, the tensor then partly rounded, when a rounded value
// does not fit the tensor's own dtype.
bool roundSixteenBitWhereChanged(const at::Tensor& tensor, NumberFormat format);

// Rounds a float32 tensor's own values in place when nothing else can see them (the only
// reference to its TensorImpl and its storage): saves an allocation per device kernel.
// Returns false, changing nothing, otherwise.
bool roundUnsharedInPlace(const at::Tensor& tensor, NumberFormat format);

// An integer tensor as a device that narrows integers to int32 gives it back: values wrap as
// a C cast to int32 would; the dtype is kept.
at::Tensor narrowToInt32(const at::Tensor& tensor);

// The value (a tensor, or tensors inside lists and tuples) with both of the above applied.
c10::IValue toDeviceValue(const c10::IValue& value, NumberFormat format);

}  // namespace stickler
