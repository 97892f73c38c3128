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

// The key of stacking `entries` on `stack` for `profile`: the stack's model (its recipe: the
// archive's bytes, its inputs, the adapters under it), the profile's rules (its faults aside:
// the checks run on the CPU, and a profile that only adds a fault adapts alike), each entry's
// name, origin and text, this executable (a rebuilt checker may judge otherwise) and the BLAS
// the float32 checks ran on.
std::string stackingKey(const AdapterStack& stack, const std::vector<const CatalogEntry*>& entries,
                        const DeviceProfile& profile);

// The adapters a checked stacking under `key` pushed, in order; none when there is no record
// (or it is damaged). Under cacheDir("stackings").
std::optional<std::vector<std::string>> rememberedStacking(const std::string& key);
void rememberStacking(const std::string& key, const std::vector<std::string>& pushed);

}  // namespace stickler
