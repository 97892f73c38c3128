// Applying one adapter to a model: rewrite or built-in transform on a copy of the graph, the
// rebuilt model, what changed, and the equivalence check against the model before it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/engine/adapter_file.h"
#include "adapters/engine/equivalence/equivalence.h"
#include "adapters/engine/graph_change.h"
#include "simulator/graph/record_from.h"

namespace stickler {

struct LoadedModel;
struct DeviceProfile;

struct AdapterApplication {
  AdapterFile adapter;
  std::shared_ptr<const LoadedModel> before;
  std::shared_ptr<const LoadedModel> after;  // null when nothing matched
  GraphChange change;
  int refused_by_condition = 0;          // matches the adapter's condition turned down
  std::vector<std::string> turned_down;  // the first few of them, with the values it saw
  std::vector<std::string> closest;      // a rewrite that matched nothing: its closest matches
  EquivalenceResult equivalence;         // meaningful when something changed

  bool changed() const { return !change.empty(); }
  bool accepted() const { return changed() && equivalence.accepted(); }
};

// Applies `adapter` to `model`. Compile errors in its functions and arguments a transform
// cannot honor are UserErrors naming the adapter file; an adapter that matches nothing or
// changes what the model computes is a result (see changed(), accepted()), not an error. The
// equivalence check runs the modules the change touches, on inputs captured while the adapted
// model records its shapes. `check_equivalence` false skips it (matching only asks what a
// rewrite would clear). `record_from` says what the adapted model records from (a checked
// application records from values).
AdapterApplication applyAdapter(const AdapterFile& adapter,
                                std::shared_ptr<const LoadedModel> model,
                                const DeviceProfile& profile, bool check_equivalence = true,
                                RecordFrom record_from = RecordFrom::kAsTheBase);

// An adapter applied to its own output must change nothing: one that does would adapt the
// adapted again wherever it runs twice (a session's stack, a saved archive adapted anew). Applies
// `application.adapter` to `application.after` (no equivalence check) and returns what that
// second application changed or why it failed; nullopt when it changes nothing.
std::optional<std::string> idempotenceProblem(const AdapterApplication& application,
                                              const DeviceProfile& profile);

// Why an application changed nothing, for a person: the matches its condition turned down and
// the values it saw, or that nothing matches.
std::string unchangedReason(const AdapterApplication& application);

// Compiles a rewrite's functions, or checks a transform's name and arguments, as applying it
// would: UserError "path:line:column: message" when it could never apply. Needs no model.
void validateAdapter(const AdapterFile& adapter);

// The identity of an adapted model: the base archive's hash extended by the adapters' names.
std::string adaptedIdentity(const std::string& base_identity, const std::string& adapter_name);

}  // namespace stickler
