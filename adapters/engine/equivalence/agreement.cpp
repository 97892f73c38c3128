#include "adapters/engine/equivalence/agreement.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace stickler {
namespace {

// Unit roundoffs: float32 rounds to 24 significant bits, float64 to 53.
constexpr double kUnit32 = 0x1p-24;
constexpr double kUnit64 = 0x1p-53;

// Maps a float's bits onto a line where neighbouring floats are neighbouring integers.
int64_t orderedBits(float value) {
  int32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits < 0 ? -static_cast<int64_t>(bits & 0x7fffffff) : static_cast<int64_t>(bits);
}

std::string number(double value) {
  std::ostringstream text;
  text.precision(17);
  text << value;
  return text.str();
}

std::string brief(double value) {
  std::ostringstream text;
  text.precision(3);
  text << value;
  return text.str();
}

std::string shapeText(const at::Tensor& tensor) {
  std::string text = "[";
  for (int64_t d = 0; d < tensor.dim(); ++d)
    text += (d ? ", " : "") + std::to_string(tensor.size(d));
  return text + "]";
}

// "[0, 3, 17]": the position of flat index `flat` in a tensor of `sizes`.
std::string position(int64_t flat, c10::IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    index[d] = sizes[d] == 0 ? 0 : flat % sizes[d];
    flat = sizes[d] == 0 ? 0 : flat / sizes[d];
  }
  std::string text = "[";
  for (size_t d = 0; d < index.size(); ++d) text += (d ? ", " : "") + std::to_string(index[d]);
  return text + "]";
}

std::string where(const std::string& name, int64_t flat, const at::Tensor& tensor, int draw) {
  return name + " at " + position(flat, tensor.sizes()) + " (input draw " +
         std::to_string(draw + 1) + ")";
}

bool sameNonFinite(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// The tensors and scalars of a value, depth-first through tuples and lists.
void leaves(const c10::IValue& value, std::vector<c10::IValue>& out) {
  if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) leaves(element, out);
  } else if (value.isList()) {
    for (const auto& element : value.toListRef()) leaves(element, out);
  } else if (value.isDouble()) {
    out.emplace_back(at::scalar_tensor(value.toDouble(), at::kDouble));
  } else {
    out.push_back(value);
  }
}

}  // namespace

int64_t ulpDistance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  }
  const int64_t distance = orderedBits(a) - orderedBits(b);
  return distance < 0 ? -distance : distance;
}

void Agreement::mismatch(const std::string& message) {
  summary_.bitwise = false;
  summary_.max_ulps = std::numeric_limits<int64_t>::max();
  if (!mismatched_) summary_.problem = "not the same mathematics: " + message;
  mismatched_ = true;
  summary_.same_math = false;
  summary_.float64_ratio = std::numeric_limits<double>::infinity();
}

Agreement::Float32Tally& Agreement::tallyFor(const std::string& name) {
  for (auto& tally : tallies_) {
    if (tally.name == name) return tally;
  }
  tallies_.push_back({});
  tallies_.back().name = name;
  return tallies_.back();
}

void Agreement::add(const std::string& name, int draw, const c10::IValue& original32,
                    const c10::IValue& adapted32, const c10::IValue& original64,
                    const c10::IValue& adapted64) {
  std::vector<c10::IValue> o32, a32, o64, a64;
  leaves(original32, o32);
  leaves(adapted32, a32);
  leaves(original64, o64);
  leaves(adapted64, a64);
  if (o32.size() != a32.size() || o64.size() != a64.size() || o32.size() != o64.size()) {
    mismatch(name + ": " + std::to_string(o32.size()) + " values became " +
             std::to_string(a32.size()));
    return;
  }
  for (size_t i = 0; i < o32.size(); ++i) {
    const std::string leaf = o32.size() == 1 ? name : name + " [" + std::to_string(i) + "]";
    if (o32[i].isTensor() && a32[i].isTensor() && o64[i].isTensor() && a64[i].isTensor()) {
      addTensors(leaf, draw, o32[i].toTensor(), a32[i].toTensor(), o64[i].toTensor(),
                 a64[i].toTensor());
    } else if (o32[i].isTensor() != a32[i].isTensor() || o64[i].isTensor() != a64[i].isTensor()) {
      mismatch(leaf + ": a " + o32[i].tagKind() + " became a " + a32[i].tagKind());
    } else if (!(o32[i] == a32[i]) || !(o64[i] == a64[i])) {
      std::ostringstream text;
      text << leaf << ": " << o64[i] << " became " << a64[i];
      mismatch(text.str());
    }
  }
}

