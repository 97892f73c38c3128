// What an adapter may be called: one rule for the adapter file's `name` and for the workspace
// catalog's branches and files (draft/<name>, <name>.py), so that a file that parses is never
// refused by the catalog for its name.
#pragma once

#include <optional>
#include <string>

namespace stickler {

// Kebab-case, 1 to 64 characters: a lower-case letter first, then lower-case letters, digits and
// single hyphens between them ("pad-logits-to-sticks"). nullopt when `name` is one; else what
// to change, e.g. "start with a lower-case letter".
std::optional<std::string> adapterNameProblem(const std::string& name);

}  // namespace stickler
