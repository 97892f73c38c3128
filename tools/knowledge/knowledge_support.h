#pragma once

#include <string>

namespace stickler {

class OperationContext;

// The workspace's recorded gotchas: stickler-gotchas/ under the workspace root.
std::string gotchasDirectory(OperationContext& context);

// stickler://knowledge/<id>, stickler://skills/<id> or stickler://gotchas/<id>, by kind.
std::string knowledgeUri(const std::string& kind, const std::string& id);

}  // namespace stickler