void Agreement::addTensors(const std::string& name, int draw, const at::Tensor& original32,
                           const at::Tensor& adapted32, const at::Tensor& original64,
                           const at::Tensor& adapted64) {
  ++summary_.outputs_compared;
  if (!original32.sizes().equals(adapted32.sizes()) ||
      !original64.sizes().equals(adapted64.sizes())) {
    mismatch(name + ": shape " + shapeText(original32) + " became " + shapeText(adapted32));
    return;
  }
  if (original32.is_floating_point() != adapted32.is_floating_point() ||
      original64.is_floating_point() != adapted64.is_floating_point()) {
    mismatch(name + ": " + std::string(c10::toString(original32.scalar_type())) + " became " +
             c10::toString(adapted32.scalar_type()));
    return;
  }
  if (!original64.is_floating_point()) {
    // Integers and booleans are exact in both precisions: they must not change at all.
    for (const auto& [before, after] :
         {std::pair{original32, adapted32}, {original64, adapted64}}) {
      if (at::equal(before, after)) continue;
      const at::Tensor differs = before.ne(after).reshape({-1}).nonzero();
      const int64_t flat = differs.numel() > 0 ? differs[0][0].item<int64_t>() : 0;
      mismatch(where(name, flat, before, draw) + ": " +
               std::to_string(before.reshape({-1})[flat].item<int64_t>()) + " became " +
               std::to_string(after.reshape({-1})[flat].item<int64_t>()));
      return;
    }
    return;
  }
  const at::Tensor o32 = original32.to(at::kDouble).contiguous();
  const at::Tensor a32 = adapted32.to(at::kDouble).contiguous();
  const at::Tensor t = original64.to(at::kDouble).contiguous();
  const at::Tensor a64 = adapted64.to(at::kDouble).contiguous();
  const double* x = o32.data_ptr<double>();
  const double* y = a32.data_ptr<double>();
  const double* truth = t.data_ptr<double>();
  const double* z = a64.data_ptr<double>();
  const int64_t n = t.numel();

  // The original's own float32 error, and the size of the values, over this output.
  double error_squares = 0;
  double truth_squares = 0;
  int64_t finite = 0;
  float largest32 = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(x[i])) largest32 = std::max(largest32, static_cast<float>(std::fabs(x[i])));
    if (!std::isfinite(truth[i]) || !std::isfinite(x[i])) continue;
    error_squares += (x[i] - truth[i]) * (x[i] - truth[i]);
    truth_squares += truth[i] * truth[i];
    ++finite;
  }
  const double rms_error = finite ? std::sqrt(error_squares / finite) : 0;
  const double rms_truth = finite ? std::sqrt(truth_squares / finite) : 0;
  // Rounding errors scale with the unit roundoff: float64 rounding is the float32 error seen
  // here scaled by 2^-29, element by element, and never less than at the output's typical
  // error (or, for an output float32 computes exactly, one float32 rounding of its size).
  const double floor = std::max(rms_error, kUnit32 * rms_truth);
  const double scale = kFloat64Margin * (kUnit64 / kUnit32);

  Float32Tally& tally = tallyFor(name);
  const double ulp_unit =
      static_cast<double>(std::nextafter(largest32, std::numeric_limits<float>::infinity())) -
      largest32;
  for (int64_t i = 0; i < n; ++i) {
    // Float64: the same mathematics, up to float64 rounding.
    if (!std::isfinite(truth[i]) || !std::isfinite(z[i])) {
      if (!sameNonFinite(truth[i], z[i])) {
        mismatch(where(name, i, t, draw) + ": float64 " + number(truth[i]) + " became " +
                 number(z[i]));
        return;
      }
    } else {
      const double difference = std::fabs(z[i] - truth[i]);
      const double own = std::isfinite(x[i]) ? std::fabs(x[i] - truth[i]) : 0;
      const double tolerance = scale * std::max(own, floor);
      const double ratio = tolerance > 0    ? difference / tolerance
                           : difference > 0 ? std::numeric_limits<double>::infinity()
                                            : 0;
      if (ratio > summary_.float64_ratio) {
        summary_.float64_ratio = ratio;
        summary_.float64_difference = difference;
        summary_.float64_tolerance = tolerance;
        if (ratio > 1 && !mismatched_) {
          summary_.problem = "not the same mathematics: " + where(name, i, t, draw) + ": float64 " +
                             number(truth[i]) + " became " + number(z[i]) + " (difference " +
                             brief(difference) + ", tolerance " + brief(tolerance) + "); float32 " +
                             number(x[i]) + " became " + number(y[i]);
        }
        if (ratio > 1) summary_.same_math = false;
      }
    }
    // Float32: the adapted model's error against the truth, beside the original's.
    if (std::isfinite(truth[i])) {
      tally.original_nonfinite += !std::isfinite(x[i]);
      if (!std::isfinite(y[i]) && tally.adapted_nonfinite++ == 0) {
        tally.first_nonfinite = "at " + position(i, t.sizes()) + " (input draw " +
                                std::to_string(draw + 1) + "): float64 " + number(truth[i]) +
                                ", original float32 " + number(x[i]) + ", adapted float32 " +
                                number(y[i]);
      }
      if (std::isfinite(x[i]) && std::isfinite(y[i])) {
        tally.original_squares += (x[i] - truth[i]) * (x[i] - truth[i]);
        tally.adapted_squares += (y[i] - truth[i]) * (y[i] - truth[i]);
        tally.truth_squares += truth[i] * truth[i];
        ++tally.count;
        const double error = std::fabs(y[i] - truth[i]);
        if (error > tally.worst_error) {
          tally.worst_error = error;
          tally.worst_at = where(name, i, t, draw) + ": float64 " + number(truth[i]) +
                           ", original float32 " + number(x[i]) + ", adapted float32 " +
                           number(y[i]);
        }
      }
    }
    // Information: bitwise equality and the float32 ULP distance at the output's scale (a
    // value near zero is not judged by its own tiny ULP: a reordered sum that cancels moves it
    // by a few ULPs of the output and by thousands of its own).
    const float before = static_cast<float>(x[i]);
    const float after = static_cast<float>(y[i]);
    int64_t ulps = ulpDistance(before, after);
    if (ulps != 0 && ulps != std::numeric_limits<int64_t>::max() && ulp_unit > 0) {
      ulps = std::min<int64_t>(ulps,
                               static_cast<int64_t>(std::ceil(std::fabs(x[i] - y[i]) / ulp_unit)));
    }
    if (ulps != 0) summary_.bitwise = false;
    summary_.max_ulps = std::max(summary_.max_ulps, ulps);
  }
}

