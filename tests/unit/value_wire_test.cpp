// The values a device run sends to its model host and back: raw for tensors and tuples and
// lists of them, pickled for anything else; every encoding decodes to the same values, and
// bytes that are no whole encoding are refused.
#include "simulator/backends/value_wire.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace stickler {
namespace {

bool sameTensor(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && at::equal(a, b);
}

TEST(ValueWire, TensorsComeBackWithTheirDtypeShapeAndValues) {
  const at::Tensor transposed = torch::arange(12, torch::kFloat32).reshape({3, 4}).t();
  const std::vector<c10::IValue> values = {
      transposed,  // not contiguous: sent as its values
      torch::tensor({1.5, -2.25}).to(torch::kBFloat16),
      torch::tensor({int64_t{7}, int64_t{-9}}),
      torch::tensor({true, false, true}),
      torch::empty({0, 5}),
      torch::tensor(3.0F),  // a scalar, no dimensions
  };
  const std::string bytes = encodeValues(values);
  EXPECT_EQ(bytes.front(), 'R');
  const std::vector<c10::IValue> back = decodeValues(bytes);
  ASSERT_EQ(back.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_TRUE(sameTensor(back[i].toTensor(), values[i].toTensor())) << i;
  }
}

TEST(ValueWire, TuplesAndListsOfTensorsKeepTheirShape) {
  const at::Tensor a = torch::ones({2, 2});
  const at::Tensor b = torch::zeros({3});
  const c10::IValue nested = c10::ivalue::Tuple::create(
      {a, c10::IValue(std::vector<at::Tensor>{b, a}), c10::ivalue::Tuple::create({b})});
  const std::string bytes = encodeValues({nested});
  EXPECT_EQ(bytes.front(), 'R');
  const std::vector<c10::IValue> back = decodeValues(bytes);
  ASSERT_EQ(back.size(), 1u);
  const auto& elements = back[0].toTupleRef().elements();
  ASSERT_EQ(elements.size(), 3u);
  EXPECT_TRUE(sameTensor(elements[0].toTensor(), a));
  const std::vector<at::Tensor> list = elements[1].toTensorVector();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_TRUE(sameTensor(list[0], b));
  EXPECT_TRUE(sameTensor(list[1], a));
  EXPECT_TRUE(sameTensor(elements[2].toTupleRef().elements()[0].toTensor(), b));
}

TEST(ValueWire, OtherValuesArePickled) {
  const std::vector<c10::IValue> values = {torch::ones({2}), c10::IValue(int64_t{4}), c10::IValue(),
                                           c10::IValue(std::string("text"))};
  const std::string bytes = encodeValues(values);
  EXPECT_EQ(bytes.front(), 'P');
  const std::vector<c10::IValue> back = decodeValues(bytes);
  ASSERT_EQ(back.size(), 4u);
  EXPECT_TRUE(sameTensor(back[0].toTensor(), torch::ones({2})));
  EXPECT_EQ(back[1].toInt(), 4);
  EXPECT_TRUE(back[2].isNone());
  EXPECT_EQ(back[3].toStringRef(), "text");
}

TEST(ValueWire, BytesThatAreNoWholeEncodingAreRefused) {
  const std::string bytes = encodeValues({torch::ones({4, 4}), torch::zeros({2})});
  EXPECT_THROW(decodeValues(""), std::runtime_error);
  EXPECT_THROW(decodeValues("X" + bytes.substr(1)), std::runtime_error);
  for (size_t cut : {size_t{1}, size_t{5}, size_t{12}, bytes.size() / 2, bytes.size() - 1}) {
    EXPECT_THROW(decodeValues(bytes.substr(0, cut)), std::runtime_error) << cut;
  }
  EXPECT_THROW(decodeValues(bytes + "x"), std::runtime_error);
  // A tensor whose sizes ask for more than its bytes: refused, not allocated.
  std::string huge = bytes;
  const size_t first_size = 1 + 8 + 1 + 1 + 1;  // encoding, count, kind, dtype, dims
  const int64_t big = int64_t{1} << 40;
  huge.replace(first_size, sizeof big, reinterpret_cast<const char*>(&big), sizeof big);
  EXPECT_THROW(decodeValues(huge), std::runtime_error);
}

}  // namespace
}  // namespace stickler
