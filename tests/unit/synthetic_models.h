#pragma once

#include <string>

namespace stickler::testing {

// Saves a TorchScript module whose forward is `forward_source` (a `def forward(self, ...)`),
// with a model card, under the test temp dir; returns its path. For rules no zoo model hits.
std::string writeScriptedModel(const std::string& name, const std::string& forward_source,
                               const std::string& card_json);

// The path of a test profile in tests/profiles/.
std::string testProfile(const std::string& file);

}  // namespace stickler::testing
