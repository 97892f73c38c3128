#include "simulator/interpreter/rounded_when_widened.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>

#include "simulator/numerics/tensor_rounding.h"

namespace stickler {
namespace {

struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<const c10::StorageImpl*, NumberFormat> formats;
  // Checked before the lock: every widening asks, and almost always none is registered.
  std::atomic<size_t> count{0};
};

Registry& registry() {
  static Registry instance;
  return instance;
}

const c10::StorageImpl* storageOf(const at::Tensor& tensor) {
  return tensor.defined() && tensor.has_storage() ? tensor.storage().unsafeGetStorageImpl()
                                                  : nullptr;
}

std::optional<NumberFormat> formatFor(const at::Tensor& tensor) {
  Registry& all = registry();
  if (all.count.load(std::memory_order_acquire) == 0) return std::nullopt;
  const c10::StorageImpl* storage = storageOf(tensor);
  if (storage == nullptr) return std::nullopt;
  std::shared_lock lock(all.mutex);
  const auto found = all.formats.find(storage);
  if (found == all.formats.end()) return std::nullopt;
  return found->second;
}

}  // namespace

void roundWhenWidened(const at::Tensor& tensor, NumberFormat format) {
  const c10::StorageImpl* storage = storageOf(tensor);
  if (storage == nullptr) return;
  Registry& all = registry();
  std::unique_lock lock(all.mutex);
  all.formats[storage] = format;
  all.count.store(all.formats.size(), std::memory_order_release);
}

void stopRoundingWhenWidened(const at::Tensor& tensor) {
  const c10::StorageImpl* storage = storageOf(tensor);
  if (storage == nullptr) return;
  Registry& all = registry();
  std::unique_lock lock(all.mutex);
  all.formats.erase(storage);
  all.count.store(all.formats.size(), std::memory_order_release);
}

bool isRoundedWhenWidened(const at::Tensor& tensor) {
  return formatFor(tensor).has_value();
}

void roundIfRegistered(const at::Tensor& source, const at::Tensor& widened) {
  const std::optional<NumberFormat> format = formatFor(source);
  if (!format) return;
  if (*format == NumberFormat::kDL16 && widened.scalar_type() == c10::kFloat &&
      widened.is_contiguous()) {
    float* data = widened.data_ptr<float>();
    roundToDL16(data, data, widened.numel());
    return;
  }
  widened.copy_(roundToFormat(widened, *format));
}

}  // namespace stickler
