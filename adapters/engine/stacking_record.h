// A checked stacking, remembered across processes: which adapters a stacking of the catalog on a
// model pushed after every equivalence check passed, under a key that holds all the checks
// depend on. A diagnosis that adapts first (localize and diagnose with adapt) repeats what adapt
// checked minutes before; with the record it applies the same adapters without checking again.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/engine/adapter_catalog.h"

namespace stickler {

class AdapterStack;
struct DeviceProfile;
struct LoadedModel;

// The key of stacking `entries` on `stack` for `profile`: the stack's model (its recipe: the
// archive's bytes, its inputs, the adapters under it), the profile's rules (its faults aside:
// the checks run on the CPU, and a profile that only adds a fault adapts alike), each entry's
// name, origin and text, this executable (a rebuilt checker may judge otherwise) and the BLAS
// the float32 checks ran on.
std::string stackingKey(const AdapterStack& stack, const std::vector<const CatalogEntry*>& entries,
                        const DeviceProfile& profile);

struct RememberedStacking {
  std::vector<std::string> pushed;  // the adapters it pushed, in order
  // stackingResult of the model it made: applying them again must make the same one.
  std::string result;
};

// What a checked stacking under `key` did; none when there is no record (or it is damaged).
// Under cacheDir("stackings").
std::optional<RememberedStacking> rememberedStacking(const std::string& key);
void rememberStacking(const std::string& key, const RememberedStacking& stacking);

// The adapted model's graph and what each of its nodes saw (graph_fingerprint.h), in one string:
// a stacking applied again from its record, its models before the last recorded from shapes,
// made the model the checks passed.
std::string stackingResult(const LoadedModel& model);

}  // namespace stickler
