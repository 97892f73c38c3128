#pragma once

#include <string>

namespace stickler::testing {

// A copy of the shipped catalog's directory without the adapter `name`, unique to this process:
// a test points STICKLER_CATALOG_DIR at it to see what a model does without that one adapter.
std::string shippedCatalogWithout(const std::string& name);

}  // namespace stickler::testing
