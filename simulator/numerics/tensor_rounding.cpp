#include "simulator/numerics/tensor_rounding.h"

#include <algorithm>
#include <cstring>

namespace stickler {

at::Tensor roundToFormat(const at::Tensor& tensor, NumberFormat format) {
  if (format == NumberFormat::kFloat32 || !tensor.is_floating_point() || tensor.numel() == 0) {
    return tensor;
  }
  if (tensor.scalar_type() == c10::kBFloat16 || tensor.scalar_type() == c10::kHalf) {
    // A 16-bit model is computed in float32 (simulator/interpreter/sixteen_bit.h): so is the
    // device's value of a 16-bit weight or input, rounded to the device's format.
    return roundToFormat(tensor.to(c10::kFloat), format);
  }
  if (format == NumberFormat::kFloat16 || format == NumberFormat::kBFloat16) {
    // LibTorch's own conversions round to nearest even, as the IEEE and bfloat16 formats do.
    const auto narrow = format == NumberFormat::kFloat16 ? c10::kHalf : c10::kBFloat16;
    return tensor.to(narrow).to(tensor.scalar_type());
  }
  // Every op's outputs pass through here on the device: avoid dispatcher round trips (each
  // costs about as much as a small kernel) in the common case of a contiguous float32 tensor.
  if (tensor.scalar_type() != c10::kFloat) {
    return roundToFormat(tensor.to(c10::kFloat), format).to(tensor.scalar_type());
  }
  const at::Tensor source = tensor.is_contiguous() ? tensor : tensor.contiguous();
  at::Tensor rounded = at::empty(source.sizes(), source.options());
  roundToDL16(source.data_ptr<float>(), rounded.data_ptr<float>(), source.numel());
  return rounded;
}

bool holdsExactly(const at::Tensor& tensor, NumberFormat format) {
  if (format == NumberFormat::kFloat32 || !tensor.is_floating_point()) return true;
  constexpr int64_t kSlice = int64_t{1} << 16;
  const at::Tensor flat = tensor.reshape({-1});
  for (int64_t start = 0; start < flat.numel(); start += kSlice) {
    const at::Tensor slice =
        flat.narrow(0, start, std::min(kSlice, flat.numel() - start)).to(c10::kFloat).contiguous();
    const at::Tensor rounded = roundToFormat(slice, format);
    if (std::memcmp(slice.data_ptr(), rounded.data_ptr(), slice.nbytes()) != 0) return false;
  }
  return true;
}

bool roundSixteenBitWhereChanged(const at::Tensor& tensor, NumberFormat format) {
  if (!tensor.is_contiguous()) return false;
  constexpr int64_t kSlice = int64_t{1} << 16;
  const at::Tensor flat = tensor.view({-1});
  for (int64_t start = 0; start < flat.numel(); start += kSlice) {
    const at::Tensor slice = flat.narrow(0, start, std::min(kSlice, flat.numel() - start));
    const at::Tensor rounded = roundToFormat(slice.to(c10::kFloat), format);
    const at::Tensor narrowed = rounded.to(tensor.scalar_type());
    if (!narrowed.to(c10::kFloat).equal(rounded)) return false;
    const at::Tensor changed = narrowed.ne(slice).nonzero().view({-1});
    if (changed.numel() > 0) slice.index_put_({changed}, narrowed.index({changed}));
  }
  return true;
}

bool roundUnsharedInPlace(const at::Tensor& tensor, NumberFormat format) {
  if (format != NumberFormat::kDL16 || tensor.scalar_type() != c10::kFloat ||
      !tensor.is_contiguous() || tensor.use_count() != 1 || !tensor.has_storage() ||
      tensor.storage().use_count() != 1 || tensor.storage_offset() != 0 ||
      static_cast<size_t>(tensor.numel()) * sizeof(float) != tensor.storage().nbytes()) {
    return false;
  }
  float* data = tensor.data_ptr<float>();
  roundToDL16(data, data, tensor.numel());
  return true;
}

at::Tensor narrowToInt32(const at::Tensor& tensor) {
  if (tensor.scalar_type() != c10::kLong || tensor.numel() == 0) return tensor;
  const at::Tensor source = tensor.is_contiguous() ? tensor : tensor.contiguous();
  const int64_t* data = source.data_ptr<int64_t>();
  bool fits = true;
  for (int64_t i = 0; i < source.numel() && fits; ++i) {
    fits = data[i] == static_cast<int64_t>(static_cast<int32_t>(data[i]));
  }
  return fits ? tensor : tensor.to(c10::kInt).to(c10::kLong);
}

c10::IValue toDeviceValue(const c10::IValue& value, NumberFormat format) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    return tensor.is_floating_point() ? roundToFormat(tensor, format) : narrowToInt32(tensor);
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& tensor : value.toTensorList()) {
      list.push_back(toDeviceValue(tensor, format).toTensor());
    }
    return list;
  }
  return value;
}

}  // namespace stickler