AgreementSummary Agreement::summary() const {
  AgreementSummary summary = summary_;
  std::string float32_problem;
  summary.float32_factor = 0;
  bool first = true;
  for (const auto& tally : tallies_) {
    if (tally.count == 0 && tally.adapted_nonfinite == 0) continue;
    const double n = std::max<double>(1, static_cast<double>(tally.count));
    const double original = std::sqrt(tally.original_squares / n);
    const double adapted = std::sqrt(tally.adapted_squares / n);
    const double base = std::max(original, kUnit32 * std::sqrt(tally.truth_squares / n));
    const double factor = base > 0      ? adapted / base
                          : adapted > 0 ? std::numeric_limits<double>::infinity()
                                        : 0;
    const bool more_nonfinite = tally.adapted_nonfinite > tally.original_nonfinite;
    if (first || factor > summary.float32_factor || more_nonfinite) {
      first = false;
      summary.float32_factor = factor;
      summary.float32_error_original = original;
      summary.float32_error_adapted = adapted;
    }
    if (float32_problem.empty() && more_nonfinite) {
      float32_problem = "worse in float32: " + tally.name + ": " +
                        std::to_string(tally.adapted_nonfinite) +
                        " values are not finite where the float64 original is (the original "
                        "float32 model has " +
                        std::to_string(tally.original_nonfinite) + "); the first " +
                        tally.first_nonfinite;
    } else if (float32_problem.empty() && factor > kFloat32Factor) {
      float32_problem = "worse in float32: " + tally.name + ": error against the float64 " +
                        "original " + brief(adapted) + " RMS, the original's own " +
                        brief(original) + " (" + brief(factor) + " times, at most " +
                        brief(kFloat32Factor) + " allowed); largest " + tally.worst_at;
    }
  }
  summary.no_worse = float32_problem.empty();
  if (summary.same_math && !summary.no_worse) summary.problem = float32_problem;
  return summary;
}

}  // namespace stickler
