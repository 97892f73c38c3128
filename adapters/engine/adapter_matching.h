// Which catalog adapters apply to a model on a profile, and why: each one is tried on a copy
// of the graph, and the blockers the profile reports before and after are compared.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "adapters/engine/adapter_catalog.h"

namespace stickler {

struct LoadedModel;
struct DeviceProfile;

struct BlockerCount {
  std::string rule;
  std::string op;
  std::string module;
  int count = 0;
};

struct AdapterMatch {
  std::string name;
  std::string origin;
  bool applies = false;      // its rewrite or transform changes this model
  bool for_profile = false;  // the adapter says this profile needs it
  bool for_model = false;    // the adapter's model patterns include this model
  std::string reason;        // why it applies or does not, for a person
  int rewrites = 0;
  std::vector<BlockerCount> clears;      // blockers gone after applying it
  std::vector<BlockerCount> introduces;  // blockers it would add
};

// Tries every entry of `catalog` on `model` lowered for `profile`.
std::vector<AdapterMatch> matchAdapters(const std::vector<CatalogEntry>& catalog,
                                        std::shared_ptr<const LoadedModel> model,
                                        const DeviceProfile& profile);

// The blockers of `model` on `profile` (whole model on the device), counted by rule, op and
// module.
std::vector<BlockerCount> countBlockers(const LoadedModel& model, const DeviceProfile& profile);

}  // namespace stickler
