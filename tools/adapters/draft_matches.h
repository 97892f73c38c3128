// Where a draft matches: the workspace's model archives its `models` glob names, each tried (the
// draft applied without its equivalence check), so that a draft whose pattern or condition
// matches nothing is said plainly when it is drafted, not found out later.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

struct AdapterApplication;
struct AdapterFile;
struct DeviceProfile;
class OperationContext;

// At most this many archives are tried (the first found, in path order), and the search for
// them visits at most kDraftSearchEntries directory entries, kDraftSearchDepth levels below the
// workspace root, skipping hidden directories and Stickler's own (stickler-*).
inline constexpr size_t kDraftModelsTried = 8;
inline constexpr size_t kDraftSearchEntries = 5000;
inline constexpr int kDraftSearchDepth = 3;
// Archives larger than this are not loaded to try a draft on (a draft is written in a loop of a
// few seconds; match_adapters tries it on such a model when asked).
inline constexpr uintmax_t kDraftTryBytes = uintmax_t{1} << 30;

// {"tried": [{"model", "matched", "rewrites" (, "not_folded") | "why"}], "not_tried": n,
// "too_large": [model]}:
// the archives under the workspace root whose card's family or name the draft's `models` names,
// but `skip` (a resolved path the caller tries itself), each as the session has it (with the
// adapters applied there).
nlohmann::json draftMatches(const AdapterFile& file, const DeviceProfile& profile,
                            const std::string& skip, OperationContext& context);

// A tried model's entry for an application that changed it: the rewrites, and the sizes its
// replacement read that could not be folded (why each).
nlohmann::json matchedEntry(const std::string& model, const AdapterApplication& application);

// "matches nothing in <model>: <why>" for each model tried that it did not match, one line more
// when it matched none of them, and "in <model>, a size was not folded: <why>" for each such
// size where it matched.
nlohmann::json draftWarnings(const nlohmann::json& tried);

}  // namespace stickler
