// The adapters applied to one model in a session, in order: each entry keeps the model as it
// was after that adapter, so a revert restores the exact previous graph.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "adapters/engine/adapter_application.h"

namespace stickler {

class AdapterStack {
 public:
  explicit AdapterStack(std::shared_ptr<const LoadedModel> original)
      : original_(std::move(original)) {}

  std::shared_ptr<const LoadedModel> original() const { return original_; }
  // The model with every applied adapter.
  std::shared_ptr<const LoadedModel> current() const;
  const std::vector<AdapterApplication>& applied() const { return applied_; }
  // Whether `name` is on the stack, or was already applied to the model the stack started from
  // (a stack built on an adapted model): applying it again would adapt the adapted.
  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;  // of the applied adapters, in order

  // Pushes an accepted application made on current().
  void push(AdapterApplication application);
  // Takes off `name` (the top one when empty). The adapters above it are applied again, in
  // order, to the model before it; returns the removed entry. Throws UserError when `name`
  // is not applied or an adapter above no longer applies without it.
  AdapterApplication revert(const std::string& name, const DeviceProfile& profile);
  // Takes every adapter off: current() is the original again. Returns their names, in order.
  std::vector<std::string> clear();

 private:
  std::shared_ptr<const LoadedModel> original_;
  std::vector<AdapterApplication> applied_;
};

// What stacking the catalog's adapters on a model for a profile gave: the adapted model and
// the names pushed, in order.
struct KeptAdaptation {
  std::shared_ptr<const LoadedModel> model;
  std::vector<std::string> applied;
};

// The stacks of one session (an MCP session; the CLI makes one per command), by model path
// and input flags.
class AdapterStacks {
 public:
  // The stack for the model, created on `original` when there is none (or when the model
  // file changed: `original` is then another object than the stack's).
  AdapterStack& stackFor(const std::string& key,
                         const std::shared_ptr<const LoadedModel>& original);
  std::mutex& mutex() { return mutex_; }

  // Stackings of the catalog a diagnosis made on a stack of its own (diagnose and localize with
  // adapt), kept under a key that holds all they depend on (the model's recipe, the profile's
  // content, the adapters' texts): an agent repeats them on the same model, and their
  // equivalence checks take minutes at real sizes. The kAdaptationsKept most recently used are
  // kept, since an adapted model may hold weights of its own. Safe to call without mutex().
  std::optional<KeptAdaptation> adaptation(const std::string& key);
  void keepAdaptation(const std::string& key, KeptAdaptation adaptation);
  static constexpr size_t kAdaptationsKept = 2;

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<AdapterStack>> stacks_;
  std::mutex adaptations_mutex_;
  std::vector<std::pair<std::string, KeptAdaptation>> adaptations_;  // most recent last
};

}  // namespace stickler
