#include "simulator/backends/value_wire.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace stickler {
namespace {

constexpr char kRaw = 'R';     // tensors, tuples and lists of them
constexpr char kPickle = 'P';  // anything else, pickled
enum class Kind : uint8_t { kTensor = 1, kTuple = 2, kList = 3 };

bool raw(const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    return tensor.defined() && tensor.layout() == c10::kStrided && tensor.device().is_cpu() &&
           !tensor.is_quantized() && !tensor.is_conj() && !tensor.is_neg() &&
           !tensor.requires_grad();
  }
  if (value.isTuple()) {
    for (const c10::IValue& element : value.toTupleRef().elements()) {
      if (!raw(element)) return false;
    }
    return true;
  }
  if (value.isTensorList()) {
    for (const at::Tensor& tensor : value.toTensorVector()) {
      if (!raw(tensor)) return false;
    }
    return true;
  }
  return false;
}

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void write(std::string& out, const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor tensor = value.toTensor().contiguous();
    put(out, Kind::kTensor);
    put(out, static_cast<int8_t>(tensor.scalar_type()));
    put(out, static_cast<uint8_t>(tensor.dim()));
    for (int64_t size : tensor.sizes()) put(out, size);
    put(out, static_cast<uint64_t>(tensor.nbytes()));
    out.append(static_cast<const char*>(tensor.data_ptr()), tensor.nbytes());
    return;
  }
  const bool tuple = value.isTuple();
  std::vector<c10::IValue> elements;
  if (tuple) {
    const auto& items = value.toTupleRef().elements();
    elements.assign(items.begin(), items.end());
  } else {
    for (const at::Tensor& tensor : value.toTensorVector()) elements.emplace_back(tensor);
  }
  put(out, tuple ? Kind::kTuple : Kind::kList);
  put(out, static_cast<uint64_t>(elements.size()));
  for (const c10::IValue& element : elements) write(out, element);
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}

  template <typename T>
  T get() {
    T value;
    std::memcpy(&value, take(sizeof value), sizeof value);
    return value;
  }

  const char* take(size_t count) {
    if (count > bytes_.size() - at_) throw std::runtime_error("truncated device run values");
    const char* start = bytes_.data() + at_;
    at_ += count;
    return start;
  }

  bool done() const { return at_ == bytes_.size(); }

  c10::IValue value(int depth) {
    if (depth > 32) throw std::runtime_error("device run values nested too deeply");
    const auto kind = get<Kind>();
    if (kind == Kind::kTensor) return tensor();
    if (kind != Kind::kTuple && kind != Kind::kList) {
      throw std::runtime_error("unknown kind of device run value");
    }
    const auto count = get<uint64_t>();
    if (count > bytes_.size()) throw std::runtime_error("truncated device run values");
    std::vector<c10::IValue> elements;
    elements.reserve(count);
    for (uint64_t i = 0; i < count; ++i) elements.push_back(value(depth + 1));
    if (kind == Kind::kTuple) return c10::ivalue::Tuple::create(std::move(elements));
    std::vector<at::Tensor> tensors;
    tensors.reserve(elements.size());
    for (const c10::IValue& element : elements) tensors.push_back(element.toTensor());
    return c10::IValue(tensors);
  }

 private:
  at::Tensor tensor() {
    const auto type = static_cast<c10::ScalarType>(get<int8_t>());
    if (static_cast<int>(type) < 0 ||
        static_cast<int>(type) >= static_cast<int>(c10::ScalarType::NumOptions)) {
      throw std::runtime_error("unknown dtype in device run values");
    }
    const auto dims = get<uint8_t>();
    std::vector<int64_t> sizes(dims);
    uint64_t elements = 1;
    for (int64_t& size : sizes) {
      size = get<int64_t>();
      if (size < 0) throw std::runtime_error("negative size in device run values");
      // Bounded by the bytes there are (a zero size leaves nothing to overflow).
      if (size > 0 && elements > bytes_.size() / static_cast<uint64_t>(size) + 1) {
        throw std::runtime_error("device run value larger than its bytes");
      }
      elements *= static_cast<uint64_t>(size);
    }
    const auto nbytes = get<uint64_t>();
    if (nbytes != elements * c10::elementSize(type)) {
      throw std::runtime_error("device run value of the wrong size");
    }
    at::Tensor tensor = at::empty(sizes, at::TensorOptions().dtype(type));
    const char* data = take(nbytes);
    if (nbytes > 0) std::memcpy(tensor.data_ptr(), data, nbytes);
    return tensor;
  }

  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace

std::string encodeValues(const std::vector<c10::IValue>& values) {
  bool all_raw = true;
  for (const c10::IValue& value : values) all_raw = all_raw && raw(value);
  std::string out(1, all_raw ? kRaw : kPickle);
  if (!all_raw) {
    const auto bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create(values));
    out.append(bytes.begin(), bytes.end());
    return out;
  }
  put(out, static_cast<uint64_t>(values.size()));
  for (const c10::IValue& value : values) write(out, value);
  return out;
}

std::vector<c10::IValue> decodeValues(const std::string& bytes) {
  if (bytes.empty()) throw std::runtime_error("empty device run values");
  if (bytes[0] == kPickle) {
    const c10::IValue tuple =
        torch::jit::pickle_load(std::vector<char>(bytes.begin() + 1, bytes.end()));
    const auto& elements = tuple.toTupleRef().elements();
    return std::vector<c10::IValue>(elements.begin(), elements.end());
  }
  if (bytes[0] != kRaw) throw std::runtime_error("unknown encoding of device run values");
  Reader reader(bytes);
  reader.take(1);
  const auto count = reader.get<uint64_t>();
  if (count > bytes.size()) throw std::runtime_error("truncated device run values");
  std::vector<c10::IValue> values;
  values.reserve(count);
  for (uint64_t i = 0; i < count; ++i) values.push_back(reader.value(0));
  if (!reader.done()) throw std::runtime_error("trailing bytes after device run values");
  return values;
}

}  // namespace stickler
