#include "adapters/engine/shared_constants.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>
#include <vector>

#include "simulator/graph/shared_weight_files.h"

namespace stickler {
namespace {

// Small tensors cost less than the hashing: only weights are worth sharing.
constexpr size_t kSharedFromBytes = size_t{64} * 1024;

using Key = std::tuple<size_t, c10::ScalarType, std::vector<int64_t>>;

struct TensorPool {
  std::mutex mutex;
  // Weak: a tensor lives as long as the graphs holding it, not as long as the process.
  std::map<Key, std::vector<c10::weak_intrusive_ptr<c10::TensorImpl>>> by_content;
  size_t swept_at = 64;  // keys after the last sweep of dead ones
};

TensorPool& tensorPool() {
  static TensorPool pool;
  return pool;
}

bool sameBytes(const at::Tensor& a, const at::Tensor& b) {
  return a.is_contiguous() && b.is_contiguous() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

}  // namespace

at::Tensor sharedTensor(const at::Tensor& tensor) {
  if (!tensor.defined() || tensor.is_meta() || !tensor.device().is_cpu() ||
      !tensor.is_contiguous() || tensor.nbytes() < kSharedFromBytes || tensor.requires_grad()) {
    return tensor;
  }
  const std::string_view bytes(static_cast<const char*>(tensor.data_ptr()), tensor.nbytes());
  const Key key{std::hash<std::string_view>{}(bytes), tensor.scalar_type(), tensor.sizes().vec()};
  TensorPool& pool = tensorPool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  auto& alive = pool.by_content[key];
  std::erase_if(alive, [](const auto& weak) { return weak.expired(); });
  for (const auto& weak : alive) {
    c10::intrusive_ptr<c10::TensorImpl> impl = weak.lock();
    if (!impl) continue;
    at::Tensor candidate(std::move(impl));
    // Bytes, not values: -0.0 and 0.0, or two NaNs, are different weights here.
    if (sameBytes(candidate, tensor)) return candidate;
  }
  // A model host takes the file its caller made of this weight; any other process makes one,
  // to pass to its model hosts (shared_weight_files.h).
  at::Tensor kept = offeredWeightLike(tensor);
  if (!kept.defined()) kept = inSealedMemoryFile(tensor);
  alive.emplace_back(kept.getIntrusivePtr());
  // A server adapts model after model: the keys of tensors no graph holds any more go too.
  if (pool.by_content.size() > 2 * pool.swept_at) {
    for (auto it = pool.by_content.begin(); it != pool.by_content.end();) {
      std::erase_if(it->second, [](const auto& weak) { return weak.expired(); });
      it = it->second.empty() ? pool.by_content.erase(it) : std::next(it);
    }
    pool.swept_at = std::max<size_t>(pool.by_content.size(), 64);
  }
  return kept;
}

torch::jit::Value* insertSharedConstant(torch::jit::Graph& graph, const at::Tensor& tensor) {
  return graph.insertConstant(sharedTensor(tensor));
}

}  // namespace stickler
