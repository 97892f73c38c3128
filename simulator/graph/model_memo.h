// What later layers work out from a model once and keep with it while it lives: what a model
// host is told of it, the whole model's lowering for a device (localization would lower it on
// every call). Values may hold pointers into the model's graph, which lives as long as they do.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace stickler {

class ModelMemo {
 public:
  // The value kept under `key`, made by `make()` (returning std::shared_ptr<const T>) on its
  // first use; calls for the same key wait for it, a throw leaves it to the next call. A key
  // names the kind of value and everything beside the model it depends on.
  template <typename T, typename Make>
  std::shared_ptr<const T> get(const std::string& key, Make&& make) const {
    std::shared_ptr<Slot> slot;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      std::shared_ptr<Slot>& kept = slots_[key];
      if (!kept) kept = std::make_shared<Slot>();
      slot = kept;
    }
    std::call_once(slot->made, [&] { slot->value = std::shared_ptr<const T>(make()); });
    return std::static_pointer_cast<const T>(slot->value);
  }

 private:
  struct Slot {
    std::once_flag made;
    std::shared_ptr<const void> value;
  };
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::shared_ptr<Slot>> slots_;
};

}  // namespace stickler
