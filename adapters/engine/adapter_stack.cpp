#include "adapters/engine/adapter_stack.h"

#include <algorithm>

#include "simulator/graph/loaded_model.h"
#include "simulator/support/errors.h"

namespace stickler {

std::shared_ptr<const LoadedModel> AdapterStack::current() const {
  return applied_.empty() ? original_ : applied_.back().after;
}

bool AdapterStack::contains(const std::string& name) const {
  for (const auto& applied : original_->adapters) {
    if (applied == name) return true;
  }
  for (const auto& application : applied_) {
    if (application.adapter.metadata.name == name) return true;
  }
  return false;
}

std::vector<std::string> AdapterStack::names() const {
  std::vector<std::string> names;
  for (const auto& application : applied_) names.push_back(application.adapter.metadata.name);
  return names;
}

void AdapterStack::push(AdapterApplication application) {
  applied_.push_back(std::move(application));
}

AdapterApplication AdapterStack::revert(const std::string& name, const DeviceProfile& profile) {
  if (applied_.empty()) throw UserError("no adapter is applied to this model");
  size_t index = applied_.size() - 1;
  if (!name.empty()) {
    bool found = false;
    for (size_t i = 0; i < applied_.size(); ++i) {
      if (applied_[i].adapter.metadata.name == name) {
        index = i;
        found = true;
      }
    }
    if (!found) throw UserError("adapter '" + name + "' is not applied to this model");
  }
  std::vector<AdapterApplication> rebuilt(applied_.begin(), applied_.begin() + index);
  std::shared_ptr<const LoadedModel> model = applied_[index].before;
  for (size_t i = index + 1; i < applied_.size(); ++i) {
    AdapterApplication again = applyAdapter(applied_[i].adapter, model, profile);
    if (!again.accepted()) {
      throw UserError("cannot revert '" + applied_[index].adapter.metadata.name + "': '" +
                      applied_[i].adapter.metadata.name +
                      "', applied after it, no longer applies without it; revert that first");
    }
    model = again.after;
    rebuilt.push_back(std::move(again));
  }
  AdapterApplication removed = std::move(applied_[index]);
  applied_ = std::move(rebuilt);
  return removed;
}

std::vector<std::string> AdapterStack::clear() {
  std::vector<std::string> removed = names();
  applied_.clear();
  return removed;
}

AdapterStack& AdapterStacks::stackFor(const std::string& key,
                                      const std::shared_ptr<const LoadedModel>& original) {
  auto& slot = stacks_[key];
  if (!slot || slot->original() != original) slot = std::make_unique<AdapterStack>(original);
  return *slot;
}

std::optional<KeptAdaptation> AdapterStacks::adaptation(const std::string& key) {
  std::lock_guard<std::mutex> lock(adaptations_mutex_);
  for (auto it = adaptations_.begin(); it != adaptations_.end(); ++it) {
    if (it->first != key) continue;
    std::rotate(it, it + 1, adaptations_.end());  // the most recently used last
    return adaptations_.back().second;
  }
  return std::nullopt;
}

void AdapterStacks::keepAdaptation(const std::string& key, KeptAdaptation adaptation) {
  std::lock_guard<std::mutex> lock(adaptations_mutex_);
  adaptations_.erase(std::remove_if(adaptations_.begin(), adaptations_.end(),
                                    [&](const auto& entry) { return entry.first == key; }),
                     adaptations_.end());
  adaptations_.emplace_back(key, std::move(adaptation));
  if (adaptations_.size() > kAdaptationsKept) adaptations_.erase(adaptations_.begin());
}

}  // namespace stickler
