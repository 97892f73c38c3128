// The adapters Stickler knows: the shipped catalog (adapters/catalog/) and a workspace's own
// catalog, which may override a shipped adapter of the same name.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "adapters/engine/adapter_file.h"

namespace stickler {

struct CatalogEntry {
  std::string name;
  std::string origin;  // "shipped", "workspace" (its main), "workspace draft" (not reviewed)
  std::string path;    // where it was read from (for a draft: the branch and file name)
  std::string text;
  // Parsed (shared by every entry of the same text); null when `error` says why not.
  std::shared_ptr<const AdapterFile> file;
  std::string error;
  // What a person should call it: "shipped" (as it ships, in the workspace or not), "accepted"
  // (main's version came in through a review), "workspace" (main's, changed otherwise), "draft"
  // (a draft branch changes it). Empty where nobody asked (a catalog at a commit).
  std::string status;
  std::string branch;  // the workspace branch it was read from; "" when not from the workspace
};

// The shipped catalog's directory: $STICKLER_CATALOG_DIR, or the one in the source tree.
std::string shippedCatalogDir();

// Every `*.py` in `dir`, by name. A file that does not parse is an entry with its error: one
// broken draft must not hide the rest of the catalog.
std::vector<CatalogEntry> readCatalogDir(const std::string& dir, const std::string& origin);

CatalogEntry catalogEntryFromText(const std::string& name, const std::string& text,
                                  const std::string& path, const std::string& origin);

// A catalog as data for a worker (a gate check, a sweep probe): each entry's text, path, origin
// and labels; the worker parses the texts again.
nlohmann::json catalogToJson(const std::vector<CatalogEntry>& catalog);
std::vector<CatalogEntry> catalogFromJson(const nlohmann::json& json);

// `overrides` replace entries of `base` with the same name; the result is sorted by name.
std::vector<CatalogEntry> mergeCatalogs(std::vector<CatalogEntry> base,
                                        std::vector<CatalogEntry> overrides);

// The entry named `name`; UserError listing the names there are when there is none.
const CatalogEntry& findCatalogEntry(const std::vector<CatalogEntry>& catalog,
                                     const std::string& name);

// Whether an adapter is meant for this model family (or name) and profile, from its metadata.
bool adapterTargetsModel(const AdapterMetadata& metadata, const std::string& family,
                         const std::string& model_name);
bool adapterTargetsProfile(const AdapterMetadata& metadata,
                           const std::vector<std::string>& profile_lineage);

}  // namespace stickler
