#include "adapters/engine/equivalence.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "simulator/graph/example_inputs.h"
#include "simulator/graph/loaded_model.h"

namespace stickler {
namespace {

// Maps a float's bits onto a line where neighbouring floats are neighbouring integers.
int64_t orderedBits(float value) {
  int32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits < 0 ? -static_cast<int64_t>(bits & 0x7fffffff) : static_cast<int64_t>(bits);
}

// One ULP at the output's scale: of its largest finite magnitude.
double ulpOfLargest(const float* values, int64_t count) {
  float largest = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (std::isfinite(values[i])) largest = std::max(largest, std::fabs(values[i]));
  }
  const float next = std::nextafter(largest, std::numeric_limits<float>::infinity());
  return static_cast<double>(next) - largest;
}

// Element ULPs, except that a value near zero is not judged by its own tiny ULP: reordering a
// sum that cancels moves it by a few ULPs of the output's scale and by thousands of its own.
int64_t scaledUlpDistance(float a, float b, double unit) {
  const int64_t element = ulpDistance(a, b);
  if (element == 0 || element == std::numeric_limits<int64_t>::max()) return element;
  const double scaled = std::ceil(std::fabs(static_cast<double>(a) - b) / unit);
  return std::min<int64_t>(element, static_cast<int64_t>(scaled));
}

std::string shapeText(const at::Tensor& tensor) {
  std::string text = "[";
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    text += (d ? ", " : "") + std::to_string(tensor.size(d));
  }
  return text + "]";
}

void compareTensors(const at::Tensor& expected, const at::Tensor& actual, size_t index,
                    EquivalenceResult& result) {
  const std::string name = "output " + std::to_string(index);
  if (!expected.sizes().equals(actual.sizes())) {
    result.problem = name + ": shape " + shapeText(expected) + " became " + shapeText(actual);
    result.bitwise = false;
    result.max_ulps = std::numeric_limits<int64_t>::max();
    return;
  }
  if (expected.scalar_type() != actual.scalar_type()) {
    result.problem = name + ": dtype " + dtypeName(expected.scalar_type()) + " became " +
                     dtypeName(actual.scalar_type());
    result.bitwise = false;
    result.max_ulps = std::numeric_limits<int64_t>::max();
    return;
  }
  if (!at::isFloatingType(expected.scalar_type())) {
    if (!at::equal(expected, actual)) {
      result.problem = name + ": integer values differ";
      result.bitwise = false;
      result.max_ulps = std::numeric_limits<int64_t>::max();
    }
    return;
  }
  const at::Tensor a = expected.to(at::kFloat).contiguous();
  const at::Tensor b = actual.to(at::kFloat).contiguous();
  const float* x = a.data_ptr<float>();
  const float* y = b.data_ptr<float>();
  const double unit = ulpOfLargest(x, a.numel());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const int64_t distance = scaledUlpDistance(x[i], y[i], unit);
    if (distance == 0) continue;
    result.bitwise = false;
    if (distance > result.max_ulps) {
      result.max_ulps = distance;
      result.problem = "value " + std::to_string(i) + " of " + name + ": " + std::to_string(x[i]) +
                       " became " + std::to_string(y[i]);
    }
    const double error = std::fabs(static_cast<double>(x[i]) - y[i]);
    if (std::isfinite(error) && error > result.max_abs_error) result.max_abs_error = error;
  }
}

void compareOutputs(const std::vector<c10::IValue>& expected,
                    const std::vector<c10::IValue>& actual, EquivalenceResult& result) {
  const auto a = flattenTensors(expected);
  const auto b = flattenTensors(actual);
  if (a.size() != b.size()) {
    result.bitwise = false;
    result.max_ulps = std::numeric_limits<int64_t>::max();
    result.problem =
        std::to_string(a.size()) + " output tensors became " + std::to_string(b.size());
    return;
  }
  result.outputs_compared = static_cast<int>(a.size());
  for (size_t i = 0; i < a.size(); ++i) compareTensors(a[i], b[i], i, result);
}

}  // namespace

int64_t ulpDistance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  }
  const int64_t distance = orderedBits(a) - orderedBits(b);
  return distance < 0 ? -distance : distance;
}

EquivalenceResult checkEquivalence(const LoadedModel& before, const LoadedModel& after,
                                   int64_t bound, int extra_seeds) {
  EquivalenceResult result;
  result.bound = bound;
  compareOutputs(before.example_outputs, after.example_outputs, result);
  result.inputs_checked = 1;
  const auto& schema = before.module.get_method("forward").function().getSchema();
  for (int seed = 1; seed <= extra_seeds; ++seed) {
    const auto inputs = makeExampleInputs(before.card.inputs, schema, static_cast<uint64_t>(seed),
                                          before.captured_inputs);
    compareOutputs(before.interpreter->run(inputs, nullptr),
                   after.interpreter->run(inputs, nullptr), result);
    ++result.inputs_checked;
  }
  result.within_bound = result.max_ulps <= bound;
  if (result.bitwise) result.problem.clear();
  return result;
}

nlohmann::json equivalenceToJson(const EquivalenceResult& result) {
  nlohmann::json json = {{"reference", "the model before this adapter, cpu fp32"},
                         {"inputs_checked", result.inputs_checked},
                         {"outputs_compared", result.outputs_compared},
                         {"bitwise_equal", result.bitwise},
                         {"max_ulps", result.max_ulps},
                         {"max_abs_error", result.max_abs_error},
                         {"bound_ulps", result.bound},
                         {"within_bound", result.within_bound}};
  if (!result.problem.empty()) json["worst"] = result.problem;
  return json;
}

}  // namespace stickler
