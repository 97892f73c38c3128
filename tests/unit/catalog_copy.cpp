#include "tests/unit/catalog_copy.h"

#include <filesystem>
#include <stdexcept>

#include "adapters/engine/adapter_catalog.h"
#include "tests/unit/zoo.h"

namespace stickler::testing {

std::string shippedCatalogWithout(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = uniqueTempPath("catalog-without-" + name);
  fs::remove_all(dir);
  fs::copy(shippedCatalogDir(), dir, fs::copy_options::recursive);
  if (!fs::remove(dir / (name + ".py"))) {
    throw std::runtime_error("the shipped catalog has no adapter " + name);
  }
  return dir.string();
}

}  // namespace stickler::testing
